/**
 * A base URL in the one form two spellings of the same endpoint share, for deciding where a key may
 * go: scheme and host lower-cased, the scheme's default port dropped, trailing slashes cut
 * (`HTTP://Host:80/v1/` is `http://host/v1`). Undefined for anything that is not a plain http(s)
 * base URL: one with a user name or password (`http://allowed@evil/` is a request to `evil`), a
 * query or a fragment never matches an endpoint a key is bound to.
 */
export function normalizeBaseUrl(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return undefined;
  if (parsed.username !== '' || parsed.password !== '' || parsed.search !== '' || parsed.hash !== '')
    return undefined;
  // URL already lower-cases the host, drops a default port and resolves `.` and `..` in the path.
  return `${parsed.protocol}//${parsed.host}${parsed.pathname.replace(/\/+$/, '')}`;
}

/** Whether two base URLs name the same endpoint (see `normalizeBaseUrl`); never for unparsable ones. */
export function sameEndpoint(a: string, b: string): boolean {
  const left = normalizeBaseUrl(a);
  return left !== undefined && left === normalizeBaseUrl(b);
}

/** A base URL besides the provider's own that a spec may name, and the key it gets (none unless given). */
export interface BoundEndpoint {
  url: string;
  apiKey?: string;
}
