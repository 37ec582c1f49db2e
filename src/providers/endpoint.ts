import { SwitchboardError } from '../core/errors.js';

/**
 * A base URL as it may appear in cooldown keys and messages: scheme, host, port and path only, so
 * credentials written into a URL (`https://user:secret@host`, `?key=…`) never reach the ledger.
 */
export function endpointLabel(url: string | undefined, fallback: string): string {
  if (url === undefined || url === '') return fallback;
  let label = labels.get(url);
  if (label === undefined) {
    label = parsedLabel(url);
    if (labels.size >= LABELS_KEPT) labels.clear();
    labels.set(url, label);
  }
  return label ?? fallback;
}

/**
 * Labels made before, by URL (null: not a URL). Every call asks for its provider's endpoint (its
 * cooldown key), and parsing the same configured URL each time was a visible share of a call's own time.
 */
const labels = new Map<string, string | null>();
const LABELS_KEPT = 64;

function parsedLabel(url: string): string | null {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname.replace(/\/+$/, '')}`;
  } catch {
    return null;
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
