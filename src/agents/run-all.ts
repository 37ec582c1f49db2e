import { MergeQueue } from './merge.js';
import { runAgentTask, type AgentRunResult, type RunAgentTaskOptions } from './runner.js';
import type { AgentTask } from './task.js';

export interface RunAgentTasksOptions extends Omit<RunAgentTaskOptions, 'task' | 'runId' | 'mergeQueue'> {
  tasks: readonly AgentTask[];
  /**
   * Runs at once.
   * @default 2
   */
  parallel?: number;
}

/** One task's outcome in `runAgentTasks`: its run's result, or the error that kept it from starting. */
export type AgentTaskOutcome =
  | { taskId: string; result: AgentRunResult; error?: undefined }
  | { taskId: string; result?: undefined; error: unknown };

/**
 * Runs several tasks, at most `parallel` at a time. Merges into the same branch go through one queue,
 * one after the other, each onto the branch as the previous merge left it, so no merge is lost.
 */
export async function runAgentTasks({
  tasks,
  parallel = 2,
  ...options
}: RunAgentTasksOptions): Promise<AgentTaskOutcome[]> {
  if (!Number.isInteger(parallel) || parallel < 1) {
    throw new RangeError(`Expected "parallel" to be a positive whole number, got ${parallel}`);
  }
  const mergeQueue = new MergeQueue();
  const outcomes: AgentTaskOutcome[] = new Array<AgentTaskOutcome>(tasks.length);
  let next = 0;
  async function worker(): Promise<void> {
    for (;;) {
      const index = next++;
      const task = tasks[index];
      if (task === undefined) return;
      try {
        outcomes[index] = { taskId: task.id, result: await runAgentTask({ ...options, task, mergeQueue }) };
      } catch (error) {
        outcomes[index] = { taskId: task.id, error };
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(parallel, tasks.length) }, () => worker()));
  return outcomes;
}
