import type { Ledger } from '../store/ledger.js';

export interface CircuitBreakerOptions {
  /** Consecutive failures that put a provider on cooldown. @default 3 */
  failures: number;
  /** How long the cooldown lasts, in milliseconds. @default 60_000 */
  cooldownMs: number;
}

/** How stale another process's cooldown may be seen: a ledger read per call would cost every call. */
const SHARED_REFRESH_MS = 1_000;

export const DEFAULT_BREAKER: CircuitBreakerOptions = { failures: 3, cooldownMs: 60_000 };

/**
 * Puts a provider spec on cooldown after repeated failures, so calls skip it instead of waiting on it.
 * The state lives in this process and, when a ledger is given, in the ledger too, so every process
 * sharing the ledger skips the provider.
 */
export class CircuitBreaker {
  private readonly failureCounts = new Map<string, number>();
  private readonly cooldowns = new Map<string, number>();
  /** The ledger's cooldown per spec and when it was read: other processes' breakers, seen within a second. */
  private readonly shared = new Map<string, { until: number; readAt: number }>();
  private readonly options: CircuitBreakerOptions;
  private readonly ledger: Ledger | undefined;
  private readonly now: () => number;

  constructor(options: Partial<CircuitBreakerOptions> = {}, ledger?: Ledger, now: () => number = Date.now) {
    this.options = { ...DEFAULT_BREAKER, ...options };
    this.ledger = ledger;
    this.now = now;
  }

  /** Milliseconds until the spec may be called again (0 when it may be called now). */
  async coolingFor(spec: string): Promise<number> {
    const known = this.knownCoolingFor(spec);
    if (known !== undefined || this.ledger === undefined) return known ?? 0;
    const now = this.now();
    this.shared.set(spec, { until: (await this.ledger.getCooldown(spec))?.until ?? 0, readAt: now });
    return this.cooling(spec, now);
  }

  /**
   * `coolingFor` without waiting, when it needs no ledger read (this process's state, and the ledger's
   * read within the last second); undefined when it does.
   */
  knownCoolingFor(spec: string): number | undefined {
    const now = this.now();
    const shared = this.shared.get(spec);
    if (this.ledger !== undefined && (shared === undefined || now - shared.readAt >= SHARED_REFRESH_MS)) {
      return undefined;
    }
    return this.cooling(spec, now);
  }

  private cooling(spec: string, now: number): number {
    return Math.max(0, Math.max(this.cooldowns.get(spec) ?? 0, this.shared.get(spec)?.until ?? 0) - now);
  }

  recordSuccess(spec: string): void {
    this.failureCounts.delete(spec);
  }

  /**
   * Counts a failure; returns true when this one tripped the breaker. With a ledger, failures in a row
   * count across processes too (each short-lived `switchboard route` makes one call), read from the
   * attempts recorded within the cooldown window; `counts` says which recorded errors are such failures.
   */
  async recordFailure(
    spec: string,
    reason: string,
    counts: (code: string) => boolean = () => true,
  ): Promise<boolean> {
    let failures = (this.failureCounts.get(spec) ?? 0) + 1;
    if (this.ledger !== undefined && failures < this.options.failures) {
      const recent = await this.ledger.recentOutcomes(
        spec,
        this.now() - this.options.cooldownMs,
        this.options.failures,
      );
      let inARow = 0;
      for (const code of recent) {
        if (code === undefined || !counts(code)) break;
        inARow++;
      }
      failures = Math.max(failures, inARow);
    }
    this.failureCounts.set(spec, failures);
    if (failures < this.options.failures) return false;
    const until = this.now() + this.options.cooldownMs;
    this.cooldowns.set(spec, until);
    this.failureCounts.delete(spec);
    await this.ledger?.setCooldown({ spec, until, failures, reason });
    return true;
  }
}
