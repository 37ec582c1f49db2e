import { SwitchboardError } from '../core/errors.js';
import { evaluateValue } from './engine-deps.js';
import { errorInfo, failRun, refreshRun, type RunStop } from './engine-end.js';
import { iterationLimit } from './engine-limits.js';
import { chooseRoute, takenRoute } from './engine-routes.js';
import { executeStep, stepKey, type ExecutionSlot } from './engine-step.js';
import { runMembersAsJobs } from './group-jobs.js';
import type { RunExecution } from './engine-types.js';
import type { ForEachGroup, GroupDefinition, StepDefinition } from './model.js';
import { buildScope, recordFinished } from './scope.js';
import type { TemplateScope } from './step-executor.js';
import { eventOutput } from './graph.js';

/** One member of a group execution: a parallel group's step, or a for_each item. */
export interface Member {
  step: StepDefinition;
  /** Key of the member within the group: the step name, or the item's key (or index). */
  name: string;
  scope: TemplateScope;
  itemIndex?: number;
  itemKey?: string;
}

/** How one member ended (`ABORTED` when fail_fast stopped it). */
export interface MemberResult {
  name: string;
  ok: boolean;
  output?: unknown;
  error?: { code: string; message: string };
}

/**
 * Runs a `parallel` or `for_each` group as its own row plus one row per member. A member that finished
 * in an earlier attempt (the process died mid-group) is replayed, not run again. Failure modes follow
 * Conductor: fail_fast aborts the others at the first failure; continue_on_error fails only when every
 * member failed; all_or_nothing runs all and fails if any failed.
 */
export async function runGroup(exec: RunExecution, group: GroupDefinition): Promise<RunStop | undefined> {
  const visit = exec.state.visits.get(group.name) ?? 0;
  const groupKey = stepKey(exec.run.id, group.name, visit);
  await exec.store.startStep(
    exec.run.id,
    exec.lock.token,
    { key: groupKey, step: group.name, type: group.kind, visit },
    {
      type: 'group-start',
      step: group.name,
      key: groupKey,
      data: { kind: group.kind },
    },
  );
  await exec.deliverEvents();
  const scope = buildScope(exec.workflow, exec.state);
  let members: Member[];
  try {
    members = groupMembers(exec, group, scope);
  } catch (error) {
    return await endGroup(exec, group, groupKey, scope, [], errorInfo(error));
  }
  // The dashboard shows `n/N` of a group from the first item on: N is known only now (for_each items
  // come from a template).
  await exec.emit({
    type: 'group-members',
    step: group.name,
    key: groupKey,
    data: { count: members.length, members: members.slice(0, 200).map((member) => member.name) },
  });
  const limit = iterationLimit(exec, group.name, await membersToRun(exec, groupKey, members));
  if (limit !== undefined) return await endGroup(exec, group, groupKey, scope, [], errorInfo(limit));
  // On workers each member is a job of its own, so the members spread over the machines.
  const results =
    exec.options.memberJobs === undefined
      ? await runMembers(exec, group, groupKey, visit, members)
      : await runMembersAsJobs(exec, group, groupKey, visit, members);
  return endGroup(exec, group, groupKey, scope, results, groupFailure(group, results));
}

/** How many members have not completed yet (a resumed group replays the others, which count no more). */
async function membersToRun(exec: RunExecution, groupKey: string, members: Member[]): Promise<number> {
  const rows = await exec.store.steps(exec.run.id);
  const completed = new Set(
    rows
      .filter(
        (row) => row.groupKey === groupKey && (row.status === 'completed' || row.status === 'terminated'),
      )
      .map((row) => row.key),
  );
  return members.filter((member) => !completed.has(memberKey(groupKey, member))).length;
}

/** The group's members, in order: a parallel group's steps, or one per for_each item. */
export function groupMembers(exec: RunExecution, group: GroupDefinition, scope: TemplateScope): Member[] {
  return group.kind === 'parallel' ? parallelMembers(exec, group.agents) : forEachMembers(exec, group, scope);
}

/** A member's step key: `<group key>/<member name>`. */
export function memberKey(groupKey: string, member: Member): string {
  return `${groupKey}/${member.name}`;
}

