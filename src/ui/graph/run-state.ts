// What the run graph shows of each step, folded from the run's events (all of them live, or those up to
// the replay cursor) and, live, the run's step rows, which also know a step whose process is gone.

import type { WorkflowEventRecord } from '../../serve/ui/api-types.js';
import type { StepView } from '../types.js';

export type NodeStatus = 'pending' | 'running' | 'completed' | 'failed' | 'waiting' | 'interrupted';

/** One execution of a step (one key): a visit of a step or group, or a group's member. */
export interface VisitState {
  key: string;
  /** The graph node it belongs to: the step, or for a member its group. */
  node: string;
  /** The step that ran (a member's own step name). */
  step: string;
  visit: number;
  /** A group member's name: the parallel step, or the for_each item's key or index. */
  member?: string;
  status: NodeStatus;
  startedAt?: number;
  endedAt?: number;
  durationMs?: number;
  tokens: number;
  costUsd: number;
  provider?: string;
  next?: string;
  childRunId?: string;
  errorCode?: string;
  error?: string;
  /** A group's: how many members it has (its `group-members` event). */
  memberCount?: number;
}

export interface MemberState {
  name: string;
  status: NodeStatus;
}

/** What one graph node shows: its latest visit's status and times, totals over every visit. */
export interface NodeState {
  status: NodeStatus;
  latestKey: string;
  visits: number;
  startedAt?: number;
  endedAt?: number;
  durationMs?: number;
  tokens: number;
  costUsd: number;
  provider?: string;
  childRunId?: string;
  /** Groups: the members of the latest visit. */
  members?: MemberState[];
  /** Groups: how many members the latest visit has, once known. */
  memberCount?: number;
}

export interface RunState {
  visits: Map<string, VisitState>;
  nodes: Map<string, NodeState>;
  /** Routes taken, as `from→to`. */
  taken: Set<string>;
  runStatus?: string;
}

export function edgeKey(from: string, to: string): string {
  return `${from}→${to}`;
}

/** `<run>/<step>/<visit>[/<member>]` into its parts; undefined for a key of another run. */
export function parseKey(
  runId: string,
  key: string,
): { node: string; visit: number; member?: string } | undefined {
  if (!key.startsWith(`${runId}/`)) return undefined;
  const parts = key.slice(runId.length + 1).split('/');
  const [node, visit] = parts;
  if (node === undefined || visit === undefined) return undefined;
  const member = parts.slice(2).join('/');
  return member === '' ? { node, visit: Number(visit) } : { node, visit: Number(visit), member };
}

const number = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? value : 0);
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

function statusOf(value: unknown): NodeStatus | undefined {
  switch (value) {
    case 'running':
    case 'completed':
    case 'failed':
    case 'waiting':
    case 'interrupted':
      return value;
    case 'terminated':
      return 'completed';
    default:
      return undefined;
  }
}

function visitFor(visits: Map<string, VisitState>, runId: string, event: WorkflowEventRecord) {
  if (event.key === undefined) return undefined;
  const existing = visits.get(event.key);
  if (existing !== undefined) return existing;
  const parsed = parseKey(runId, event.key);
  if (parsed === undefined) return undefined;
  const visit: VisitState = {
    key: event.key,
    node: parsed.node,
    step: event.step ?? parsed.node,
    visit: parsed.visit,
    status: 'pending',
    tokens: 0,
    costUsd: 0,
  };
  if (parsed.member !== undefined) visit.member = parsed.member;
  visits.set(event.key, visit);
  return visit;
}

/** Applies one event to the visits (mutating them) and the taken routes. */
function applyEvent(state: RunState, runId: string, event: WorkflowEventRecord): void {
  const data = event.data ?? {};
  const at = Date.parse(event.at);
  if (event.type === 'run-end') {
    const status = text(data['status']);
    if (status !== undefined) state.runStatus = status;
    for (const visit of state.visits.values()) if (visit.status === 'running') visit.status = 'interrupted';
    return;
  }
  if (event.type === 'run-cancel') state.runStatus = 'cancelled';
  if (event.type === 'run-start' || event.type === 'run-resume') state.runStatus = 'running';
  if (event.type === 'run-waiting') state.runStatus = 'waiting';
  if (event.type === 'step-capped') {
    // The step was not run again: the run went to its on_cap instead.
    const to = text(data['to']);
    if (event.step !== undefined && to !== undefined) state.taken.add(edgeKey(event.step, to));
    return;
  }
  const visit = visitFor(state.visits, runId, event);
  if (visit === undefined) return;
  switch (event.type) {
    case 'step-start':
    case 'group-start':
      // A gate answered later starts again in the process that takes the answer: its time runs from when
      // the run reached it.
      if (visit.status !== 'waiting' || visit.startedAt === undefined) visit.startedAt = at;
      visit.status = 'running';
      delete visit.endedAt;
      break;
    case 'step-prompt': {
      const provider = text(data['provider']);
      if (provider !== undefined) visit.provider = provider;
      break;
    }
    case 'model-turn':
      visit.tokens += number(data['inputTokens']) + number(data['outputTokens']);
      break;
    case 'gate-presented':
      visit.status = 'waiting';
      break;
    case 'gate-taken':
      visit.status = 'running';
      break;
    case 'group-members': {
      const count = data['count'];
      if (typeof count === 'number') visit.memberCount = count;
      break;
    }
    case 'child-run': {
      const child = text(data['runId']);
      if (child !== undefined) visit.childRunId = child;
      break;
    }
    case 'step-end':
    case 'group-end': {
      visit.status = statusOf(data['status']) ?? 'completed';
      visit.endedAt = at;
      if (visit.startedAt !== undefined) visit.durationMs = at - visit.startedAt;
      visit.costUsd = number(data['costUsd']);
      const next = text(data['next']);
      if (next !== undefined) {
        visit.next = next;
        if (visit.member === undefined) state.taken.add(edgeKey(visit.node, next));
      }
      const code = text(data['errorCode']) ?? text(data['code']);
      const error = text(data['error']) ?? text(data['message']);
      if (code !== undefined) visit.errorCode = code;
      if (error !== undefined) visit.error = error;
      break;
    }
  }
}

