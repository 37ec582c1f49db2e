import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { SwitchboardError } from '../core/errors.js';

import { TOKEN_VARIABLE } from '../confinement/server-tokens.js';

export { TOKEN_VARIABLE };

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
 * The token the server answers to: `SWITCHBOARD_SERVER_TOKEN`, else a new random one (256 bits) that
 * local clients read from the server's token file.
 */
export function serverTokenOrNew(environment: NodeJS.ProcessEnv = process.env): string {
  return serverToken(environment) ?? randomBytes(32).toString('base64url');
}

/** What `authorize` looks at: the `Authorization` header of the request. */
export interface Caller {
  authorization: string | undefined;
}

/**
 * Whether the caller presented the server's token as `Authorization: Bearer <token>`: the one rule of
 * every route that acts or reveals, loopback included. A program on this machine is not trusted for
 * being here (an agent's verify command is one); holding the token, which lies in files only the
 * user's own programs outside a sandbox read, is what lets it in. The token is compared in constant
 * time; one of another length is wrong before any byte is compared.
 */
export function authorize({ authorization }: Caller, token: string): boolean {
  return presentsToken(authorization, token);
}

/** Whether an `Authorization` header carries `token` as its bearer token (constant time). */
export function presentsToken(authorization: string | undefined, token: string): boolean {
  return sameSecret(/^Bearer\s+(.+)$/i.exec(authorization ?? '')?.[1]?.trim() ?? '', token);
}

/** Whether `given` is `expected`, in constant time; one of another length is wrong before any byte. */
export function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The caller of a request, for `authorize`. */
export function callerOf(request: IncomingMessage): Caller {
  return { authorization: request.headers.authorization };
}
