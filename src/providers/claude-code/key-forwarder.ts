import { randomBytes, timingSafeEqual } from 'node:crypto';
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { parseJsonOr } from '../../core/safe-json.js';
import { redactJsonText } from '../../core/secrets.js';

/** The usage one API response reported, as the forwarder saw it pass. */
export interface ForwardedUsage {
  model?: string;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

export interface KeyForwarderOptions {
  /** Where requests go on: the Anthropic API or a simulator. @default https://api.anthropic.com */
  upstream?: string | undefined;
  /** The credential added to every forwarded request. */
  credential: { kind: 'api-key' | 'bearer'; value: string };
  /**
   * Called once per Messages response that reported usage, when it has passed whole (a stream's
   * `message_start` and last `message_delta` added up). A throwing callback is ignored.
   */
  onUsage?: (usage: ForwardedUsage) => void;
}

/** A loopback forwarder: Claude Code talks to it with a worthless token, it talks upstream with the key. */
export interface KeyForwarder {
  /** `http://127.0.0.1:PORT`, for Claude Code's `ANTHROPIC_BASE_URL`. */
  readonly url: string;
  /** The per-run token Claude Code sends as its API key; accepted here only. */
  readonly token: string;
  close(): Promise<void>;
}

const DEFAULT_UPSTREAM = 'https://api.anthropic.com';

/** Headers of one hop, passed on in neither direction. */
const HOP_HEADERS = [
  'connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
];

/** Request headers not passed on: the hop's own, the client's credentials, its encodings. */
const DROPPED_REQUEST_HEADERS = new Set([
  ...HOP_HEADERS,
  'host',
  'x-api-key',
  'authorization',
  'accept-encoding',
]);

/**
 * The only requests that go upstream with the key: what an agent's Claude Code sends with its
 * nonessential traffic turned off (see environment.ts). Anything else a tool of the agent could send
 * through the forwarder (files, batches, admin, an organisation's settings) is answered 404 here.
 */
const FORWARDED_PATHS = new Set(['/v1/messages', '/v1/messages/count_tokens']);

/**
 * Starts the forwarder on 127.0.0.1 and a free port.
 *
 * Why: a tool Claude Code runs is a process of the same user, so any file, environment or helper Claude
 * Code can read for its key, the agent can read too. Here Claude Code never holds the key: it holds a
 * random token that only this forwarder accepts, for as long as the run lasts; the key stays in the
 * runner's memory and goes out only on the forwarded request. Bodies stream through unchanged both ways
 * (the upstream is asked for no compression, so usage can be read as it passes).
 */
export async function startKeyForwarder(options: KeyForwarderOptions): Promise<KeyForwarder> {
  const upstream = new URL(options.upstream ?? DEFAULT_UPSTREAM);
  const token = `sb-run-${randomBytes(24).toString('hex')}`;
  const sockets = new Set<Socket>();
  const server = createServer((request, response) => {
    if (!carriesToken(request.headers, token)) {
      sendError(response, 401, 'authentication_error', 'this forwarder accepts only its run token');
      request.resume();
      return;
    }
    const incoming = requestUrl(request);
    if (incoming === undefined) {
      sendError(response, 400, 'invalid_request_error', 'this forwarder cannot read the request path');
      request.resume();
      return;
    }
    const path = incoming.pathname;
    if (request.method !== 'POST' || !FORWARDED_PATHS.has(path)) {
      sendError(
        response,
        404,
        'not_found_error',
        `this forwarder passes on only POST ${[...FORWARDED_PATHS].join(', ')}, not ${request.method ?? '?'} ${path}`,
      );
      request.resume();
      return;
    }
    forward(request, response, incoming, upstream, options);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    token,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

function carriesToken(headers: IncomingHttpHeaders, token: string): boolean {
  const given = [headers['x-api-key'], headers['authorization']?.replace(/^Bearer\s+/i, '')];
  const expected = Buffer.from(token);
  return given.some((value) => {
    if (typeof value !== 'string') return false;
    const candidate = Buffer.from(value);
    return candidate.length === expected.length && timingSafeEqual(candidate, expected);
  });
}

/**
 * The request's path and query, or undefined when they do not parse (`POST // HTTP/1.1`): a throw in
 * the request handler would end the whole runner, not just this request.
 */
function requestUrl(request: IncomingMessage): URL | undefined {
  try {
    return new URL(request.url ?? '/', 'http://forwarder');
  } catch {
    return undefined;
  }
}

function forward(
  request: IncomingMessage,
  response: ServerResponse,
  incoming: URL,
  upstream: URL,
  options: KeyForwarderOptions,
): void {
  const target = new URL(upstream.toString());
  target.pathname = `${upstream.pathname.replace(/\/$/, '')}${incoming.pathname}`;
  target.search = incoming.search;
  const headers: OutgoingHttpHeaders = { 'accept-encoding': 'identity' };
  for (const [name, value] of Object.entries(request.headers)) {
    if (!DROPPED_REQUEST_HEADERS.has(name) && value !== undefined) headers[name] = value;
  }
  if (options.credential.kind === 'api-key') headers['x-api-key'] = options.credential.value;
  else headers['authorization'] = `Bearer ${options.credential.value}`;

  // Every request Claude Code sends passes here: the one place its tool results (a file that holds a
  // configured key, a command's output) are cleaned of every known secret before they leave. JSON
  // bodies only (the Messages API's); the body is read whole, so its length is set again.
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('error', () => response.destroy());
  request.on('end', () => {
    let body = Buffer.concat(chunks);
    if (/json/i.test(String(request.headers['content-type'] ?? '')) && body.length > 0) {
      body = Buffer.from(redactJsonText(body.toString('utf8')), 'utf8');
    }
    delete headers['transfer-encoding'];
    if (body.length > 0 || request.headers['content-length'] !== undefined)
      headers['content-length'] = String(body.length);
    send(target, headers, body, request, response, options);
  });
}

function send(
  target: URL,
  headers: OutgoingHttpHeaders,
  body: Buffer,
  request: IncomingMessage,
  response: ServerResponse,
  options: KeyForwarderOptions,
): void {
  const sendRequest = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const outgoing = sendRequest(target, { method: request.method ?? 'GET', headers }, (answer) => {
    const tap = options.onUsage === undefined ? undefined : new UsageTap(answer.headers['content-type']);
    response.writeHead(answer.statusCode ?? 502, answer.statusMessage, withoutHopHeaders(answer.headers));
    answer.on('data', (chunk: Buffer) => {
      tap?.push(chunk);
      response.write(chunk);
    });
    answer.on('end', () => {
      response.end();
      const usage = tap?.finish();
      if (usage !== undefined) {
        try {
          options.onUsage?.(usage);
        } catch {
          // Bookkeeping must not break the stream.
        }
      }
    });
    answer.on('error', () => response.destroy());
  });
  // An upstream that cannot be reached looks the same to Claude Code as without the forwarder: the
  // connection drops (an answer of ours would read as a server error, not an unreachable API).
  outgoing.on('error', () => {
    response.destroy();
    request.socket.destroy();
  });
  response.on('close', () => {
    if (!response.writableFinished) outgoing.destroy();
  });
  outgoing.end(body);
}

function withoutHopHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const kept: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_HEADERS.includes(name)) kept[name] = value;
  }
  return kept;
}

function sendError(response: ServerResponse, status: number, type: string, message: string): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ type: 'error', error: { type, message } }));
}

