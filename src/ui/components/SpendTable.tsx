import type { SpendRow } from '../../serve/ui/api-types.js';
import { formatCount, formatMoney } from '../format.js';
import { TableCard } from './DataTable.js';

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
    <TableCard
      title={title}
      empty={sorted.length === 0 ? 'Nothing in this range.' : undefined}
      columns={[keyLabel, { num: 'Calls' }, { num: 'Cost' }]}
    >
      {sorted.map((row) => (
        <tr key={row.key}>
          <td className="mono">{row.key}</td>
          <td className="num">{formatCount(row.calls)}</td>
          <td className="num">{formatMoney(row.costUsd)}</td>
        </tr>
      ))}
    </TableCard>
  );
}
