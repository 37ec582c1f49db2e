import type { RouteDecision } from '../../core/route-types.js';

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

interface Entry {
  decision: RouteDecision;
  storedAt: number;
}

/**
 * An in-memory LRU of decisions keyed by normalised request. A Map keeps insertion order, so re-inserting
 * on every hit makes the first key the least recently used.
 */
export class DecisionCache {
  private readonly entries = new Map<string, Entry>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor({ ttlMs = 3_600_000, maxEntries = 10_000, now = Date.now }: DecisionCacheOptions = {}) {
    this.ttlMs = ttlMs;
    this.maxEntries = maxEntries;
    this.now = now;
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string): RouteDecision | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    if (this.now() - entry.storedAt > this.ttlMs) return undefined;
    this.entries.set(key, entry);
    return entry.decision;
  }

  set(key: string, decision: RouteDecision): void {
    if (this.maxEntries <= 0) return;
    this.entries.delete(key);
    this.entries.set(key, { decision, storedAt: this.now() });
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  clear(): void {
    this.entries.clear();
  }
}
