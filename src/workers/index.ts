/**
 * Workers as a library: queue agent runs and workflow runs in the PostgreSQL database several machines
 * share, and take them from the queues in a long-running process. `switchboard worker`, `agent run
 * --enqueue` and `workflow run/gate/resume --enqueue` are thin over these. pg-boss loads only when one of
 * them is called.
 */
import type { EnqueueAgentTasksOptions, EnqueueOutcome } from './enqueue.js';
import type {
  EnqueuedWorkflowRun,
  EnqueueWorkflowAdvanceOptions,
  EnqueueWorkflowRunOptions,
} from './enqueue-workflow.js';
import type { StartWorkerOptions, SwitchboardWorker } from './worker.js';

export { AGENT_QUEUE, DEAD_LETTER_QUEUE, WORKFLOW_QUEUE } from './queues.js';
export type { AgentJobData, AgentJobOptions, WorkflowJobData, WorkflowJobOptions } from './queues.js';
export type {
  EnqueuedWorkflowRun,
  EnqueueWorkflowAdvanceOptions,
  EnqueueWorkflowRunOptions,
} from './enqueue-workflow.js';
export type { WorkflowJobRunnerOptions } from './workflow-job.js';
export type { EnqueueAgentTasksOptions, EnqueueOutcome } from './enqueue.js';
export type { StartWorkerOptions, SwitchboardWorker, WorkerHealth } from './worker.js';

/**
 * Checks each task as `runAgentTask` does, records it as a `queued` run in the shared database and sends
 * one job per run to the agent queue. A database that cannot be used throws before anything is recorded;
 * a task that cannot be queued is an `error` in its outcome.
 */
export async function enqueueAgentTasks(options: EnqueueAgentTasksOptions): Promise<EnqueueOutcome[]> {
  return (await import('./enqueue.js')).enqueueAgentTasks(options);
}

/**
 * Checks the workflow file and inputs as `runWorkflow` does, records the run at its entry step in the
 * shared database and sends one "advance" job to the workflow queue (none when its `run_key` names a run
 * that already has one, is parked or has ended).
 */
export async function enqueueWorkflowRun(options: EnqueueWorkflowRunOptions): Promise<EnqueuedWorkflowRun> {
  return (await import('./enqueue-workflow.js')).enqueueWorkflowRun(options);
}

/**
 * Queues an "advance" job for a recorded workflow run (after `answerGate({ continue: false })`, or a
 * resume with `job: { resume: true }`). Returns the job id, or undefined when one was already queued.
 */
export async function enqueueWorkflowAdvance(
  options: EnqueueWorkflowAdvanceOptions,
): Promise<string | undefined> {
  return (await import('./enqueue-workflow.js')).enqueueWorkflowAdvance(options);
}

/**
 * Starts a worker that takes jobs from the queues and drives their runs; `drain()` stops it (running
 * jobs finish within the grace, the rest go back to the queue for another worker).
 */
export async function startWorker(options: StartWorkerOptions): Promise<SwitchboardWorker> {
  return (await import('./worker.js')).SwitchboardWorker.start(options);
}
