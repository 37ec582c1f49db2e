import type { Ledger } from '../store/ledger.js';
import type { VirtualKey } from './virtual-keys.js';

/** The length of a rate window: rpm and tpm count per fixed minute (00:00–00:59, 01:00–01:59, …). */
export const RATE_WINDOW_MS = 60_000;
/** What a request refused for concurrency is told to wait: a slot frees when any request ends. */
const CONCURRENCY_RETRY_MS = 1_000;

/** Which limit refused a request. */
export type KeyLimitName = 'rpm' | 'tpm' | 'concurrency';

/** A request let through: call `release` once it ended, with the tokens it used (input plus output). */
export interface KeyAdmitted {
  ok: true;
  /** Ends the request: frees its concurrency slot and counts its tokens toward tpm. Safe to call twice. */
  release(tokensUsed?: number): void;
}

/** A request refused: answer it with HTTP 429 and `retry-after`. */
export interface KeyRefused {
  ok: false;
  status: 429;
  limit: KeyLimitName;
  /** Milliseconds until the limit has room again (the end of the window; a guess for concurrency). */
  retryAfterMs: number;
  message: string;
}

export type KeyAdmission = KeyAdmitted | KeyRefused;

export interface KeyLimitsOptions {
  /**
   * The ledger the keys live in. On PostgreSQL, rpm and tpm are counted in it (`countKeyUsage`), so every
   * process and machine using the database shares one count per key; on SQLite, or without one, they are
   * counted in this process's memory.
   */
  ledger?: Pick<Ledger, 'dialect' | 'countKeyUsage' | 'pruneKeyUsage'>;
  /**
   * Count rpm and tpm in the ledger whatever its dialect.
   * @default true for a PostgreSQL ledger, false otherwise
   */
  shared?: boolean;
  /** Told when the shared counters could not be used; that request was judged by this process's counts. */
  onError?: (error: unknown) => void;
  /**
   * How long a request waits for the shared counter before it is judged by this process's counts: a
   * ledger waiting out a PostgreSQL restart (up to two minutes) must not hold every request that long.
   * @default 1000
   */
  sharedTimeoutMs?: number;
  /** Test seams. */
  _internal?: {
    /** The clock `admit` defaults to and `release` counts tokens at. @default Date.now */
    now?: () => number;
  };
}

interface Window {
  start: number;
  requests: number;
  tokens: number;
}

/**
 * A virtual key's rate limits: requests per minute, tokens per minute (counted when a request is
 * released) and requests in flight. Concurrency is always this process's. Rpm and tpm are too, unless
 * the ledger is PostgreSQL: then `admit` returns a Promise and every process counts together, each
 * request one atomic `countKeyUsage`. A gateway on a SQLite ledger is one process, so memory is exact
 * there; several gateways on one SQLite file each allow the full rate.
 */
export class KeyLimits {
  /** Whether rpm and tpm are counted in the ledger (then `admit` returns a Promise). */
  readonly shared: boolean;
  private readonly ledger: KeyLimitsOptions['ledger'];
  private readonly onError: (error: unknown) => void;
  private readonly windows = new Map<string, Window>();
  private readonly inFlight = new Map<string, number>();
  private prunedBefore = 0;
  private readonly now: () => number;

  private readonly sharedTimeoutMs: number;

  constructor({
    ledger,
    shared,
    onError = () => undefined,
    sharedTimeoutMs = 1000,
    _internal = {},
  }: KeyLimitsOptions = {}) {
    this.ledger = ledger;
    this.sharedTimeoutMs = sharedTimeoutMs;
    this.now = _internal.now ?? Date.now;
    this.shared = ledger !== undefined && (shared ?? ledger.dialect === 'postgres');
    this.onError = onError;
  }

