import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from './helpers/gateway-server.js';
import { killServers } from './helpers/serve-process.js';
import { waitFor } from './helpers/wait-for.js';

// The gateway's fault and attack matrix (issue 37), through the built `switchboard serve` and an
// upstream of this test's own that says exactly which events it sends and when, and notices when the
// gateway hangs up on it.

const UPSTREAM_KEY = 'sk-ant-api03-gateway-faults-upstream-3333';
const CANARIES = {
  authorization: 'Bearer canary-authorization-4444aaaa',
  'x-goog-api-key': 'canary-goog-5555bbbb',
  cookie: 'session=canary-cookie-6666cccc',
  'x-custom-secret': 'canary-custom-7777dddd',
};

interface Seen {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  closedAt?: number;
  finished: boolean;
}

const children = new Set<ChildProcess>();
const seen: Seen[] = [];
let upstream: Server;
let upstreamUrl: string;
let server: Gateway;

const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
const start = (input: number) =>
  event('message_start', {
    type: 'message_start',
    message: {
      id: 'msg_mock',
      type: 'message',
      role: 'assistant',
      model: 'claude-haiku-4-5',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: input, output_tokens: 1 },
    },
  });
const textBlock = (text: string) =>
  event('content_block_start', {
    type: 'content_block_start',
    index: 0,
    content_block: { type: 'text', text: '' },
  }) +
  event('content_block_delta', {
    type: 'content_block_delta',
    index: 0,
    delta: { type: 'text_delta', text },
  });
const end = (output: number) =>
  event('content_block_stop', { type: 'content_block_stop', index: 0 }) +
  event('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: 'end_turn', stop_sequence: null },
    usage: { output_tokens: output },
  }) +
  event('message_stop', { type: 'message_stop' });

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What the upstream does, by the model the gateway asked it for. */
async function answer(model: string, response: ServerResponse): Promise<void> {
  const sse = () =>
    response.writeHead(200, {
      'content-type': 'text/event-stream',
      'set-cookie': 'upstream=secret',
      'request-id': 'req_mock',
    });
  switch (model) {
    case 'claude-drop-after-start':
      sse();
      response.write(start(30));
      await pause(20);
      return void response.socket?.destroy();
    case 'claude-tool-drop':
      sse();
      response.write(start(30));
      response.write(
        event('content_block_start', {
          type: 'content_block_start',
          index: 0,
          content_block: { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: {} },
        }) +
          event('content_block_delta', {
            type: 'content_block_delta',
            index: 0,
            delta: { type: 'input_json_delta', partial_json: '{"command": "rm -r' },
          }),
      );
      await pause(20);
      return void response.socket?.destroy();
    case 'claude-garbage-after-text':
      sse();
      response.write(start(30) + textBlock('half an answer'));
      await pause(10);
      response.write('data: {this is not json\n\n');
      return void response.end();
    case 'claude-slow':
      sse();
      response.write(start(30) + textBlock('slow'));
      for (let index = 0; index < 100 && !response.destroyed; index++) {
        await pause(100);
        if (!response.destroyed)
          response.write(
            event('content_block_delta', {
              type: 'content_block_delta',
              index: 0,
              delta: { type: 'text_delta', text: '.' },
            }),
          );
      }
      return void response.end(end(5));
    case 'claude-silent':
      // message_start, then nothing until the gateway gives up on it.
      sse();
      response.write(start(30));
      for (let index = 0; index < 200 && !response.destroyed; index++) await pause(50);
      return void response.end();
    case 'claude-status-408':
    case 'claude-status-409':
    case 'claude-status-425': {
      const body = JSON.stringify({ type: 'error', error: { type: 'api_error', message: model } });
      response.writeHead(Number(model.slice(-3)), { 'content-type': 'application/json' });
      return void response.end(body);
    }
    default:
      sse();
      response.write(start(30) + textBlock('fine'));
      return void response.end(end(2));
  }
}

