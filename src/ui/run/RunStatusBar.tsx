// One line of the run's state: status, progress, elapsed, tokens, cost (and budget left), host.

import type { RunDetail } from '../../serve/ui/api-types.js';
import { StatusBadge } from '../components/StatusBadge.js';
import { formatDuration, formatMoney, formatTokens } from '../format.js';
import type { RunState } from '../graph/run-state.js';
import { useNow } from '../use-now.js';

interface RunStatusBarProps {
  detail: RunDetail;
  state: RunState;
  status: string;
  /** Steps and groups of the graph; without a graph, those that ran. */
  totalSteps: number | undefined;
  /** In a replay, the cursor's time (ms since the epoch): status, elapsed and cost are the run's then. */
  clock?: number | undefined;
}

export function RunStatusBar({ detail, state, status: final, totalSteps, clock }: RunStatusBarProps) {
  const { summary, budgetUsd } = detail;
  const replaying = clock !== undefined;
  const status = replaying ? (state.runStatus ?? 'running') : final;
  const live = status === 'running' && !replaying;
  const now = useNow(live);
  const started = Date.parse(summary.startedAt);
  const elapsed = replaying
    ? Math.max(0, clock - started)
    : (summary.durationMs ?? (live || status === 'waiting' ? now - started : undefined));
  const total = totalSteps ?? state.nodes.size;
  const done = [...state.nodes.values()].filter((node) => node.status === 'completed').length;
  const tokens = [...state.visits.values()].reduce((sum, visit) => sum + visit.tokens, 0);
  const cost = replaying
    ? [...state.visits.values()].reduce((sum, visit) => sum + visit.costUsd, 0)
    : Math.max(summary.costUsd ?? 0, detail.run.costUsd);
  return (
    <div className="status-bar" role="status" aria-live="polite">
      <StatusBadge status={status} />
      <span>
        <span className="label">steps</span> {done}/{total}
      </span>
      <span>
        <span className="label">elapsed</span> {formatDuration(elapsed)}
      </span>
      <span>
        <span className="label">tokens</span> {formatTokens(tokens)}
      </span>
      <span>
        <span className="label">cost</span> {formatMoney(cost)}
        {budgetUsd !== undefined && (
          <span className="muted">
            {' '}
            of {formatMoney(budgetUsd)} ({formatMoney(Math.max(0, budgetUsd - cost))} left)
          </span>
        )}
      </span>
      {summary.host !== undefined && (
        <span>
          <span className="label">host</span> {summary.host}
        </span>
      )}
    </div>
  );
}
