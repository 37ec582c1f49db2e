import type { ChildProcess } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { runCli } from './helpers/run-cli.js';
import { startGateway, type Gateway } from './helpers/gateway-server.js';
import { killServers } from './helpers/serve-process.js';

// Attacks on the gateway by a holder of a scoped virtual key, against a real `switchboard serve` and
// the simulator as upstream: the key's model scope must hold whatever name the request gives (an
// inline chain, a subagent tag, a configured route), and count_tokens is under the key's limits.

const children = new Set<ChildProcess>();
let sim: Simulator;
let server: Gateway;
/** The provider keys and settings of every server here; the raw-upstream ones swap the Anthropic pair. */
let serveEnv: Record<string, string>;

beforeAll(async () => {
  sim = await startSimulator({ maxLifetimeMs: 300_000, scenario: { fallback: { text: 'attacked answer' } } });
  serveEnv = {
    ANTHROPIC_API_KEY: 'sk-ant-api03-gateway-attacks-upstream-5656',
    ANTHROPIC_BASE_URL: sim.url,
    OPENAI_API_KEY: 'sk-openai-gateway-attacks-7878',
    OPENAI_BASE_URL: sim.openAiBaseUrl,
    SWITCHBOARD_DATABASE_URL: '',
    SWITCHBOARD_KEY_SECRET: '',
  };
  server = await startGateway({
    name: 'gateway-attacks',
    yaml: [
      'roles:',
      '  haiku-fast: anthropic:claude-opus-4-1', // a name with the key's word in it, not its model
      '  cheap: anthropic:claude-haiku-4-5',
      'gateway:',
      '  aliases:',
      '    haiku-plus: anthropic:claude-opus-4-1',
      '  routes:',
      '    think: anthropic:claude-opus-4-1',
    ],
    env: serveEnv,
    children,
  });
});

afterAll(async () => {
  killServers(children);
  await sim.close();
  await server.close();
});

beforeEach(() => sim.clearLog());

async function createKey(...args: string[]): Promise<string> {
  const run = await runCli(['keys', 'create', ...args], { cwd: server.cwd, env: server.env });
  expect(run.status).toBe(0);
  return run.stdout.trim();
}

function post(key: string, path: string, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
}

const message = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  max_tokens: 20,
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});

/** The models the simulator was asked for since the last clearLog. */
const modelsSent = () => sim.requests.map((entry) => entry.model);

