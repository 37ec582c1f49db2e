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
export function checkListenAddress(host: string, token: string | undefined): void {
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

/**
 * Whether the request may go ahead: loopback callers always, others only with `Authorization:
 * Bearer <token>` (compared in constant time). Without a token the server listens on loopback only.
 */
export function isAuthorized(request: IncomingMessage, token: string | undefined): boolean {
  if (isLoopbackAddress(request.socket.remoteAddress)) return true;
  if (token === undefined) return false;
  const presented = /^Bearer\s+(.+)$/i.exec(request.headers.authorization ?? '')?.[1]?.trim() ?? '';
  const expected = Buffer.from(token, 'utf8');
  const given = Buffer.from(presented, 'utf8');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