beforeAll(async () => {
  upstream = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const entry: Seen = {
        path: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString(),
        finished: false,
      };
      seen.push(entry);
      response.once('close', () => {
        entry.closedAt = Date.now();
        entry.finished = response.writableFinished;
      });
      const model = String((JSON.parse(entry.body) as { model?: string }).model);
      void answer(model, response);
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  upstreamUrl = url;
  server = await startGateway({
    name: 'gateway-faults',
    yaml: [
      'roles:',
      '  start-drop: anthropic:claude-drop-after-start,anthropic:claude-haiku-4-5',
      '  after-408: anthropic:claude-status-408,anthropic:claude-haiku-4-5',
      '  after-409: anthropic:claude-status-409,anthropic:claude-haiku-4-5',
      '  after-425: anthropic:claude-status-425,anthropic:claude-haiku-4-5',
      'gateway:',
      '  forward_client_key: true',
      'budgets:',
      '  rules:',
      '    - provider: anthropic',
      '      daily_usd: 1000',
      '    - provider: openai',
      '      daily_usd: 0',
    ],
    env: {
      ANTHROPIC_API_KEY: UPSTREAM_KEY,
      ANTHROPIC_BASE_URL: url,
      OPENAI_API_KEY: 'sk-openai-gateway-faults-8888',
      OPENAI_BASE_URL: `${url}/v1`,
    },
    children,
  });
});

afterAll(async () => {
  killServers(children);
  upstream.closeAllConnections();
  await new Promise((resolve) => upstream.close(resolve));
  await server.close();
});

beforeEach(() => {
  seen.length = 0;
});

