import type { StepType } from '../model.js';
import type { StepExecutor } from '../step-executor.js';

/**
 * An executor loaded when a step of its type first runs: a run pays the import of what it uses
 * (execa for scripts, yaml for set steps, the providers for agents), which keeps a resume quick.
 */
function lazy(load: () => Promise<StepExecutor>): StepExecutor {
  let loaded: Promise<StepExecutor> | undefined;
  return async (context) => {
    loaded ??= load();
    return (await loaded)(context);
  };
}

/** The executor of every step type. */
export const STEP_EXECUTORS: Partial<Record<StepType, StepExecutor>> = {
  human_gate: lazy(async () => (await import('./human-gate.js')).executeHumanGateStep),
  questions: lazy(async () => (await import('./questions.js')).executeQuestionsStep),
  workflow: lazy(async () => (await import('./sub-workflow.js')).executeWorkflowStep),
  script: lazy(async () => (await import('./script.js')).executeScriptStep),
  set: lazy(async () => (await import('./set.js')).executeSetStep),
  wait: lazy(async () => (await import('./wait.js')).executeWaitStep),
  terminate: lazy(async () => (await import('./terminate.js')).executeTerminateStep),
  agent: lazy(async () => (await import('./agent.js')).executeAgentStep),
  route: lazy(async () => (await import('./route.js')).executeRouteStep),
};
