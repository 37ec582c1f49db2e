import { resolve } from 'node:path';
import { isErrorCode, SwitchboardError } from '../core/errors.js';
import { isPlainObject } from '../core/plain-object.js';
import { postJson, PostFailure } from './json-post.js';
import {
  findServerToken,
  namesLoopback,
  TOKEN_VARIABLE,
  type FoundToken,
} from '../confinement/server-tokens.js';

// The `--server` side of `switchboard call` and `switchboard route`: one HTTP request to a running
// `switchboard serve`. Kept to node:net (json-post.ts) and the error type, so a command that goes to a server starts
// without loading a provider SDK or the router.

/** The environment variable naming a server, like `--server`. */
export const SERVER_VARIABLE = 'SWITCHBOARD_SERVER';
/** A server that has not accepted the connection by then counts as not answering. */
export const CONNECT_TIMEOUT_MS = 1_000;

/** The server to use: `--server`, else `SWITCHBOARD_SERVER`; `undefined` when neither (or empty). */
export function serverAddress(flag: string | undefined, environment = process.env): URL | undefined {
  const given = flag ?? environment[SERVER_VARIABLE];
  if (given === undefined || given.trim() === '') return undefined;
  let url: URL | undefined;
  try {
    url = new URL(given.trim());
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    const source = flag === undefined ? SERVER_VARIABLE : '--server';
    throw new SwitchboardError('INVALID_INPUT', `${source} is not an http(s) URL: ${given}`, {
      hint: 'write the address `switchboard serve` printed, e.g. http://127.0.0.1:8787',
    });
  }
  return url;
}

/**
 * The state folder whose token file a client reads first: `--state-dir`, else `SWITCHBOARD_STATE_DIR`,
 * else `./.switchboard` (a `state_dir` in switchboard.yaml is not read, to keep this path quick; the
 * per-user registry finds such a server).
 */
export function clientStateDir(flag: string | undefined, environment = process.env): string {
  const given = flag ?? environment['SWITCHBOARD_STATE_DIR'];
  return resolve(given === undefined || given.trim() === '' ? '.switchboard' : given.trim());
}

/** The request could not be delivered; the command runs in process instead. */
class NotAnswered extends Error {}

/**
 * POSTs `body` as JSON to `path` on the server. Resolves with the 200 answer; throws the server's error
 * as a SwitchboardError (same code, message and hint as in process); resolves `undefined` after one
 * warning line when the server did not answer, so the caller runs the command in process.
 */
export async function askServer(
  server: URL,
  path: '/call' | '/route',
  body: unknown,
  {
    connectTimeoutMs = CONNECT_TIMEOUT_MS,
    stateDir,
    quiet = false,
  }: {
    connectTimeoutMs?: number;
    /** The state folder whose token file to read first (`--state-dir`, `SWITCHBOARD_STATE_DIR`). */
    stateDir?: string | undefined;
    /** No warning line when it does not answer (a background server the caller will replace). */
    quiet?: boolean;
  } = {},
): Promise<unknown> {
  const target = new URL(path, server);
  const token = findServerToken(server, { stateDir: stateDir ?? clientStateDir(undefined) });
  try {
    const { status, text } = await post(target, JSON.stringify(body), connectTimeoutMs, token?.token);
    return answerOf(status, text, server, token);
  } catch (error) {
    if (!(error instanceof NotAnswered)) throw error;
    if (!quiet)
      process.stderr.write(
        `switchboard: server ${server.origin} did not answer (${error.message}); running in process\n`,
      );
    return undefined;
  }
}

function answerOf(status: number, text: string, server: URL, token: FoundToken | undefined): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new NotAnswered(`status ${status} without a switchboard answer`);
  }
  if (status === 200) return value;
  const error = (value as { error?: Record<string, unknown> } | null)?.error;
  if (!isPlainObject(error)) throw new NotAnswered(`status ${status} without a switchboard answer`);
  // An older server, or one that routes nothing: the command can still run here.
  if (status === 404) throw new NotAnswered(String(error['message']));
  if (status === 401) throw refused(server, token);
  const code = isErrorCode(error['code']) ? error['code'] : 'INTERNAL';
  const hint = typeof error['hint'] === 'string' ? error['hint'] : undefined;
  throw new SwitchboardError(code, String(error['message'] ?? `the server answered ${status}`), {
    ...(hint === undefined ? {} : { hint }),
    ...(typeof error['retryable'] === 'boolean' ? { retryable: error['retryable'] } : {}),
    ...(typeof error['provider'] === 'string' ? { provider: error['provider'] } : {}),
    ...(typeof error['retryAfterMs'] === 'number' ? { retryAfterMs: error['retryAfterMs'] } : {}),
    ...(isPlainObject(error['details']) ? { details: error['details'] } : {}),
  });
}

/** The one-line refusal, naming where the token sent came from, or where it could be found. */
function refused(server: URL, token: FoundToken | undefined): SwitchboardError {
  if (token === undefined && !namesLoopback(server)) {
    return new SwitchboardError('SERVER_AUTH', `server ${server.origin} wants its token`, {
      hint: `set ${TOKEN_VARIABLE} to the token ${server.origin} was started with (a token file is sent only to a loopback address)`,
    });
  }
  if (token === undefined) {
    return new SwitchboardError('SERVER_AUTH', `server ${server.origin} wants its token and none was found`, {
      hint: `set ${TOKEN_VARIABLE}, or run from the folder serve was started in (its token is in .switchboard/serve-${server.port || 80}.token) or pass its --state-dir`,
    });
  }
  return new SwitchboardError(
    'SERVER_AUTH',
    `server ${server.origin} refused the token from ${token.source}`,
    {
      hint:
        token.source === TOKEN_VARIABLE
          ? `set ${TOKEN_VARIABLE} to the token ${server.origin} was started with, or unset it to use the server's token file`
          : `that file belongs to another server: set ${TOKEN_VARIABLE} to the token ${server.origin} was started with`,
    },
  );
}

async function post(
  target: URL,
  payload: string,
  connectTimeoutMs: number,
  token: string | undefined,
): Promise<{ status: number; text: string }> {
  try {
    return await postJson(target, payload, { token, connectTimeoutMs });
  } catch (error) {
    if (!(error instanceof PostFailure) || !error.connected)
      throw new NotAnswered(error instanceof Error ? error.message : String(error));
    throw new SwitchboardError(
      'PROVIDER_UNAVAILABLE',
      `server ${target.origin} closed the connection before answering`,
      { hint: 'check the server log; the call may or may not have run there', cause: error },
    );
  }
}
