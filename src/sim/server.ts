import { appendFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { SwitchboardError } from '../core/errors.js';
import { parseJsonOr } from '../core/safe-json.js';
import { redactSecrets } from '../core/secrets.js';
import { buildAnswer } from './build-answer.js';
import { keyFingerprint, requestCredentials, withoutCredentials } from './credentials.js';
import { ruleMatches } from './match.js';
import {
  viewAnthropicRequest,
  viewGeminiRequest,
  viewOpenAiRequest,
  viewResponsesRequest,
  type SimRequestView,
} from './request.js';
import { sendAnswer, sendFault, sendJson, type ResponseContext } from './respond.js';
import {
  loadScenario,
  parseScenario,
  type ParsedScenario,
  type Scenario,
  type ScenarioRule,
  type SimProvider,
  type SimWire,
} from './scenario.js';
import { createThinkingSigner, thinkingEnabled } from './thinking.js';
import type { WireFormat } from './wire/answer.js';
import { anthropicWire } from './wire/anthropic.js';
import { geminiWire } from './wire/gemini.js';
import { openAiWire } from './wire/openai.js';
import { responsesWire } from './wire/responses.js';

const WIRES: Record<SimWire, WireFormat> = {
  anthropic: anthropicWire,
  chat: openAiWire,
  responses: responsesWire,
  gemini: geminiWire,
};

/**
 * The 400s the Messages API gives a request with extended thinking that breaks its rules: a forced
 * tool, a budget that leaves no room for the answer, and a tool loop's last assistant turn sent back
 * without the thinking block that opened it.
 */
function thinkingProblem(body: Record<string, unknown>): string | undefined {
  if (!thinkingEnabled(body)) return undefined;
  const thinking = body['thinking'] as Record<string, unknown>;
  const choice = body['tool_choice'] as Record<string, unknown> | undefined;
  if (choice?.['type'] === 'any' || choice?.['type'] === 'tool') {
    return 'Thinking may not be enabled when tool_choice forces tool use.';
  }
  const budget = thinking['budget_tokens'];
  if (thinking['type'] === 'enabled' && typeof budget === 'number' && budget >= Number(body['max_tokens'])) {
    return '`max_tokens` must be greater than `thinking.budget_tokens`.';
  }
  const messages = Array.isArray(body['messages']) ? (body['messages'] as Record<string, unknown>[]) : [];
  const last = messages.filter((message) => message?.['role'] === 'assistant').at(-1);
  const content = Array.isArray(last?.['content']) ? (last['content'] as Record<string, unknown>[]) : [];
  const first = content[0]?.['type'];
  if (
    content.some((block) => block?.['type'] === 'tool_use') &&
    first !== 'thinking' &&
    first !== 'redacted_thinking'
  ) {
    return `Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(first)}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block.`;
  }
  return undefined;
}

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
  /** The wire protocol of a model request (`chat` and `responses` are both provider `openai`); null for others. */
  wire: SimWire | null;
  model: string | null;
  stream: boolean;
  turn: number | null;
  /** Text of the last user message. */
  text: string | null;
  tools: string[];
  /** Name (or index) of the rule that answered, null for the fallback. */
  rule: string | null;
  /** `reply`, `fault:<kind>`, `invalid_request` (a 400 the simulator chose), `count_tokens`, `models`, `head` or `not_found`. */
  outcome: string;
  status: number | null;
  /** The message of an `invalid_request` answer (a thinking signature that does not verify, say). */
  error?: string;
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

/**
 * Starts the LLM API simulator: Anthropic Messages, Gemini generateContent, OpenAI chat completions
 * and Responses.
 */
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
  const signer = createThinkingSigner();

  const wait = (milliseconds: number): Promise<void> =>
    new Promise((resolve) => {
      if (milliseconds <= 0 || closed) return resolve();
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, milliseconds);
      timers.add(timer);
    });
  const context: ResponseContext = { wait, closed: () => closed };

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
    const view = modelRequestView(request.method, url.pathname, body);
    if (view === undefined) return answerOther(request, response, { base, body, credentials });

    const entry = {
      ...base,
      provider: view.provider,
      wire: view.wire,
      model: view.model,
      stream: view.stream,
      turn: view.turn,
      text: view.text,
      tools: view.tools,
    };
    const wire = WIRES[view.wire];
    const invalid = invalidRequest(view, body);
    if (invalid !== undefined) {
      record(credentials, { ...entry, rule: null, outcome: 'invalid_request', status: 400, error: invalid });
      return sendJson(response, 400, wire.error(400, invalid));
    }
    const chosen = chooseRule(view);
    const rule = chosen === undefined ? null : (chosen.rule.name ?? `#${chosen.index}`);
    if (chosen?.rule.fault !== undefined) {
      const fault = chosen.rule.fault;
      const status = fault.kind === 'overload' ? wire.overloadStatus : (fault.status ?? 500);
      record(credentials, {
        ...entry,
        rule,
        outcome: `fault:${fault.kind}`,
        status: fault.kind === 'status' || fault.kind === 'overload' ? status : null,
      });
      await wait(fault.delayMs ?? 0);
      return sendFault(fault, status, { request, response, wire, view, context });
    }
    const reply = chosen?.rule.reply ?? scenario.fallback ?? { text: 'ok' };
    record(credentials, { ...entry, rule, outcome: 'reply', status: 200 });
    const answer = buildAnswer({ reply, view, requestBytes: promptBytes(parsedBody, raw), body, signer });
    await wait(reply.delayMs ?? 0);
    if (closed) return;
    return sendAnswer(response, answer, { wire, stream: view.stream, reply, context });
  }

  /** Everything but a model request: token counting, Claude Code's HEAD probe, the model list, 404. */
  function answerOther(
    request: IncomingMessage,
    response: ServerResponse,
    {
      base,
      body,
      credentials,
    }: {
      base: Pick<SimLogEntry, 'method' | 'path' | 'headers' | 'body'>;
      body: Record<string, unknown>;
      credentials: string[];
    },
  ): void {
    const { pathname } = new URL(request.url ?? '/', 'http://simulator');
    if (request.method === 'POST' && /\/v1\/messages\/count_tokens$/.test(pathname)) {
      const tokens = Math.max(1, Math.ceil(JSON.stringify(body['messages'] ?? '').length / 4));
      record(credentials, {
        ...base,
        ...emptyView(),
        provider: 'anthropic',
        wire: 'anthropic',
        model: String(body['model'] ?? ''),
        outcome: 'count_tokens',
        status: 200,
      });
      return sendJson(response, 200, { input_tokens: tokens });
    }
    if (request.method === 'HEAD') {
      // Claude Code checks connectivity with HEAD /api/hello before its first call.
      record(credentials, { ...base, ...emptyView(), outcome: 'head', status: 200 });
      response.writeHead(200).end();
      return;
    }
    if (request.method === 'GET' && /\/models$/.test(pathname)) {
      record(credentials, { ...base, ...emptyView(), outcome: 'models', status: 200 });
      return sendJson(response, 200, { data: [], object: 'list', has_more: false });
    }
    record(credentials, { ...base, ...emptyView(), outcome: 'not_found', status: 404 });
    return sendJson(response, 404, {
      error: {
        type: 'not_found_error',
        message: `the simulator does not serve ${request.method} ${pathname}`,
      },
    });
  }

  /** A 400 the real API would give whatever the scenario says: the simulator holds no state to refer to, or signed thinking was changed. */
  function invalidRequest(view: SimRequestView, body: Record<string, unknown>): string | undefined {
    if (view.wire === 'anthropic') return thinkingProblem(body) ?? signer.check(body);
    if (view.wire === 'responses' && body['previous_response_id'] != null) {
      return 'previous_response_id is not supported: the simulator keeps no responses; send the whole conversation as input';
    }
    return undefined;
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

/** What the simulator understood of a model request (any wire), or undefined for other paths. */
function modelRequestView(
  method: string | undefined,
  pathname: string,
  body: Record<string, unknown>,
): SimRequestView | undefined {
  if (method !== 'POST') return undefined;
  if (/\/v1\/messages$/.test(pathname)) return viewAnthropicRequest(body);
  if (/\/chat\/completions$/.test(pathname)) return viewOpenAiRequest(body);
  if (/\/responses$/.test(pathname)) return viewResponsesRequest(body);
  const gemini = /^\/(v1beta|v1)\/models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(pathname);
  if (gemini === null) return undefined;
  return viewGeminiRequest(body, decodeURIComponent(gemini[2] ?? ''), gemini[3] === 'streamGenerateContent');
}

function resolveScenario(input: Scenario | string | undefined): ParsedScenario {
  if (typeof input === 'string') return loadScenario(input);
  return parseScenario(input ?? {});
}

/**
 * The request's size without its streaming flags, from which input tokens are estimated: one prompt
 * counts the same whether it is streamed or not, as it does at the provider.
 */
function promptBytes(parsed: unknown, raw: string): number {
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return raw.length;
  const { stream: _stream, stream_options: _streamOptions, ...prompt } = parsed as Record<string, unknown>;
  return JSON.stringify(prompt).length;
}

function emptyView(): Pick<
  SimLogEntry,
  'provider' | 'wire' | 'model' | 'stream' | 'turn' | 'text' | 'tools' | 'rule'
> {
  return {
    provider: null,
    wire: null,
    model: null,
    stream: false,
    turn: null,
    text: null,
    tools: [],
    rule: null,
  };
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}
