import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InvalidArgumentError, type Command } from 'commander';
import { isSwitchboardError, SwitchboardError, type ErrorCode } from '../core/errors.js';
import type { RouteMetrics } from '../observe/prometheus.js';
import type { Router } from '../route/router.js';
import {
  addRoutingFlags,
  requireRoutes,
  resolveConfig,
  routerOptions,
  warn,
  warnSkippedSkills,
  type GlobalFlags,
  type RoutingFlags,
} from './shared.js';

interface ServeFlags extends RoutingFlags {
  host: string;
  port: number;
  metrics?: boolean;
}

/** Largest `POST /route` body accepted; the router reads only the first few thousand characters anyway. */
const MAX_BODY_BYTES = 1024 * 1024;
/** After SIGINT/SIGTERM, requests in flight get this long to finish before they are cut off. */
const SHUTDOWN_GRACE_MS = 5_000;

function parsePort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value.trim()) || port > 65_535) {
    throw new InvalidArgumentError('expected a port number from 0 to 65535 (0 picks a free port)');
  }
  return port;
}

export function registerServeCommand(program: Command): void {
  addRoutingFlags(
    program
      .command('serve')
      .description('route requests over HTTP: POST /route, GET /healthz, and GET /metrics with --metrics')
      .option('--host <host>', 'address to listen on', '127.0.0.1')
      .option('--port <port>', 'port to listen on (0 picks a free port)', parsePort, 8787)
      .option('--metrics', 'serve Prometheus metrics at GET /metrics'),
  ).action(async (flags: ServeFlags, command: Command) => {
    const { createRouter } = await import('../route/router.js');
    const globals = command.optsWithGlobals<GlobalFlags>();
    const config = resolveConfig(globals, flags);
    requireRoutes(config);
    const router = createRouter(await routerOptions(config));
    try {
      warnSkippedSkills(router);
      let metrics: RouteMetrics | undefined;
      if (flags.metrics === true) {
        const { RouteMetrics } = await import('../observe/prometheus.js');
        const { collectDefaultMetrics } = await import('prom-client');
        metrics = new RouteMetrics({ skills: router.skills.map((skill) => skill.name) });
        collectDefaultMetrics({ register: metrics.registry });
      }
      const { createServer } = await import('node:http');
      const inFlight = new AbortController();
      // Responses not yet sent. Once stopping, each says `Connection: close`, so a keep-alive client
      // does not hold the server open after its last answer.
      const unanswered = new Set<ServerResponse>();
      let stopping = false;
      const server = createServer((request, response) => {
        if (stopping) response.setHeader('connection', 'close');
        unanswered.add(response);
        response.once('close', () => unanswered.delete(response));
        handle(request, response, { router, metrics, abortSignal: inFlight.signal }).catch(
          (error: unknown) => {
            warn(`serve: ${error instanceof Error ? error.message : String(error)}`);
            if (!response.headersSent) sendError(response, 500, toSwitchboardError(error));
            else response.destroy();
          },
        );
      });
      const onStop = () => {
        stopping = true;
        for (const response of unanswered)
          if (!response.headersSent) response.setHeader('connection', 'close');
      };
      await listen(server, flags.host, flags.port);
      process.stdout.write(`switchboard: listening on ${serverUrl(server)}\n`);
      await untilSignal(server, inFlight, onStop);
    } finally {
      router.close();
    }
    // Open sockets of the LLM providers' clients must not keep a stopped server's process alive.
    setTimeout(() => process.exit(), 2_000).unref();
  });
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      reject(listenError(error, host, port));
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
}

function listenError(error: NodeJS.ErrnoException, host: string, port: number): SwitchboardError {
  if (error.code === 'EADDRINUSE') {
    return new SwitchboardError('PORT_IN_USE', `port ${port} on ${host} is already in use`, {
      hint: 'stop the process using it, or pass another --port (0 picks a free one)',
      cause: error,
    });
  }
  if (error.code === 'EACCES') {
    return new SwitchboardError('INVALID_INPUT', `not allowed to listen on port ${port}`, {
      hint: 'ports below 1024 need privileges; pass --port 1024 or above',
      cause: error,
    });
  }
  if (error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND') {
    return new SwitchboardError('INVALID_INPUT', `cannot listen on ${host}: not an address of this machine`, {
      hint: 'pass --host 127.0.0.1, or 0.0.0.0 for every interface',
      cause: error,
    });
  }
  return new SwitchboardError('INTERNAL', `cannot listen on ${host}:${port}: ${error.message}`, {
    cause: error,
  });
}