/** Reads the usage of a Messages response (JSON or server-sent events) as its bytes pass. */
class UsageTap {
  private readonly stream: boolean;
  private text = '';
  private usage: ForwardedUsage | undefined;

  constructor(contentType: string | undefined) {
    this.stream = contentType?.includes('text/event-stream') === true;
  }

  push(chunk: Buffer): void {
    this.text += chunk.toString('utf8');
    if (!this.stream) return;
    // Whole lines only: an event may be split across chunks.
    const end = this.text.lastIndexOf('\n');
    if (end < 0) return;
    for (const line of this.text.slice(0, end).split('\n')) this.readEvent(line);
    this.text = this.text.slice(end + 1);
  }

  finish(): ForwardedUsage | undefined {
    if (this.stream) this.readEvent(this.text);
    else this.readMessage(parseJsonOr(this.text, undefined));
    return this.usage;
  }

  private readEvent(line: string): void {
    if (!line.startsWith('data:')) return;
    const event = parseJsonOr(line.slice(5).trim(), undefined) as {
      type?: string;
      message?: unknown;
      usage?: unknown;
    };
    if (event?.type === 'message_start') this.readMessage(event.message);
    else if (event?.type === 'message_delta') this.add(event.usage, undefined);
  }

  private readMessage(message: unknown): void {
    if (typeof message !== 'object' || message === null) return;
    const { usage, model } = message as { usage?: unknown; model?: unknown };
    this.add(usage, typeof model === 'string' ? model : undefined);
  }

  /** A delta's counts are running totals: each one given replaces the earlier value. */
  private add(raw: unknown, model: string | undefined): void {
    if (typeof raw !== 'object' || raw === null) return;
    const usage = raw as Record<string, unknown>;
    const current = this.usage ?? {
      inputTokens: 0,
      outputTokens: 0,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
    };
    const take = (key: string, fallback: number): number =>
      typeof usage[key] === 'number' ? (usage[key] as number) : fallback;
    this.usage = {
      ...current,
      ...(model === undefined ? {} : { model }),
      inputTokens: take('input_tokens', current.inputTokens),
      outputTokens: take('output_tokens', current.outputTokens),
      cacheReadTokens: take('cache_read_input_tokens', current.cacheReadTokens),
      cacheWriteTokens: take('cache_creation_input_tokens', current.cacheWriteTokens),
    };
  }
}