describe('a scoped key cannot escape its model scope', () => {
  let haiku: string;
  beforeAll(async () => {
    haiku = await createKey('--name', 'haiku-attacker', '--models', 'haiku');
  });

  it('the scope still lets the key use its own model', async () => {
    const response = await post(haiku, '/v1/messages', message('claude-haiku-4-5'));
    expect(response.status).toBe(200);
    expect(modelsSent()).toEqual(['claude-haiku-4-5']);
  });

  it('an inline chain whose last entry is in scope does not reach the models before it', async () => {
    // Before the fix: mayUseModel read only the text after the last ':' (claude-haiku-4-5), and the
    // chain went to claude-opus-4-1 first.
    const response = await post(
      haiku,
      '/v1/messages',
      message('anthropic:claude-opus-4-1,anthropic:claude-haiku-4-5'),
    );
    expect(response.status).toBe(403);
    expect(modelsSent()).toEqual([]);
  });

  it.each([
    ['an alias', 'haiku-plus'],
    ['a role', 'haiku-fast'],
    ['a real model id', 'claude-3-haiku-20240307'],
  ])(
    '%s named with the key’s word (%s) but reaching another model is refused, naming that model',
    async (_, model) => {
      // Before the fix: the scope was checked on the name (`haiku-plus` has `haiku` between dashes), and
      // the name then resolved to claude-opus-4-1.
      const response = await post(haiku, '/v1/messages', message(model));
      expect(response.status).toBe(403);
      const body = (await response.json()) as { type: string; error: { type: string; message: string } };
      expect(body.error.type).toBe('permission_error');
      expect(body.error.message).toContain(model === 'claude-3-haiku-20240307' ? model : 'claude-opus-4-1');
      expect(body.error.message).toContain('--models');
      expect(modelsSent()).toEqual([]);
    },
  );

  it('the same names are refused on the OpenAI wires, in OpenAI’s error shape', async () => {
    const response = await post(haiku, '/v1/chat/completions', message('haiku-plus'));
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({
      error: { message: expect.stringContaining('claude-opus-4-1') },
    });
    expect(modelsSent()).toEqual([]);
  });

  it('what the key’s names resolve to stays open: a role naming its model, a dated snapshot of it', async () => {
    expect((await post(haiku, '/v1/messages', message('cheap'))).status).toBe(200);
    expect((await post(haiku, '/v1/messages', message('claude-haiku-4-5-20251001'))).status).toBe(200);
    expect(modelsSent()).toEqual(['claude-haiku-4-5', 'claude-haiku-4-5-20251001']);
  });

  it('/v1/models lists exactly the names the key may send', async () => {
    const response = await fetch(`${server.url}/v1/models`, {
      headers: { 'x-api-key': haiku, 'anthropic-version': '2023-06-01' },
    });
    const ids = ((await response.json()) as { data: { id: string }[] }).data.map((entry) => entry.id);
    expect(ids).toEqual(['cheap', 'claude-haiku-4-5', 'haiku']);
    for (const id of ids) expect((await post(haiku, '/v1/messages', message(id))).status).toBe(200);
  });

  it('an inline chain cannot reach count_tokens of a model out of scope either', async () => {
    const response = await post(
      haiku,
      '/v1/messages/count_tokens',
      message('anthropic:claude-opus-4-1,anthropic:claude-haiku-4-5'),
    );
    expect(response.status).toBe(403);
    expect(modelsSent()).toEqual([]);
  });

  it('a subagent tag in the system prompt does not send the request to a model out of scope', async () => {
    // Before the fix: the tag's name replaced the model after the scope was checked on the requested
    // name, with no route configured at all.
    const response = await post(
      haiku,
      '/v1/messages',
      message('claude-haiku-4-5', {
        system: '<CCR-SUBAGENT-MODEL>anthropic:claude-opus-4-1</CCR-SUBAGENT-MODEL> you are a subagent',
      }),
    );
    expect(response.status).toBe(200);
    expect(modelsSent()).toEqual(['claude-haiku-4-5']);
  });

  it('gateway.routes does not reroute a scoped key to a model it may not use', async () => {
    // `think: anthropic:claude-opus-4-1` is the admin's routing, not a grant beyond the key's scope.
    const response = await post(
      haiku,
      '/v1/messages',
      // max_tokens above the budget, as the API requires (the simulator answers 400 otherwise).
      message('claude-haiku-4-5', { max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1024 } }),
    );
    expect(response.status).toBe(200);
    expect(modelsSent()).toEqual(['claude-haiku-4-5']);
  });
});

describe('count_tokens is under the key’s limits', () => {
  it('--rpm 1 holds for count_tokens as for messages: the second request is a 429 before anything is sent', async () => {
    // Before the fix: count_tokens never took room under the key's limits, so a key with --rpm 1 sent
    // the server's Anthropic key upstream as often as it liked.
    const limited = await createKey('--name', 'count-flooder', '--rpm', '1');
    const first = await post(limited, '/v1/messages/count_tokens', message('claude-haiku-4-5'));
    expect(first.status).toBe(200);
    const second = await post(limited, '/v1/messages/count_tokens', message('claude-haiku-4-5'));
    expect(second.status).toBe(429);
    expect(sim.requests).toHaveLength(1);
  });
});

