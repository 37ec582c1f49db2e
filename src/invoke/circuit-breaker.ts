import { SwitchboardError } from '../core/errors.js';
import type { Ledger } from '../store/ledger.js';

// Not cockatiel's CircuitBreakerPolicy: its state can be restored only when a policy is built
// (`initialState`), not taken up live from another process, and it counts executions in this process
// alone; here every `serve` replica, worker and one-shot command must agree through the ledger.

export interface CircuitBreakerOptions {
  /** Share of recent distinct requests that failed at which the breaker opens, above 0 and at most 1. @default 0.5 */
  failureRatio: number;
  /** Fewest distinct requests in the window before the ratio can open the breaker. @default 20 */
  minimumRequests: number;
  /** The sliding window the requests are counted over, in milliseconds. @default 30_000 */
  windowMs: number;
  /** How long an open breaker waits before it half-opens and lets probes through, in milliseconds. @default 5_000 */
  halfOpenAfterMs: number;
  /** The longest wait: it doubles each time a probe fails. In milliseconds. @default 60_000 */
  maxHalfOpenAfterMs: number;
  /** Requests a half-open breaker lets through at once; the first to succeed closes it. @default 3 */
  probes: number;
}

export const DEFAULT_BREAKER: CircuitBreakerOptions = {
  failureRatio: 0.5,
  minimumRequests: 20,
  windowMs: 30_000,
  halfOpenAfterMs: 5_000,
  maxHalfOpenAfterMs: 60_000,
  probes: 3,
};

/** Settings as `call()` takes them: the current ones, and `cooldownMs`, the earlier name of `halfOpenAfterMs`. */
export type CircuitBreakerSettings = Partial<CircuitBreakerOptions> & { cooldownMs?: number };

export type BreakerState = 'closed' | 'open' | 'half-open';

/** Whether a request may go to a provider now; when not, how long until it is worth asking again. */
export type Admission =
  { allowed: true } | { allowed: false; state: 'open' | 'half-open'; retryAfterMs: number };

/** How stale another process's breaker state may be seen: a ledger read per call would cost every call. */
const SHARED_REFRESH_MS = 1_000;
/** Requests one window remembers at most per key: a bound on memory at thousands of calls a second. */
const WINDOW_LIMIT = 10_000;
/** Distinct requests read from the ledger's window at most. */
const LEDGER_WINDOW_LIMIT = 2_000;

const ALLOWED: Admission = { allowed: true };

/** One request in a window: when it was first seen at the key, and whether it has failed there. */
interface WindowEntry {
  readonly id: string;
  readonly at: number;
  failed: boolean;
}

/** The latest requests at one key: whether each failed, counted once however many attempts it made. */
class RequestWindow {
  private readonly requests = new Map<string, WindowEntry>();
  /**
   * The same entries oldest first, from `head` on. Not the Map's own order: V8 leaves a hole for each
   * entry deleted from a Map's front until it rehashes, and every prune walked over them (1.7–2.1 µs a
   * success with 3,000 requests in the window, 13 µs once it holds 10,000; this queue 0.3–0.6 µs).
   */
  private order: WindowEntry[] = [];
  private head = 0;
  failed = 0;

  get size(): number {
    return this.requests.size;
  }

  /** A request's outcome at this key; once it was served, a failed retry of it does not undo that. */
  record(requestId: string, failed: boolean, now: number, windowMs: number): void {
    this.prune(now - windowMs);
    const known = this.requests.get(requestId);
    if (known !== undefined) {
      if (known.failed && !failed) {
        known.failed = false;
        this.failed--;
      }
      return;
    }
    const entry: WindowEntry = { id: requestId, at: now, failed };
    this.requests.set(requestId, entry);
    this.order.push(entry);
    if (failed) this.failed++;
    if (this.requests.size > WINDOW_LIMIT) this.dropOldest();
  }

  clear(): void {
    this.requests.clear();
    this.order = [];
    this.head = 0;
    this.failed = 0;
  }

