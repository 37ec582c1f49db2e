import type { RouteDecision } from '../core/route-types.js';
import type { SqlDialect } from './sql/sql-database.js';

/** A decision-cache entry waiting for its group commit. */
export interface CacheWrite {
  decision: string;
  storedAt: number;
  ttlMs: number;
  maxEntries: number;
}

/** The decision cache's rows: one decision per key (a hash of the request and the router's settings). */
function buildSql(dialect: SqlDialect) {
  return {
    getCached: 'SELECT decision FROM route_cache WHERE key = @key AND stored_at >= @not_before',
    // SQLite only (see BatchedCacheReads), the reads of one turn together: the keys as a JSON array.
    getCachedMany:
      'SELECT key, decision, stored_at FROM route_cache WHERE key IN (SELECT value FROM json_each(@keys))',
    putCached:
      'INSERT INTO route_cache (key, decision, stored_at) VALUES (@key, @decision, @stored_at) ' +
      'ON CONFLICT (key) DO UPDATE SET decision = excluded.decision, stored_at = excluded.stored_at ' +
      // A retried batch (or another process's older entry) never overwrites a newer one.
      'WHERE excluded.stored_at >= route_cache.stored_at',
    // PostgreSQL takes a batch as arrays (one round trip); the keys of one batch are distinct.
    putCachedBatch:
      'INSERT INTO route_cache (key, decision, stored_at) ' +
      'SELECT * FROM unnest(CAST(@keys AS TEXT[]), CAST(@decisions AS TEXT[]), CAST(@stored_at AS BIGINT[])) ' +
      'ON CONFLICT (key) DO UPDATE SET decision = excluded.decision, stored_at = excluded.stored_at ' +
      // A retried batch (or another process's older entry) never overwrites a newer one.
      'WHERE excluded.stored_at >= route_cache.stored_at',
    dropExpiredCache: 'DELETE FROM route_cache WHERE stored_at < @before',
    // SQLite needs a LIMIT before an OFFSET (-1: no limit); PostgreSQL takes an OFFSET alone.
    dropOldestCache:
      'DELETE FROM route_cache WHERE key IN (SELECT key FROM route_cache ORDER BY stored_at DESC ' +
      (dialect === 'sqlite' ? 'LIMIT -1 OFFSET @keep)' : 'OFFSET @keep)'),
  };
}

export const CACHE_SQL = { sqlite: buildSql('sqlite'), postgres: buildSql('postgres') };

/** A stored decision, or undefined when it is unreadable (another version's shape is a miss, not a failure). */
export function parseCachedDecision(text: string | undefined): RouteDecision | undefined {
  if (text === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null && 'skill' in parsed
      ? (parsed as RouteDecision)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Cache writes between two trims, on average. */
const TRIM_EVERY = 1_000;

/**
 * Whether a batch of `written` cache writes also trims the table to its TTL and size. Trimming walks the
 * whole table (about 0.7 ms at 10,000 entries), so it runs in the batch that brings this process's writes
 * since the last trim to `TRIM_EVERY`, and by chance in proportion to the batch, so that short CLI
 * processes, each writing one entry, trim too. Between trims the table may hold up to about `TRIM_EVERY` entries more than its
 * limit; expired entries are never read.
 */
export function shouldTrimCache(writtenSinceTrim: number, written: number, random = Math.random): boolean {
  return writtenSinceTrim + written >= TRIM_EVERY || random() < written / TRIM_EVERY;
}
