import { hostname } from 'node:os';
import type { Job } from 'pg-boss';
import { isSwitchboardError } from '../core/errors.js';
import type { MemberJobData } from './queues.js';
import {
  engineOptions,
  failed,
  releaseController,
  type WorkflowJobResult,
  type WorkflowJobRunnerOptions,
} from './workflow-job.js';

/**
 * Runs one workflow group member (a for_each item or parallel member) on this worker. The job's id is
 * the claim its row carries: a retry of the job (its worker died) runs the member again under the same
 * claim, following the step's own exactly-once rules; a member that ended, or that another job now
 * holds, is left alone. The member's own end (completed or failed) completes the job: the coordinator
 * reads it from the row. A release (drain) stops it without writing, and pg-boss hands it to another worker.
 */
export async function runMemberJob(
  job: Job<MemberJobData>,
  runner: WorkflowJobRunnerOptions,
  releaseSignal: AbortSignal,
): Promise<WorkflowJobResult> {
  const data = job.data;
  if (typeof data?.runId !== 'string' || typeof data.member?.groupKey !== 'string')
    return { outcome: 'completed', label: 'malformed-job' };
  const { runWorkflowMember } = await import('../workflows/engine-member.js');
  const stop = releaseController(releaseSignal);
  const name = `${data.member.group}/${data.member.member}`;
  try {
    const end = await runWorkflowMember({
      ...engineOptions(data.options ?? {}, runner, stop.signal),
      job: data.member,
      claim: job.id,
      runner: `pid ${process.pid} on ${hostname()}`,
    });
    return { outcome: 'completed', label: `${end} ${name}` };
  } catch (error) {
    if (stop.signal.aborted && isSwitchboardError(stop.signal.reason) && error === stop.signal.reason)
      return { outcome: 'released', label: 'released' };
    if (!isSwitchboardError(error)) return failed(error);
    if (error.code === 'RUN_NOT_FOUND') return { outcome: 'completed', label: 'run-not-found' };
    // The run's owner ended the member (fail_fast, the run failed) or the run was cancelled.
    if (error.code === 'WORKFLOW_LOST') return { outcome: 'completed', label: `stopped ${name}` };
    if (error.code === 'WORKFLOW_CANCELLED') return { outcome: 'completed', label: `cancelled ${name}` };
    return failed(error);
  }
}
