import type { SpendRow } from '../../serve/ui/api-types.js';
import { formatCount, formatMoney } from '../format.js';

/** Spend under one kind of key (provider, model, tag, workflow), largest first. */
export function SpendTable({
  title,
  rows,
  keyLabel,
}: {
  title: string;
  rows: readonly SpendRow[];
  keyLabel: string;
}) {
  const sorted = [...rows].sort((a, b) => b.costUsd - a.costUsd);
  return (
    <section className="card">
      <h2>{title}</h2>
      {sorted.length === 0 ? (
        <p className="muted">Nothing in this range.</p>
      ) : (
        <div className="table-wrap">
          <table className="data-table compact">
            <thead>
              <tr>
                <th scope="col">{keyLabel}</th>
                <th scope="col" className="num">
                  Calls
                </th>
                <th scope="col" className="num">
                  Cost
                </th>
              </tr>
            </thead>
            <tbody>
              {sorted.map((row) => (
                <tr key={row.key}>
                  <td className="mono">{row.key}</td>
                  <td className="num">{formatCount(row.calls)}</td>
                  <td className="num">{formatMoney(row.costUsd)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
