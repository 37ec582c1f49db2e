// The runs list's table: one row per workflow run, agent run or call, linking to its page.

import { Link } from 'wouter';
import type { RunSummary } from '../../serve/ui/api-types.js';
import { idSegment } from '../../serve/ui/id-codec.js';
import { formatAgo, formatDuration, formatMoney, formatTime } from '../format.js';
import { useNow } from '../use-now.js';
import { DataTable } from './DataTable.js';
import { StatusBadge } from './StatusBadge.js';

const PAGES = { workflow: 'runs', agent: 'agents', call: 'calls' } as const;

export function runHref(run: Pick<RunSummary, 'kind' | 'id'>): string {
  return `/${PAGES[run.kind] ?? 'runs'}/${idSegment(run.id)}`;
}

function Duration({ run, now }: { run: RunSummary; now: number }) {
  if (run.durationMs !== undefined) return <>{formatDuration(run.durationMs)}</>;
  if (run.endedAt !== undefined)
    return <>{formatDuration(Date.parse(run.endedAt) - Date.parse(run.startedAt))}</>;
  if (run.status === 'running' || run.status === 'waiting')
    return <>{formatDuration(now - Date.parse(run.startedAt))}</>;
  return <>—</>;
}

export function RunsTable({ runs }: { runs: readonly RunSummary[] }) {
  const now = useNow(runs.some((run) => run.status === 'running'));
  if (runs.length === 0) return <p className="muted empty">No runs match.</p>;
  return (
    <DataTable
      className="runs-table"
      columns={['Kind', 'Name', 'Status', 'Started', { num: 'Duration' }, { num: 'Cost' }, 'Host']}
    >
      {runs.map((run) => (
        <tr key={`${run.kind}:${run.id}`}>
          <td>
            <span className={`kind kind-${run.kind}`}>{run.kind}</span>
          </td>
          <td className="name-cell">
            <Link href={runHref(run)}>{run.name || run.id}</Link>
            <div className="mono muted small">
              {run.id}
              {run.step !== undefined && ` · ${run.step}`}
            </div>
          </td>
          <td>
            <StatusBadge status={run.status} />
            {run.waitingGate !== undefined && (
              <span className="gate-marker" title={`waiting at gate ${run.waitingGate}`}>
                gate: {run.waitingGate}
              </span>
            )}
          </td>
          <td title={formatTime(run.startedAt)}>{formatAgo(run.startedAt, now)}</td>
          <td className="num">
            <Duration run={run} now={now} />
          </td>
          <td className="num">{formatMoney(run.costUsd)}</td>
          <td className="muted">{run.host ?? ''}</td>
        </tr>
      ))}
    </DataTable>
  );
}