  private prune(since: number): void {
    while (this.head < this.order.length && (this.order[this.head] as WindowEntry).at < since) {
      this.dropOldest();
    }
  }

  private dropOldest(): void {
    const oldest = this.order[this.head];
    if (oldest === undefined) return;
    this.head++;
    this.requests.delete(oldest.id);
    if (oldest.failed) this.failed--;
    // The dropped front is let go once it is half the array, so each entry is copied once on average.
    if (this.head >= 1024 && this.head * 2 >= this.order.length) {
      this.order = this.order.slice(this.head);
      this.head = 0;
    }
  }
}

/** One key's breaker in this process. */
interface Circuit {
  /** When the open breaker half-opens; 0 while it is closed. */
  until: number;
  /** The wait of the latest opening, which a failed probe doubles. */
  waitMs: number;
  reason: string;
  /** Requests let through as probes of the half-open breaker, still going. */
  readonly probes: Set<string>;
  readonly window: RequestWindow;
  /** Bumped at every change of state here, so a ledger read begun before one does not undo it. */
  version: number;
  /** When the ledger's window of this key was last read (failures from other processes), or 0. */
  windowReadAt: number;
}

/**
 * A circuit breaker per provider key, in the usual sense: it opens when at least `failureRatio` of the
 * distinct requests of the last `windowMs` failed (once there were `minimumRequests` of them), turns
 * half-open after `halfOpenAfterMs` and lets `probes` requests through, closes when one succeeds and
 * re-opens for twice as long when one fails. Open, half-open and closed are kept in the ledger too, so
 * every process sharing it (`serve` replicas, workers, one-shot commands) sees another's change within a
 * second; a one-shot command's failures count there as well, read from the attempts the ledger recorded.
 */
export class CircuitBreaker {
  private readonly circuits = new Map<string, Circuit>();
  /** When each key's state was last read from the ledger, and the read still under way. */
  private readonly reads = new Map<string, { readAt: number; pending: Promise<void> | undefined }>();
  private readonly options: CircuitBreakerOptions;
  private readonly ledger: Ledger | undefined;
  private readonly now: () => number;

  constructor(settings: CircuitBreakerSettings = {}, ledger?: Ledger, now: () => number = Date.now) {
    this.options = breakerOptions(settings);
    this.ledger = ledger;
    this.now = now;
  }

  /**
   * Whether request `requestId` may go to `key` now. A half-open breaker counts it as one of its probes,
   * so the request's outcome must be recorded, or `settle` called. Synchronous unless the ledger is due
   * a read (at most once a second per key).
   */
  admit(key: string, requestId: string): Admission | Promise<Admission> {
    if (this.ledger !== undefined) {
      const read = this.reads.get(key);
      if (read?.pending !== undefined) return read.pending.then(() => this.decide(key, requestId));
      if (read === undefined || this.now() - read.readAt >= SHARED_REFRESH_MS) {
        return this.refresh(this.ledger, key).then(() => this.decide(key, requestId));
      }
    }
    return this.decide(key, requestId);
  }

  /** The state of `key` as this process knows it (the ledger as read within the last second). */
  stateOf(key: string): BreakerState {
    const circuit = this.circuits.get(key);
    if (circuit === undefined || circuit.until === 0) return 'closed';
    return this.now() < circuit.until ? 'open' : 'half-open';
  }

  /** A request `key` served. Closes a half-open breaker; returns the ledger write when it does. */
  recordSuccess(key: string, requestId: string): Promise<void> | undefined {
    const circuit = this.circuit(key);
    const state = this.stateOf(key);
    if (state === 'closed') {
      circuit.window.record(requestId, false, this.now(), this.options.windowMs);
      return undefined;
    }
    if (state === 'open') return undefined;
    return this.close(key, circuit);
  }

