import type { RouteDecision } from '../core/route-types.js';
import { isPlainObject } from '../core/plain-object.js';
import { findServerToken } from '../confinement/server-tokens.js';
import { postJson } from '../cli/json-post.js';

/** Where `switchboard serve` listens unless told otherwise. */
export const DEFAULT_SERVER = 'http://127.0.0.1:8787';

/** A server's decision, with the routed skill's description and file when it was asked for them. */
export type ServedDecision = RouteDecision & { skillDescription?: unknown; skillFile?: unknown };

/**
 * Asks a running `switchboard serve` to route `text` (`POST /route`; `describe`: with the skill's
 * description and file, which a server older than that leaves out). Undefined whenever there is no
 * usable answer (no server, refused, not routing, an error, an answer that is not a decision): the hook
 * then routes in process or stays silent. Gives up when `abortSignal` fires (the hook's deadline).
 */
export function routeOnServer(
  server: URL,
  body: { text: string; tags: Record<string, string>; describe?: boolean },
  abortSignal: AbortSignal,
  stateDir?: string,
): Promise<ServedDecision | undefined> {
  const target = new URL('/route', server);
  // The server's token file (or SWITCHBOARD_SERVER_TOKEN): without it serve answers 401 and the hook
  // routes in process.
  const token = findServerToken(server, { stateDir })?.token;
  return postJson(target, JSON.stringify(body), { token, abortSignal }).then(
    ({ status, text }) => (status === 200 ? decisionOf(text) : undefined),
    () => undefined,
  );
}

function decisionOf(text: string): ServedDecision | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isPlainObject(value) || typeof value['skill'] !== 'string' || typeof value['confidence'] !== 'number')
    return undefined;
  return value as unknown as ServedDecision;
}
