// The one table shape of the dashboard: a scrolling wrapper, a header row, then the caller's rows.

import type { ReactNode } from 'react';

/** A column's heading; `{ num }` for a right-aligned number column. */
export type Column = string | { num: string };

export function DataTable({
  className,
  columns,
  children,
}: {
  /** Added to `data-table`, e.g. `compact`. */
  className?: string;
  columns: readonly Column[];
  children: ReactNode;
}) {
  return (
    <div className="table-wrap">
      <table className={className === undefined ? 'data-table' : `data-table ${className}`}>
        <thead>
          <tr>
            {columns.map((column) =>
              typeof column === 'string' ? (
                <th key={column} scope="col">
                  {column}
                </th>
              ) : (
                <th key={column.num} scope="col" className="num">
                  {column.num}
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** A report card holding a compact table, or a line saying there is nothing to show. */
export function TableCard({
  title,
  empty,
  columns,
  children,
}: {
  title: ReactNode;
  /** What to say instead of the table, when there are no rows. */
  empty: string | undefined;
  columns: readonly Column[];
  children: ReactNode;
}) {
  return (
    <section className="card">
      <h2>{title}</h2>
      {empty !== undefined ? (
        <p className="muted">{empty}</p>
      ) : (
        <DataTable className="compact" columns={columns}>
          {children}
        </DataTable>
      )}
    </section>
  );
}
