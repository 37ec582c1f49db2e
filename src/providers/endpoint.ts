import { SwitchboardError } from '../core/errors.js';

/**
 * A base URL as it may appear in cooldown keys and messages: scheme, host, port and path only, so
 * credentials written into a URL (`https://user:secret@host`, `?key=…`) never reach the ledger.
 */
export function endpointLabel(url: string | undefined, fallback: string): string {
  if (url === undefined || url === '') return fallback;
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname.replace(/\/+$/, '')}`;
  } catch {
    return fallback;
  }
}

/**
 * The refusal of a provider that takes its base URL only from its configuration: a spec such as
 * `anthropic@http://…:model` would otherwise be called at the configured endpoint, not the one named.
 */
export function refuseInlineBaseUrl(
  provider: string,
  request: { baseUrl?: string | undefined },
  setting: string,
): void {
  if (request.baseUrl === undefined) return;
  throw new SwitchboardError('INVALID_INPUT', `${provider} takes no base URL in the spec`, {
    provider,
    retryable: false,
    hint: `write ${provider}:<model> and set ${setting}; only openai@URL:model names its server`,
  });
}
