import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { presentsToken, sameSecret } from '../auth.js';
import { SECURITY_HEADERS } from './static.js';

// Who may see the dashboard: whoever holds this server's UI token. The token itself never goes in a
// URL (a browser keeps every URL it visited in its history and session files, where the token would
// stay valid until the server restarts). The server prints a URL with a one-time sign-in code instead;
// the first visit trades the code for a cookie holding the token, and the code is dead from then on.
// The cookie is HttpOnly (no script reads it), SameSite=Strict (no other site's page or link sends it)
// and scoped to /ui. Being on loopback is not enough: any page in the user's browser is on loopback too.

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
  /** The sign-in code the printed URL carries, until it is used; one at a time. */
  code?: string | undefined;
  /** Called when a used or unknown code is presented: the server prints a new URL if none is unused. */
  onCodeRefused?: () => void;
}

/** Whether the request carries the UI cookie, or the UI or server token as a bearer token. */
export function holdsUiToken(request: IncomingMessage, access: UiAccess): boolean {
  const cookie = cookieValue(request, cookieName(access.port));
  if (cookie !== undefined && sameSecret(cookie, access.token)) return true;
  // The server's own rule (`authorize`), and the same rule for the UI's token: nothing looser.
  const authorization = request.headers.authorization;
  return presentsToken(authorization, access.token) || presentsToken(authorization, access.serverToken);
}

/** A new one-time sign-in code for `access`, replacing any unused one; the URL to print carries it. */
export function newSignInCode(access: UiAccess): string {
  access.code = randomBytes(16).toString('base64url');
  return access.code;
}

/**
 * A GET of a page with `?code=`: the printed code sets the cookie (once: the code dies here) and
 * redirects to the same path without it; so does any code when the cookie is already held (a link
 * opened again from history). Any other code gets the page saying how to get a new link. Answers and
 * returns true when the request had a code.
 */
export function exchangeCode(
  request: IncomingMessage,
  response: ServerResponse,
  url: URL,
  access: UiAccess,
): boolean {
  const given = url.searchParams.get('code');
  if (request.method !== 'GET' || given === null) return false;
  url.searchParams.delete('code');
  const rest = url.searchParams.toString();
  const headers: Record<string, string> = {
    location: `${url.pathname}${rest === '' ? '' : `?${rest}`}`,
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
  };
  if (access.code !== undefined && sameSecret(given, access.code)) {
    access.code = undefined;
    headers['set-cookie'] = `${cookieName(access.port)}=${access.token}; Path=/ui; HttpOnly; SameSite=Strict`;
  } else if (!holdsUiToken(request, access)) {
    access.onCodeRefused?.();
    response.writeHead(410, {
      ...SECURITY_HEADERS,
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
    });
    response.end(USED_LINK_PAGE);
    return true;
  }
  response.writeHead(303, headers);
  response.end();
  return true;
}

/** What a used sign-in link shows: fixed text, nothing from the request. */
const USED_LINK_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign-in link used - Switchboard</title></head>
<body><h1>This sign-in link has been used</h1>
<p>Each dashboard link works once, so a copy left in a browser's history cannot open it again.</p>
<p>Open the newest link in the terminal running <code>switchboard ui</code> (or
<code>switchboard serve --ui</code>): it prints a new one when the last was used.
Restarting the command prints one too.</p></body></html>
`;

/** What a browser opening a dashboard page without its cookie shows (a restarted server's new token): fixed text. */
export const SIGN_IN_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in - Switchboard</title></head>
<body><h1>Sign in to the dashboard again</h1>
<p>This browser's sign-in is for another start of the server: <code>switchboard ui</code> (or
<code>switchboard serve --ui</code>) was restarted, or this page was opened in another browser.</p>
<p>Open the link the running command printed in its terminal (<code>dashboard at http://…/ui/?code=…</code>).
Each link works once; when it has been used, the command prints a new one.</p></body></html>
`;

/** A browser navigating to a page (not the API, not a script's fetch): it should be shown a page. */
export function isPageNavigation(request: IncomingMessage, url: URL): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  if (url.pathname === '/ui/api' || url.pathname.startsWith('/ui/api/')) return false;
  const accept = request.headers.accept ?? '';
  return accept.includes('text/html') || request.headers['sec-fetch-mode'] === 'navigate';
}

/** The URL a user opens: the server's address and a one-time sign-in code. */
export function uiUrl(base: string, code: string): string {
  return `${base}/ui/?code=${code}`;
}
