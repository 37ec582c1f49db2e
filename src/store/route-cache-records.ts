import type { RouteDecision } from '../core/route-types.js';
import type { SqlClient, SqlDatabase, SqlDialect } from './sql/sql-database.js';

/** The decision cache's rows: one decision per key (a hash of the request and the router's settings). */
function buildSql(dialect: SqlDialect) {
  return {
    getCachedDecision: 'SELECT decision FROM route_cache WHERE key = @key AND stored_at >= @not_before',
    putCachedDecision:
      'INSERT INTO route_cache (key, decision, stored_at) VALUES (@key, @decision, @stored_at) ' +
      'ON CONFLICT (key) DO UPDATE SET decision = excluded.decision, stored_at = excluded.stored_at',
    dropExpiredDecisions: 'DELETE FROM route_cache WHERE stored_at < @before',
    // SQLite needs a LIMIT before an OFFSET (-1: no limit); PostgreSQL takes an OFFSET alone.
    dropOldestDecisions:
      'DELETE FROM route_cache WHERE key IN (SELECT key FROM route_cache ORDER BY stored_at DESC ' +
      (dialect === 'sqlite' ? 'LIMIT -1 OFFSET @keep)' : 'OFFSET @keep)'),
  };
}

const SQL = { sqlite: buildSql('sqlite'), postgres: buildSql('postgres') };

/** A stored decision, or undefined when the row is missing, expired or unreadable. */
export async function readCachedDecision(
  database: SqlClient,
  key: string,
  notBefore: number,
): Promise<RouteDecision | undefined> {
  const row = await database.get<{ decision: string }>(SQL[database.dialect].getCachedDecision, {
    key,
    not_before: notBefore,
  });
  if (row === undefined) return undefined;
  // A row another version wrote in a shape we cannot read is a miss, not a failure.
  try {
    const parsed: unknown = JSON.parse(row.decision);
    return typeof parsed === 'object' && parsed !== null && 'skill' in parsed
      ? (parsed as RouteDecision)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Stores a decision and trims the table to its TTL and size in the same transaction. */
export async function writeCachedDecision(
  database: SqlDatabase,
  key: string,
  decision: RouteDecision,
  { storedAt, ttlMs, maxEntries }: { storedAt: number; ttlMs: number; maxEntries: number },
): Promise<void> {
  const sql = SQL[database.dialect];
  await database.transaction(
    async (client) => {
      await client.run(sql.putCachedDecision, {
        key,
        decision: JSON.stringify(decision),
        stored_at: storedAt,
      });
      await client.run(sql.dropExpiredDecisions, { before: storedAt - ttlMs });
      await client.run(sql.dropOldestDecisions, { keep: maxEntries });
    },
    { lockKey: 'switchboard:route-cache' },
  );
}
