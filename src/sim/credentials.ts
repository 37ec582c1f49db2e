import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/**
 * The credentials a request carries: `x-api-key` (Anthropic), `authorization: Bearer` (OpenAI, Claude
 * Code), `x-goog-api-key` and the `key` query parameter (Gemini). The simulator keeps them out of its
 * log wherever they appear (a tool result that printed the environment, say), and can echo them in a
 * fault to act like a server that quotes the key it refused.
 */
export function requestCredentials(request: IncomingMessage, url: URL): string[] {
  const values = [
    request.headers['x-api-key'],
    request.headers['x-goog-api-key'],
    request.headers['authorization']?.replace(/^(Bearer|Basic)\s+/i, ''),
    url.searchParams.get('key') ?? undefined,
  ];
  return [
    ...new Set(
      values.flat().filter((value): value is string => typeof value === 'string' && value.length >= 4),
    ),
  ];
}

/** `text` without any of `credentials`. */
export function withoutCredentials(text: string, credentials: readonly string[]): string {
  let result = text;
  for (const credential of credentials) result = result.split(credential).join('[redacted]');
  return result;
}

/** `sha256:` and the first 12 hex digits of the key's hash: enough to tell keys apart in a log. */
export function keyFingerprint(key: string): string {
  return `sha256:${createHash('sha256').update(key).digest('hex').slice(0, 12)}`;
}
