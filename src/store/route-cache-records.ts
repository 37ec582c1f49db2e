import type Database from 'better-sqlite3';
import type { RouteDecision } from '../core/route-types.js';

/** The decision cache's rows: one decision per key (a hash of the request and the router's settings). */
export interface RouteCacheStatements {
  getCachedDecision: Database.Statement<[{ key: string; not_before: number }], { decision: string }>;
  putCachedDecision: Database.Statement<[{ key: string; decision: string; stored_at: number }]>;
  dropExpiredDecisions: Database.Statement<[{ before: number }]>;
  dropOldestDecisions: Database.Statement<[{ keep: number }]>;
}

export function prepareRouteCacheStatements(database: Database.Database): RouteCacheStatements {
  return {
    getCachedDecision: database.prepare(
      'SELECT decision FROM route_cache WHERE key = @key AND stored_at >= @not_before',
    ),
    putCachedDecision: database.prepare(
      'INSERT INTO route_cache (key, decision, stored_at) VALUES (@key, @decision, @stored_at) ' +
        'ON CONFLICT (key) DO UPDATE SET decision = excluded.decision, stored_at = excluded.stored_at',
    ),
    dropExpiredDecisions: database.prepare('DELETE FROM route_cache WHERE stored_at < @before'),
    dropOldestDecisions: database.prepare(
      'DELETE FROM route_cache WHERE key IN ' +
        '(SELECT key FROM route_cache ORDER BY stored_at DESC LIMIT -1 OFFSET @keep)',
    ),
  };
}

/** A stored decision, or undefined when the row is missing, expired or unreadable. */
export function readCachedDecision(
  statements: RouteCacheStatements,
  key: string,
  notBefore: number,
): RouteDecision | undefined {
  const row = statements.getCachedDecision.get({ key, not_before: notBefore });
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
export function writeCachedDecision(
  database: Database.Database,
  statements: RouteCacheStatements,
  key: string,
  decision: RouteDecision,
  { storedAt, ttlMs, maxEntries }: { storedAt: number; ttlMs: number; maxEntries: number },
): void {
  database.transaction(() => {
    statements.putCachedDecision.run({ key, decision: JSON.stringify(decision), stored_at: storedAt });
    statements.dropExpiredDecisions.run({ before: storedAt - ttlMs });
    statements.dropOldestDecisions.run({ keep: maxEntries });
  })();
}
