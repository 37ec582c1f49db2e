import { randomUUID } from 'node:crypto';
import type { WorkflowStepRow } from '../store/workflow-records.js';
import type { WorkflowMemberJobs } from './api-types.js';
import type { RunExecution } from './engine-types.js';
import { memberKey, type Member, type MemberResult } from './groups.js';
import type { GroupDefinition } from './model.js';

/** Job states in which a member's job will still run (or is running) it. */
const LIVE_JOB = new Set(['created', 'retry', 'active']);
/** How often the coordinator asks the queue about a member whose row has not ended (ms). */
const JOB_CHECK_MS = 2_000;
const DEFAULT_POLL_MS = 250;

/** A member handed to a job and not ended yet. */
interface InFlight {
  index: number;
  claim: string;
  checkedAt: number;
}

/** The coordinator's view of one group execution run as jobs. */
interface GroupJobs {
  exec: RunExecution;
  jobs: WorkflowMemberJobs;
  group: GroupDefinition;
  groupKey: string;
  visit: number;
  members: Member[];
  results: (MemberResult | undefined)[];
  inFlight: Map<number, InFlight>;
}

/**
 * Runs a group's members as jobs of their own (on workers): at most `max_concurrent` (for_each) of them
 * unfinished at once, each one's row handed to its job's id (the claim that fences its writes) before the
 * job is sent. Members that completed are replayed; members another coordinator queued whose jobs still
 * live are waited for, not queued again. Returns the members' results in member order; with fail_fast
 * the first failure stops the rest (queued ones end as ABORTED, later ones are never queued).
 */
export async function runMembersAsJobs(
  exec: RunExecution,
  group: GroupDefinition,
  groupKey: string,
  visit: number,
  members: Member[],
): Promise<MemberResult[]> {
  const jobs = exec.options.memberJobs as WorkflowMemberJobs;
  const state: GroupJobs = {
    exec,
    jobs,
    group,
    groupKey,
    visit,
    members,
    results: new Array<MemberResult | undefined>(members.length),
    inFlight: new Map(),
  };
  const limit = group.kind === 'for_each' ? Math.max(1, group.maxConcurrent) : members.length;
  const failFast = group.failureMode === 'fail_fast';
  const waiting = await adoptRecorded(state);
  let stopped = failFast && state.results.some((result) => result?.ok === false);
  for (;;) {
    while (!stopped && state.inFlight.size < limit && waiting.length > 0) {
      await dispatch(state, waiting.shift() as number);
    }
    if (state.inFlight.size === 0) break;
    await pause(jobs.pollMs ?? DEFAULT_POLL_MS, exec.signal);
    const ended = await collect(state, waiting);
    if (failFast && ended.some((result) => !result.ok)) stopped = true;
    if (stopped) await abortInFlight(state);
  }
  return state.results.filter((result): result is MemberResult => result !== undefined);
}

/**
 * Sorts the members by what the ledger says of them: completed ones are replayed, failed ones (an
 * earlier attempt of the run) and unqueued ones wait to be queued, and ones whose job still lives (a
 * coordinator before this one queued them) are in flight. Returns the indexes waiting, in order.
 */
async function adoptRecorded(state: GroupJobs): Promise<number[]> {
  const rows = await memberRows(state);
  const waiting: number[] = [];
  for (const [index, member] of state.members.entries()) {
    const row = rows.get(memberKey(state.groupKey, member));
    if (row?.status === 'completed' || row?.status === 'terminated') {
      state.results[index] = { name: member.name, ok: true, output: row.output };
    } else if (
      row?.status === 'running' &&
      row.claim !== undefined &&
      LIVE_JOB.has((await state.jobs.state(row.claim)) ?? '')
    ) {
      state.inFlight.set(index, { index, claim: row.claim, checkedAt: state.exec.now() });
    } else {
      waiting.push(index);
    }
  }
  return waiting;
}

/** Hands one member to a new job: its row carries the job's id first, so no job runs an unclaimed row. */
async function dispatch(state: GroupJobs, index: number): Promise<void> {
  const { exec, group, groupKey, visit } = state;
  const member = state.members[index] as Member;
  const key = memberKey(groupKey, member);
  const claim = randomUUID();
  const queued = await exec.store.dispatchMember(
    exec.run.id,
    exec.lock.token,
    {
      key,
      step: member.step.name,
      type: member.step.type,
      visit,
      groupKey,
      ...(member.itemIndex === undefined ? {} : { itemIndex: member.itemIndex }),
      ...(member.itemKey === undefined ? {} : { itemKey: member.itemKey }),
    },
    claim,
  );
  if (!queued) {
    // Completed since the rows were read (a job of an earlier coordinator): replayed.
    const row = await exec.store.getStep(key);
    state.results[index] = { name: member.name, ok: true, output: row?.output };
    return;
  }
  await state.jobs.send(
    { runId: exec.run.id, group: group.name, groupKey, visit, member: member.name },
    claim,
  );
  state.inFlight.set(index, { index, claim, checkedAt: exec.now() });
}