async function stream(model: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${server.url}/v1/messages?beta=true`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': server.token, ...headers },
    body: JSON.stringify({
      model,
      max_tokens: 10,
      stream: true,
      messages: [{ role: 'user', content: 'go' }],
    }),
  });
  return { response, text: await response.text(), callId: response.headers.get('x-switchboard-call-id') };
}

describe('gateway fault matrix', () => {
  it('a drop after message_start, before content: the fallback answers; message_start carries its input_tokens', async () => {
    const { text, callId } = await stream('start-drop');
    expect(text.match(/event: message_start/g)).toHaveLength(1);
    expect(text).toContain('"input_tokens":30');
    expect(text).toContain('fine');
    expect(text).toContain('message_stop');
    const rows = server.ledger<{ spec: string; success: number }>(
      'SELECT spec, success FROM call_attempts WHERE call_id = ? ORDER BY attempt',
      callId,
    );
    expect(rows).toEqual([
      { spec: 'anthropic:claude-drop-after-start', success: 0 },
      { spec: 'anthropic:claude-haiku-4-5', success: 1 },
    ]);
  });

  it.each([
    [408, 'TIMEOUT'],
    [409, 'PROVIDER_ERROR'],
    [425, 'PROVIDER_ERROR'],
  ])(
    'HTTP %i before content: the next provider answers; the row has the code errorFromStatus gives (%s)',
    async (status, code) => {
      const { text, callId } = await stream(`after-${status}`);
      expect(text).toContain('fine');
      const rows = server.ledger<{ spec: string; success: number; error_code: string | null }>(
        'SELECT spec, success, error_code FROM call_attempts WHERE call_id = ? ORDER BY attempt',
        callId,
      );
      expect(rows).toEqual([
        { spec: `anthropic:claude-status-${status}`, success: 0, error_code: code },
        { spec: 'anthropic:claude-haiku-4-5', success: 1, error_code: null },
      ]);
      const alone = await stream(`claude-status-${status}`);
      expect(alone.response.status).toBe(status);
      expect(alone.response.headers.get('x-should-retry')).toBe('true');
    },
  );

  it('a drop inside a tool call’s JSON: an error event, no content_block_stop, the SDK throws', async () => {
    const { text } = await stream('claude-tool-drop');
    expect(text).toContain('input_json_delta');
    expect(text).toContain('event: error');
    expect(text).not.toContain('content_block_stop');
    expect(text).not.toContain('message_stop');
    const client = new Anthropic({ apiKey: server.token, baseURL: server.url, maxRetries: 0 });
    await expect(
      client.messages
        .stream({ model: 'claude-tool-drop', max_tokens: 10, messages: [{ role: 'user', content: 'go' }] })
        .finalMessage(),
    ).rejects.toThrow();
  });

  it('malformed JSON after text: an error event, never the garbage', async () => {
    const { text, callId } = await stream('claude-garbage-after-text');
    expect(text).toContain('half an answer');
    expect(text).not.toContain('this is not json');
    expect(text).toMatch(/event: error\ndata: \{"type":"error","error":\{"type":"api_error"/);
    const rows = server.ledger<{ success: number; error_code: string }>(
      'SELECT success, error_code FROM call_attempts WHERE call_id = ?',
      callId,
    );
    expect(rows).toEqual([{ success: 0, error_code: 'PROVIDER_ERROR' }]);
  });

  it('the client hanging up: upstream aborted, the reservation released, the row says so', async () => {
    const controller = new AbortController();
    const response = await fetch(`${server.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': server.token },
      body: JSON.stringify({
        model: 'claude-slow',
        max_tokens: 10,
        stream: true,
        messages: [{ role: 'user', content: 'go' }],
      }),
      signal: controller.signal,
    });
    const callId = response.headers.get('x-switchboard-call-id');
    const reader = response.body!.getReader();
    await reader.read();
    await waitFor(() => seen.length === 1);
    const hungUpAt = Date.now();
    controller.abort();
    await waitFor(() => seen[0]?.closedAt !== undefined);
    expect(seen[0]?.finished).toBe(false);
    // The stream had 10 s to go: it was cut by the hang-up, not by its end. How fast (the issue's
    // ≤ 100 ms) is a speed figure, measured by bench/gateway.ts's hang-up stage, not timed here, where a
    // loaded machine may deschedule either process for longer.
    expect((seen[0]?.closedAt ?? Infinity) - hungUpAt).toBeLessThan(5_000);
    await waitFor(() => server.ledger('SELECT 1 FROM call_attempts WHERE call_id = ?', callId).length === 1);
    expect(server.ledger('SELECT error_code FROM call_attempts WHERE call_id = ?', callId)).toEqual([
      { error_code: 'ABORTED' },
    ]);
    expect(server.ledger('SELECT id FROM budget_reservations')).toEqual([]);
  });

  it('a budget at its cap: the vendor’s error shape before anything is sent', async () => {
    const response = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${server.token}` },
      body: JSON.stringify({ model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(response.status).toBe(403);
    expect(response.headers.get('x-should-retry')).toBe('false');
    expect(await response.json()).toMatchObject({ error: { type: 'permission_error' } });
    expect(seen).toEqual([]);
  });

  it('canary credentials in every inbound header reach no upstream; provider cookies reach no client', async () => {
    const { response, text } = await stream('claude-haiku-4-5', {
      ...CANARIES,
      'anthropic-beta': 'context-1m-2025-08-07',
    });
    expect(text).toContain('fine');
    expect(response.headers.get('set-cookie')).toBeNull();
    expect(response.headers.get('request-id')).toBe('req_mock');
    const logged = JSON.stringify(seen);
    for (const canary of Object.values(CANARIES))
      expect(logged).not.toContain(canary.replace(/^(Bearer |session=)/, ''));
    expect(logged).not.toContain(server.token);
    expect(seen[0]?.headers['x-api-key']).toBe(UPSTREAM_KEY);
    expect(seen[0]?.headers['anthropic-beta']).toBe('context-1m-2025-08-07');
    expect(seen[0]?.path).toBe('/v1/messages?beta=true');
  });
});

describe('gateway, a client’s own key (forward_client_key)', () => {
  const own = 'sk-ant-api03-client-own-key-9999eeeeffff0000';

  it('goes to Anthropic in the header it came in, in place of the configured key, and nowhere else', async () => {
    const { text, callId } = await stream('claude-haiku-4-5', { 'x-api-key': own });
    expect(text).toContain('fine');
    expect(seen.map((entry) => entry.headers['x-api-key'])).toEqual([own]);
    const [row] = server.ledger<{ tags: string }>('SELECT tags FROM call_attempts WHERE call_id = ?', callId);
    expect(JSON.parse(row?.tags ?? '{}')['switchboard.key']).toMatch(/^client-key:[0-9a-f]{12}$/);
    const chat = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${own}` },
      body: JSON.stringify({ model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(chat.status).toBe(502);
    expect(await chat.text()).toMatch(/goes to Anthropic only/);
    expect(seen).toHaveLength(1);
    const file = readFileSync(join(server.cwd, '.switchboard', 'ledger.db'));
    expect(file.includes(Buffer.from(own))).toBe(false);
  });
});