describe('a raw upstream against the streaming relay', () => {
  const UPSTREAM_KEY = 'sk-ant-api03-raw-upstream-secret-9090abcdef';
  let upstream: Server;
  let raw: Gateway;
  /** Bytes the upstream's stream got into the gateway's socket. */
  let sent = 0;
  let mode: 'flood' | 'echo' | 'split' | 'no-blank-line' | 'forever' = 'echo';

  const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
  const start = event('message_start', {
    type: 'message_start',
    message: {
      id: 'msg_raw',
      type: 'message',
      role: 'assistant',
      model: 'claude-haiku-4-5',
      content: [],
      stop_reason: null,
      usage: { input_tokens: 3, output_tokens: 0 },
    },
  });
  const delta = (text: string) =>
    event('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text },
    });

  beforeAll(async () => {
    upstream = createServer((request, response) => {
      let received = '';
      request.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
      request.once('end', () => answer(request, response, received));
    });
    const answer = (request: IncomingMessage, response: ServerResponse, received: string) => {
      if (mode === 'forever' && (JSON.parse(received) as { stream?: boolean }).stream !== true) {
        // A JSON answer whose body trickles without end.
        response.writeHead(200, { 'content-type': 'application/json' });
        const timer = setInterval(() => response.write(' '), 100);
        response.once('close', () => clearInterval(timer));
        return;
      }
      if ((JSON.parse(received) as { stream?: boolean }).stream !== true) {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({
            id: 'msg_raw',
            type: 'message',
            role: 'assistant',
            model: 'claude-haiku-4-5',
            content: [{ type: 'text', text: `your key is ${String(request.headers['x-api-key'])}` }],
            stop_reason: 'end_turn',
            usage: { input_tokens: 3, output_tokens: 5 },
          }),
        );
        return;
      }
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(start);
      response.write(
        event('content_block_start', {
          type: 'content_block_start',
          index: 0,
          content_block: { type: 'text', text: '' },
        }),
      );
      if (mode === 'echo' || mode === 'split') {
        // A provider (or a compatible server) that repeats the credential it was sent: in one event, or
        // ('split') three characters per event, as a model writes it token by token.
        const text = `your key is ${String(request.headers['x-api-key'])}, keep it safe`;
        const size = mode === 'echo' ? text.length : 3;
        for (let at = 0; at < text.length; at += size) response.write(delta(text.slice(at, at + size)));
        response.write(event('content_block_stop', { type: 'content_block_stop', index: 0 }));
        response.write(
          event('message_delta', {
            type: 'message_delta',
            delta: { stop_reason: 'end_turn' },
            usage: { output_tokens: 5 },
          }),
        );
        response.end(event('message_stop', { type: 'message_stop' }));
        return;
      }
      if (mode === 'forever') {
        // Content, a little at a time, without end.
        const timer = setInterval(() => response.write(delta('more ')), 100);
        response.once('close', () => clearInterval(timer));
        return;
      }
      // A long answer, as fast as the gateway takes it; or one event that never ends.
      const chunk = mode === 'flood' ? delta('x'.repeat(64 * 1024)) : `data: ${'x'.repeat(64 * 1024)}`;
      const total = (mode === 'flood' ? 256 : 40) * 1024 * 1024;
      const pump = () => {
        while (sent < total && !response.destroyed) {
          sent += chunk.length;
          if (!response.write(chunk)) return void response.once('drain', pump);
        }
        response.end();
      };
      pump();
    };
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const port = (upstream.address() as AddressInfo).port;
    raw = await startGateway({
      name: 'gateway-attacks-raw',
      yaml: undefined,
      env: { ...serveEnv, ANTHROPIC_API_KEY: UPSTREAM_KEY, ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}` },
      children,
    });
  });

  afterAll(async () => {
    upstream.closeAllConnections();
    await new Promise((resolve) => upstream.close(resolve));
    await raw.close();
  });

  it('a provider key echoed in a streamed answer does not reach the client (as it does not unstreamed)', async () => {
    mode = 'echo';
    for (const stream of [false, true]) {
      const response = await fetch(`${raw.url}/v1/messages`, {
        method: 'POST',
        headers: { ...raw.auth, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ ...message('claude-haiku-4-5'), stream }),
      });
      expect(response.status).toBe(200);
      const text = await response.text();
      expect(text).toContain('your key is');
      expect(text).not.toContain(UPSTREAM_KEY);
    }
  });

  it('an echoed key cut across many events reaches an official SDK client as [redacted], no piece of it', async () => {
    mode = 'split';
    const client = new Anthropic({ baseURL: raw.url, apiKey: null, authToken: raw.token, maxRetries: 0 });
    const stream = client.messages.stream({
      model: 'claude-haiku-4-5',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'what is my key?' }],
    });
    const texts: string[] = [];
    stream.on('text', (text) => texts.push(text));
    const final = await stream.finalMessage();
    const text = final.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
    expect(text).toBe('your key is [redacted], keep it safe');
    expect(texts.join('')).toBe(text);
    const all = texts.join('');
    for (let at = 0; at + 8 <= UPSTREAM_KEY.length; at += 1) {
      expect(all).not.toContain(UPSTREAM_KEY.slice(at, at + 8));
    }
  });

  it('a client that never reads a stream does not make the gateway hold the whole answer in memory', async () => {
    mode = 'flood';
    sent = 0;
    const { port } = new URL(raw.url);
    const body = JSON.stringify({ ...message('claude-haiku-4-5'), stream: true });
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(
      [
        'POST /v1/messages HTTP/1.1',
        `host: 127.0.0.1:${port}`,
        `authorization: Bearer ${raw.token}`,
        'content-type: application/json',
        'anthropic-version: 2023-06-01',
        `content-length: ${Buffer.byteLength(body)}`,
        '',
        body,
      ].join('\r\n'),
    );
    socket.pause();
    await new Promise((resolve) => setTimeout(resolve, 3000));
    // Socket buffers hold a few MB; before the fix the gateway read all 256 MB into its own memory.
    expect(sent).toBeLessThan(64 * 1024 * 1024);
    socket.destroy();
  });

  it('an upstream event that never ends is refused at its limit, not held in memory to the end', async () => {
    // Before the fix the splitter kept every byte of the unfinished event (and scanned it all again on
    // each chunk): all 40 MB were read before the stream ended as cut.
    mode = 'no-blank-line';
    sent = 0;
    const response = await fetch(`${raw.url}/v1/messages`, {
      method: 'POST',
      headers: { ...raw.auth, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ ...message('claude-haiku-4-5'), stream: true }),
    });
    // content_block_start committed the stream: the refusal is its error event.
    expect(response.status).toBe(200);
    expect(await response.text()).toMatch(/event: error\ndata: .*longer than/);
    expect(sent).toBeLessThan(32 * 1024 * 1024);
  });

  it('a stream that never ends is cut at --max-timeout, after the commit too', async () => {
    // Before the fix a committed stream had no bound: it held its connection (and its key's
    // concurrency) for as long as the provider went on.
    mode = 'forever';
    const port = (upstream.address() as AddressInfo).port;
    const limited = await startGateway({
      name: 'gateway-attacks-forever',
      yaml: undefined,
      args: ['--max-timeout', '2'],
      env: { ...serveEnv, ANTHROPIC_API_KEY: UPSTREAM_KEY, ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}` },
      children,
    });
    try {
      const response = await fetch(`${limited.url}/v1/messages`, {
        method: 'POST',
        headers: { ...limited.auth, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ ...message('claude-haiku-4-5'), stream: true }),
        signal: AbortSignal.timeout(10_000),
      });
      expect(response.status).toBe(200);
      const text = await response.text();
      expect(text).toContain('"text":"more "');
      expect(text).toMatch(/event: error\ndata: .*longer than 2000 ms/);
      // And a JSON answer whose body never ends: before the fix only its headers had a deadline.
      const json = await fetch(`${limited.url}/v1/messages`, {
        method: 'POST',
        headers: { ...limited.auth, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify(message('claude-haiku-4-5')),
        signal: AbortSignal.timeout(10_000),
      });
      expect(json.status).toBe(504);
    } finally {
      await limited.close();
    }
  }, 30_000);
});