  /**
   * A request's attempt at `key` failed the provider's way (a 5xx, a timeout, a dropped connection). Returns
   * true when the breaker opened because of it: the ratio was reached, or a probe failed. `counts` says
   * which error codes the ledger recorded are such failures, for the requests of other processes.
   */
  async recordFailure(
    key: string,
    requestId: string,
    reason: string,
    counts: (code: string) => boolean = () => true,
  ): Promise<boolean> {
    const circuit = this.circuit(key);
    const state = this.stateOf(key);
    if (state === 'open') return false;
    if (state === 'half-open') {
      // A request let through before the breaker opened says nothing of how it is now.
      if (!circuit.probes.has(requestId)) return false;
      await this.open(key, circuit, Math.min(circuit.waitMs * 2, this.options.maxHalfOpenAfterMs), reason, 1);
      return true;
    }
    const now = this.now();
    const { window } = circuit;
    window.record(requestId, true, now, this.options.windowMs);
    let failed = this.trips(window.failed, window.size) ? window.failed : undefined;
    if (
      failed === undefined &&
      this.ledger !== undefined &&
      now - circuit.windowReadAt >= SHARED_REFRESH_MS
    ) {
      circuit.windowReadAt = now;
      const shared = await this.ledgerWindow(this.ledger, key, now - this.options.windowMs, counts);
      if (this.trips(shared.failed, shared.requests)) failed = shared.failed;
    }
    if (failed === undefined || this.stateOf(key) !== 'closed') return false;
    await this.open(key, circuit, this.options.halfOpenAfterMs, reason, failed);
    return true;
  }

  /** The request is done with `key` without an outcome that says anything (an abort, a bad request): frees its probe. */
  settle(key: string, requestId: string): void {
    this.circuits.get(key)?.probes.delete(requestId);
  }

  private decide(key: string, requestId: string): Admission {
    const circuit = this.circuits.get(key);
    if (circuit === undefined || circuit.until === 0) return ALLOWED;
    const now = this.now();
    if (now < circuit.until) return { allowed: false, state: 'open', retryAfterMs: circuit.until - now };
    if (circuit.probes.has(requestId) || circuit.probes.size < this.options.probes) {
      circuit.probes.add(requestId);
      return ALLOWED;
    }
    // The probes under way decide soon; by then this process has read the ledger again too.
    return { allowed: false, state: 'half-open', retryAfterMs: SHARED_REFRESH_MS };
  }

  private trips(failed: number, requests: number): boolean {
    return requests >= this.options.minimumRequests && failed >= requests * this.options.failureRatio;
  }

  private circuit(key: string): Circuit {
    let circuit = this.circuits.get(key);
    if (circuit === undefined) {
      circuit = {
        until: 0,
        waitMs: 0,
        reason: '',
        probes: new Set(),
        window: new RequestWindow(),
        version: 0,
        windowReadAt: 0,
      };
      this.circuits.set(key, circuit);
    }
    return circuit;
  }

  private async open(key: string, circuit: Circuit, waitMs: number, reason: string, failed: number) {
    const now = this.now();
    circuit.until = now + Math.max(waitMs, this.options.halfOpenAfterMs);
    circuit.waitMs = circuit.until - now;
    circuit.reason = reason;
    circuit.probes.clear();
    circuit.window.clear();
    circuit.version++;
    await this.ledger?.setCooldown({
      spec: key,
      until: circuit.until,
      failures: failed,
      reason,
      updatedAt: now,
    });
  }

  private close(key: string, circuit: Circuit): Promise<void> | undefined {
    circuit.until = 0;
    circuit.probes.clear();
    circuit.window.clear();
    circuit.version++;
    return this.ledger?.setCooldown({
      spec: key,
      until: 0,
      failures: 0,
      reason: circuit.reason,
      updatedAt: this.now(),
    });
  }

