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

/** `POST /route`: `{"text": "...", "tags": {...}}` → the RouteDecision. */
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
  let parsed: { text: string; tags?: Record<string, string> };
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
    sendJson(response, 200, decision);
  } catch (error) {
    const known = toSwitchboardError(error);
    metrics?.observeError(known);
    if (clientGone.signal.aborted) return;
    sendError(response, statusFor(known.code), known);
  }
}

function parseRouteBody(body: string): { text: string; tags?: Record<string, string> } {
  const { text, tags } = parseJsonObject(body, '{"text": "...", "tags": {"key": "value"}}');
  if (typeof text !== 'string') {
    throw new SwitchboardError('INVALID_INPUT', 'Expected "text" to be a string', {
      hint: 'send {"text": "..."}',
    });
  }
  if (tags === undefined) return { text };
  if (!isStringRecord(tags)) {
    throw new SwitchboardError('INVALID_INPUT', 'Expected "tags" to be an object of strings', {
      hint: 'send tags such as {"caller": "ci"}',
    });
  }
  return { text, tags };
}
