// The run graph's node components: a step, a group (parallel / for_each) and the start and end pills.

import { Handle, Position, type Node, type NodeProps } from '@xyflow/react';
import { memo, type ReactNode } from 'react';
import { Link } from 'wouter';
import { idSegment } from '../../serve/ui/id-codec.js';
import { formatDuration, formatMoney, formatTokens } from '../format.js';
import { useNow } from '../use-now.js';
import type { LayoutNode } from './graph-layout.js';
import type { NodeState, NodeStatus } from './run-state.js';

export interface GraphNodeData extends Record<string, unknown> {
  layout: LayoutNode;
  state: NodeState | undefined;
  /** In a replay, the time of the cursor (ms): what a running step's elapsed time counts to. */
  clock: number | undefined;
}

export type GraphFlowNode = Node<GraphNodeData>;

const TYPE_LABELS: Record<string, string> = {
  agent: 'LLM',
  script: 'script',
  set: 'set',
  wait: 'wait',
  human_gate: 'gate',
  questions: 'questions',
  terminate: 'terminate',
  route: 'route',
  workflow: 'sub-workflow',
  parallel: 'parallel',
  for_each: 'for each',
};

function Elapsed({ state, clock }: { state: NodeState; clock: number | undefined }) {
  const running = state.status === 'running';
  const now = useNow(running && clock === undefined);
  if (running && state.startedAt !== undefined)
    return <>{formatDuration((clock ?? now) - state.startedAt)}</>;
  return <>{formatDuration(state.durationMs)}</>;
}

function Metrics({ state, clock }: { state: NodeState | undefined; clock: number | undefined }) {
  if (state === undefined) return <div className="node-metrics muted">not run</div>;
  return (
    <div className="node-metrics">
      <span title="elapsed">
        <Elapsed state={state} clock={clock} />
      </span>
      {state.tokens > 0 && <span title="tokens">{formatTokens(state.tokens)} tok</span>}
      {state.costUsd > 0 && <span title="cost">{formatMoney(state.costUsd)}</span>}
      {state.visits > 1 && <span title="visits">×{state.visits}</span>}
    </div>
  );
}

function statusOf(state: NodeState | undefined): NodeStatus {
  return state?.status ?? 'pending';
}

/** A step's or group's box: its status, handles in and out, and a head with its type and name. */
function NodeBox({
  layout,
  status,
  selected,
  className,
  headEnd,
  children,
}: {
  layout: LayoutNode;
  status: NodeStatus;
  selected: boolean;
  className: string;
  /** What the head shows after the name. */
  headEnd: ReactNode;
  children: ReactNode;
}) {
  return (
    <div
      className={`${className} status-${status}${selected ? ' selected' : ''}`}
      aria-label={`${layout.id}: ${status}`}
    >
      <Handle type="target" position={Position.Top} />
      <div className="node-head">
        <span className={`node-type type-${layout.type}`}>{TYPE_LABELS[layout.type] ?? layout.type}</span>
        <span className="node-name" title={layout.id}>
          {layout.id}
        </span>
        {headEnd}
      </div>
      {children}
      <Handle type="source" position={Position.Bottom} />
    </div>
  );
}

function StepNodeView({ data, selected }: NodeProps<GraphFlowNode>) {
  const { layout, state } = data;
  const step = layout.step;
  const status = statusOf(state);
  // What it ran on, else what it will run on, else (a run recorded before graphs kept it) as written.
  const model = state?.provider ?? step?.spec ?? [step?.provider, step?.model].filter(Boolean).join(':');
  return (
    <NodeBox
      layout={layout}
      status={status}
      selected={selected}
      className="flow-node"
      headEnd={<span className="status-dot" title={status} />}
    >
      {model !== '' && (
        <div className="node-model" title={model}>
          {model}
        </div>
      )}
      <Metrics state={state} clock={data.clock} />
      {state?.childRunId !== undefined && (
        <Link className="node-link nodrag" href={`/runs/${idSegment(state.childRunId)}`}>
          child run →
        </Link>
      )}
    </NodeBox>
  );
}

function GroupNodeView({ data, selected }: NodeProps<GraphFlowNode>) {
  const { layout, state } = data;
  const group = layout.group;
  const status = statusOf(state);
  const members = state?.members ?? [];
  const total =
    state?.memberCount ??
    (group?.kind === 'parallel' ? (group.agents?.length ?? members.length) : members.length);
  const done = members.filter((member) => member.status === 'completed').length;
  const shown = members.slice(0, 40);
  return (
    <NodeBox
      layout={layout}
      status={status}
      selected={selected}
      className="flow-node flow-group"
      headEnd={
        <span className="node-progress" title="members done">
          {done}/{total}
        </span>
      }
    >
      <div className="node-model" title={group?.source ?? group?.agents?.join(', ')}>
        {group?.kind === 'for_each'
          ? `${group.as ?? 'item'} in ${group.source ?? '…'}`
          : group?.agents?.join(', ')}
      </div>
      <div className="member-dots" aria-label={`${done} of ${total} done`}>
        {shown.map((member) => (
          <span
            key={member.name}
            className={`member-dot status-${member.status}`}
            title={`${member.name}: ${member.status}`}
          />
        ))}
        {members.length > shown.length && <span className="muted">+{members.length - shown.length}</span>}
      </div>
      <Metrics state={state} clock={data.clock} />
    </NodeBox>
  );
}

function TerminalNodeView({ data }: NodeProps<GraphFlowNode>) {
  const { layout } = data;
  return (
    <div className={`flow-terminal ${layout.kind}`}>
      {layout.kind === 'start' ? null : <Handle type="target" position={Position.Top} />}
      {layout.kind === 'start' ? 'start' : 'end'}
      {layout.kind === 'start' ? <Handle type="source" position={Position.Bottom} /> : null}
    </div>
  );
}

function sameState(a: NodeState | undefined, b: NodeState | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  return (
    a.status === b.status &&
    a.latestKey === b.latestKey &&
    a.visits === b.visits &&
    a.startedAt === b.startedAt &&
    a.durationMs === b.durationMs &&
    a.tokens === b.tokens &&
    a.costUsd === b.costUsd &&
    a.provider === b.provider &&
    a.childRunId === b.childRunId &&
    a.memberCount === b.memberCount &&
    (a.members ?? []).map((member) => member.status).join() ===
      (b.members ?? []).map((member) => member.status).join()
  );
}

/** Re-renders a node only when what it shows changed, not on every event of the run. */
function sameNode(previous: NodeProps<GraphFlowNode>, next: NodeProps<GraphFlowNode>): boolean {
  return (
    previous.selected === next.selected &&
    previous.data.layout === next.data.layout &&
    previous.data.clock === next.data.clock &&
    sameState(previous.data.state, next.data.state)
  );
}

export const nodeTypes = {
  step: memo(StepNodeView, sameNode),
  // Not `group`: React Flow styles its own node type of that name.
  stepGroup: memo(GroupNodeView, sameNode),
  terminal: memo(TerminalNodeView, sameNode),
};
