import { resolve } from 'node:path';
import type { WorkerSettings } from '../core/config.js';
import { isSwitchboardError } from '../core/errors.js';
import type { RecordAgentRunOptions } from '../agents/runner.js';
import { AgentRunStore } from '../agents/run-store.js';
import type { AgentTask } from '../agents/task.js';
import { startBoss } from './boss.js';
import {
  AGENT_QUEUE,
  DEAD_LETTER_QUEUE,
  expirySeconds,
  type AgentJobData,
  type AgentJobOptions,
} from './queues.js';

export interface EnqueueAgentTasksOptions extends Omit<RecordAgentRunOptions, 'task' | 'runId'> {
  tasks: readonly AgentTask[];
  /** The PostgreSQL database the workers share. */
  url: string;
  /** Heartbeat, retries: each job carries them. */
  settings: WorkerSettings;
  job?: AgentJobOptions;
}

/** One task's outcome: its queued run, or the error that kept it from being queued. */
export type EnqueueOutcome =
  | { taskId: string; runId: string; jobId: string; error?: undefined }
  | { taskId: string; runId?: undefined; jobId?: undefined; error: unknown };

/**
 * Checks each task as `agent run` does, records it as a `queued` run in the shared database (so `agent
 * ls` on any machine shows it at once) and sends one job per run to the agent queue for a `switchboard
 * worker` to pick up. A database that cannot be used throws before anything is recorded.
 */
export async function enqueueAgentTasks({
  tasks,
  url,
  settings,
  job = {},
  ...recordOptions
}: EnqueueAgentTasksOptions): Promise<EnqueueOutcome[]> {
  const stateDir = resolve(recordOptions.stateDir ?? '.switchboard');
  const store = await AgentRunStore.open(stateDir, { url });
  try {
    const boss = await startBoss({ url, settings, supervise: false });
    try {
      const { recordAgentRun } = await import('../agents/runner.js');
      const outcomes: EnqueueOutcome[] = [];
      for (const task of tasks) {
        let runId: string | undefined;
        try {
          runId = await recordAgentRun(store, { ...recordOptions, stateDir, task });
          const data: AgentJobData = { runId, task, options: job };
          const jobId = await boss.send(AGENT_QUEUE, data, {
            expireInSeconds: expirySeconds(task),
            heartbeatSeconds: settings.heartbeatSeconds,
            retryLimit: settings.retryLimit,
            deadLetter: DEAD_LETTER_QUEUE,
          });
          if (jobId === null) throw new Error('the queue refused the job');
          outcomes.push({ taskId: task.id, runId, jobId });
        } catch (error) {
          if (runId !== undefined) await markUnqueued(store, runId, error);
          outcomes.push({ taskId: task.id, error });
        }
      }
      return outcomes;
    } finally {
      await boss.stop({ graceful: false, close: true });
    }
  } finally {
    await store.close();
  }
}

/** A recorded run whose job could not be sent would wait forever: it ends, saying why. */
async function markUnqueued(store: AgentRunStore, runId: string, error: unknown): Promise<void> {
  const reason = isSwitchboardError(error) || error instanceof Error ? error.message : String(error);
  await store
    .update(runId, {
      phase: 'failed',
      status: 'failed',
      errorCode: 'STORE_ERROR',
      error: `the run was recorded but its job could not be queued: ${reason}`,
      ended: true,
    })
    .catch(() => undefined);
}
