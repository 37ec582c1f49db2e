// A workflow run: its graph (or events, or output), the status bar, a gate's answers and the actions.

import { useCallback, useMemo, useRef, useState } from 'react';
import { Link } from 'wouter';
import type { ActionResult, WorkflowGraph } from '../../serve/ui/api-types.js';
import { idSegment } from '../../serve/ui/id-codec.js';
import type { StepView } from '../types.js';
import { ErrorText } from '../components/ActivityStream.js';
import { DataTable } from '../components/DataTable.js';
import { JsonView } from '../components/JsonView.js';
import { RunHeader, RunNotLoaded } from '../components/RunHeader.js';
import { StatusBadge } from '../components/StatusBadge.js';
import { formatDuration, formatMoney, formatTime } from '../format.js';
import { layoutGraph } from '../graph/graph-layout.js';
import { NodeDetail } from '../graph/NodeDetail.js';
import { RunGraph } from '../graph/RunGraph.js';
import { foldRun } from '../graph/run-state.js';
import { EventLog } from '../run/EventLog.js';
import { GatePanel } from '../run/GatePanel.js';
import { GuidanceBox } from '../run/GuidanceBox.js';
import { ReplayControls } from '../run/ReplayControls.js';
import { RunActions } from '../run/RunActions.js';
import { RunStatusBar } from '../run/RunStatusBar.js';
import { useRunLive } from '../run/use-run-live.js';
import { useActionsAllowed } from '../session.js';

type Tab = 'graph' | 'events' | 'output' | 'workflow';
const TABS: Array<[Tab, string]> = [
  ['graph', 'Graph'],
  ['events', 'Events'],
  ['output', 'Output'],
  ['workflow', 'Workflow'],
];

function StepsTable({ steps }: { steps: readonly StepView[] }) {
  return (
    <DataTable columns={['Step', 'Type', 'Status', 'Attempts', 'Duration', 'Cost']}>
      {steps.map((step) => (
        <tr key={step.key}>
          <td className="mono">{step.key.split('/').slice(1).join('/')}</td>
          <td>{step.type}</td>
          <td>
            <StatusBadge status={step.status} />
          </td>
          <td className="num">{step.attempts}</td>
          <td className="num">{formatDuration(step.durationMs)}</td>
          <td className="num">{formatMoney(step.costUsd)}</td>
        </tr>
      ))}
    </DataTable>
  );
}

/** The same graph object across refetches of the run, so its layout is not redone. */
function useStableGraph(graph: WorkflowGraph | undefined): WorkflowGraph | undefined {
  const kept = useRef<{ text: string; graph: WorkflowGraph }>(undefined);
  if (graph === undefined) return undefined;
  if (kept.current?.graph === graph) return graph;
  const text = JSON.stringify(graph);
  if (kept.current?.text !== text) kept.current = { text, graph };
  return kept.current.graph;
}

