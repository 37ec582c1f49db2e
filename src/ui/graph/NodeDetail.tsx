// The side panel of a clicked node: its type and model, the prompt it rendered, each visit of a looped
// step, what it did, its output and its error.

import { useMemo, useState } from 'react';
import { Link } from 'wouter';
import type { WorkflowEventRecord } from '../../serve/ui/api-types.js';
import { idSegment } from '../../serve/ui/id-codec.js';
import type { StepView } from '../types.js';
import { ActivityStream, ErrorText, type ActivityItem } from '../components/ActivityStream.js';
import { DataTable } from '../components/DataTable.js';
import { JsonView } from '../components/JsonView.js';
import { Markdown } from '../components/Markdown.js';
import { StatusBadge } from '../components/StatusBadge.js';
import { formatDuration, formatMoney, formatTokens } from '../format.js';
import type { LayoutNode } from './graph-layout.js';
import { visitTotals, visitsOf, type RunState, type VisitState } from './run-state.js';

interface NodeDetailProps {
  node: LayoutNode;
  state: RunState;
  events: readonly WorkflowEventRecord[];
  steps: readonly StepView[];
  onClose: () => void;
}

function ownEvents(events: readonly WorkflowEventRecord[], key: string | undefined): WorkflowEventRecord[] {
  if (key === undefined) return [];
  return events.filter((event) => event.key === key || event.key?.startsWith(`${key}/`) === true);
}

function outputOf(
  visitEvents: readonly WorkflowEventRecord[],
  visit: VisitState | undefined,
  steps: readonly StepView[],
) {
  const end = [...visitEvents]
    .reverse()
    .find((event) => event.type === 'step-end' && event.key === visit?.key);
  const data = end?.data ?? {};
  if ('output' in data) return { value: data['output'], truncated: false };
  if (typeof data['outputPreview'] === 'string') return { value: data['outputPreview'], truncated: true };
  const row = steps.find((candidate) => candidate.key === visit?.key);
  return { value: row?.output, truncated: false };
}

function Prompt({ event }: { event: WorkflowEventRecord | undefined }) {
  const system = event?.data?.['system'];
  const prompt = event?.data?.['prompt'];
  if (typeof prompt !== 'string' && typeof system !== 'string') return null;
  return (
    <details className="prompt" open>
      <summary>Prompt</summary>
      {typeof system === 'string' && (
        <>
          <div className="activity-block-label">system</div>
          <pre>{system}</pre>
        </>
      )}
      {typeof prompt === 'string' && <pre>{prompt}</pre>}
    </details>
  );
}

/** A `for_each` group's items (or a parallel group's members) in one visit: what each did. */
function MembersTable({ state, visit }: { state: RunState; visit: VisitState }) {
  const members = [...state.visits.values()].filter(
    (candidate) => candidate.member !== undefined && candidate.key.startsWith(`${visit.key}/`),
  );
  if (members.length === 0) return null;
  return (
    <>
      <h3>Items</h3>
      <DataTable
        columns={['Item', 'Status', { num: 'Duration' }, { num: 'Tokens' }, { num: 'Cost' }, 'Error']}
      >
        {members.map((member) => (
          <tr key={member.key}>
            <td className="mono">{member.member}</td>
            <td>
              <StatusBadge status={member.status} />
            </td>
            <td className="num">{formatDuration(member.durationMs)}</td>
            <td className="num">{formatTokens(member.tokens)}</td>
            <td className="num">{formatMoney(member.costUsd)}</td>
            <td className="error-cell">{member.error ?? ''}</td>
          </tr>
        ))}
      </DataTable>
    </>
  );
}

export function NodeDetail({ node, state, events, steps, onClose }: NodeDetailProps) {
  const visits = useMemo(() => visitsOf(state, node.id), [state, node.id]);
  const [chosen, setChosen] = useState<string>();
  const visit = visits.find((candidate) => candidate.key === chosen) ?? visits[visits.length - 1];
  const visitEvents = useMemo(() => ownEvents(events, visit?.key), [events, visit?.key]);
  const prompt = visitEvents.find((event) => event.type === 'step-prompt' && event.key === visit?.key);
  const activity = useMemo(
    (): ActivityItem[] =>
      visitEvents
        .filter((event) => event.type !== 'step-prompt')
        .map((event) => ({ id: String(event.seq), at: event.at, type: event.type, data: event.data })),
    [visitEvents],
  );
  const output = outputOf(visitEvents, visit, steps);
  const hint = visitEvents.find((event) => event.type === 'step-end')?.data?.['hint'];
  const totals = visit === undefined ? undefined : visitTotals(state.visits, visit.key);
  const model =
    visit?.provider ?? node.step?.spec ?? [node.step?.provider, node.step?.model].filter(Boolean).join(':');

  return (
    <aside className="node-detail" aria-label={`Step ${node.id}`}>
      <header className="panel-head">
        <div>
          <h2>{node.id}</h2>
          <div className="muted">
            {node.type}
            {model !== '' && ` · ${model}`}
          </div>
        </div>
        <button type="button" className="ghost" onClick={onClose} aria-label="Close step detail">
          ✕
        </button>
      </header>
      {visits.length === 0 ? (
        <p className="muted">This step has not run.</p>
      ) : (
        <>
          {visits.length > 1 && (
            <label className="field inline">
              <span>Visit</span>
              <select value={visit?.key} onChange={(event) => setChosen(event.target.value)}>
                {visits.map((candidate) => (
                  <option key={candidate.key} value={candidate.key}>
                    {`#${candidate.visit + 1} · ${candidate.status}`}
                  </option>
                ))}
              </select>
            </label>
          )}
          {visit !== undefined && (
            <dl className="facts">
              <dt>Status</dt>
              <dd>
                <StatusBadge status={visit.status} />
              </dd>
              <dt>Duration</dt>
              <dd>{formatDuration(visit.durationMs)}</dd>
              <dt>Tokens</dt>
              <dd>{formatTokens(totals?.tokens)}</dd>
              <dt>Cost</dt>
              <dd>{formatMoney(totals?.costUsd)}</dd>
              {visit.childRunId !== undefined && (
                <>
                  <dt>Child run</dt>
                  <dd>
                    <Link href={`/runs/${idSegment(visit.childRunId)}`}>{visit.childRunId}</Link>
                  </dd>
                </>
              )}
            </dl>
          )}
          {visit?.error !== undefined && (
            <ErrorText
              code={visit.errorCode}
              message={visit.error}
              hint={typeof hint === 'string' ? hint : undefined}
            />
          )}
          {node.kind === 'group' && visit !== undefined && <MembersTable state={state} visit={visit} />}
          <Prompt event={prompt} />
          <h3>Activity</h3>
          <ActivityStream items={activity} />
          <h3>Output{output.truncated ? ' (start, truncated)' : ''}</h3>
          {typeof output.value === 'string' && !output.truncated ? (
            <>
              <Markdown className="output-markdown" text={output.value} />
              <details className="raw-output">
                <summary>As written</summary>
                <JsonView value={output.value} label={`Output of ${node.id}`} />
              </details>
            </>
          ) : (
            <JsonView value={output.value} label={`Output of ${node.id}`} />
          )}
        </>
      )}
    </aside>
  );
}
