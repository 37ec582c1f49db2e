import { randomBytes } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { SwitchboardError } from '../core/errors.js';
import { parseJsonOr } from '../core/safe-json.js';
import {
  viewAnthropicRequest,
  viewGeminiRequest,
  viewOpenAiRequest,
  type SimRequestView,
} from './request.js';
import {
  loadScenario,
  parseScenario,
  type ParsedScenario,
  type Scenario,
  type ScenarioFault,
  type ScenarioReply,
  type ScenarioRule,
  type SimProvider,
} from './scenario.js';
import type { SimAnswer, WireFormat } from './wire/answer.js';
import { conformingValue } from './conforming-value.js';
import { requestedOutput } from './requested-output.js';
import { anthropicWire } from './wire/anthropic.js';
import { geminiWire } from './wire/gemini.js';
import { openAiWire } from './wire/openai.js';
import { keyFingerprint, requestCredentials, withoutCredentials } from './credentials.js';
import { redactSecrets } from '../core/secrets.js';

const WIRES: Record<SimProvider, WireFormat> = {
  anthropic: anthropicWire,
  gemini: geminiWire,
  openai: openAiWire,
};

/** Headers never logged: they carry credentials. */
const SECRET_HEADERS = new Set([
  'x-api-key',
  'authorization',
  'x-goog-api-key',
  'cookie',
  'proxy-authorization',
]);

/** One request as the simulator saw it; the log is JSONL of these. */
export interface SimLogEntry {
  seq: number;
  at: string;
  method: string;
  /** Path without credentials in the query string. */
  path: string;
  provider: SimProvider | null;
  model: string | null;
  stream: boolean;
  turn: number | null;
  /** Text of the last user message. */
  text: string | null;
  tools: string[];
  /** Name (or index) of the rule that answered, null for the fallback. */
  rule: string | null;
  /** `reply`, `fault:<kind>`, `count_tokens`, `models`, `head` or `not_found`. */
  outcome: string;
  status: number | null;
  headers: Record<string, string>;
  /** Which key the request carried, as `keyFingerprint` makes it (never the key); null when none. */
  key: string | null;
  /** The parsed JSON body. */
  body: unknown;
}

export interface SimulatorOptions {
  /** A scenario object or the path of a YAML/JSON scenario file. @default answer every request with "ok" */
  scenario?: Scenario | string;
  /** @default 0 (the system picks a free port) */
  port?: number;
  /** @default '127.0.0.1' */
  host?: string;
  /** Append every request as a JSON line to this file. */
  logFile?: string;
  /**
   * Stop by itself after this many milliseconds, so a forgotten simulator never lingers.
   * @default undefined (run until `close()`)
   */
  maxLifetimeMs?: number;
}

export interface Simulator {
  /** `http://127.0.0.1:PORT`: Anthropic and Gemini base URL (Claude Code's `ANTHROPIC_BASE_URL`). */
  readonly url: string;
  /** `http://127.0.0.1:PORT/v1`: the OpenAI SDK's `baseURL`. */
  readonly openAiBaseUrl: string;
  readonly port: number;
  /** Every request so far, oldest first. */
  readonly requests: readonly SimLogEntry[];
  /** Replaces the scenario and resets rule counters (the request log stays). */
  setScenario(scenario: Scenario | string): void;
  /** Clears the request log. */
  clearLog(): void;
  close(): Promise<void>;
}

interface RuleState {
  fired: number;
  passed: number;
}

