import { SwitchboardError } from '../../core/errors.js';

export interface KeyPoolOptions {
  /** API keys, in the order they are tried first. Duplicates are dropped (they share one quota). */
  keys: readonly string[];
  /** How long a rate-limited key rests when the provider gave no retry-after (ms). @default 60_000 */
  cooldownMs?: number;
  /** The clock, in milliseconds; tests inject a fake one. @default Date.now */
  now?: () => number;
}

/** A key picked for one attempt, named by its 1-based position so messages never show the key. */
export interface KeyChoice {
  /** 0-based position in the pool. */
  index: number;
  /** `key #1`, `key #2`, …: what errors, attempts and warnings say. */
  label: string;
}

/**
 * API keys with per-key cooldowns, shared by every call of one provider instance. Keys are handed
 * out in turn so traffic spreads over their quotas; a key that hit a quota rests until its
 * cooldown ends. The keys live in a private field so logging the pool never prints them.
 */
export class KeyPool {
  readonly #keys: readonly string[];
  readonly #restingUntil: number[];
  readonly #cooldownMs: number;
  readonly #now: () => number;
  #cursor = 0;

  constructor({ keys, cooldownMs = 60_000, now = Date.now }: KeyPoolOptions) {
    if (!Array.isArray(keys) || keys.some((key) => typeof key !== 'string' || key.trim() === '')) {
      throw new SwitchboardError('INVALID_INPUT', 'Expected "keys" to be a list of non-empty strings');
    }
    if (!(typeof cooldownMs === 'number' && Number.isFinite(cooldownMs) && cooldownMs >= 0)) {
      throw new SwitchboardError(
        'INVALID_INPUT',
        'Expected "cooldownMs" to be a non-negative number of milliseconds',
      );
    }
    this.#keys = [...new Set(keys.map((key) => key.trim()))];
    this.#restingUntil = this.#keys.map(() => 0);
    this.#cooldownMs = cooldownMs;
    this.#now = now;
  }

  /** Number of distinct keys. */
  get size(): number {
    return this.#keys.length;
  }

  /** The next key that is not resting, taking turns; undefined when every key rests (or there are none). */
  next(): KeyChoice | undefined {
    const now = this.#now();
    for (let step = 0; step < this.#keys.length; step++) {
      const index = (this.#cursor + step) % this.#keys.length;
      if ((this.#restingUntil[index] ?? 0) <= now) {
        this.#cursor = (index + 1) % this.#keys.length;
        return { index, label: labelOf(index) };
      }
    }
    return undefined;
  }

  /** The secret itself, for building a client; never put it in a message. */
  keyAt(index: number): string {
    const key = this.#keys[index];
    if (key === undefined) throw new RangeError(`the pool has no key #${index + 1}`);
    return key;
  }

  /**
   * Rests a key for `durationMs` (the provider's retry-after when it sent one), or the pool's
   * cooldown. A longer rest already running is kept.
   */
  coolDown(index: number, durationMs: number = this.#cooldownMs): void {
    const until = this.#now() + Math.max(0, durationMs);
    this.#restingUntil[index] = Math.max(this.#restingUntil[index] ?? 0, until);
  }

  /** True when a key other than `index` is free now. */
  otherFree(index: number): boolean {
    const now = this.#now();
    return this.#restingUntil.some((until, other) => other !== index && until <= now);
  }

  /** True while the key rests. */
  isResting(index: number): boolean {
    return (this.#restingUntil[index] ?? 0) > this.#now();
  }

  /** Milliseconds until the first key is free again: 0 when one is free now. */
  msUntilAvailable(): number {
    if (this.#keys.length === 0) return 0;
    return Math.max(0, Math.min(...this.#restingUntil) - this.#now());
  }
}

function labelOf(index: number): string {
  return `key #${index + 1}`;
}
