/**
 * Workers as a library: queue agent runs in the PostgreSQL database several machines share, and take
 * them from the queue in a long-running process. `switchboard worker` and `agent run --enqueue` are thin
 * over these. pg-boss loads only when one of them is called.
 */
import type { EnqueueAgentTasksOptions, EnqueueOutcome } from './enqueue.js';
import type { StartWorkerOptions, SwitchboardWorker } from './worker.js';

export { AGENT_QUEUE, DEAD_LETTER_QUEUE } from './queues.js';
export type { AgentJobData, AgentJobOptions } from './queues.js';
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
 * Starts a worker that takes jobs from the queues and drives their runs; `drain()` stops it (running
 * jobs finish within the grace, the rest go back to the queue for another worker).
 */
export async function startWorker(options: StartWorkerOptions): Promise<SwitchboardWorker> {
  return (await import('./worker.js')).SwitchboardWorker.start(options);
}