describe('gateway stream timings from switchboard.yaml', () => {
  let timed: Gateway;

  beforeAll(async () => {
    timed = await startGateway({
      name: 'gateway-timings',
      yaml: [
        'roles:',
        '  silent-first: anthropic:claude-silent,anthropic:claude-haiku-4-5',
        'gateway:',
        '  keep_alive_seconds: 1',
        '  stall_seconds: 2',
      ],
      env: {
        ANTHROPIC_API_KEY: UPSTREAM_KEY,
        ANTHROPIC_BASE_URL: upstreamUrl,
        SWITCHBOARD_GATEWAY_KEEPALIVE_MS: '',
        SWITCHBOARD_GATEWAY_STALL_MS: '',
      },
      children,
    });
  });

  afterAll(() => timed.close());

  it('keep_alive_seconds and stall_seconds: a ping while the upstream is silent, the next provider after the stall', async () => {
    // Before: both were fixed (10 s, 120 s) but for two environment variables, and the keys were refused.
    const started = Date.now();
    const response = await fetch(`${timed.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': timed.token },
      body: JSON.stringify({
        model: 'silent-first',
        max_tokens: 10,
        stream: true,
        messages: [{ role: 'user', content: 'go' }],
      }),
    });
    const text = await response.text();
    const elapsed = Date.now() - started;
    expect(text.indexOf('event: ping')).toBeGreaterThan(-1);
    expect(text.indexOf('event: ping')).toBeLessThan(text.indexOf('fine'));
    expect(text).toContain('message_stop');
    expect(elapsed).toBeGreaterThanOrEqual(2_000);
    expect(elapsed).toBeLessThan(10_000);
    expect(seen.map((entry) => JSON.parse(entry.body).model as string)).toEqual([
      'claude-silent',
      'claude-haiku-4-5',
    ]);
  });
});

describe('gateway attack matrix', () => {
  it('a web page cannot use it: a foreign Origin is 403, a text/plain body 415, even with a key', async () => {
    const foreign = await fetch(`${server.url}/v1/messages`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        origin: 'https://evil.example',
        'x-api-key': server.token,
      },
      body: '{}',
    });
    expect(foreign.status).toBe(403);
    const plain = await fetch(`${server.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'x-api-key': server.token },
      body: JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 5, messages: [] }),
    });
    expect(plain.status).toBe(415);
    const rebound = await fetch(`${server.url}/v1/models`, { headers: { host: 'attacker.example' } });
    expect(rebound.status).toBe(401);
    expect(seen).toEqual([]);
  });

  it('request smuggling shapes are refused before the gateway reads them', async () => {
    const port = new URL(server.url).port;
    const body = JSON.stringify({
      model: 'claude-haiku-4-5',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'x' }],
    });
    const shapes = [
      `POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nx-api-key: ${server.token}\r\nContent-Length: ${body.length}\r\nContent-Length: 5\r\n\r\n${body}`,
      `POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nx-api-key: ${server.token}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`,
    ];
    for (const shape of shapes) {
      const reply = await new Promise<string>((resolve) => {
        const socket = connect(Number(port), '127.0.0.1', () => socket.end(shape));
        let text = '';
        socket.on('data', (chunk) => (text += chunk.toString()));
        socket.on('close', () => resolve(text));
        socket.on('error', () => resolve(text));
      });
      expect(reply).toMatch(/^HTTP\/1\.1 400/);
    }
    expect(seen).toEqual([]);
  });

  it('1,000 concurrent streams all finish; nothing is left open upstream', async () => {
    const results = await Promise.all(
      Array.from({ length: 1000 }, () =>
        stream('claude-haiku-4-5').then(({ response, text }) =>
          response.status === 200 && text.endsWith('event: message_stop\ndata: {"type":"message_stop"}\n\n')
            ? 'ok'
            : `${response.status} ${text.slice(-300)}`,
        ),
      ),
    );
    expect(results.filter((result) => result !== 'ok')).toEqual([]);
    await waitFor(() => seen.every((entry) => entry.closedAt !== undefined));
    expect(seen.filter((entry) => !entry.finished)).toHaveLength(0);
  });
});