  /**
   * Lets a request made with `key` through, or says which limit refused it. Synchronous unless the
   * counts are shared (see `shared`); `await` works either way.
   */
  admit(key: VirtualKey, now: number = this.now()): KeyAdmission | Promise<KeyAdmission> {
    const { concurrency, rpm, tpm } = key.limits;
    if (concurrency !== undefined && (this.inFlight.get(key.id) ?? 0) >= concurrency) {
      return refused(key, 'concurrency', CONCURRENCY_RETRY_MS, `${concurrency} requests in flight`);
    }
    const window = this.windowOf(key.id, now);
    if (!this.shared || (rpm === undefined && tpm === undefined)) {
      const refusal = judge(key, window, now);
      if (refusal !== undefined) return refusal;
      window.requests += 1;
      return this.admitted(key);
    }
    // The slot is held while the shared count is asked, so this process's own requests count at once.
    const admitted = this.admitted(key);
    return this.admitShared(key, window, now).then(
      (refusal) => {
        if (refusal === undefined) return admitted;
        admitted.release();
        return refusal;
      },
      (error: unknown) => {
        admitted.release();
        throw error;
      },
    );
  }

  /** Every process's count, one atomic statement; this process's own when the ledger fails. */
  private async admitShared(key: VirtualKey, window: Window, now: number): Promise<KeyRefused | undefined> {
    const ledger = this.ledger!;
    this.pruneOldWindows(window.start);
    let counted: { requests: number; tokens: number };
    try {
      counted = await withinMs(ledger.countKeyUsage(key.id, window.start, 1, 0), this.sharedTimeoutMs);
    } catch (error) {
      this.onError(error);
      const refusal = judge(key, window, now);
      if (refusal === undefined) window.requests += 1;
      return refusal;
    }
    window.requests += 1;
    // The count includes this request: refused when it is past the limit.
    return judge(key, { ...counted, requests: counted.requests - 1, start: window.start }, now);
  }

  private admitted(key: VirtualKey): KeyAdmitted {
    this.inFlight.set(key.id, (this.inFlight.get(key.id) ?? 0) + 1);
    let released = false;
    return {
      ok: true,
      release: (tokensUsed = 0) => {
        if (released) return;
        released = true;
        const left = (this.inFlight.get(key.id) ?? 1) - 1;
        if (left <= 0) this.inFlight.delete(key.id);
        else this.inFlight.set(key.id, left);
        const tokens = Number.isFinite(tokensUsed) && tokensUsed > 0 ? Math.round(tokensUsed) : 0;
        if (tokens === 0) return;
        const window = this.windowOf(key.id, this.now());
        window.tokens += tokens;
        if (this.shared) {
          this.ledger!.countKeyUsage(key.id, window.start, 0, tokens).catch((error: unknown) =>
            this.onError(error),
          );
        }
      },
    };
  }

  /** This process's counts for the key's current window (a new window starts empty). */
  private windowOf(keyId: string, now: number): Window {
    const start = now - (now % RATE_WINDOW_MS);
    let window = this.windows.get(keyId);
    if (window === undefined || window.start !== start) {
      window = { start, requests: 0, tokens: 0 };
      this.windows.set(keyId, window);
    }
    return window;
  }

  /** Once a minute per process: the shared windows that ended a while ago go. */
  private pruneOldWindows(start: number): void {
    if (start <= this.prunedBefore) return;
    this.prunedBefore = start;
    this.ledger!.pruneKeyUsage(start - 2 * RATE_WINDOW_MS).catch((error: unknown) => this.onError(error));
  }
}

/** The refusal a window's counts (before this request) call for, if any. */
function judge(key: VirtualKey, window: Window, now: number): KeyRefused | undefined {
  const { rpm, tpm } = key.limits;
  const untilNext = window.start + RATE_WINDOW_MS - now;
  if (rpm !== undefined && window.requests >= rpm) {
    return refused(key, 'rpm', untilNext, `${rpm} requests this minute`);
  }
  if (tpm !== undefined && window.tokens >= tpm) {
    return refused(key, 'tpm', untilNext, `${tpm} tokens this minute`);
  }
  return undefined;
}

function refused(key: VirtualKey, limit: KeyLimitName, retryAfterMs: number, reached: string): KeyRefused {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return {
    ok: false,
    status: 429,
    limit,
    retryAfterMs,
    message: `virtual key ${key.name} reached its ${limit} limit (${reached}); try again in ${seconds} s`,
  };
}

/** `promise`, or a rejection once `ms` passed without it settling (the promise itself goes on). */
function withinMs<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the shared rate counter did not answer within ${ms} ms`)), ms);
  });
  // A count that lands after the timeout still counts; its failure is nobody's to hear.
  promise.catch(() => undefined);
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
