import { SwitchboardError } from '../core/errors.js';
import { MAX_TIMER_MS } from '../core/timer-limit.js';

export interface CallDeadlineOptions {
  /** Wall-clock limit for the whole call (every attempt, backoff and fallback), in milliseconds. */
  timeoutMs?: number | undefined;
  /** Limit of one attempt, in milliseconds; never longer than what is left of `timeoutMs`. */
  stageTimeoutMs?: number | undefined;
  /** The caller's abort signal. */
  abortSignal?: AbortSignal | undefined;
  now?: () => number;
}

/**
 * One call's time budget. Every attempt gets what is left of it (or the stage limit when shorter), and a
 * signal that fires when the caller aborts or the time is up, so no provider call or backoff sleep
 * outlives the call's `timeoutMs`.
 */
export class CallDeadline {
  readonly #timeoutMs: number | undefined;
  readonly #stageTimeoutMs: number | undefined;
  readonly #endsAt: number;
  readonly #now: () => number;
  /**
   * Made only when something can end the call early (a time limit, the caller's signal): a provider given
   * a signal pays for it on every request (listeners in the SDK and in fetch), even when it never fires.
   */
  readonly #controller: AbortController | undefined;
  readonly #callerSignal: AbortSignal | undefined;
  #timer: NodeJS.Timeout | undefined;
  readonly #onCallerAbort = (): void => this.#controller?.abort();

  constructor({ timeoutMs, stageTimeoutMs, abortSignal, now = Date.now }: CallDeadlineOptions) {
    for (const [name, value] of [
      ['timeoutMs', timeoutMs],
      ['stageTimeoutMs', stageTimeoutMs],
    ] as const) {
      if (value !== undefined && !(typeof value === 'number' && Number.isFinite(value) && value > 0)) {
        throw new SwitchboardError(
          'INVALID_INPUT',
          `Expected "${name}" to be a positive number of milliseconds, got ${String(value)}`,
        );
      }
    }
    this.#timeoutMs = timeoutMs;
    this.#stageTimeoutMs = stageTimeoutMs;
    this.#now = now;
    this.#endsAt = timeoutMs === undefined ? Number.POSITIVE_INFINITY : now() + timeoutMs;
    this.#callerSignal = abortSignal;
    if (timeoutMs === undefined && abortSignal === undefined) return;
    this.#controller = new AbortController();
    if (timeoutMs !== undefined) this.#arm(timeoutMs);
    if (abortSignal?.aborted === true) this.#controller.abort();
    else abortSignal?.addEventListener('abort', this.#onCallerAbort, { once: true });
  }

  /** Fires when the caller aborts or the call's time is up; undefined when neither can happen. */
  get signal(): AbortSignal | undefined {
    return this.#controller?.signal;
  }

  /** Milliseconds left (Infinity without a limit). */
  remainingMs(): number {
    return Math.max(0, this.#endsAt - this.#now());
  }

  /** True once the call's time is up (not when the caller aborted). */
  expired(): boolean {
    if (this.#callerSignal?.aborted === true) return false;
    return this.remainingMs() <= 0 || this.#controller?.signal.aborted === true;
  }

  /** The limit for the next attempt: the stage limit or what is left, whichever is shorter. */
  attemptTimeoutMs(): number | undefined {
    const remaining = this.remainingMs();
    const limit = Math.min(this.#stageTimeoutMs ?? Number.POSITIVE_INFINITY, remaining);
    return Number.isFinite(limit) ? Math.min(MAX_TIMER_MS, Math.max(1, Math.ceil(limit))) : undefined;
  }

  /** Whether a wait of `milliseconds` ends before the call's time is up. */
  allowsWait(milliseconds: number): boolean {
    return milliseconds < this.remainingMs();
  }

  /** The error a call ends with when its time is up. */
  timeoutError(cause?: unknown): SwitchboardError {
    const seconds = ((this.#timeoutMs ?? 0) / 1000).toLocaleString('en', { maximumFractionDigits: 3 });
    return new SwitchboardError('TIMEOUT', `the call did not finish within its ${seconds} s limit`, {
      hint: 'raise --timeout (timeoutMs): retries and fallbacks share it; --stage-timeout limits each attempt',
      retryable: false,
      details: { timeoutMs: this.#timeoutMs },
      ...(cause === undefined ? {} : { cause }),
    });
  }

  /** Aborts after `milliseconds`, in steps a timer can hold. */
  #arm(milliseconds: number): void {
    const step = Math.min(milliseconds, MAX_TIMER_MS);
    this.#timer = setTimeout(() => {
      if (step < milliseconds) this.#arm(milliseconds - step);
      else this.#controller?.abort();
    }, step);
    this.#timer.unref();
  }

  dispose(): void {
    clearTimeout(this.#timer);
    this.#callerSignal?.removeEventListener('abort', this.#onCallerAbort);
  }
}