/** Starts the LLM API simulator: Anthropic Messages, Gemini generateContent, OpenAI chat completions. */
export async function startSimulator({
  scenario: scenarioInput,
  port = 0,
  host = '127.0.0.1',
  logFile,
  maxLifetimeMs,
}: SimulatorOptions = {}): Promise<Simulator> {
  let scenario = resolveScenario(scenarioInput);
  let states: RuleState[] = scenario.rules.map(() => ({ fired: 0, passed: 0 }));
  const requests: SimLogEntry[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let sequence = 0;
  let closed = false;

  const wait = (milliseconds: number): Promise<void> =>
    new Promise((resolve) => {
      if (milliseconds <= 0 || closed) return resolve();
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, milliseconds);
      timers.add(timer);
    });

  function chooseRule(view: SimRequestView): { rule: ScenarioRule; index: number } | undefined {
    for (const [index, rule] of scenario.rules.entries()) {
      const state = states[index] as RuleState;
      if (!ruleMatches(rule, view)) continue;
      if (rule.times !== undefined && state.fired >= rule.times) continue;
      if (rule.after !== undefined && state.passed < rule.after) {
        state.passed++;
        continue;
      }
      state.fired++;
      return { rule, index };
    }
    return undefined;
  }

  function record(credentials: readonly string[], entry: Omit<SimLogEntry, 'seq' | 'at' | 'key'>): void {
    // The request's own key, and this process's secrets, may sit anywhere in a body (a tool result that
    // printed the environment): the log, on disk or in memory, holds neither.
    const clean = JSON.parse(
      redactSecrets(withoutCredentials(JSON.stringify(entry), credentials)),
    ) as typeof entry;
    const key = credentials[0] === undefined ? null : keyFingerprint(credentials[0]);
    const full: SimLogEntry = { seq: ++sequence, at: new Date().toISOString(), ...clean, key };
    requests.push(full);
    if (logFile !== undefined) appendFileSync(logFile, `${JSON.stringify(full)}\n`);
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://simulator');
    const credentials = requestCredentials(request, url);
    url.searchParams.delete('key');
    const path = url.pathname + (url.search === '' ? '' : url.search);
    const headers = Object.fromEntries(
      Object.entries(request.headers)
        .filter(([name]) => !SECRET_HEADERS.has(name))
        .map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : (value ?? '')]),
    );
    const raw = await readBody(request);
    const parsedBody = parseJsonOr(raw, undefined);
    const body = (typeof parsedBody === 'object' && parsedBody !== null ? parsedBody : {}) as Record<
      string,
      unknown
    >;
    const base = { method: request.method ?? 'GET', path, headers, body: parsedBody ?? raw };

    let view: SimRequestView | undefined;
    const gemini = /^\/(v1beta|v1)\/models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(
      url.pathname,
    );
    if (request.method === 'POST' && /\/v1\/messages\/count_tokens$/.test(url.pathname)) {
      const tokens = Math.max(1, Math.ceil(JSON.stringify(body['messages'] ?? '').length / 4));
      record(credentials, {
        ...base,
        ...emptyView(),
        provider: 'anthropic',
        model: String(body['model'] ?? ''),
        outcome: 'count_tokens',
        status: 200,
      });
      return sendJson(response, 200, { input_tokens: tokens });
    } else if (request.method === 'POST' && /\/v1\/messages$/.test(url.pathname)) {
      view = viewAnthropicRequest(body);
    } else if (request.method === 'POST' && /\/chat\/completions$/.test(url.pathname)) {
      view = viewOpenAiRequest(body);
    } else if (request.method === 'POST' && gemini !== null) {
      view = viewGeminiRequest(
        body,
        decodeURIComponent(gemini[2] ?? ''),
        gemini[3] === 'streamGenerateContent',
      );
    } else if (request.method === 'HEAD') {
      // Claude Code checks connectivity with HEAD /api/hello before its first call.
      record(credentials, { ...base, ...emptyView(), outcome: 'head', status: 200 });
      response.writeHead(200).end();
      return;
    } else if (request.method === 'GET' && /\/models$/.test(url.pathname)) {
      record(credentials, { ...base, ...emptyView(), outcome: 'models', status: 200 });
      return sendJson(response, 200, { data: [], object: 'list', has_more: false });
    } else {
      record(credentials, { ...base, ...emptyView(), outcome: 'not_found', status: 404 });
      return sendJson(response, 404, {
        error: {
          type: 'not_found_error',
          message: `the simulator does not serve ${request.method} ${url.pathname}`,
        },
      });
    }

    const chosen = chooseRule(view);
    const ruleName = chosen === undefined ? null : (chosen.rule.name ?? `#${chosen.index}`);
    const entry = {
      ...base,
      provider: view.provider,
      model: view.model,
      stream: view.stream,
      turn: view.turn,
      text: view.text,
      tools: view.tools,
      rule: ruleName,
    };
    const wire = WIRES[view.provider];
    if (chosen?.rule.fault !== undefined) {
      const fault = chosen.rule.fault;
      const status = fault.kind === 'overload' ? wire.overloadStatus : (fault.status ?? 500);
      record(credentials, {
        ...entry,
        outcome: `fault:${fault.kind}`,
        status: fault.kind === 'status' || fault.kind === 'overload' ? status : null,
      });
      await wait(fault.delayMs ?? 0);
      return sendFault(response, request, fault, status, wire, view);
    }
    const reply = chosen?.rule.reply ?? scenario.fallback ?? { text: 'ok' };
    record(credentials, { ...entry, outcome: 'reply', status: 200 });
    const answer = buildAnswer(reply, view, raw.length, body);
    await wait(reply.delayMs ?? 0);
    if (closed) return;
    if (!view.stream) return sendJson(response, 200, wire.json(answer));
    response.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    response.flushHeaders();
    await wait(reply.firstTokenDelayMs ?? 0);
    for (const event of wire.events(answer)) {
      if (closed || response.destroyed) return;
      response.write(formatSse(event.event, event.data));
      await wait(reply.chunkDelayMs ?? 0);
    }
    if (wire.terminator !== undefined) response.write(`data: ${wire.terminator}\n\n`);
    response.end();
  }

  async function sendFault(
    response: ServerResponse,
    request: IncomingMessage,
    fault: ScenarioFault,
    status: number,
    wire: WireFormat,
    view: SimRequestView,
  ): Promise<void> {
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
        const answer = buildAnswer({ text: 'this answer is cut off in the middle' }, view, 0);
        if (view.stream) {
          response.writeHead(200, { 'content-type': 'text/event-stream' });
          const events = wire.events(answer);
          for (const event of events.slice(0, Math.max(1, Math.floor(events.length / 2)))) {
            response.write(formatSse(event.event, event.data));
          }
        } else {
          const body = JSON.stringify(wire.json(answer));
          response.writeHead(200, {
            'content-type': 'application/json',
            'content-length': String(body.length),
          });
          response.write(body.slice(0, Math.floor(body.length / 2)));
        }
        await wait(20);
        request.socket.destroy();
        return;
      }
      case 'status':
      case 'overload': {
        const headers: Record<string, string> = { ...fault.headers };
        if (fault.retryAfter !== undefined) headers['retry-after'] = String(fault.retryAfter);
        if (fault.retryAfterMs !== undefined) headers['retry-after-ms'] = String(fault.retryAfterMs);
        if (view.provider === 'anthropic' && fault.kind === 'overload') headers['x-should-retry'] ??= 'true';
        const text =
          fault.message ?? (fault.kind === 'overload' ? 'Overloaded' : `simulated error ${status}`);
        const key =
          fault.echoKey === true
            ? requestCredentials(request, new URL(request.url ?? '/', 'http://simulator'))[0]
            : undefined;
        const message = key === undefined ? text : `${text} (key: ${key})`;
        return sendJson(response, status, fault.body ?? wire.error(status, message), headers);
      }
    }
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) sendJson(response, 500, { error: { message: String(error) } });
      else response.destroy();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new SwitchboardError(
          'INVALID_INPUT',
          `the simulator cannot listen on ${host}:${port} (${error.code ?? error.message})`,
          {
            hint: 'choose another --port, or 0 for any free port',
            cause: error,
          },
        ),
      ),
    );
    server.listen(port, host, resolve);
  });
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;

  async function close(): Promise<void> {
    if (closed) return;
    closed = true;
    for (const timer of timers) clearTimeout(timer);
    timers.clear();
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  if (maxLifetimeMs !== undefined) {
    const lifetime = setTimeout(() => void close(), maxLifetimeMs);
    lifetime.unref();
  }

  return {
    url,
    openAiBaseUrl: `${url}/v1`,
    port: address.port,
    requests,
    setScenario(next) {
      scenario = resolveScenario(next);
      states = scenario.rules.map(() => ({ fired: 0, passed: 0 }));
    },
    clearLog() {
      requests.length = 0;
    },
    close,
  };
}

