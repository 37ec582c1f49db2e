// Spend: totals, by provider/model/tag/workflow, budgets, and per day by provider.

import type { CostReport } from '../../serve/ui/api-types.js';
import { CostChart } from '../charts/CostChart.js';
import { RangeReport, Stat } from '../components/RangeReport.js';
import { SpendTable } from '../components/SpendTable.js';
import { formatCount, formatMoney, formatPercent, formatTime } from '../format.js';

function BudgetBars({ budgets }: { budgets: CostReport['budgets'] }) {
  if (budgets.length === 0) return null;
  return (
    <section className="card">
      <h2>Budgets</h2>
      <ul className="budgets">
        {budgets.map((budget) => {
          const used = budget.limitUsd > 0 ? budget.spentUsd / budget.limitUsd : 0;
          const level = used >= 1 ? 'over' : used >= 0.8 ? 'near' : 'ok';
          return (
            <li key={`${budget.name}:${budget.window}`}>
              <div className="budget-head">
                <span>
                  <strong>{budget.name}</strong> <span className="muted">per {budget.window}</span>
                </span>
                <span>
                  {formatMoney(budget.spentUsd)} of {formatMoney(budget.limitUsd)} ({formatPercent(used)})
                </span>
              </div>
              <div
                className={`bar ${level}`}
                role="meter"
                aria-valuemin={0}
                aria-valuemax={budget.limitUsd}
                aria-valuenow={budget.spentUsd}
                aria-label={`${budget.name} budget used`}
              >
                <div className="bar-fill" style={{ width: `${Math.min(100, used * 100)}%` }} />
              </div>
            </li>
          );
        })}
      </ul>
    </section>
  );
}

export function CostsPage() {
  return (
    <RangeReport<CostReport> title="Costs" path="/costs">
      {(data) => (
        <>
          <div className="stats">
            <Stat value={formatMoney(data.totalUsd)} label="spent" />
            <Stat value={formatCount(data.calls)} label="calls" />
            <Stat value={formatMoney(data.calls === 0 ? 0 : data.totalUsd / data.calls)} label="per call" />
            <div className="stat muted small">
              {formatTime(data.since)} → {formatTime(data.until)}
            </div>
          </div>
          <section className="card">
            <h2>Per day by provider</h2>
            <CostChart byDay={data.byDay} />
          </section>
          <BudgetBars budgets={data.budgets} />
          <div className="grid-2">
            <SpendTable title="By provider" keyLabel="Provider" rows={data.byProvider} />
            <SpendTable title="By model" keyLabel="Model" rows={data.byModel} />
            <SpendTable title="By workflow" keyLabel="Workflow" rows={data.byWorkflow} />
            <SpendTable title="By tag" keyLabel="Tag" rows={data.byTag} />
          </div>
        </>
      )}
    </RangeReport>
  );
}
