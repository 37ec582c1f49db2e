// One call and each of its attempts.

import type { CallDetail } from '../../serve/ui/api-types.js';
import { idSegment } from '../../serve/ui/id-codec.js';
import { useApi } from '../api.js';
import { DataTable } from '../components/DataTable.js';
import { RunHeader, RunNotLoaded } from '../components/RunHeader.js';
import { runHref } from '../components/RunsTable.js';
import { StatusBadge } from '../components/StatusBadge.js';
import { formatDuration, formatMoney, formatTime, formatTokens } from '../format.js';

export function CallPage({ id }: { id: string }) {
  const { data, error } = useApi<CallDetail>(`/calls/${idSegment(id)}`);
  if (data === undefined) return <RunNotLoaded error={error} what="call" />;
  const { summary } = data;
  return (
    <div>
      <RunHeader
        title={summary.name}
        id={id}
        parentHref={
          summary.parentRunId === undefined
            ? undefined
            : runHref({ kind: summary.parentKind ?? 'workflow', id: summary.parentRunId })
        }
      >
        {formatTime(summary.startedAt)} · {formatDuration(summary.durationMs)} ·{' '}
        {formatMoney(summary.costUsd)} <StatusBadge status={summary.status} />
      </RunHeader>
      <DataTable
        columns={[
          '#',
          'Time',
          'Spec',
          'Model',
          'Result',
          { num: 'Duration' },
          { num: 'In / out' },
          { num: 'Cache r / w' },
          { num: 'Cost' },
        ]}
      >
        {data.attempts.map((attempt) => (
          <tr key={attempt.attempt}>
            <td className="num">{attempt.attempt}</td>
            <td>{formatTime(attempt.at)}</td>
            <td className="mono">{attempt.spec}</td>
            <td className="mono">
              {attempt.modelUsed ?? attempt.modelRequested}
              {attempt.modelUsed !== undefined && attempt.modelUsed !== attempt.modelRequested && (
                <div className="muted small">asked {attempt.modelRequested}</div>
              )}
            </td>
            <td>
              {attempt.success ? <StatusBadge status="succeeded" /> : <StatusBadge status="failed" />}{' '}
              {attempt.errorCode ?? ''}
            </td>
            <td className="num">{formatDuration(attempt.durationMs)}</td>
            <td className="num">
              {formatTokens(attempt.inputTokens)} / {formatTokens(attempt.outputTokens)}
            </td>
            <td className="num">
              {formatTokens(attempt.cacheReadTokens)} / {formatTokens(attempt.cacheWriteTokens)}
            </td>
            <td className="num">{formatMoney(attempt.costUsd)}</td>
          </tr>
        ))}
      </DataTable>
    </div>
  );
}
