import { SwitchboardError } from '../core/errors.js';

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
  const common = { provider, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
  if (status === 401 || status === 403) {
    return new SwitchboardError('AUTH', `${provider} refused the credentials (HTTP ${status}): ${message}`, {
      ...common,
      hint: `check the ${provider} API key in the environment or .env`,
      retryable: false,
    });
  }
  if (status === 429) {
    return new SwitchboardError('RATE_LIMITED', `${provider} is rate limited (HTTP 429): ${message}`, {
      ...common,
      hint: 'wait and retry, or fall back to another provider',
    });
  }
  if (status === 529 || status === 503) {
    return new SwitchboardError('OVERLOADED', `${provider} is overloaded (HTTP ${status}): ${message}`, {
      ...common,
      hint: 'retry later, or fall back to another provider',
    });
  }
  if (status >= 500) {
    return new SwitchboardError('PROVIDER_ERROR', `${provider} failed (HTTP ${status}): ${message}`, {
      ...common,
      hint: 'retry, or fall back to another provider',
      retryable: true,
    });
  }
  return new SwitchboardError(
    'INVALID_INPUT',
    `${provider} rejected the request (HTTP ${status}): ${message}`,
    {
      ...common,
      hint: 'check the model name, the prompt size and the options',
      retryable: false,
    },
  );
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
