import type { PgBoss } from 'pg-boss';
import type { WorkerSettings } from '../core/config.js';
import { SwitchboardError } from '../core/errors.js';
import type { RecordedWorkflowRun, RunWorkflowOptions } from '../workflows/api-types.js';
import { startBoss } from './boss.js';
import {
  DEAD_LETTER_QUEUE,
  MAX_EXPIRY_SECONDS,
  WORKFLOW_QUEUE,
  type WorkflowJobData,
  type WorkflowJobOptions,
} from './queues.js';

interface WorkflowQueueOptions {
  /** The PostgreSQL database the workers share. */
  url: string;
  /** Heartbeat, retries: each job carries them. */
  settings: WorkerSettings;
  /** How the run is to be advanced (provider flags, `--migrate`, raised limits). */
  job?: WorkflowJobOptions;
}

export interface EnqueueWorkflowRunOptions
  extends Omit<RunWorkflowOptions, 'dryRun' | 'providers' | 'ledger'>, WorkflowQueueOptions {}

/** A recorded run and the job sent for it (none when its `run_key` found a run already queued, parked or ended). */
export interface EnqueuedWorkflowRun extends RecordedWorkflowRun {
  jobId?: string;
}

/**
 * Checks the workflow file and inputs as `workflow run` does, records the run at its entry step in the
 * shared database (so `workflow status` on any machine shows it at once) and sends one "advance" job
 * for a `switchboard worker --queues workflows` to take. A `run_key` naming an existing run sends a job
 * only when that run is running with no job queued or active for it (an orphan).
 */
export async function enqueueWorkflowRun({
  url,
  settings,
  job = {},
  ...runOptions
}: EnqueueWorkflowRunOptions): Promise<EnqueuedWorkflowRun> {
  const { recordWorkflowRun } = await import('../workflows/index.js');
  // Recording first: a bad file or input is refused before the queue is touched, and nothing is recorded.
  const recorded = await recordWorkflowRun(runOptions);
  if (!recorded.created && recorded.status !== 'running') return recorded;
  const boss = await startBoss({ url, settings, supervise: false });
  try {
    if (!recorded.created && (await pendingJob(boss, recorded.runId)) !== undefined) return recorded;
    const jobId = await sendAdvance(boss, recorded.runId, settings, job);
    return { ...recorded, jobId };
  } finally {
    await boss.stop({ graceful: false, close: true });
  }
}

export interface EnqueueWorkflowAdvanceOptions extends WorkflowQueueOptions {
  runId: string;
}

/**
 * Sends an "advance run R" job (after a gate answer, or `workflow resume --enqueue`). No second job is
 * sent while one is still queued for the run: that one will see the run as it is now. Returns the job id,
 * or undefined when a queued job was already there.
 */
export async function enqueueWorkflowAdvance({
  runId,
  url,
  settings,
  job = {},
}: EnqueueWorkflowAdvanceOptions): Promise<string | undefined> {
  const boss = await startBoss({ url, settings, supervise: false });
  try {
    if ((await pendingJob(boss, runId, { queuedOnly: true })) !== undefined) return undefined;
    return await sendAdvance(boss, runId, settings, job);
  } finally {
    await boss.stop({ graceful: false, close: true });
  }
}

/** The run's queued (or, unless `queuedOnly`, active) job, if there is one. */
async function pendingJob(
  boss: PgBoss,
  runId: string,
  { queuedOnly = false }: { queuedOnly?: boolean } = {},
): Promise<string | undefined> {
  const jobs = await boss.findJobs(WORKFLOW_QUEUE, { key: runId });
  const pending = jobs.find(
    (found) =>
      found.state === 'created' || found.state === 'retry' || (!queuedOnly && found.state === 'active'),
  );
  return pending?.id;
}

async function sendAdvance(
  boss: PgBoss,
  runId: string,
  settings: WorkerSettings,
  options: WorkflowJobOptions,
): Promise<string> {
  const data: WorkflowJobData = { runId, options };
  const jobId = await boss.send(WORKFLOW_QUEUE, data, {
    singletonKey: runId,
    // A hard cap only: the heartbeat finds a dead worker sooner; a run parked at a gate ends its job.
    expireInSeconds: MAX_EXPIRY_SECONDS,
    heartbeatSeconds: settings.heartbeatSeconds,
    retryLimit: settings.retryLimit,
    deadLetter: DEAD_LETTER_QUEUE,
  });
  if (jobId === null) {
    throw new SwitchboardError(
      'STORE_ERROR',
      `workflow run ${runId} was recorded but the queue refused its job`,
      { hint: `queue it again with \`switchboard workflow resume ${runId} --enqueue\`` },
    );
  }
  return jobId;
}