export function RunPage({ id }: { id: string }) {
  const { detail, events, eventsLoaded, eventsError, summary } = useRunLive(id);
  const actionsAllowed = useActionsAllowed();
  const [tab, setTab] = useState<Tab>('graph');
  const [selected, setSelected] = useState<string>();
  const [cursor, setCursor] = useState<number>();
  const [actionMessage, setActionMessage] = useState<string>();
  const data = detail.data;
  const steps = data?.run.steps;

  const state = useMemo(
    () => (cursor === undefined ? foldRun(id, events, steps) : foldRun(id, events.slice(0, cursor))),
    [id, events, steps, cursor],
  );
  // A replay's clock: the time of the last event applied.
  const clock = useMemo(() => {
    if (cursor === undefined) return undefined;
    const at = cursor === 0 ? events[0]?.at : events[cursor - 1]?.at;
    return at === undefined ? undefined : Date.parse(at);
  }, [cursor, events]);
  const graph = useStableGraph(data?.graph);
  // Layout is the expensive part (dagre): once per graph, never per event.
  const layout = useMemo(() => (graph === undefined ? undefined : layoutGraph(graph)), [graph]);
  const totalSteps = useMemo(
    () => layout?.nodes.filter((node) => node.kind === 'step' || node.kind === 'group').length,
    [layout],
  );
  const selectedNode = layout?.nodes.find((node) => node.id === selected);
  const { reload } = detail;
  const onAction = useCallback(
    (result: ActionResult) => {
      setActionMessage(result.message);
      reload();
    },
    [reload],
  );

  if (data === undefined) return <RunNotLoaded error={detail.error} what="run" />;
  const status = summary?.status ?? data.summary.status;
  const finished = !['running', 'waiting'].includes(status);
  const detailWithSummary = summary === undefined ? data : { ...data, summary };

  return (
    <div className="run-page">
      <RunHeader
        title={data.run.workflow}
        id={data.run.id}
        parentHref={
          detailWithSummary.summary.parentRunId === undefined
            ? undefined
            : `/runs/${idSegment(detailWithSummary.summary.parentRunId)}`
        }
      >
        started {formatTime(detailWithSummary.summary.startedAt)} <StatusBadge status={status} />
      </RunHeader>
      <RunStatusBar
        detail={detailWithSummary}
        state={state}
        status={status}
        totalSteps={totalSteps}
        clock={clock}
      />
      {data.run.error !== undefined && <ErrorText code={data.run.errorCode} message={data.run.error} />}
      {actionsAllowed && data.run.gate !== undefined && (
        <GatePanel key={data.run.gate.step} runId={id} gate={data.run.gate} onAnswered={onAction} />
      )}
      {actionsAllowed && <RunActions runId={id} status={status} onDone={onAction} />}
      {actionsAllowed && <GuidanceBox runId={id} status={status} events={events} onSent={onAction} />}
      {actionMessage !== undefined && <p className="notice">{actionMessage}</p>}
      {data.children.length > 0 && (
        <p className="children">
          Sub-workflow runs:{' '}
          {data.children.map((child) => (
            <Link key={child.id} href={`/runs/${idSegment(child.id)}`} className="chip">
              {child.name} · {child.status}
            </Link>
          ))}
        </p>
      )}
      <div className="tabs" role="tablist" aria-label="Run views">
        {TABS.map(([value, label]) => (
          <button
            key={value}
            type="button"
            role="tab"
            id={`tab-${value}`}
            aria-selected={tab === value}
            aria-controls={`panel-${value}`}
            className={tab === value ? 'tab active' : 'tab'}
            onClick={() => setTab(value)}
          >
            {label}
          </button>
        ))}
        {finished && eventsLoaded && tab === 'graph' && events.length > 0 && (
          <ReplayControls events={events} cursor={cursor} onCursor={setCursor} />
        )}
      </div>
      {eventsError !== undefined && (
        <ErrorText code={eventsError.code} message={eventsError.message} hint={eventsError.hint} />
      )}
      <div role="tabpanel" id={`panel-${tab}`} aria-labelledby={`tab-${tab}`} className="tab-panel">
        {tab === 'graph' &&
          (layout === undefined ? (
            <>
              <p className="muted">This run was recorded before runs kept their graph; its steps:</p>
              <StepsTable steps={data.run.steps} />
            </>
          ) : (
            <div className={selectedNode === undefined ? 'graph-layout' : 'graph-layout with-detail'}>
              <RunGraph
                layout={layout}
                state={state}
                clock={clock}
                selected={selected}
                onSelect={setSelected}
              />
              {selectedNode !== undefined && (
                <NodeDetail
                  key={selectedNode.id}
                  node={selectedNode}
                  state={state}
                  events={cursor === undefined ? events : events.slice(0, cursor)}
                  steps={data.run.steps}
                  onClose={() => setSelected(undefined)}
                />
              )}
            </div>
          ))}
        {tab === 'events' && <EventLog events={events} runId={id} />}
        {tab === 'workflow' &&
          (data.source === undefined ? (
            <p className="muted">This run was recorded before runs kept their workflow file.</p>
          ) : (
            <pre className="workflow-source" aria-label="Workflow file as the run started it">
              {data.source}
            </pre>
          ))}
        {tab === 'output' && (
          <>
            <JsonView value={data.run.output} label="Run output" />
            {data.run.warnings !== undefined && data.run.warnings.length > 0 && (
              <p className="muted">Not acted on: {data.run.warnings.join(', ')}</p>
            )}
          </>
        )}
      </div>
    </div>
  );
}
