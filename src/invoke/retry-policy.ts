import type { ErrorCode } from '../core/errors.js';

/** What to do after a failed attempt. */
export type RetryAction = 'retry' | 'next' | 'stop';

export interface RetryPolicy {
  /**
   * Hard cap on attempts in one call, across every provider of the chain and every schema re-ask.
   * @default 8
   */
  maxAttempts: number;
  /** Retries of the same provider before moving on. @default 2 */
  retriesPerProvider: number;
  /** First backoff delay in milliseconds; doubles each retry, with jitter. @default 500 */
  baseDelayMs: number;
  /**
   * Longest wait for one retry. A provider asking to wait longer (a `retry-after` of minutes) is left
   * for the next one in the chain instead. @default 30_000
   */
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 8,
  retriesPerProvider: 2,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
};

/**
 * The policy by error class: transient failures retry the same provider; a provider that cannot serve
 * (missing, unreachable, downgraded, refused credentials, out of retries) hands over to the next — after
 * `AUTH`, one with other credentials, and the same provider is never retried; failures no other provider
 * would fix stop the call (bad input, budget, abort — an abort is never retried).
 */
export function actionFor(code: ErrorCode): RetryAction {
  switch (code) {
    case 'RATE_LIMITED':
    case 'OVERLOADED':
    case 'PROVIDER_ERROR':
    case 'TIMEOUT':
    case 'IDLE_TIMEOUT':
    case 'PARSE':
      return 'retry';
    case 'PROVIDER_UNAVAILABLE':
    case 'MODEL_DOWNGRADED':
    case 'SCHEMA':
    case 'AUTH':
      return 'next';
    default:
      return 'stop';
  }
}

/** Exponential backoff with full jitter, or the provider's own `retry-after` when it gave one. */
export function backoffDelay(
  retry: number,
  policy: RetryPolicy,
  retryAfterMs: number | undefined,
  random = Math.random,
): number {
  if (retryAfterMs !== undefined) return retryAfterMs;
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}