function resolveScenario(input: Scenario | string | undefined): ParsedScenario {
  if (typeof input === 'string') return loadScenario(input);
  return parseScenario(input ?? {});
}

/** Compiled match patterns: a scenario with thousands of rules is matched on every request. */
const compiledPatterns = new Map<string, RegExp>();

function pattern(source: string): RegExp {
  let compiled = compiledPatterns.get(source);
  if (compiled === undefined) {
    if (compiledPatterns.size >= 50_000) compiledPatterns.clear();
    compiledPatterns.set(source, (compiled = new RegExp(source, 'i')));
  }
  return compiled;
}

function ruleMatches(rule: ScenarioRule, view: SimRequestView): boolean {
  const { match } = rule;
  if (match.provider !== undefined && match.provider !== view.provider) return false;
  if (match.model !== undefined && !pattern(match.model).test(view.model)) return false;
  if (match.text !== undefined && !pattern(match.text).test(view.text)) return false;
  if (match.system !== undefined && !pattern(match.system).test(view.system)) return false;
  if (match.turn !== undefined && match.turn !== view.turn) return false;
  if (match.stream !== undefined && match.stream !== view.stream) return false;
  if (match.tools === true && view.tools.length === 0) return false;
  if (match.tools === false && view.tools.length > 0) return false;
  if (typeof match.tools === 'string') {
    const tools = pattern(match.tools);
    if (!view.tools.some((name) => tools.test(name))) return false;
  }
  return true;
}

