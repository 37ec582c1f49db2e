import type { StepType } from '../model.js';
import type { StepExecutor } from '../step-executor.js';
import { executeHumanGateStep } from './human-gate.js';
import { executeWorkflowStep } from './sub-workflow.js';
import { executeScriptStep } from './script.js';
import { executeSetStep } from './set.js';
import { executeTerminateStep } from './terminate.js';
import { executeWaitStep } from './wait.js';
// The agent steps' executors; uncommented once their files are on main.
// import { executeAgentStep } from './agent.js';
// import { executeRouteStep } from './route.js';

/** The executor of every step type. */
export const STEP_EXECUTORS: Partial<Record<StepType, StepExecutor>> = {
  human_gate: executeHumanGateStep,
  workflow: executeWorkflowStep,
  script: executeScriptStep,
  set: executeSetStep,
  wait: executeWaitStep,
  terminate: executeTerminateStep,
  // agent: executeAgentStep,
  // route: executeRouteStep,
};