  /** Takes up what another process set: the ledger's row wins unless this process changed state since the read began. */
  private refresh(ledger: Ledger, key: string): Promise<void> {
    const circuit = this.circuit(key);
    const version = circuit.version;
    const entry: { readAt: number; pending: Promise<void> | undefined } = {
      readAt: this.now(),
      pending: undefined,
    };
    this.reads.set(key, entry);
    entry.pending = ledger
      .getCooldown(key)
      .then((row) => {
        if (row === undefined || circuit.version !== version || row.until === circuit.until) return;
        circuit.probes.clear();
        circuit.window.clear();
        circuit.until = row.until;
        if (row.until === 0) return;
        circuit.reason = row.reason;
        circuit.waitMs =
          row.updatedAt === undefined ? this.options.halfOpenAfterMs : Math.max(0, row.until - row.updatedAt);
      })
      .finally(() => {
        entry.pending = undefined;
      });
    return entry.pending;
  }

  /** Distinct requests of every process at `key` since a time, and how many of them failed. */
  private async ledgerWindow(
    ledger: Ledger,
    key: string,
    since: number,
    counts: (code: string) => boolean,
  ): Promise<{ requests: number; failed: number }> {
    const outcomes = new Map<string, 'served' | 'failed' | 'neither'>();
    for (const { callId, errorCode } of await ledger.recentRequests(key, since, LEDGER_WINDOW_LIMIT)) {
      const outcome = errorCode === undefined ? 'served' : counts(errorCode) ? 'failed' : 'neither';
      const known = outcomes.get(callId);
      if (known === undefined || known === 'neither' || outcome === 'served') outcomes.set(callId, outcome);
    }
    let requests = 0;
    let failed = 0;
    for (const outcome of outcomes.values()) {
      if (outcome === 'neither') continue;
      requests++;
      if (outcome === 'failed') failed++;
    }
    return { requests, failed };
  }
}

/** The breaker's settings with defaults, checked, each error naming its option. */
export function breakerOptions(settings: CircuitBreakerSettings): CircuitBreakerOptions {
  const { cooldownMs, ...given } = settings;
  if ('failures' in given) {
    throw new SwitchboardError(
      'INVALID_INPUT',
      'The circuit breaker no longer counts failures in a row: replace "failures" with "failureRatio" and "minimumRequests"',
    );
  }
  if (cooldownMs !== undefined && given.halfOpenAfterMs !== undefined) {
    throw new SwitchboardError(
      'INVALID_INPUT',
      'Expected one of "cooldownMs" and "halfOpenAfterMs" (the earlier and the current name of one setting), not both',
    );
  }
  const halfOpenAfterMs = given.halfOpenAfterMs ?? cooldownMs ?? DEFAULT_BREAKER.halfOpenAfterMs;
  const options: CircuitBreakerOptions = {
    ...DEFAULT_BREAKER,
    ...given,
    halfOpenAfterMs,
    maxHalfOpenAfterMs:
      given.maxHalfOpenAfterMs ?? Math.max(DEFAULT_BREAKER.maxHalfOpenAfterMs, halfOpenAfterMs),
  };
  const problems: [boolean, string][] = [
    [
      options.failureRatio > 0 && options.failureRatio <= 1,
      '"failureRatio" to be a share above 0 and at most 1',
    ],
    [
      Number.isInteger(options.minimumRequests) && options.minimumRequests >= 1,
      '"minimumRequests" to be a whole number of at least 1',
    ],
    [options.windowMs > 0, '"windowMs" to be a positive number of milliseconds'],
    [options.halfOpenAfterMs > 0, '"halfOpenAfterMs" to be a positive number of milliseconds'],
    [
      options.maxHalfOpenAfterMs >= options.halfOpenAfterMs,
      '"maxHalfOpenAfterMs" to be at least "halfOpenAfterMs"',
    ],
    [Number.isInteger(options.probes) && options.probes >= 1, '"probes" to be a whole number of at least 1'],
  ];
  for (const [ok, expected] of problems) {
    if (!ok) throw new SwitchboardError('INVALID_INPUT', `Expected ${expected}`);
  }
  return options;
}
