import type { RouteDecision } from '../../core/route-types.js';
import type { Ledger } from '../../store/ledger.js';

export interface DecisionCacheOptions {
  /**
   * How long a decision stays valid, in milliseconds.
   * @default 3_600_000 (one hour)
   */
  ttlMs?: number;
  /**
   * Most decisions kept; the least recently used goes first.
   * @default 10_000
   */
  maxEntries?: number;
  /** Clock seam for tests. */
  now?: () => number;
}

/**
 * Where decisions outlive the process: the ledger (`Ledger.getCachedDecision` / `cacheDecision`). A
 * CLI call is one process per request, so without it the cache would never hit there.
 */
export type DecisionStore = Pick<Ledger, 'getCachedDecision' | 'cacheDecision'>;

interface Entry {
  decision: RouteDecision;
  storedAt: number;
}

/**
 * An in-memory LRU of decisions keyed by normalised request, in front of an optional persistent
 * `DecisionStore`. A Map keeps insertion order, so re-inserting on every hit makes the first key the
 * least recently used.
 */
export class DecisionCache {
  private readonly entries = new Map<string, Entry>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  private readonly store: DecisionStore | undefined;

  constructor(
    { ttlMs = 3_600_000, maxEntries = 10_000, now = Date.now }: DecisionCacheOptions = {},
    store?: DecisionStore,
  ) {
    this.ttlMs = ttlMs;
    this.maxEntries = maxEntries;
    this.now = now;
    this.store = store;
  }

  get size(): number {
    return this.entries.size;
  }

  async get(key: string): Promise<RouteDecision | undefined> {
    const entry = this.entries.get(key);
    if (entry === undefined) return await this.fromStore(key);
    this.entries.delete(key);
    if (this.now() - entry.storedAt > this.ttlMs) return undefined;
    this.entries.set(key, entry);
    return entry.decision;
  }

  async set(key: string, decision: RouteDecision): Promise<void> {
    if (this.maxEntries <= 0) return;
    const storedAt = this.now();
    this.remember(key, decision, storedAt);
    await this.store?.cacheDecision(key, decision, {
      storedAt,
      ttlMs: this.ttlMs,
      maxEntries: this.maxEntries,
    });
  }

  /** Another process's decision, kept in memory from now on (its age is not known here, so the TTL restarts). */
  private async fromStore(key: string): Promise<RouteDecision | undefined> {
    const decision = await this.store?.getCachedDecision(key, this.now() - this.ttlMs);
    if (decision !== undefined) this.remember(key, decision, this.now());
    return decision;
  }

  private remember(key: string, decision: RouteDecision, storedAt: number): void {
    this.entries.delete(key);
    this.entries.set(key, { decision, storedAt });
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  clear(): void {
    this.entries.clear();
  }
}
