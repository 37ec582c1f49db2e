import type { Job, PgBoss } from 'pg-boss';
import type { WorkerSettings } from '../core/config.js';
import { isSwitchboardError } from '../core/errors.js';
import { redactSecrets } from '../core/secrets.js';
import type { AgentRunnerOptions } from '../agents/runner.js';
import { DEAD_LETTER_QUEUE, MERGE_QUEUE, mergeJobKey, type MergeJobData } from './queues.js';
import type { JobOutcome } from './worker-metrics.js';

/** A merge rarely takes more than a fetch, a merge and a push; past this pg-boss hands it to another worker. */
export const MERGE_EXPIRY_SECONDS = 900;

/**
 * Sends the merge of a run whose commit is pushed to the merge queue. The singleton key makes merges
 * into one branch of one remote wait for each other, whichever workers take them.
 */
export async function sendMergeJob(
  boss: PgBoss,
  settings: WorkerSettings,
  data: MergeJobData,
): Promise<void> {
  const jobId = await boss.send(MERGE_QUEUE, data, {
    singletonKey: mergeJobKey(data.remote, data.baseBranch),
    expireInSeconds: MERGE_EXPIRY_SECONDS,
    heartbeatSeconds: settings.heartbeatSeconds,
    retryLimit: settings.retryLimit,
    deadLetter: DEAD_LETTER_QUEUE,
  });
  if (jobId === null) throw new Error('the merge queue refused the job');
}

/**
 * Merges the job's run: the run is taken over from whichever runner pushed it and driven through its
 * merge phase only (fetch, merge onto the fetched base, push leased on it), which records its end
 * (merged, conflict). A run already merged, or merged into the remote by a worker that died before
 * recording it, ends as merged without a second merge commit.
 */
export async function runMergeJob(
  job: Job<MergeJobData>,
  runner: AgentRunnerOptions & { url: string },
  releaseSignal: AbortSignal,
): Promise<{ outcome: JobOutcome; label: string }> {
  const data = job.data;
  if (typeof data?.runId !== 'string') return { outcome: 'completed', label: 'malformed-job' };
  const { executeAgentRun } = await import('../agents/runner.js');
  try {
    const result = await executeAgentRun({ ...runner, runId: data.runId, releaseSignal, onlyMerge: true });
    if (result.status === 'running') {
      return result.phase === 'merge'
        ? { outcome: 'released', label: 'released' }
        : { outcome: 'completed', label: `not-merging (${result.phase})` };
    }
    return { outcome: 'completed', label: result.status };
  } catch (error) {
    if (isSwitchboardError(error) && error.code === 'RUN_NOT_FOUND')
      return { outcome: 'completed', label: 'run-not-found' };
    const code = isSwitchboardError(error) ? error.code : 'INTERNAL';
    const message = error instanceof Error ? error.message : String(error);
    return { outcome: 'failed', label: `error ${code}: ${redactSecrets(message.split('\n', 1)[0] ?? '')}` };
  }
}
