import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { SwitchboardError } from '../core/errors.js';

/** The environment variable holding the bearer token non-loopback callers must present. */
export const TOKEN_VARIABLE = 'SWITCHBOARD_SERVER_TOKEN';

/** Whether a peer or listening address is this machine's loopback (127.0.0.0/8, ::1, IPv4-mapped). */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  const plain = address.replace(/^::ffff:/i, '');
  if (isIP(plain) === 4) return plain.startsWith('127.');
  return plain === '::1' || plain === '0:0:0:0:0:0:0:1';
}

/**
 * Refuses to listen beyond loopback without a token: a server that calls paid models with this
 * machine's keys must not answer the network unauthenticated. `localhost` counts as loopback.
 */
export function checkListenAddress(host: string, token: string | undefined, requireToken = false): void {
  if (requireToken && token === undefined) {
    throw new SwitchboardError('INVALID_INPUT', `--require-token needs ${TOKEN_VARIABLE}`, {
      hint: `set ${TOKEN_VARIABLE} to a long random value (e.g. \`openssl rand -hex 32\`), or leave --require-token off`,
    });
  }
  if (host === 'localhost' || isLoopbackAddress(host)) return;
  if (token !== undefined) return;
  throw new SwitchboardError('INVALID_INPUT', `refusing to listen on ${host} without a token`, {
    hint: `set ${TOKEN_VARIABLE} (callers send it as "Authorization: Bearer <token>"), or listen on 127.0.0.1`,
  });
}

/**
 * The token from the environment, or `undefined` when unset or empty. A token shorter than 16
 * characters is refused: it would be guessable.
 */
export function serverToken(environment: NodeJS.ProcessEnv = process.env): string | undefined {
  const token = environment[TOKEN_VARIABLE]?.trim();
  if (token === undefined || token === '') return undefined;
  if (token.length < 16) {
    throw new SwitchboardError('INVALID_INPUT', `${TOKEN_VARIABLE} is shorter than 16 characters`, {
      hint: 'use a long random value, e.g. `openssl rand -hex 32`',
    });
  }
  return token;
}

/** What `authorize` looks at: the peer's address and its `Authorization` header. */
export interface Caller {
  remoteAddress: string | undefined;
  authorization: string | undefined;
  /** The request names a client behind a proxy (`Forwarded`, `X-Forwarded-For`, `X-Real-IP`). */
  forwarded?: boolean;
}

/** Headers a reverse proxy or tunnel adds: their caller is wherever the proxy's clients are. */
const FORWARDING_HEADERS = ['forwarded', 'x-forwarded-for', 'x-real-ip', 'x-forwarded-host'];

/**
 * How a caller is let in: `token` when it presented the server's token, `loopback` when it is on
 * this machine (and `requireToken` is off, and no proxy header says it forwards another caller's
 * request), `undefined` when it may not go ahead. The token is
 * compared in constant time; one of another length is wrong before any byte is compared.
 */
export function authorize(
  { remoteAddress, authorization, forwarded = false }: Caller,
  token: string | undefined,
  requireToken = false,
): 'token' | 'loopback' | undefined {
  if (token !== undefined) {
    const presented = /^Bearer\s+(.+)$/i.exec(authorization ?? '')?.[1]?.trim() ?? '';
    const expected = Buffer.from(token, 'utf8');
    const given = Buffer.from(presented, 'utf8');
    if (given.length === expected.length && timingSafeEqual(given, expected)) return 'token';
  }
  // A proxy on this machine makes every caller look local; one that says it forwards gets no pass.
  if (!requireToken && !forwarded && isLoopbackAddress(remoteAddress)) return 'loopback';
  return undefined;
}

/** The caller of a request, for `authorize`. */
export function callerOf(request: IncomingMessage): Caller {
  return {
    remoteAddress: request.socket.remoteAddress,
    authorization: request.headers.authorization,
    forwarded: FORWARDING_HEADERS.some((name) => request.headers[name] !== undefined),
  };
}