function parallelMembers(exec: RunExecution, names: readonly string[]): Member[] {
  return names.map((name) => {
    const step = exec.workflow.steps.get(name);
    if (step === undefined) {
      throw new SwitchboardError(
        'WORKFLOW_INVALID',
        `${exec.workflow.file}: parallel member "${name}" is not a step`,
      );
    }
    return { step, name, scope: buildScope(exec.workflow, exec.state, step) };
  });
}

function forEachMembers(exec: RunExecution, group: ForEachGroup, scope: TemplateScope): Member[] {
  const where = { file: exec.workflow.file, step: group.name, field: 'source' };
  const items = evaluateValue(group.source, scope, where);
  if (!Array.isArray(items)) {
    throw new SwitchboardError(
      'WORKFLOW_TEMPLATE',
      `${exec.workflow.file}: step "${group.name}" field "source": expected a list, got ${items === null ? 'null' : typeof items}`,
    );
  }
  const base = buildScope(exec.workflow, exec.state, group.agent);
  return items.map((item, index) => {
    const key = group.keyBy === undefined ? undefined : keyOf(item, group.keyBy, group.as, index);
    const member: Member = {
      step: group.agent,
      name: key ?? String(index),
      scope: { ...base, [group.as]: item, _index: index, ...(key === undefined ? {} : { _key: key }) },
      itemIndex: index,
    };
    if (key !== undefined) member.itemKey = key;
    return member;
  });
}

/** The `key_by` value of an item (a dotted path, which may start with the loop variable), else its index. */
function keyOf(item: unknown, path: string, as: string, index: number): string {
  const parts = path.split('.');
  if (parts[0] === as && !(item !== null && typeof item === 'object' && as in item)) parts.shift();
  let value: unknown = item;
  for (const part of parts) {
    if (value === null || typeof value !== 'object' || !(part in value)) return String(index);
    value = (value as Record<string, unknown>)[part];
  }
  return typeof value === 'string' ? value : JSON.stringify(value);
}

async function runMembers(
  exec: RunExecution,
  group: GroupDefinition,
  groupKey: string,
  visit: number,
  members: Member[],
): Promise<MemberResult[]> {
  const stop = new AbortController();
  const signal = AbortSignal.any([exec.signal, stop.signal]);
  const failFast = group.failureMode === 'fail_fast';
  const batch = group.kind === 'for_each' ? Math.max(1, group.maxConcurrent) : members.length;
  const results: MemberResult[] = [];
  for (let start = 0; start < members.length; start += batch) {
    if (failFast && stop.signal.aborted) break;
    const slice = members.slice(start, start + batch);
    const settled = await Promise.all(
      slice.map(async (member) => {
        const result = await runMember(exec, groupKey, visit, member, signal);
        if (!result.ok && failFast && !stop.signal.aborted) {
          stop.abort(
            new SwitchboardError(
              'ABORTED',
              `stopped: "${member.name}" failed in group "${group.name}" (fail_fast)`,
            ),
          );
        }
        return result;
      }),
    );
    results.push(...settled);
  }
  return results;
}

async function runMember(
  exec: RunExecution,
  groupKey: string,
  visit: number,
  member: Member,
  signal: AbortSignal,
): Promise<MemberResult> {
  const done = await exec.store.getStep(memberKey(groupKey, member));
  if (done?.status === 'completed') return { name: member.name, ok: true, output: done.output };
  return executeMember(exec, groupKey, visit, member, signal);
}

/**
 * Runs one member's step and records its end (fenced by `exec.lock.token`: the run owner's, or a member
 * job's claim on the row). A gate cannot park inside a group: it fails the member.
 */
