import type { Job } from 'pg-boss';
import { isSwitchboardError, SwitchboardError } from '../core/errors.js';
import { redactSecrets } from '../core/secrets.js';
import type { ProviderRegistry } from '../providers/registry.js';
import type {
  ResumeWorkflowOptions,
  WorkflowEngineOptions,
  WorkflowMemberJobs,
} from '../workflows/api-types.js';
import type { WorkflowJobData, WorkflowJobOptions } from './queues.js';
import type { JobOutcome } from './worker-metrics.js';

/** How a worker advances workflow runs on this machine. */
export interface WorkflowJobRunnerOptions {
  /** Folder of the ledger, worktrees and transcripts. */
  stateDir?: string;
  /** The providers every LLM step calls through (the worker's config). */
  providers: ProviderRegistry;
  /** `call:` and `budgets:` of the worker's config: where every step's calls start from. */
  callDefaults?: WorkflowEngineOptions['callDefaults'];
  /** `workflows.provider_map` of the worker's config; a job's own map goes over it. */
  providerMap?: Record<string, string>;
  /** Roles of the worker's switchboard.yaml. */
  roles?: Record<string, string>;
  /** Another host's owner counts as dead once its heartbeat is this old (ms). @default 60_000 */
  staleAfterMs?: number;
  /** When the worker's database last came back after an outage (see WorkflowEngineOptions). */
  databaseBackAt?: () => number | undefined;
  /** Where the run's group members go as jobs (given the job's options); unset, the run's worker runs them. */
  memberJobs?: (options: WorkflowJobOptions) => WorkflowMemberJobs;
}

/** Settled job: completed (the run ended, parked or is someone else's), failed (retry) or released (drain). */
export interface WorkflowJobResult {
  outcome: JobOutcome;
  label: string;
}

const ENDED = new Set(['completed', 'failed', 'cancelled']);
/** How often a job finding its run held by a live process looks again (ms). */
const LOCKED_POLL_MS = 1_000;

/**
 * Advances the job's run until it ends, parks at a gate or the worker lets go. The run's own ending
 * completes the job (the run row says how it went). A release (drain) stops the run where it is without
 * writing anything, so the next worker resumes it. A run another live process holds is waited for until
 * that process ends it or lets it go (then this job takes it), never completed or failed meanwhile: the
 * holder may be an earlier attempt of this very job, which pg-boss took back during a database outage.
 */
export async function runWorkflowJob(
  job: Job<WorkflowJobData>,
  runner: WorkflowJobRunnerOptions,
  releaseSignal: AbortSignal,
  log?: (line: string) => void,
): Promise<WorkflowJobResult> {
  const data = job.data;
  if (typeof data?.runId !== 'string') return { outcome: 'completed', label: 'malformed-job' };
  const { resumeWorkflow, workflowStatus } = await import('../workflows/index.js');
  const stateOptions = runner.stateDir === undefined ? {} : { stateDir: runner.stateDir };
  const stop = releaseController(releaseSignal);
  let waiting = false;
  for (;;) {
    try {
      const status = (await workflowStatus(data.runId, stateOptions)).status;
      // A duplicate job after the run ended must not start it again; only `resume --enqueue` does.
      if (ENDED.has(status) && data.options?.resume !== true) return { outcome: 'completed', label: status };
      const result = await resumeWorkflow(resumeOptions(data, runner, stop.signal));
      return { outcome: 'completed', label: result.status };
    } catch (error) {
      if (stop.signal.aborted) return { outcome: 'released', label: 'released' };
      if (!isSwitchboardError(error)) return failed(error);
      if (error.code === 'RUN_NOT_FOUND') return { outcome: 'completed', label: 'run-not-found' };
      // Another process took the run over: it advances it from here.
      if (error.code === 'WORKFLOW_LOST') return { outcome: 'completed', label: 'taken' };
      if (error.code !== 'WORKFLOW_LOCKED') return failed(error);
      // Held by another process: a live one advances the run, and ends it or lets it go; a dead one frees
      // it (on this host at once, on another once its heartbeat is stale). Wait for either: completing
      // the job now would leave the run to a holder that may let go of it with no job left to take it.
      if (!waiting) log?.(`switchboard: ${redactSecrets(error.message)}; the job waits for it`);
      waiting = true;
      if (!(await pause(LOCKED_POLL_MS, stop.signal))) return { outcome: 'released', label: 'released' };
    }
  }
}

function resumeOptions(
  data: WorkflowJobData,
  runner: WorkflowJobRunnerOptions,
  signal: AbortSignal,
): ResumeWorkflowOptions {
  const job = data.options ?? {};
  const options: ResumeWorkflowOptions & WorkflowEngineOptions = {
    runId: data.runId,
    ...engineOptions(job, runner, signal),
  };
  if (runner.memberJobs !== undefined) options.memberJobs = runner.memberJobs(job);
  if (job.migrate === true) options.migrate = true;
  // Only `resume --enqueue` restarts a failed run; any other job continues one that has not ended.
  if (job.resume !== true) options.unlessEnded = true;
  if (job.limits !== undefined) options.limits = job.limits;
  return options;
}

/** The engine settings a job's options and this worker's give a run (or one of its members). */
export function engineOptions(
  job: WorkflowJobOptions,
  runner: WorkflowJobRunnerOptions,
  signal: AbortSignal,
): WorkflowEngineOptions {
  const options: WorkflowEngineOptions = {
    providers: runner.providers,
    providerMap: { ...runner.providerMap, ...job.providerMap },
    abortSignal: signal,
  };
  if (runner.stateDir !== undefined) options.stateDir = runner.stateDir;
  if (runner.roles !== undefined) options.roles = runner.roles;
  if (runner.callDefaults !== undefined) options.callDefaults = runner.callDefaults;
  if (runner.staleAfterMs !== undefined) options.staleAfterMs = runner.staleAfterMs;
  if (runner.databaseBackAt !== undefined) options.databaseBackAt = runner.databaseBackAt;
  if (job.provider !== undefined) options.provider = job.provider;
  if (job.skipGates === true) options.skipGates = true;
  if (job.allowMcp === true) options.allowMcp = true;
  return options;
}

/**
 * The engine's abort for a release: `WORKFLOW_LOST` is the one reason on which it stops without writing
 * (no failed row, no failed run), leaving the interrupted step for the next owner to run again.
 */
export function releaseController(releaseSignal: AbortSignal): AbortController {
  const controller = new AbortController();
  const release = (): void =>
    controller.abort(
      new SwitchboardError('WORKFLOW_LOST', 'the worker let the run go; another worker resumes it', {
        retryable: true,
        details: { released: true },
      }),
    );
  if (releaseSignal.aborted) release();
  else releaseSignal.addEventListener('abort', release, { once: true });
  return controller;
}

/** Waits `ms`; false when `signal` aborted first. */
function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export function failed(error: unknown): WorkflowJobResult {
  const code = isSwitchboardError(error) ? error.code : 'INTERNAL';
  const message = error instanceof Error ? error.message : String(error);
  return { outcome: 'failed', label: `error ${code}: ${redactSecrets(message.split('\n', 1)[0] ?? '')}` };
}
