import { SwitchboardError } from '../core/errors.js';
import type { WorkflowRunRow, WorkflowStore } from '../store/workflow-records.js';
import type { WorkflowEngineOptions, WorkflowMemberJob } from './api-types.js';
import { errorInfo } from './engine-end.js';
import { effectiveLimits } from './engine-limits.js';
import { loadDefinition } from './engine-load.js';
import { boundaryHook, callsModels } from './engine-session.js';
import type { RunExecution } from './engine-types.js';
import { executeMember, groupMembers, type Member } from './groups.js';
import type { RunLock } from './run-lock.js';
import { buildScope, replayState } from './scope.js';
import { STEP_EXECUTORS } from './steps/index.js';
import { openStores, type StoreSession } from './stores.js';

export interface RunWorkflowMemberOptions extends WorkflowEngineOptions {
  job: WorkflowMemberJob;
  /** The job's id: the claim the member's row carries, and the only token its writes are taken with. */
  claim: string;
  /** Who runs it (`pid N on host`), recorded on the member's row. */
  runner: string;
}

/**
 * How a member job ended: the member's own end (`completed`, `failed`), or nothing to do — the member
 * ended already (`already-ended`), another job holds it (`superseded`), the run is not running (`run-ended`).
 */
export type WorkflowMemberEnd = 'completed' | 'failed' | 'already-ended' | 'superseded' | 'run-ended';

/** How often a member job looks whether it still holds its row and the run still runs (ms). */
const DEFAULT_WATCH_MS = 1_000;

/**
 * Runs one `for_each` item or `parallel` member of a run another process coordinates (a member job on a
 * worker): rebuilds the run's state from the ledger as a resume does, runs the member's step with the
 * step's own exactly-once rules (a rerun attempt sees its earlier attempt's progress notes) and records
 * its end, every write fenced by the job's claim on the row. Stops without writing when the claim is
 * revoked (fail_fast, the run failed) or the run is cancelled.
 *
 * @throws SwitchboardError `WORKFLOW_LOST` / `WORKFLOW_CANCELLED` (the reason it stopped), `RUN_NOT_FOUND`
 */
export async function runWorkflowMember(options: RunWorkflowMemberOptions): Promise<WorkflowMemberEnd> {
  const session = await openStores(options);
  try {
    const { job, claim } = options;
    const run = await session.store.getRun(job.runId);
    if (run === undefined)
      throw new SwitchboardError('RUN_NOT_FOUND', `there is no workflow run ${job.runId}`);
    if (run.status !== 'running') return 'run-ended';
    const key = `${job.groupKey}/${job.member}`;
    const row = await session.store.getStep(key);
    if (row !== undefined && row.status !== 'running') return 'already-ended';
    if (row?.claim !== claim) return 'superseded';
    const watch = watchClaim(session.store, run.id, key, claim, options);
    try {
      const exec = await memberExecution(session, run, options, watch.lock);
      const member = findMember(exec, job);
      if ('message' in member) {
        await session.store.endStep(
          run.id,
          claim,
          {
            key,
            status: 'failed',
            costUsd: 0,
            errorCode: member.code,
            error: member.message,
            countsIteration: false,
          },
          { type: 'step-end', key, data: { status: 'failed', ...member } },
        );
        return 'failed';
      }
      const result = await executeMember(exec, job.groupKey, job.visit, member, exec.signal);
      return result.ok ? 'completed' : 'failed';
    } finally {
      watch.stop();
    }
  } finally {
    await session.close();
  }
}

/** The member's definition and scope, as the coordinator saw them when the group started. */
function findMember(exec: RunExecution, job: WorkflowMemberJob): Member | { code: string; message: string } {
  if (exec.workflow.hash !== exec.run.fileHash) {
    return {
      code: 'WORKFLOW_CHANGED',
      message: `${exec.workflow.file} on this machine differs from the file workflow run ${exec.run.id} runs`,
    };
  }
  const group = exec.workflow.groups.get(job.group);
  if (group === undefined) {
    return { code: 'WORKFLOW_INVALID', message: `${exec.workflow.file}: there is no group "${job.group}"` };
  }
  try {
    const member = groupMembers(exec, group, buildScope(exec.workflow, exec.state)).find(
      (candidate) => candidate.name === job.member,
    );
    if (member !== undefined) return member;
    return { code: 'WORKFLOW_INVALID', message: `group "${job.group}" has no member "${job.member}"` };
  } catch (error) {
    return errorInfo(error);
  }
}

async function memberExecution(
  session: StoreSession,
  run: WorkflowRunRow,
  options: RunWorkflowMemberOptions,
  lock: RunLock,
): Promise<RunExecution> {
  const workflow = await loadDefinition(run.file, options);
  const steps = await session.store.steps(run.id);
  const key = `${options.job.groupKey}/${options.job.member}`;
  // Members never queue members of their own: a sub-workflow member runs its groups in this process.
  const { memberJobs: _memberJobs, ...engineOptions } = options;
  const exec: RunExecution = {
    workflow,
    run,
    store: session.store,
    ledger: session.ledger,
    stateDir: session.stateDir,
    lock,
    state: replayState(run.inputs, steps),
    limits: effectiveLimits(workflow.limits, run.limits),
    options: engineOptions,
    executors: { ...STEP_EXECUTORS, ...options._internal?.executors },
    signal: lock.signal,
    runner: options.runner,
    depth: 0,
    now: options._internal?.now ?? Date.now,
    async emit(event) {
      await session.store.appendMemberEvent(run.id, lock.token, key, event);
    },
    async deliverEvents() {},
    boundary: boundaryHook(options),
  };
  if (callsModels(workflow)) exec.resolveStepSpec = (await import('./providers.js')).resolveStepSpec;
  return exec;
}

/**
 * The member job's stand-in for a run lock: its signal aborts when the caller aborts (a worker letting
 * go), when the row's claim is no longer this job's (fail_fast stopped it, the run's owner ended it) or
 * when the run stops running (cancelled, failed).
 */
function watchClaim(
  store: WorkflowStore,
  runId: string,
  key: string,
  claim: string,
  options: RunWorkflowMemberOptions,
): { lock: RunLock; stop: () => void } {
  const controller = new AbortController();
  const caller = options.abortSignal;
  const onCaller = (): void => controller.abort(caller?.reason);
  if (caller?.aborted === true) onCaller();
  else caller?.addEventListener('abort', onCaller, { once: true });
  let looking = false;
  const look = async (): Promise<void> => {
    const [row, run] = await Promise.all([store.getStep(key), store.getRun(runId)]);
    if (run?.status === 'cancelled') {
      controller.abort(new SwitchboardError('WORKFLOW_CANCELLED', `workflow run ${runId} was cancelled`));
    } else if (row?.claim !== claim || run?.status !== 'running') {
      controller.abort(
        new SwitchboardError(
          'WORKFLOW_LOST',
          `${key} of workflow run ${runId} was ended by its run's owner`,
          {
            retryable: false,
          },
        ),
      );
    }
  };
  const timer = setInterval(() => {
    if (looking || controller.signal.aborted) return;
    looking = true;
    // A busy ledger skips one look; the next one tries again.
    look()
      .catch(() => {})
      .finally(() => (looking = false));
  }, options._internal?.pollMs ?? DEFAULT_WATCH_MS);
  timer.unref();
  const lock: RunLock = {
    token: claim,
    owner: { pid: process.pid, host: '', token: claim },
    signal: controller.signal,
    async release() {},
  };
  return {
    lock,
    stop: () => {
      clearInterval(timer);
      caller?.removeEventListener('abort', onCaller);
    },
  };
}
