import type { IncomingMessage, ServerResponse } from 'node:http';
import { SwitchboardError } from '../core/errors.js';
import type { RouteMetrics } from '../observe/prometheus.js';
import type { Router } from '../route/router.js';
import {
  isStringRecord,
  parseJsonObject,
  readBody,
  sendError,
  sendJson,
  sendTooLarge,
  statusFor,
  toSwitchboardError,
} from './http.js';

export interface RouteContext {
  router: Router;
  metrics: RouteMetrics | undefined;
  abortSignal: AbortSignal;
}

/**
 * `POST /route`: `{"text": "...", "tags": {...}}` → the RouteDecision. With `"describe": true` the
 * answer adds the routed skill's `skillDescription` and `skillFile` (when it is one of the server's
 * skills): the prompt hook names them without loading the skills folder itself.
 */
export async function routeRequest(
  request: IncomingMessage,
  response: ServerResponse,
  { router, metrics, abortSignal }: RouteContext,
): Promise<void> {
  const body = await readBody(request);
  if (body === undefined) {
    metrics?.observeError(sendTooLarge(response));
    return;
  }
  let parsed: RouteBody;
  try {
    parsed = parseRouteBody(body);
  } catch (error) {
    metrics?.observeError(error);
    return sendError(response, 400, toSwitchboardError(error));
  }
  // A client that hangs up no longer needs the answer, nor does a server stopping: stop routing (and any
  // LLM call) for it. One controller for both (AbortSignal.any costs more than the local route itself).
  const clientGone = new AbortController();
  const serverStops = () => clientGone.abort();
  abortSignal.addEventListener('abort', serverStops, { once: true });
  response.once('close', () => {
    abortSignal.removeEventListener('abort', serverStops);
    if (!response.writableFinished) clientGone.abort();
  });
  try {
    if (abortSignal.aborted) clientGone.abort();
    const decision = await router.route(parsed.text, {
      abortSignal: clientGone.signal,
      ...(parsed.tags === undefined ? {} : { tags: parsed.tags }),
    });
    metrics?.observe(decision);
    const skill = parsed.describe ? router.skills.find((entry) => entry.name === decision.skill) : undefined;
    sendJson(
      response,
      200,
      skill === undefined
        ? decision
        : { ...decision, skillDescription: skill.description, skillFile: skill.file },
    );
  } catch (error) {
    const known = toSwitchboardError(error);
    metrics?.observeError(known);
    if (clientGone.signal.aborted) return;
    sendError(response, statusFor(known.code), known);
  }
}

interface RouteBody {
  text: string;
  tags?: Record<string, string>;
  describe?: boolean;
}

function parseRouteBody(body: string): RouteBody {
  const { text, tags, describe } = parseJsonObject(body, '{"text": "...", "tags": {"key": "value"}}');
  if (typeof text !== 'string') {
    throw new SwitchboardError('INVALID_INPUT', 'Expected "text" to be a string', {
      hint: 'send {"text": "..."}',
    });
  }
  if (describe !== undefined && typeof describe !== 'boolean') {
    throw new SwitchboardError('INVALID_INPUT', 'Expected "describe" to be true or false', {
      hint: 'send {"text": "...", "describe": true} for the skill\'s description and file',
    });
  }
  if (tags !== undefined && !isStringRecord(tags)) {
    throw new SwitchboardError('INVALID_INPUT', 'Expected "tags" to be an object of strings', {
      hint: 'send tags such as {"caller": "ci"}',
    });
  }
  return { text, ...(tags === undefined ? {} : { tags }), ...(describe === undefined ? {} : { describe }) };
}