export async function executeMember(
  exec: RunExecution,
  groupKey: string,
  visit: number,
  member: Member,
  signal: AbortSignal,
): Promise<MemberResult> {
  const key = memberKey(groupKey, member);
  const slot: ExecutionSlot = {
    step: member.step,
    type: member.step.type,
    key,
    visit,
    scope: member.scope,
    signal,
    groupKey,
  };
  if (member.itemIndex !== undefined) slot.itemIndex = member.itemIndex;
  if (member.itemKey !== undefined) slot.itemKey = member.itemKey;
  const { outcome, costUsd } = await executeStep(exec, slot);
  const ok = outcome.status === 'completed' || outcome.status === 'terminated';
  const error = ok
    ? undefined
    : outcome.status === 'waiting'
      ? {
          code: 'WORKFLOW_INVALID',
          message: `gate "${member.step.name}" cannot wait inside a group; answer it with --skip-gates`,
        }
      : (outcome.error ?? { code: 'WORKFLOW_FAILED', message: `"${member.name}" failed` });
  await exec.store.endStep(
    exec.run.id,
    exec.lock.token,
    {
      key,
      status: ok ? 'completed' : 'failed',
      output: outcome.output,
      costUsd,
      countsIteration: true,
      ...(error === undefined ? {} : { errorCode: error.code, error: error.message }),
    },
    {
      type: 'step-end',
      step: member.step.name,
      key,
      data: {
        status: ok ? 'completed' : 'failed',
        costUsd,
        ...(error ?? {}),
        ...eventOutput(outcome.output),
      },
    },
  );
  await exec.deliverEvents();
  exec.boundary('step-complete', key);
  return ok
    ? { name: member.name, ok, output: outcome.output }
    : { name: member.name, ok, ...(error === undefined ? {} : { error }) };
}

function groupFailure(
  group: GroupDefinition,
  results: MemberResult[],
): { code: string; message: string } | undefined {
  const failed = results.filter((result) => !result.ok);
  if (failed.length === 0) return undefined;
  if (group.failureMode === 'continue_on_error' && failed.length < results.length) return undefined;
  const first = failed.find((result) => result.error?.code !== 'ABORTED') ?? failed[0];
  const detail = `"${first?.name}": ${first?.error?.message ?? 'failed'}`;
  const summary =
    group.failureMode === 'continue_on_error'
      ? `every member of group "${group.name}" failed; first ${detail}`
      : `group "${group.name}" failed (${group.failureMode}, ${failed.length} of ${results.length}): ${detail}`;
  return {
    code: first?.error?.code === 'ABORTED' ? 'WORKFLOW_FAILED' : (first?.error?.code ?? 'WORKFLOW_FAILED'),
    message: summary,
  };
}

/** Conductor's group output: `outputs` and `errors` keyed by member (a list of outputs for for_each without key_by). */
function groupOutput(
  group: GroupDefinition,
  results: MemberResult[],
): { outputs: unknown; errors: Record<string, unknown> } {
  const errors: Record<string, unknown> = {};
  for (const result of results) if (!result.ok) errors[result.name] = result.error ?? {};
  const succeeded = results.filter((result) => result.ok);
  if (group.kind === 'for_each' && group.keyBy === undefined) {
    return { outputs: succeeded.map((result) => result.output), errors };
  }
  return { outputs: Object.fromEntries(succeeded.map((result) => [result.name, result.output])), errors };
}

async function endGroup(
  exec: RunExecution,
  group: GroupDefinition,
  key: string,
  scope: TemplateScope,
  results: MemberResult[],
  failure: { code: string; message: string } | undefined,
): Promise<RunStop | undefined> {
  let output: unknown = groupOutput(group, results);
  let next: string | undefined;
  let taken: { index: number; when?: string } | undefined;
  if (failure === undefined) {
    try {
      const route = chooseRoute(group.routes, output, scope, {
        file: exec.workflow.file,
        step: group.name,
        group: true,
      });
      next = route.target;
      output = route.output;
      taken = takenRoute(group.routes, route);
    } catch (error) {
      failure = errorInfo(error);
    }
  }
  const status = failure === undefined ? 'completed' : 'failed';
  await exec.store.endStep(
    exec.run.id,
    exec.lock.token,
    {
      key,
      status,
      output,
      costUsd: 0,
      countsIteration: false,
      currentStep: next ?? group.name,
      ...(next === undefined ? {} : { next }),
      ...(failure === undefined ? {} : { errorCode: failure.code, error: failure.message }),
    },
    {
      type: 'group-end',
      step: group.name,
      key,
      data: {
        status,
        ...(next === undefined ? {} : { next }),
        ...(taken === undefined ? {} : { route: taken }),
        ...(failure ?? {}),
      },
    },
  );
  if (failure !== undefined) return failRun(exec, failure);
  recordFinished(exec.state, group.name, output, true);
  await refreshRun(exec);
  await exec.deliverEvents();
  exec.boundary('step-complete', key);
  return undefined;
}
