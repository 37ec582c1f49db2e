import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { presentsToken } from '../auth.js';

// Who may see the dashboard: whoever holds this server's UI token. The server prints a URL carrying it
// (as Jupyter does); the first visit trades it for a cookie and drops it from the address bar, so deep
// links work afterwards. The cookie is HttpOnly (no script reads it), SameSite=Strict (no other site's
// page or link sends it) and scoped to /ui. Being on loopback is not enough: any page in the user's
// browser is on loopback too.

/** A new random token: 192 bits, URL-safe. */
export function newUiToken(): string {
  return randomBytes(24).toString('base64url');
}

/**
 * The cookie's name carries the port: cookies are per host, not per port, so two servers on one
 * machine would otherwise overwrite each other's.
 */
export function cookieName(port: number): string {
  return `switchboard_ui_${port}`;
}

function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The value of one cookie of the request, or `undefined`. */
function cookieValue(request: IncomingMessage, name: string): string | undefined {
  const header = request.headers.cookie;
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at === -1) continue;
    if (part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

export interface UiAccess {
  token: string;
  port: number;
  /** The server's token, which scripts may present instead (as `Authorization: Bearer`). */
  serverToken: string;
}

/** Whether the request carries the UI cookie, or the UI or server token as a bearer token. */
export function holdsUiToken(request: IncomingMessage, access: UiAccess): boolean {
  const cookie = cookieValue(request, cookieName(access.port));
  if (cookie !== undefined && sameToken(cookie, access.token)) return true;
  // The server's own rule (`authorize`), and the same rule for the UI's token: nothing looser.
  const authorization = request.headers.authorization;
  return presentsToken(authorization, access.token) || presentsToken(authorization, access.serverToken);
}

/**
 * A GET of a page with `?token=` right for this server: sets the cookie and redirects to the same path
 * without the token (so it stays out of history, bookmarks and screenshots). Answers and returns true
 * when it did; a wrong token is left to the caller's 401.
 */
export function exchangeToken(
  request: IncomingMessage,
  response: ServerResponse,
  url: URL,
  access: UiAccess,
): boolean {
  const given = url.searchParams.get('token');
  if (request.method !== 'GET' || given === null || !sameToken(given, access.token)) return false;
  url.searchParams.delete('token');
  const rest = url.searchParams.toString();
  response.writeHead(303, {
    location: `${url.pathname}${rest === '' ? '' : `?${rest}`}`,
    'set-cookie': `${cookieName(access.port)}=${access.token}; Path=/ui; HttpOnly; SameSite=Strict`,
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
  });
  response.end();
  return true;
}

/** The URL a user opens: the server's address and the token. */
export function uiUrl(base: string, token: string): string {
  return `${base}/ui/?token=${token}`;
}
