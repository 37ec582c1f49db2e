import type { SwitchboardConfig } from '../core/config.js';
import { SwitchboardError } from '../core/errors.js';
import type { AgentTask } from '../agents/task.js';
import type { WorkflowMemberJob } from '../workflows/api-types.js';

/** The queue of agent runs: one job per run. */
export const AGENT_QUEUE = 'switchboard.agents';
/**
 * The queue of workflow runs: a job says "advance run R". Its policy is pg-boss's `singleton` with the
 * run id as key, so at most one job per run is active at a time (more may wait behind it).
 */
export const WORKFLOW_QUEUE = 'switchboard.workflows';
/**
 * The queue of workflow group members: a job says "run for_each item / parallel member M of run R". The
 * worker advancing R sends them and waits for their rows; any worker serving workflows takes them. A queue
 * of its own, so a coordinator waiting for its members never holds the slot a member needs.
 */
export const MEMBER_QUEUE = 'switchboard.members';
/**
 * The queue of merges of agent runs on a remote repository into its base branch. Its policy is
 * `singleton` with the remote and base branch as key (`mergeJobKey`), so merges into one branch run one
 * at a time across all workers. Workers serving the agent queue serve it too.
 */
export const MERGE_QUEUE = 'switchboard.merges';
/** Where a job goes once its worker died `retryLimit` times over: kept for a look, run by nobody. */
export const DEAD_LETTER_QUEUE = 'switchboard.dead';

/** Queue names `switchboard worker --queues` accepts, and the pg-boss queue each one is. */
export const WORKER_QUEUES: Readonly<Record<string, string>> = {
  agents: AGENT_QUEUE,
  workflows: WORKFLOW_QUEUE,
  members: MEMBER_QUEUE,
  merges: MERGE_QUEUE,
};

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

/** A job of the merge queue: merge run R's pushed commit into `baseBranch` of `remote`. */
export interface MergeJobData {
  runId: string;
  remote: string;
  baseBranch: string;
}

/** The singleton key of a merge job: one merge at a time into one branch of one remote. */
export function mergeJobKey(remote: string, baseBranch: string): string {
  return `${remote}#${baseBranch}`;
}

/** A job of the workflow queue: advance the recorded run until it ends, parks at a gate or the worker stops. */
export interface WorkflowJobData {
  runId: string;
  options: WorkflowJobOptions;
}

/** A job of the member queue: run one group member; the job's id is the claim its row carries. */
export interface MemberJobData {
  runId: string;
  member: WorkflowMemberJob;
  /** The coordinator's job options (provider flags), so the member calls models as the run does. */
  options: WorkflowJobOptions;
}

/** How the enqueuer asked the run to be advanced (`workflow run` / `resume` / `gate` flags); the rest is the worker's. */
export interface WorkflowJobOptions {
  /** `--provider`. */
  provider?: string;
  /** `--provider-map` over the worker's `workflows.provider_map`. */
  providerMap?: Record<string, string>;
  skipGates?: boolean;
  allowMcp?: boolean;
  /**
   * `workflow resume --enqueue`: a failed or limit-ended run is continued too. Otherwise the job only
   * advances a run that is running or parked, and leaves an ended one as it is.
   */
  resume?: boolean;
  /** `resume --migrate`. */
  migrate?: boolean;
  /** `resume --max-iterations / --timeout / --budget`. */
  limits?: { maxIterations?: number; timeoutSeconds?: number; budgetUsd?: number };
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
