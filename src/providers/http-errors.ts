import { SwitchboardError, type ErrorCode } from '../core/errors.js';

/**
 * What a provider's HTTP status means: the one rule for the API providers and the gateway's relay.
 * 408, 409 and 425 are worth another try (the vendors' SDKs retry them too): the request timed out,
 * met a conflicting one, or came too early, none of which is the request's own fault.
 */
export function classifyStatus(status: number): { code: ErrorCode; retryable: boolean } {
  if (status === 401 || status === 403) return { code: 'AUTH', retryable: false };
  if (status === 429) return { code: 'RATE_LIMITED', retryable: true };
  if (status === 529 || status === 503) return { code: 'OVERLOADED', retryable: true };
  if (status === 408) return { code: 'TIMEOUT', retryable: true };
  if (status === 409 || status === 425 || status >= 500) return { code: 'PROVIDER_ERROR', retryable: true };
  return { code: 'INVALID_INPUT', retryable: false };
}

/**
 * Maps an HTTP failure of an API provider to a coded error. `retryAfterMs` comes from the
 * `retry-after-ms` header, else `retry-after` in seconds or as an HTTP date.
 */
export function errorFromStatus(
  provider: string,
  status: number,
  message: string,
  headers: { get(name: string): string | null } | undefined,
): SwitchboardError {
  const retryAfterMs = parseRetryAfter(headers);
  const { code, retryable } = classifyStatus(status);
  const common = { provider, retryable, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
  switch (code) {
    case 'AUTH':
      return new SwitchboardError(code, `${provider} refused the credentials (HTTP ${status}): ${message}`, {
        ...common,
        hint: `check the ${provider} API key in the environment or .env`,
      });
    case 'RATE_LIMITED':
      return new SwitchboardError(code, `${provider} is rate limited (HTTP 429): ${message}`, {
        ...common,
        hint: 'wait and retry, or fall back to another provider',
      });
    case 'OVERLOADED':
      return new SwitchboardError(code, `${provider} is overloaded (HTTP ${status}): ${message}`, {
        ...common,
        hint: 'retry later, or fall back to another provider',
      });
    case 'TIMEOUT':
      return new SwitchboardError(code, `${provider} timed out the request (HTTP ${status}): ${message}`, {
        ...common,
        hint: 'retry, or fall back to another provider',
      });
    case 'PROVIDER_ERROR':
      return new SwitchboardError(code, `${provider} failed (HTTP ${status}): ${message}`, {
        ...common,
        hint: 'retry, or fall back to another provider',
      });
    default:
      return new SwitchboardError(code, `${provider} rejected the request (HTTP ${status}): ${message}`, {
        ...common,
        hint: 'check the model name, the prompt size and the options',
      });
  }
}

export function parseRetryAfter(
  headers: { get(name: string): string | null } | undefined,
): number | undefined {
  const milliseconds = Number(headers?.get('retry-after-ms'));
  if (headers?.get('retry-after-ms') != null && Number.isFinite(milliseconds) && milliseconds >= 0)
    return milliseconds;
  const value = headers?.get('retry-after');
  if (value == null) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
