/** Requests longer than this are cut before routing; the head of a request says what it is about. */
export const MAX_ROUTED_CHARACTERS = 4_000;

/**
 * The form of a request used for cache keys and hashing: Unicode-normalised (NFKC), lower-case,
 * whitespace collapsed, trimmed, and cut to `MAX_ROUTED_CHARACTERS`.
 */
export function normalizeRequest(text: string): string {
  return text.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim().slice(0, MAX_ROUTED_CHARACTERS);
}