interface ReplyContent {
  text: string;
  calls: { name: string; input: Record<string, unknown>; id?: string | undefined }[];
}

/** What the reply says, as scripted, or conforming to the schema the request carries (`conform`). */
function replyContent(
  reply: ScenarioReply,
  view: SimRequestView,
  body: Record<string, unknown>,
): ReplyContent {
  const output = reply.conform === true ? requestedOutput(view.provider, body) : undefined;
  if (output?.kind === 'tool') {
    const input = conformingValue(output.schema);
    const record = typeof input === 'object' && input !== null && !Array.isArray(input) ? input : {};
    return { text: '', calls: [{ name: output.name, input: record as Record<string, unknown> }] };
  }
  if (output?.kind === 'json') return { text: JSON.stringify(conformingValue(output.schema)), calls: [] };
  const scripted =
    reply.text ??
    (reply.json === undefined
      ? reply.conform === true && reply.echo !== true
        ? 'ok'
        : ''
      : JSON.stringify(reply.json));
  return {
    text: reply.echo === true ? `${scripted}${view.text}` : scripted,
    calls: [...(reply.tool === undefined ? [] : [reply.tool]), ...(reply.tools ?? [])],
  };
}

function buildAnswer(
  reply: ScenarioReply,
  view: SimRequestView,
  requestBytes: number,
  body: Record<string, unknown> = {},
): SimAnswer {
  const { text, calls } = replyContent(reply, view, body);
  return {
    id: `sim_${randomBytes(8).toString('hex')}`,
    model: reply.model ?? view.model,
    text,
    toolCalls: calls.map((call) => ({
      id: call.id ?? `toolu_sim_${randomBytes(8).toString('hex')}`,
      name: call.name,
      input: call.input,
    })),
    usage: {
      input: reply.usage?.input ?? Math.max(1, Math.ceil(requestBytes / 4)),
      output: reply.usage?.output ?? Math.max(1, Math.ceil((text.length + JSON.stringify(calls).length) / 4)),
      cacheRead: reply.usage?.cacheRead ?? 0,
      cacheWrite: reply.usage?.cacheWrite ?? 0,
    },
    stopReason: reply.stopReason,
  };
}

function emptyView(): Pick<
  SimLogEntry,
  'provider' | 'model' | 'stream' | 'turn' | 'text' | 'tools' | 'rule'
> {
  return { provider: null, model: null, stream: false, turn: null, text: null, tools: [], rule: null };
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function sendJson(
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

function formatSse(event: string | undefined, data: unknown): string {
  return `${event === undefined ? '' : `event: ${event}\n`}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
}