function serverUrl(server: Server): string {
  const { address, port } = server.address() as AddressInfo;
  return `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
}

/**
 * Resolves once SIGINT or SIGTERM has closed the server. Requests in flight may finish within the
 * grace period; after it, or at a second signal, they are aborted and their connections closed.
 */
function untilSignal(server: Server, inFlight: AbortController, onStop: () => void): Promise<void> {
  return new Promise((resolve) => {
    let stopping = false;
    const cutOff = () => {
      inFlight.abort();
      server.closeAllConnections();
    };
    const stop = () => {
      if (stopping) return cutOff();
      stopping = true;
      onStop();
      server.close(() => {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        resolve();
      });
      server.closeIdleConnections();
      setTimeout(cutOff, SHUTDOWN_GRACE_MS).unref();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

interface HandlerContext {
  router: Router;
  metrics: RouteMetrics | undefined;
  abortSignal: AbortSignal;
}

async function handle(
  request: IncomingMessage,
  response: ServerResponse,
  { router, metrics, abortSignal }: HandlerContext,
): Promise<void> {
  const path = new URL(request.url ?? '/', 'http://localhost').pathname;
  const method = request.method ?? 'GET';
  if (path === '/route') {
    if (method !== 'POST') return methodNotAllowed(response, 'POST');
    return routeRequest(request, response, { router, metrics, abortSignal });
  }
  if (path === '/healthz') {
    if (method !== 'GET' && method !== 'HEAD') return methodNotAllowed(response, 'GET, HEAD');
    return sendJson(response, 200, { status: 'ok', skills: router.skills.length, mode: router.mode });
  }
  if (path === '/metrics' && metrics !== undefined) {
    if (method !== 'GET' && method !== 'HEAD') return methodNotAllowed(response, 'GET, HEAD');
    const text = await metrics.metrics();
    response.writeHead(200, { 'content-type': metrics.contentType });
    response.end(text);
    return;
  }
  const hint = path === '/metrics' ? 'start the server with --metrics' : 'use POST /route, or GET /healthz';
  sendError(response, 404, new SwitchboardError('INVALID_INPUT', `no such endpoint: ${path}`, { hint }));
}

async function routeRequest(
  request: IncomingMessage,
  response: ServerResponse,
  { router, metrics, abortSignal }: HandlerContext,
): Promise<void> {
  const body = await readBody(request);
  if (body === undefined) {
    const error = new SwitchboardError('INVALID_INPUT', `the body is larger than ${MAX_BODY_BYTES} bytes`);
    metrics?.observeError(error);
    response.setHeader('connection', 'close');
    return sendError(response, 413, error);
  }
  let parsed: { text: string; tags?: Record<string, string> };
  try {
    parsed = parseRouteBody(body);
  } catch (error) {
    metrics?.observeError(error);
    return sendError(response, 400, toSwitchboardError(error));
  }
  // A client that hangs up no longer needs the answer: stop routing (and any LLM call) for it.
  const clientGone = new AbortController();
  response.once('close', () => {
    if (!response.writableFinished) clientGone.abort();
  });
  try {
    const decision = await router.route(parsed.text, {
      abortSignal: AbortSignal.any([abortSignal, clientGone.signal]),
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

/** The body as text, or `undefined` when it is larger than `MAX_BODY_BYTES`. */
async function readBody(request: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  // Read to the end even when too large: leaving the loop early destroys the socket, and the client
  // would get a reset instead of the 413.
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size <= MAX_BODY_BYTES) chunks.push(chunk);
  }
  return size > MAX_BODY_BYTES ? undefined : Buffer.concat(chunks).toString('utf8');
}

function parseRouteBody(body: string): { text: string; tags?: Record<string, string> } {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    throw new SwitchboardError('INVALID_INPUT', 'the body is not valid JSON', {
      hint: 'send {"text": "...", "tags": {"key": "value"}} with content-type application/json',
    });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SwitchboardError('INVALID_INPUT', 'Expected the body to be a JSON object', {
      hint: 'send {"text": "..."}',
    });
  }
  const { text, tags } = value as { text?: unknown; tags?: unknown };
  if (typeof text !== 'string') {
    throw new SwitchboardError('INVALID_INPUT', 'Expected "text" to be a string', {
      hint: 'send {"text": "..."}',
    });
  }
  if (tags === undefined) return { text };
  if (
    typeof tags !== 'object' ||
    tags === null ||
    Array.isArray(tags) ||
    !Object.values(tags).every((tag) => typeof tag === 'string')
  ) {
    throw new SwitchboardError('INVALID_INPUT', 'Expected "tags" to be an object of strings', {
      hint: 'send tags such as {"caller": "ci"}',
    });
  }
  return { text, tags: tags as Record<string, string> };
}

function toSwitchboardError(error: unknown): SwitchboardError {
  if (isSwitchboardError(error)) return error;
  if (error instanceof Error && error.name === 'AbortError') {
    return new SwitchboardError('ABORTED', 'the request was aborted', { cause: error });
  }
  return new SwitchboardError('INTERNAL', error instanceof Error ? error.message : String(error), {
    hint: 'this is a bug in switchboard; please report it with the request that caused it',
    cause: error,
  });
}

function statusFor(code: ErrorCode): number {
  if (code === 'INVALID_INPUT') return 400;
  if (code === 'ABORTED') return 503;
  if (code === 'INTERNAL' || code === 'STORE_ERROR') return 500;
  // The rest come from the LLM tier's providers in llm-only mode: an upstream failure.
  return 502;
}

function methodNotAllowed(response: ServerResponse, allow: string): void {
  response.setHeader('allow', allow);
  sendError(response, 405, new SwitchboardError('INVALID_INPUT', `method not allowed; use ${allow}`));
}

function sendError(response: ServerResponse, status: number, error: SwitchboardError): void {
  const { code, message, hint, retryable } = error;
  sendJson(response, status, {
    error: { code, message, ...(hint === undefined ? {} : { hint }), retryable },
  });
}

function sendJson(response: ServerResponse, status: number, value: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  response.end(`${JSON.stringify(value)}\n`);
}
