import type { SDKAPIRetryMessage } from '@anthropic-ai/claude-agent-sdk';
import { SwitchboardError } from '../../core/errors.js';

/**
 * The longest `retry-after` Claude Code waits for (measured with 2.1.x against `switchboard sim`: it
 * waits for 60 s, and gives up at once, with no `api_retry` message, from 61 s on).
 */
export const CLAUDE_LONGEST_RETRY_WAIT_MS = 60_000;

/**
 * Claude Code's own backoff before its first retry is 500 ms plus up to a quarter of jitter; a longer
 * `retry_delay_ms` is the server's `retry-after` (Claude Code adds its jitter to it).
 */
const OWN_FIRST_BACKOFF_MAX_MS = 625;

/**
 * What an API error means, from the `api_retry` message Claude Code sends before it waits and sends the
 * request again. Switchboard ends the session there and lets its own retry policy decide, so each
 * attempt is one request; the message carries the HTTP status and the delay the server asked for,
 * which the final result does not.
 */
export function mapApiRetry(message: SDKAPIRetryMessage, status: number): SwitchboardError {
  const what = `HTTP ${status} (${message.error})`;
  if (status === 429) {
    const retryAfterMs =
      message.retry_delay_ms > OWN_FIRST_BACKOFF_MAX_MS ? message.retry_delay_ms : undefined;
    return new SwitchboardError('RATE_LIMITED', `Claude Code is rate limited: ${what}`, {
      hint:
        retryAfterMs === undefined
          ? 'wait and retry, or fall back to another provider'
          : `retry after ${Math.ceil(retryAfterMs / 1000)} s, or fall back to another provider`,
      provider: 'claude',
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    });
  }
  if (status === 401 || status === 403) {
    return new SwitchboardError('AUTH', `Claude Code could not authenticate: ${what}`, {
      hint: 'set ANTHROPIC_API_KEY, or run `claude` once and /login',
      provider: 'claude',
      retryable: false,
    });
  }
  if (status === 529) {
    return new SwitchboardError('OVERLOADED', `the Claude API is overloaded: ${what}`, {
      hint: 'retry later, or fall back to another provider',
      provider: 'claude',
    });
  }
  return new SwitchboardError('PROVIDER_ERROR', `Claude Code's API request failed: ${what}`, {
    hint: 'retry; if it persists, run the same prompt with `claude -p` to see the full error',
    provider: 'claude',
  });
}
