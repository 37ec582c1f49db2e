import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';
import { SwitchboardError } from '../core/errors.js';

// What keeps a web page out of `serve`. A page the user opens can send requests to any loopback
// port: a "simple" cross-origin POST (text/plain, no preflight) runs without the page reading the
// answer, and DNS rebinding (a page's own name re-pointed at 127.0.0.1) lets it read answers too.
// The Host check stops rebinding, the Origin check stops cross-site requests, and JSON-only bodies
// force a preflight that serve never grants to an origin it was not told about.

/** The names a request's Host may give for a server on loopback (the port is not compared). */
const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Addresses that mean "every interface": no caller names the server by them. */
const WILDCARDS = new Set(['0.0.0.0', '::', '[::]']);

/** What the guard checks a request against: serve's `--host` and its allowed origins. */
export interface GuardSettings {
  /** The `--host` the server listens on: callers may name it in Host besides the loopback names. */
  listenHost: string;
  /** Normalised origins (`normalizeOrigin`) whose pages may call the server. */
  allowedOrigins: ReadonlySet<string>;
}

/** A refusal: the status to answer with and the one-line error. */
export interface Refusal {
  status: 403 | 415;
  error: SwitchboardError;
}

/** The host names a request may give in Host: the loopback names and the listen address. */
export function allowedHostNames(listenHost: string): Set<string> {
  const names = new Set(LOOPBACK_NAMES);
  const host = listenHost.toLowerCase();
  if (!WILDCARDS.has(host)) names.add(isIP(host) === 6 ? `[${host}]` : host);
  return names;
}

/**
 * The host name of a Host header (`127.0.0.1:8787` → `127.0.0.1`, `[::1]:8787` → `[::1]`), lower
 * case. The port is left out on purpose: an SSH tunnel (`ssh -L 9000:127.0.0.1:8787`) keeps the name
 * and changes the port, while a rebinding page's Host carries its own name, whatever the port.
 */
export function hostNameOf(host: string): string {
  const value = host.trim().toLowerCase();
  if (value.startsWith('[')) return value.slice(0, value.indexOf(']') + 1);
  const colon = value.lastIndexOf(':');
  return colon === -1 ? value : value.slice(0, colon);
}

/**
 * An origin in the form browsers send it (`https://app.example`, default port left out), or
 * `undefined` for a value that is not an http(s) origin (`null`, a path, garbage).
 */
export function normalizeOrigin(value: string): string | undefined {
  try {
    const url = new URL(value);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
    if (url.pathname !== '/' || url.search !== '' || url.hash !== '' || url.username !== '') return undefined;
    return url.origin;
  } catch {
    return undefined;
  }
}

/** The configured origins, normalised; one that is not an origin is an error naming it. */
export function parseAllowedOrigins(values: readonly string[]): Set<string> {
  const origins = new Set<string>();
  for (const value of values) {
    const origin = normalizeOrigin(value);
    if (origin === undefined) {
      throw new SwitchboardError('INVALID_INPUT', `allowed origin "${value}" is not an http(s) origin`, {
        hint: 'give scheme, host and port only, e.g. --allow-origin https://app.example:8443',
      });
    }
    origins.add(origin);
  }
  return origins;
}

/**
 * Checks Host (unless the caller presented the token, which a page cannot: rebinding only matters to
 * callers let in for being on loopback), then Origin, then that a POST's body is JSON.
 */
export function checkRequest(
  request: { method?: string | undefined; headers: IncomingHttpHeaders },
  settings: GuardSettings,
  presentedToken: boolean,
): Refusal | undefined {
  const { headers } = request;
  if (!presentedToken) {
    const refusal = checkHost(headers.host, settings.listenHost);
    if (refusal !== undefined) return refusal;
  }
  const origin = headers.origin;
  if (origin !== undefined && !isAllowedOrigin(origin, headers.host, settings.allowedOrigins)) {
    return forbidden(
      `requests from web pages of ${oneLine(origin)} are not allowed`,
      'start serve with --allow-origin ORIGIN (or serve.allowed_origins in switchboard.yaml) to let that site call it',
    );
  }
  if (request.method === 'POST' && !isJson(headers['content-type'])) {
    return {
      status: 415,
      error: new SwitchboardError(
        'INVALID_INPUT',
        `the body must be JSON, not ${oneLine(headers['content-type'] ?? 'a body without content-type')}`,
        { hint: 'send the header "Content-Type: application/json"' },
      ),
    };
  }
  return undefined;
}

/** The names each listen address answers to, made once: every request checks its Host against them. */
const hostNamesByListenHost = new Map<string, Set<string>>();

function checkHost(host: string | undefined, listenHost: string): Refusal | undefined {
  let names = hostNamesByListenHost.get(listenHost);
  if (names === undefined) {
    names = allowedHostNames(listenHost);
    hostNamesByListenHost.set(listenHost, names);
  }
  if (host !== undefined && names.has(hostNameOf(host))) return undefined;
  return forbidden(
    host === undefined
      ? 'the request has no Host header'
      : `this server does not answer to the name ${oneLine(host)}`,
    `call it as http://127.0.0.1:PORT or http://localhost:PORT${byListenHost(listenHost)}, or send "Authorization: Bearer <token>"`,
  );
}

function byListenHost(listenHost: string): string {
  const host = listenHost.toLowerCase();
  return WILDCARDS.has(host) || LOOPBACK_NAMES.has(host) ? '' : ` or by its --host ${listenHost}`;
}

/**
 * An allowed origin, or the server's own (a page the server itself serves, `Origin` matching the
 * Host already checked). A page elsewhere, `null` (sandboxed frames, files) and garbage are not.
 */
function isAllowedOrigin(origin: string, host: string | undefined, allowed: ReadonlySet<string>): boolean {
  const normalized = normalizeOrigin(origin);
  if (normalized === undefined) return false;
  if (allowed.has(normalized)) return true;
  return host !== undefined && new URL(normalized).host === host.trim().toLowerCase();
}

function isJson(contentType: string | undefined): boolean {
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  return type === 'application/json';
}

function forbidden(message: string, hint: string): Refusal {
  return { status: 403, error: new SwitchboardError('FORBIDDEN', message, { hint }) };
}

/** A header value quoted in an error: control characters and length cannot break the one line. */
function oneLine(value: string): string {
  const printable = value.replace(/[^\x20-\x7e]/g, '?');
  return JSON.stringify(printable.length > 100 ? `${printable.slice(0, 100)}…` : printable);
}

/**
 * CORS headers for a page of an allowed origin (its own server's needs none), and whether the
 * request is a preflight to answer with them and nothing else.
 */
export function corsFor(
  request: { method?: string | undefined; headers: IncomingHttpHeaders },
  allowed: ReadonlySet<string>,
): { headers: Record<string, string>; preflight: boolean } {
  const origin = request.headers.origin === undefined ? undefined : normalizeOrigin(request.headers.origin);
  if (origin === undefined || !allowed.has(origin)) return { headers: {}, preflight: false };
  const headers: Record<string, string> = { 'access-control-allow-origin': origin, vary: 'Origin' };
  const preflight =
    request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined;
  if (preflight) {
    headers['access-control-allow-methods'] = 'GET, POST';
    headers['access-control-allow-headers'] =
      'authorization, content-type, accept, mcp-protocol-version, last-event-id';
    headers['access-control-max-age'] = '600';
  }
  return { headers, preflight };
}
