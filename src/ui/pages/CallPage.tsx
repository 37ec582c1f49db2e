// One call and each of its attempts.

import { Link } from 'wouter';
import type { CallDetail } from '../../serve/ui/api-types.js';
import { useApi } from '../api.js';
import { ErrorText } from '../components/ActivityStream.js';
import { runHref } from '../components/RunsTable.js';
import { StatusBadge } from '../components/StatusBadge.js';
import { formatDuration, formatMoney, formatTime, formatTokens } from '../format.js';

export function CallPage({ id }: { id: string }) {
  const { data, error } = useApi<CallDetail>(`/calls/${encodeURIComponent(id)}`);
  if (data === undefined) {
    if (error !== undefined) return <ErrorText code={error.code} message={error.message} hint={error.hint} />;
    return <p className="muted">Loading call…</p>;
  }
  const { summary } = data;
  return (
    <div>
      <header className="page-head">
        <div>
          <div className="crumbs">
            <Link href="/">Runs</Link>
            {summary.parentRunId !== undefined && (
              <>
                {' / '}
                <Link href={runHref({ kind: summary.parentKind ?? 'workflow', id: summary.parentRunId })}>
                  parent run
                </Link>
              </>
            )}
          </div>
          <h1>
            {summary.name} <span className="mono muted id">{id}</span>
          </h1>
          <div className="muted">
            {formatTime(summary.startedAt)} · {formatDuration(summary.durationMs)} ·{' '}
            {formatMoney(summary.costUsd)} <StatusBadge status={summary.status} />
          </div>
        </div>
      </header>
      <div className="table-wrap">
        <table className="data-table">
          <thead>
            <tr>
              <th scope="col">#</th>
              <th scope="col">Time</th>
              <th scope="col">Spec</th>
              <th scope="col">Model</th>
              <th scope="col">Result</th>
              <th scope="col" className="num">
                Duration
              </th>
              <th scope="col" className="num">
                In / out
              </th>
              <th scope="col" className="num">
                Cache r / w
              </th>
              <th scope="col" className="num">
                Cost
              </th>
            </tr>
          </thead>
          <tbody>
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
          </tbody>
        </table>
      </div>
    </div>
  );
}
