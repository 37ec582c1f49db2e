import type { SwitchboardConfig } from '../core/config.js';
import { SwitchboardError } from '../core/errors.js';
import type { AgentTask } from '../agents/task.js';

/** The queue of agent runs: one job per run. */
export const AGENT_QUEUE = 'switchboard.agents';
/** Where a job goes once its worker died `retryLimit` times over: kept for a look, run by nobody. */
export const DEAD_LETTER_QUEUE = 'switchboard.dead';

/** Queue names `switchboard worker --queues` accepts, and the pg-boss queue each one is. */
export const WORKER_QUEUES: Readonly<Record<string, string>> = { agents: AGENT_QUEUE };

/**
 * Added to a task's wall-clock limit to make the job's hard expiry: past it pg-boss takes the job from
 * its worker, alive or not, so it must outlast the run (the heartbeat finds dead workers sooner).
 */
export const EXPIRY_MARGIN_SECONDS = 600;
/** pg-boss refuses an expiry beyond a day. */
export const MAX_EXPIRY_SECONDS = 24 * 3600;

/** A job of the agent queue. The run itself is in the database: the job only says which one to drive. */
export interface AgentJobData {
  /** Our run id (`agent show` knows it); the job id is pg-boss's own. */
  runId: string;
  /** The task as recorded, for a reader of the queue; the worker runs the recorded one. */
  task: AgentTask;
  options: AgentJobOptions;
}

/** Settings the enqueuer chose that the run record does not hold. */
export interface AgentJobOptions {
  /** API base URL for Claude Code (`--base-url`); otherwise the worker's own. */
  baseUrl?: string;
}

/**
 * The PostgreSQL URL every worker shares.
 *
 * @throws SwitchboardError `INVALID_INPUT` when the config names none (the SQLite ledger is one machine's)
 */
export function requireWorkerDatabase(config: SwitchboardConfig): string {
  if (config.databaseUrl !== undefined) return config.databaseUrl;
  throw new SwitchboardError(
    'INVALID_INPUT',
    'workers share a PostgreSQL database; set SWITCHBOARD_DATABASE_URL',
    { hint: 'or `database_url: postgres://…` in switchboard.yaml; see docs/workers.md' },
  );
}

/** The job's expiry for a task: its wall-clock limit plus a margin, at most a day. */
export function expirySeconds(task: AgentTask): number {
  return Math.min(MAX_EXPIRY_SECONDS, Math.ceil(task.limits.wallClockMs / 1000) + EXPIRY_MARGIN_SECONDS);
}
