import type { IncomingMessage, ServerResponse } from 'node:http';
import { buildAnswer } from './build-answer.js';
import { requestCredentials } from './credentials.js';
import type { SimRequestView } from './request.js';
import type { ScenarioFault, ScenarioReply } from './scenario.js';
import type { SimAnswer, SseEvent, WireFormat } from './wire/answer.js';

/** What the answering functions need of the running simulator. */
export interface ResponseContext {
  /** Resolves after `milliseconds`, or at once when the simulator is closing. */
  wait(milliseconds: number): Promise<void>;
  closed(): boolean;
}

export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  response.end(text);
}

export function formatSse(event: SseEvent): string {
  const { event: name, data } = event;
  return `${name === undefined ? '' : `event: ${name}\n`}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
}

function startStream(response: ServerResponse): void {
  response.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  response.flushHeaders();
}

/** Writes events with the reply's pacing; false when the client or the simulator went away first. */
async function writeEvents(
  response: ServerResponse,
  events: readonly SseEvent[],
  context: ResponseContext,
  { chunkDelayMs = 0, contentDelayMs = 0 }: Pick<ScenarioReply, 'chunkDelayMs' | 'contentDelayMs'> = {},
): Promise<boolean> {
  for (const event of events) {
    if (event.opensContent === true) await context.wait(contentDelayMs);
    if (context.closed() || response.destroyed) return false;
    response.write(formatSse(event));
    await context.wait(chunkDelayMs);
  }
  return !(context.closed() || response.destroyed);
}

/** A scripted answer as JSON or as the wire's event stream. */
export async function sendAnswer(
  response: ServerResponse,
  answer: SimAnswer,
  {
    wire,
    stream,
    reply,
    context,
  }: { wire: WireFormat; stream: boolean; reply: ScenarioReply; context: ResponseContext },
): Promise<void> {
  if (!stream) return sendJson(response, 200, wire.json(answer));
  startStream(response);
  await context.wait(reply.firstTokenDelayMs ?? 0);
  if (!(await writeEvents(response, wire.events(answer), context, reply))) return;
  if (wire.terminator !== undefined) response.write(`data: ${wire.terminator}\n\n`);
  response.end();
}

/** Destroys the socket once what was written has had a moment to reach the client. */
async function dropAfterWrites(request: IncomingMessage, context: ResponseContext): Promise<void> {
  await context.wait(20);
  request.socket.destroy();
}

const CUT_ANSWER: ScenarioReply = { text: 'this answer is cut off in the middle' };

export interface FaultTarget {
  request: IncomingMessage;
  response: ServerResponse;
  wire: WireFormat;
  view: SimRequestView;
  context: ResponseContext;
}

/** Answers with a scripted fault; `status` is the one `status` and `overload` faults send. */
export async function sendFault(fault: ScenarioFault, status: number, target: FaultTarget): Promise<void> {
  const { request, response, wire, view } = target;
  switch (fault.kind) {
    case 'drop-before':
      request.socket.destroy();
      return;
    case 'stall':
      // Never answer; the socket closes when the client gives up or the simulator stops.
      return;
    case 'malformed':
      if (view.stream) {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.end('event: message_start\ndata: {"type": "message_start", "message": {\n\n');
      } else {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('{"id": "broken", "content": [');
      }
      return;
    case 'page':
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(
        typeof fault.body === 'string'
          ? fault.body
          : '<!doctype html><html><head><title>Sign in</title></head><body><h1>Proxy sign-in required</h1></body></html>',
      );
      return;
    case 'drop-during': {
      const events = wire.events(buildAnswer({ reply: CUT_ANSWER, view, requestBytes: 0 }));
      return view.stream
        ? sendCutStream(fault, Math.max(1, Math.floor(events.length / 2)), target)
        : sendCutJson(target);
    }
    case 'drop-after':
    case 'error-event':
    case 'garbage-after':
    case 'stall-after':
      return view.stream ? sendCutStream(fault, fault.events ?? 0, target) : sendCutJsonFault(fault, target);
    case 'status':
    case 'overload': {
      const headers: Record<string, string> = { ...fault.headers };
      if (fault.retryAfter !== undefined) headers['retry-after'] = String(fault.retryAfter);
      if (fault.retryAfterMs !== undefined) headers['retry-after-ms'] = String(fault.retryAfterMs);
      if (view.provider === 'anthropic' && fault.kind === 'overload') headers['x-should-retry'] ??= 'true';
      const text = fault.message ?? (fault.kind === 'overload' ? 'Overloaded' : `simulated error ${status}`);
      const key =
        fault.echoKey === true
          ? requestCredentials(request, new URL(request.url ?? '/', 'http://simulator'))[0]
          : undefined;
      const message = key === undefined ? text : `${text} (key: ${key})`;
      return sendJson(response, status, fault.body ?? wire.error(status, message), headers);
    }
  }
}

/** The first `count` events of a short answer, then what the fault does to the rest of the stream. */
async function sendCutStream(fault: ScenarioFault, count: number, target: FaultTarget): Promise<void> {
  const { request, response, wire, view, context } = target;
  const answer = buildAnswer({ reply: CUT_ANSWER, view, requestBytes: 0 });
  const events = wire.events(answer).slice(0, count);
  startStream(response);
  if (!(await writeEvents(response, events, context))) return;
  switch (fault.kind) {
    case 'error-event':
      response.end(formatSse(wire.streamError(answer, events.length)));
      return;
    case 'garbage-after':
      response.end('data: {this is not json\n\n');
      return;
    case 'stall-after':
      // Silent from here; the socket closes when the client gives up or the simulator stops.
      return;
    default:
      return dropAfterWrites(request, context);
  }
}

/** Half of a JSON answer, then the connection closes. */
async function sendCutJson({ request, response, wire, view, context }: FaultTarget): Promise<void> {
  const body = JSON.stringify(wire.json(buildAnswer({ reply: CUT_ANSWER, view, requestBytes: 0 })));
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) });
  response.write(body.slice(0, Math.floor(body.length / 2)));
  return dropAfterWrites(request, context);
}

/** The event-counting faults asked for JSON, where there are no events to count. */
async function sendCutJsonFault(fault: ScenarioFault, target: FaultTarget): Promise<void> {
  const { response, wire } = target;
  switch (fault.kind) {
    case 'error-event':
      return sendJson(response, wire.overloadStatus, wire.error(wire.overloadStatus, 'Overloaded'));
    case 'garbage-after':
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{this is not json');
      return;
    case 'stall-after':
      response.writeHead(200, { 'content-type': 'application/json' });
      response.flushHeaders();
      return;
    default:
      return sendCutJson(target);
  }
}
