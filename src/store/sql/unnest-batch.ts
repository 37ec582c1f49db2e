/**
 * PostgreSQL's batch insert: a whole batch as one statement, a column per array (one round trip, not
 * one per row). Columns are named with their PostgreSQL types, which `unnest` needs to read the arrays.
 */
export type BatchColumns = readonly (readonly [name: string, type: string])[];

/** `INSERT INTO table (…) SELECT * FROM unnest(CAST(@column AS type[]), …)` and `tail` (an ON CONFLICT). */
export function unnestInsert(table: string, columns: BatchColumns, tail: string): string {
  return (
    `INSERT INTO ${table} (${columns.map(([column]) => column).join(', ')}) SELECT * FROM unnest(` +
    columns.map(([column, type]) => `CAST(@${column} AS ${type}[])`).join(', ') +
    `) ${tail}`
  );
}

/** Rows as an `unnestInsert` statement takes them: one array of values per column. */
export function columnArrays(
  columns: BatchColumns,
  rows: readonly Record<string, unknown>[],
): Record<string, unknown[]> {
  return Object.fromEntries(columns.map(([column]) => [column, rows.map((row) => row[column] ?? null)]));
}