/** Step rows the events do not (yet) tell: executions not seen, and a running one whose process is gone. */
function applySteps(state: RunState, runId: string, steps: readonly StepView[]): void {
  for (const row of steps) {
    const existing = state.visits.get(row.key);
    if (existing !== undefined) {
      if (row.status === 'interrupted' && existing.status === 'running') existing.status = 'interrupted';
      if (row.status === 'waiting' && existing.status === 'running') existing.status = 'waiting';
      if (existing.durationMs === undefined && row.durationMs !== undefined)
        existing.durationMs = row.durationMs;
      continue;
    }
    const parsed = parseKey(runId, row.key);
    if (parsed === undefined) continue;
    const visit: VisitState = {
      key: row.key,
      node: parsed.node,
      step: row.step,
      visit: parsed.visit,
      status: row.status,
      tokens: row.tokens === undefined ? 0 : row.tokens.input + row.tokens.output,
      costUsd: row.costUsd,
    };
    if (parsed.member !== undefined) visit.member = parsed.member;
    if (row.durationMs !== undefined) visit.durationMs = row.durationMs;
    if (row.error !== undefined) visit.error = row.error;
    state.visits.set(row.key, visit);
  }
}

/**
 * Tokens and cost of one execution with everything it ran: a step's visit, or a group's visit and its
 * members. The graph's node and the detail panel both show these sums.
 */
export function visitTotals(
  visits: ReadonlyMap<string, VisitState>,
  key: string,
): { tokens: number; costUsd: number } {
  let tokens = 0;
  let costUsd = 0;
  for (const visit of visits.values()) {
    if (visit.key !== key && !visit.key.startsWith(`${key}/`)) continue;
    tokens += visit.tokens;
    costUsd += visit.costUsd;
  }
  return { tokens, costUsd };
}

function aggregate(visits: Map<string, VisitState>): Map<string, NodeState> {
  const nodes = new Map<string, NodeState>();
  const latest = new Map<string, VisitState>();
  for (const visit of visits.values()) {
    if (visit.member !== undefined) continue;
    const current = latest.get(visit.node);
    if (current === undefined || visit.visit >= current.visit) latest.set(visit.node, visit);
  }
  for (const visit of visits.values()) {
    const top = latest.get(visit.node);
    if (top === undefined) continue;
    let node = nodes.get(visit.node);
    if (node === undefined) {
      node = { status: top.status, latestKey: top.key, visits: 0, tokens: 0, costUsd: 0 };
      if (top.startedAt !== undefined) node.startedAt = top.startedAt;
      if (top.endedAt !== undefined) node.endedAt = top.endedAt;
      if (top.durationMs !== undefined) node.durationMs = top.durationMs;
      if (top.provider !== undefined) node.provider = top.provider;
      if (top.memberCount !== undefined) node.memberCount = top.memberCount;
      nodes.set(visit.node, node);
    }
    if (visit.member === undefined) {
      const totals = visitTotals(visits, visit.key);
      node.tokens += totals.tokens;
      node.costUsd += totals.costUsd;
      node.visits += 1;
      if (visit.childRunId !== undefined) node.childRunId = visit.childRunId;
    } else if (visit.key.startsWith(`${top.key}/`)) {
      (node.members ??= []).push({ name: visit.member, status: visit.status });
    }
    if (visit.member !== undefined && node.provider === undefined && visit.provider !== undefined)
      node.provider = visit.provider;
  }
  return nodes;
}

/**
 * The graph's state after `events` (in seq order) and, when given, the run's step rows. Pure: a replay
 * calls it with the events up to its cursor and no rows.
 */
export function foldRun(
  runId: string,
  events: readonly WorkflowEventRecord[],
  steps?: readonly StepView[],
): RunState {
  const state: RunState = { visits: new Map(), nodes: new Map(), taken: new Set() };
  for (const event of events) applyEvent(state, runId, event);
  if (steps !== undefined) applySteps(state, runId, steps);
  state.nodes = aggregate(state.visits);
  return state;
}

/** The executions of one node, oldest first: its visits (members of a group apart). */
export function visitsOf(state: RunState, node: string): VisitState[] {
  return [...state.visits.values()]
    .filter((visit) => visit.node === node && visit.member === undefined)
    .sort((a, b) => a.visit - b.visit);
}
