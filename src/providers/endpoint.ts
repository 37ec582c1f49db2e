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
