// PLACEHOLDER until the engine lands: the signatures are the contract; the engine helper replaces the bodies.
import { SwitchboardError } from '../core/errors.js';
import type {
  AnswerGateOptions,
  ResumeWorkflowOptions,
  RunWorkflowOptions,
  WorkflowEngineOptions,
  WorkflowEventRecord,
  WorkflowRunResult,
} from './api-types.js';

function notYet(): never {
  throw new SwitchboardError('INTERNAL', 'workflows are not built yet');
}

/** Starts a run of a workflow file (or resumes the run its `run_key` names) and advances it until it ends or parks at a gate. */
export async function runWorkflow(options: RunWorkflowOptions): Promise<WorkflowRunResult> {
  void options;
  return notYet();
}

/** Continues an interrupted, parked or limit-ended run at its first step without a completed row. */
export async function resumeWorkflow(options: ResumeWorkflowOptions): Promise<WorkflowRunResult> {
  void options;
  return notYet();
}

/** Records a gate answer (before or after the run reaches the gate) and, unless `continue: false`, continues the run. */
export async function answerGate(options: AnswerGateOptions): Promise<WorkflowRunResult> {
  void options;
  return notYet();
}

/** The run as `workflow status` shows it. Throws RUN_NOT_FOUND. */
export function workflowStatus(runId: string, options?: WorkflowEngineOptions): WorkflowRunResult {
  void runId;
  void options;
  return notYet();
}

/** Runs, newest first. */
export function listWorkflowRuns(options?: WorkflowEngineOptions & { limit?: number }): WorkflowRunResult[] {
  void options;
  return notYet();
}

/** Marks the run cancelled and kills the process tree of a running step (the owning process stops). */
export async function cancelWorkflowRun(
  runId: string,
  options?: WorkflowEngineOptions,
): Promise<WorkflowRunResult> {
  void runId;
  void options;
  return notYet();
}

/** Events of a run after `afterSeq`, oldest first. */
export function readWorkflowEvents(
  runId: string,
  options?: WorkflowEngineOptions & { afterSeq?: number },
): WorkflowEventRecord[] {
  void runId;
  void options;
  return notYet();
}

export type * from './api-types.js';
export type * from './model.js';