/**
 * Takes the results of members whose rows ended; a member whose job is gone without ending it is queued
 * again (its job never ran: the coordinator before this one died before sending it) or, when its job
 * failed for good (its workers died `retryLimit` times over), ended as failed. Returns what ended.
 */
async function collect(state: GroupJobs, waiting: number[]): Promise<MemberResult[]> {
  const { exec } = state;
  const rows = await memberRows(state);
  const ended: MemberResult[] = [];
  for (const flight of [...state.inFlight.values()]) {
    const member = state.members[flight.index] as Member;
    const key = memberKey(state.groupKey, member);
    let result = rowResult(member, rows.get(key));
    if (result === undefined && exec.now() - flight.checkedAt >= JOB_CHECK_MS) {
      flight.checkedAt = exec.now();
      const job = await state.jobs.state(flight.claim);
      if (job === 'failed' || job === 'cancelled') {
        result = await abandon(state, flight, {
          code: 'WORKFLOW_FAILED',
          message: `the job running "${member.name}" ${job === 'failed' ? 'failed on every try (its workers died or lost the database)' : 'was cancelled'}`,
        });
      } else if (!LIVE_JOB.has(job ?? '')) {
        const again = rowResult(member, await exec.store.getStep(key));
        if (again === undefined) {
          state.inFlight.delete(flight.index);
          waiting.unshift(flight.index);
          continue;
        }
        result = again;
      }
    }
    if (result === undefined) continue;
    state.inFlight.delete(flight.index);
    state.results[flight.index] = result;
    ended.push(result);
    await exec.deliverEvents();
    exec.boundary('step-complete', key);
  }
  return ended;
}

/** fail_fast: the members still running are stopped (their claims revoked) and count as ABORTED. */
async function abortInFlight(state: GroupJobs): Promise<void> {
  for (const flight of [...state.inFlight.values()]) {
    const member = state.members[flight.index] as Member;
    state.results[flight.index] = await abandon(state, flight, {
      code: 'ABORTED',
      message: `stopped: a member failed in group "${state.group.name}" (fail_fast)`,
    });
    state.inFlight.delete(flight.index);
    state.exec.boundary('step-complete', memberKey(state.groupKey, member));
  }
}

/** Ends a member as failed in its job's place; when the member ended first, its own end is the result. */
async function abandon(
  state: GroupJobs,
  flight: InFlight,
  error: { code: string; message: string },
): Promise<MemberResult> {
  const { exec } = state;
  const member = state.members[flight.index] as Member;
  const key = memberKey(state.groupKey, member);
  const abandoned = await exec.store.abandonMember(exec.run.id, exec.lock.token, key, flight.claim, error, {
    type: 'step-end',
    step: member.step.name,
    key,
    data: { status: 'failed', costUsd: 0, ...error },
  });
  if (abandoned) return { name: member.name, ok: false, error };
  return (
    rowResult(member, await exec.store.getStep(key)) ?? {
      name: member.name,
      ok: false,
      error: { code: 'WORKFLOW_FAILED', message: `"${member.name}" did not end` },
    }
  );
}

/** The member's result once its row ended, else undefined. */
function rowResult(member: Member, row: WorkflowStepRow | undefined): MemberResult | undefined {
  if (row === undefined || row.status === 'running') return undefined;
  if (row.status === 'completed' || row.status === 'terminated')
    return { name: member.name, ok: true, output: row.output };
  return {
    name: member.name,
    ok: false,
    error: { code: row.errorCode ?? 'WORKFLOW_FAILED', message: row.error ?? `"${member.name}" failed` },
  };
}

async function memberRows(state: GroupJobs): Promise<Map<string, WorkflowStepRow>> {
  const rows = await state.exec.store.steps(state.exec.run.id);
  return new Map(rows.filter((row) => row.groupKey === state.groupKey).map((row) => [row.key, row]));
}

/** Waits `ms`; throws the signal's reason when it aborts first (cancel, timeout, a lost lock). */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
