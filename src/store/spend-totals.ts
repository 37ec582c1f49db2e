import { tagFilter, tagParams } from './call-records.js';
import type { SqlClient, SqlDialect } from './sql/sql-database.js';

/** Milliseconds in a UTC day: the spend totals' unit (schema 15, src/store/migrations.ts). */
export const DAY_MS = 86_400_000;

/** A spend filter as `Ledger.spendSince` takes it. */
export interface SpendFilter {
  provider?: string;
  tag?: string;
}

/**
 * The spend statements. `spendTotals` reads the rows a trigger keeps beside call_attempts, one per (scope,
 * UTC day, provider); `spendBetween` is the scan they replace, still used for a part of a day and for a tag
 * filter the totals cannot answer exactly.
 */
export function spendSql(dialect: SqlDialect) {
  return {
    spendBetween:
      'SELECT sum(cost_usd) AS total FROM call_attempts WHERE created_at >= @since AND created_at < @until ' +
      `AND (CAST(@provider AS TEXT) IS NULL OR provider = @provider) AND ${tagFilter(dialect)}`,
    spendTotals:
      'SELECT sum(usd) AS total FROM spend_totals WHERE tag_key = @tag_key AND tag_value = @tag_value ' +
      'AND day >= @since AND (CAST(@provider AS TEXT) IS NULL OR provider = @provider)',
  };
}

type SpendStatements = ReturnType<typeof spendSql> & { spendSince: string };

/**
 * The tag of a filter as spend_totals keys it ('' and '' for no tag), or undefined when the totals would
 * not give the scan's answer: no `=` or an empty key (no such rows are kept), or a key SQLite's quoted
 * JSON path `$."key"` does not read as the member of that name (one with a double quote, a backslash or NUL in it).
 */
function totalsTag(tag: string | undefined): { tag_key: string; tag_value: string } | undefined {
  if (tag === undefined) return { tag_key: '', tag_value: '' };
  const { tag_key, tag_value } = tagParams(tag);
  if (tag_key === null || tag_value === null || tag_key === '' || /["\\\0]/.test(tag_key)) return undefined;
  return { tag_key, tag_value };
}

/** The first UTC day boundary at or after `moment`. */
function dayAtOrAfter(moment: number): number {
  return Math.ceil(moment / DAY_MS) * DAY_MS;
}

/**
 * Dollars recorded since `since` (epoch ms) in a filter's scope: the spend totals of the whole days from
 * `since`, plus a scan of the attempts before the first of them when `since` falls inside a day (a
 * workflow run's start). A filter the totals cannot answer scans from `since`, as before them. The caps'
 * periods start on a day (UTC day, month, or 0 for ever), so a cap reads a few rows, not a period of attempts.
 */
export async function readSpend(
  client: SqlClient,
  sql: SpendStatements,
  since: number,
  filter: SpendFilter,
): Promise<number> {
  const provider = filter.provider ?? null;
  const tag = totalsTag(filter.tag);
  const sum = async (statement: string, params: Record<string, unknown>) =>
    (await client.get<{ total: number | null }>(statement, params))?.total ?? 0;
  if (tag === undefined) return sum(sql.spendSince, { since, provider, ...tagParams(filter.tag) });
  const boundary = dayAtOrAfter(since);
  const part =
    since < boundary
      ? await sum(sql.spendBetween, { since, until: boundary, provider, ...tagParams(filter.tag) })
      : 0;
  return part + (await sum(sql.spendTotals, { since: boundary, provider, ...tag }));
}
