import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { startGateway, type Gateway } from './helpers/gateway-server.js';
import { killServers } from './helpers/serve-process.js';

// The gateway's native lane, through the built `switchboard serve` and the official SDKs: a client
// of the Anthropic or OpenAI wire points its base URL at Switchboard and gets the simulator's answer
// byte for byte, a fallback before the first content, an error event after it, and a ledger row for
// every attempt.

const ANTHROPIC_KEY = 'sk-ant-api03-gateway-upstream-canary-1111';
const OPENAI_KEY = 'sk-openai-gateway-upstream-canary-2222';
const children = new Set<ChildProcess>();
let sim: Simulator;
let server: Gateway;

beforeAll(async () => {
  sim = await startSimulator({ maxLifetimeMs: 300_000 });
  server = await startGateway({
    name: 'gateway',
    yaml: [
      'roles:',
      '  fast: anthropic:claude-haiku-4-5,anthropic:claude-sonnet-4-6',
      '  mixed: openai:gpt-4.1-mini,anthropic:claude-haiku-4-5',
      'gateway:',
      '  routes:',
      '    think: anthropic:claude-opus-4-1',
    ],
    env: {
      ANTHROPIC_API_KEY: ANTHROPIC_KEY,
      ANTHROPIC_BASE_URL: sim.url,
      OPENAI_API_KEY: OPENAI_KEY,
      OPENAI_BASE_URL: sim.openAiBaseUrl,
      SWITCHBOARD_GATEWAY_KEEPALIVE_MS: '150',
      SWITCHBOARD_GATEWAY_STALL_MS: '1500',
    },
    children,
  });
});

afterAll(async () => {
  killServers(children);
  await sim.close();
  await server.close();
});

beforeEach(() => {
  sim.setScenario({});
  sim.clearLog();
});

function anthropic(): Anthropic {
  return new Anthropic({ apiKey: server.token, baseURL: server.url, maxRetries: 0 });
}

function openai(): OpenAI {
  return new OpenAI({ apiKey: server.token, baseURL: `${server.url}/v1`, maxRetries: 0 });
}

interface AttemptRow {
  call_id: string;
  spec: string;
  success: number;
  error_code: string | null;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number | null;
  tags: string;
}

function attemptsOf(callId: string | null): AttemptRow[] {
  return server.ledger<AttemptRow>('SELECT * FROM call_attempts WHERE call_id = ? ORDER BY attempt', callId);
}

async function rawStream(
  body: Record<string, unknown>,
): Promise<{ status: number; text: string; callId: string | null }> {
  const response = await fetch(`${server.url}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': server.token,
      'anthropic-version': '2023-06-01',
    },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    text: await response.text(),
    callId: response.headers.get('x-switchboard-call-id'),
  };
}

describe('gateway, Anthropic wire', () => {
  it('answers a plain and a streamed message; the stream is the simulator’s own bytes', async () => {
    sim.setScenario({ fallback: { text: 'hello from the simulator', usage: { input: 42, output: 7 } } });
    const client = anthropic();
    const plain = await client.messages.create({
      model: 'claude-haiku-4-5',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(plain.content).toEqual([{ type: 'text', text: 'hello from the simulator' }]);
    const streamed = await client.messages
      .stream({ model: 'claude-haiku-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] })
      .finalMessage();
    expect(streamed.content).toEqual(plain.content);
    expect(streamed.usage.input_tokens).toBe(42);

    const direct = await fetch(`${sim.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'x' },
      body: JSON.stringify({
        model: 'claude-haiku-4-5',
        max_tokens: 100,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    }).then((response) => response.text());
    const via = await rawStream({
      model: 'claude-haiku-4-5',
      max_tokens: 100,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    // The ids are the simulator's per answer: compare with them made equal.
    const norm = (text: string) => text.replace(/"id":"[^"]+"/g, '"id":"-"');
    expect(norm(via.text)).toBe(norm(direct));
    const rows = attemptsOf(via.callId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      spec: 'anthropic:claude-haiku-4-5',
      success: 1,
      input_tokens: 42,
      output_tokens: 7,
    });
    expect(rows[0]?.cost_usd).toBeGreaterThan(0);
    // The upstream saw the configured key, never the client's token.
    const seen = JSON.stringify(sim.requests);
    expect(seen).not.toContain(server.token);
  });

  it('falls back before the first content, invisibly; a role names the chain', async () => {
    sim.setScenario({
      rules: [
        { match: { model: 'haiku' }, fault: { kind: 'overload' } },
        { match: { model: 'sonnet' }, reply: { text: 'the second one answered' } },
      ],
    });
    const via = await rawStream({
      model: 'fast',
      max_tokens: 50,
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(via.status).toBe(200);
    expect(via.text).toContain('the second one answered');
    expect(via.text.match(/event: message_start/g)).toHaveLength(1);
    const rows = attemptsOf(via.callId);
    expect(rows.map((row) => [row.spec, row.success, row.error_code])).toEqual([
      ['anthropic:claude-haiku-4-5', 0, 'OVERLOADED'],
      ['anthropic:claude-sonnet-4-6', 1, null],
    ]);
  });

  it('every provider failing: the last status with x-should-retry, never a 200', async () => {
    sim.setScenario({ rules: [{ match: {}, fault: { kind: 'overload' } }] });
    const response = await fetch(`${server.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${server.token}` },
      body: JSON.stringify({ model: 'fast', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(response.status).toBe(529);
    expect(response.headers.get('x-should-retry')).toBe('true');
    const body = (await response.json()) as { type: string; error: { type: string } };
    expect(body).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
    await expect(
      anthropic().messages.create({
        model: 'fast',
        max_tokens: 5,
        messages: [{ role: 'user', content: 'x' }],
      }),
    ).rejects.toMatchObject({ status: 529 });
  });

  it('a drop after text: an error event the SDK throws, no message_stop', async () => {
    sim.setScenario({ rules: [{ match: {}, fault: { kind: 'drop-during' } }] });
    const via = await rawStream({
      model: 'claude-haiku-4-5',
      max_tokens: 50,
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(via.text).toContain('content_block_delta');
    expect(via.text).toContain('event: error');
    expect(via.text).not.toContain('message_stop');
    await expect(
      anthropic()
        .messages.stream({
          model: 'claude-haiku-4-5',
          max_tokens: 50,
          messages: [{ role: 'user', content: 'x' }],
        })
        .finalMessage(),
    ).rejects.toThrow(/closed the stream|api_error/);
    const rows = attemptsOf(via.callId);
    expect(rows.map((row) => [row.success, row.error_code])).toEqual([[0, 'PROVIDER_UNAVAILABLE']]);
  });

  it('a stall before content: keep-alives, then the fallback answers', async () => {
    sim.setScenario({
      rules: [
        { match: { model: 'haiku' }, fault: { kind: 'stall' } },
        { match: {}, reply: { text: 'after the stall' } },
      ],
    });
    const via = await rawStream({
      model: 'fast',
      max_tokens: 50,
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(via.text).toMatch(/^event: ping/);
    expect(via.text).toContain('after the stall');
    expect(via.text).toContain('message_stop');
    expect(attemptsOf(via.callId).map((row) => row.error_code)).toEqual(['TIMEOUT', null]);
  });

  it('malformed upstream JSON is never shown: an error answer instead', async () => {
    sim.setScenario({ rules: [{ match: {}, fault: { kind: 'malformed' } }] });
    const via = await rawStream({
      model: 'claude-haiku-4-5',
      max_tokens: 50,
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(via.text).not.toContain('"message": {');
    expect(via.status).toBe(502);
  });

  it('refuses a request without a key, or with a key it does not know, in the Anthropic shape', async () => {
    const none = await fetch(`${server.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(none.status).toBe(401);
    expect(await none.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    await expect(
      new Anthropic({ apiKey: 'sbk_not-a-key', baseURL: server.url, maxRetries: 0 }).messages.create({
        model: 'claude-haiku-4-5',
        max_tokens: 5,
        messages: [{ role: 'user', content: 'x' }],
      }),
    ).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
    expect(sim.requests).toHaveLength(0);
  });

  it('routes a request class by gateway.routes, and the ledger says why', async () => {
    const via = await rawStream({
      model: 'claude-sonnet-4-6',
      max_tokens: 2000,
      stream: true,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [{ role: 'user', content: 'think hard' }],
    });
    expect(via.status).toBe(200);
    expect(sim.requests.map((entry) => entry.model)).toEqual(['claude-opus-4-1']);
    const [row] = attemptsOf(via.callId);
    expect(JSON.parse(row?.tags ?? '{}')).toMatchObject({
      'switchboard.model': 'claude-sonnet-4-6',
      'switchboard.route': expect.stringMatching(/^think: /),
    });
  });

  it('count_tokens goes to Anthropic; other /v1 paths are 404', async () => {
    const counted = await anthropic().messages.countTokens({
      model: 'claude-haiku-4-5',
      messages: [{ role: 'user', content: 'count these words please' }],
    });
    expect(counted.input_tokens).toBeGreaterThan(0);
    expect(sim.requests.map((entry) => entry.outcome)).toEqual(['count_tokens']);
    const missing = await fetch(`${server.url}/v1/files`, { headers: server.auth });
    expect(missing.status).toBe(404);
  });
});

describe('gateway, Claude Code’s own headers', () => {
  const CLAUDE_CODE = {
    'x-app': 'cli',
    'x-claude-code-session-id': '3f1c2b9e-6a47-4c1d-9b8e-2f5a7d0c4e11',
    'x-stainless-os': 'client-os-canary', // the other x-* headers stay here
  };
  const post = (path: string, body: Record<string, unknown>) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': server.token,
        'anthropic-version': '2023-06-01',
        ...CLAUDE_CODE,
      },
      body: JSON.stringify({ max_tokens: 20, messages: [{ role: 'user', content: 'hi' }], ...body }),
    });

  it('x-app and x-claude-code-session-id reach Anthropic on the native lane, and no OpenAI target', async () => {
    expect((await post('/v1/messages', { model: 'claude-haiku-4-5' })).status).toBe(200);
    expect((await post('/v1/messages/count_tokens', { model: 'claude-haiku-4-5' })).status).toBe(200);
    expect((await post('/v1/chat/completions', { model: 'gpt-4.1-mini' })).status).toBe(200);
    expect((await post('/v1/messages', { model: 'mixed' })).status).toBe(200); // translated to OpenAI
    const seen = sim.requests.map((entry) => ({
      provider: entry.provider,
      app: entry.headers['x-app'],
      session: entry.headers['x-claude-code-session-id'],
      stainless: entry.headers['x-stainless-os'] === CLAUDE_CODE['x-stainless-os'],
    }));
    const session = CLAUDE_CODE['x-claude-code-session-id'];
    expect(seen).toEqual([
      { provider: 'anthropic', app: 'cli', session, stainless: false },
      { provider: 'anthropic', app: 'cli', session, stainless: false },
      { provider: 'openai', app: undefined, session: undefined, stainless: false },
      { provider: 'openai', app: undefined, session: undefined, stainless: false },
    ]);
  });
});

describe('gateway, Anthropic wire: what a translation layer breaks', () => {
  it('thinking and its signature pass unchanged, and replay on the next turn verifies', async () => {
    sim.setScenario({
      rules: [
        {
          match: { turn: 1 },
          reply: { thinking: 'let me think about this carefully', text: 'first answer' },
        },
        { match: { turn: 2 }, reply: { text: 'second answer' } },
      ],
    });
    const client = anthropic();
    const first = await client.messages
      .stream({
        model: 'claude-sonnet-4-6',
        max_tokens: 2000,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        messages: [{ role: 'user', content: 'one' }],
      })
      .finalMessage();
    const thinking = first.content.find((block) => block.type === 'thinking');
    expect(thinking).toMatchObject({
      thinking: 'let me think about this carefully',
      signature: expect.any(String),
    });
    const second = await client.messages.create({
      model: 'claude-sonnet-4-6',
      max_tokens: 2000,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [
        { role: 'user', content: 'one' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: 'two' },
      ],
    });
    // A thinking request's answer opens with its thinking, as the API's does.
    expect(second.content.map((block) => block.type)).toEqual(['thinking', 'text']);
    expect(second.content.at(-1)).toEqual({ type: 'text', text: 'second answer' });
    expect(sim.requests.map((entry) => entry.status)).toEqual([200, 200]);
  });

  it('an error event after content passes to the client, which throws; the ledger has the failure', async () => {
    sim.setScenario({ rules: [{ match: {}, fault: { kind: 'error-event', events: 3 } }] });
    const via = await rawStream({
      model: 'claude-haiku-4-5',
      max_tokens: 50,
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(via.text).toContain('content_block_start');
    expect(via.text).toMatch(/event: error\ndata: \{"type":"error","error":\{"type":"overloaded_error"/);
    expect(via.text).not.toContain('message_stop');
    expect(attemptsOf(via.callId).map((row) => row.error_code)).toEqual(['OVERLOADED']);
  });

  it('an error event before content is a failover nobody sees', async () => {
    sim.setScenario({
      rules: [
        { match: { model: 'haiku' }, fault: { kind: 'error-event', events: 1 } },
        { match: {}, reply: { text: 'the fallback' } },
      ],
    });
    const via = await rawStream({
      model: 'fast',
      max_tokens: 50,
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(via.text).toContain('the fallback');
    expect(via.text).not.toContain('event: error');
    expect(attemptsOf(via.callId).map((row) => row.error_code)).toEqual(['OVERLOADED', null]);
  });
});

describe('gateway, OpenAI Responses wire', () => {
  it('answers responses.create and responses.stream with monotonic sequence numbers', async () => {
    sim.setScenario({ fallback: { text: 'a responses answer', usage: { input: 12, output: 4 } } });
    const client = openai();
    const plain = await client.responses.create({ model: 'gpt-4.1-mini', input: 'hello' });
    expect(plain.output_text).toBe('a responses answer');
    const sequence: number[] = [];
    const stream = client.responses.stream({ model: 'gpt-4.1-mini', input: 'hello' });
    stream.on('event', (event) => sequence.push(event.sequence_number));
    const final = await stream.finalResponse();
    expect(final.output_text).toBe('a responses answer');
    expect(sequence).toEqual([...sequence].sort((a, b) => a - b));
    expect(new Set(sequence).size).toBe(sequence.length);
    expect(final.usage).toMatchObject({ input_tokens: 12, output_tokens: 4 });
  });

  it('previous_response_id is a clear 400; a failure after content is response.failed', async () => {
    const error = await openai()
      .responses.create({ model: 'gpt-4.1-mini', input: 'x', previous_response_id: 'resp_1' })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(String((error as Error).message)).toMatch(/previous_response_id is not supported/);
    sim.setScenario({ rules: [{ match: {}, fault: { kind: 'drop-after', events: 4 } }] });
    const response = await fetch(`${server.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...server.auth },
      body: JSON.stringify({ model: 'gpt-4.1-mini', input: 'x', stream: true }),
    });
    const text = await response.text();
    expect(text).toContain('response.output_item.added');
    expect(text).toMatch(/event: response\.failed\ndata: \{"type":"response\.failed","sequence_number":\d+/);
    expect(text).not.toContain('response.completed');
  });
});

describe('gateway, the AI SDK', () => {
  it('streamText with a tool, over @ai-sdk/anthropic and @ai-sdk/openai', async () => {
    const { streamText, tool, jsonSchema } = await import('ai');
    const { createAnthropic } = await import('@ai-sdk/anthropic');
    const { createOpenAI } = await import('@ai-sdk/openai');
    const models = [
      createAnthropic({ apiKey: server.token, baseURL: `${server.url}/v1` })('claude-haiku-4-5'),
      createOpenAI({ apiKey: server.token, baseURL: `${server.url}/v1` }).chat('gpt-4.1-mini'),
    ];
    for (const model of models) {
      sim.setScenario({
        rules: [
          { match: { turn: 1 }, reply: { tool: { name: 'lookup', input: { q: 'switchboard' } } } },
          { match: { turn: 2 }, reply: { text: 'looked it up' } },
        ],
      });
      const seenQueries: string[] = [];
      const result = streamText({
        model,
        prompt: 'find it',
        tools: {
          lookup: tool({
            description: 'look something up',
            inputSchema: jsonSchema<{ q: string }>({
              type: 'object',
              properties: { q: { type: 'string' } },
              required: ['q'],
            }),
            execute: async ({ q }) => {
              seenQueries.push(q);
              return 'found';
            },
          }),
        },
        stopWhen: ({ steps }) => steps.length >= 2,
      });
      expect(await result.text).toBe('looked it up');
      expect(seenQueries).toEqual(['switchboard']);
    }
  });
});

describe('gateway, OpenAI Chat wire', () => {
  it('streams with include_usage: the usage chunk before [DONE]', async () => {
    sim.setScenario({ fallback: { text: 'chat answer here', usage: { input: 11, output: 3 } } });
    const stream = await openai().chat.completions.create({
      model: 'gpt-4.1-mini',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'hi' }],
    });
    let text = '';
    let usage: unknown;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('chat answer here');
    expect(usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 3 });
  });

  it('without include_usage the client gets no usage chunk, yet the ledger has the tokens', async () => {
    sim.setScenario({ fallback: { text: 'counted', usage: { input: 9, output: 2 } } });
    const response = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...server.auth },
      body: JSON.stringify({
        model: 'gpt-4.1-mini',
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });
    const text = await response.text();
    expect(text).not.toContain('"choices":[]');
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    const rows = attemptsOf(response.headers.get('x-switchboard-call-id'));
    expect(rows[0]).toMatchObject({ input_tokens: 9, output_tokens: 2, success: 1 });
  });

  it('maps a 429 to the SDK’s RateLimitError and never forwards the client’s credentials', async () => {
    sim.setScenario({ rules: [{ match: {}, fault: { status: 429, retryAfter: 7 } }] });
    const error = await openai()
      .chat.completions.create({ model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'x' }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).headers.get('retry-after')).toBe('7');
    const log = JSON.stringify(sim.requests);
    expect(log).not.toContain(server.token);
  });

  it('a drop after text: an error chunk and no [DONE]; the SDK throws', async () => {
    sim.setScenario({ rules: [{ match: {}, fault: { kind: 'drop-during' } }] });
    const stream = await openai().chat.completions.create({
      model: 'gpt-4.1-mini',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    await expect(
      (async () => {
        for await (const chunk of stream) void chunk;
      })(),
    ).rejects.toThrow(/closed the stream/);
  });
});

describe('gateway, translated lane (a chain that crosses wires)', () => {
  it('an Anthropic client is answered by an OpenAI model through call(), plain and streamed', async () => {
    sim.setScenario({
      rules: [
        {
          match: { provider: 'openai' },
          reply: { text: 'translated from chat', usage: { input: 5, output: 4 } },
        },
      ],
    });
    const client = anthropic();
    const plain = await client.messages.create({
      model: 'mixed',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(plain.content).toEqual([{ type: 'text', text: 'translated from chat' }]);
    expect(plain.usage).toMatchObject({ input_tokens: 5, output_tokens: 4 });
    const streamed = await client.messages
      .stream({ model: 'mixed', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] })
      .finalMessage();
    expect(streamed.content).toEqual(plain.content);
    expect(streamed.stop_reason).toBe('end_turn');
    expect(sim.requests.map((entry) => entry.provider)).toEqual(['openai', 'openai']);
    const via = await rawStream({
      model: 'mixed',
      max_tokens: 50,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const rows = attemptsOf(via.callId);
    expect(rows.map((row) => [row.spec, row.success])).toEqual([['openai:gpt-4.1-mini', 1]]);
    expect(JSON.parse(rows[0]?.tags ?? '{}')).toMatchObject({ 'switchboard.lane': 'translated' });
  });

  it('tool calls cross the wires both ways', async () => {
    sim.setScenario({
      rules: [
        {
          match: { provider: 'anthropic' },
          reply: { tool: { name: 'get_weather', input: { city: 'Oslo' } } },
        },
      ],
    });
    const answer = await openai().chat.completions.create({
      model: 'anthropic:claude-haiku-4-5',
      messages: [{ role: 'user', content: 'weather?' }],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            parameters: { type: 'object', properties: { city: { type: 'string' } } },
          },
        },
      ],
    });
    const call = answer.choices[0]?.message.tool_calls?.[0];
    expect(call?.type === 'function' ? call.function : undefined).toMatchObject({
      name: 'get_weather',
      arguments: JSON.stringify({ city: 'Oslo' }),
    });
    expect(answer.choices[0]?.finish_reason).toBe('tool_calls');
  });

  it('a conversation the other vendor cannot take as it is is not sent there', async () => {
    const response = await fetch(`${server.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...server.auth },
      body: JSON.stringify({
        model: 'openai:gpt-4.1-mini',
        max_tokens: 200,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'what is this?' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
            ],
          },
        ],
      }),
    });
    expect(response.status).toBe(502);
    expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(/image block/);
    expect(sim.requests).toHaveLength(0);
  });
});

describe('gateway, config file is read once per server', () => {
  it('the ledger file holds no credential', () => {
    const bytes = readFileSync(join(server.cwd, '.switchboard', 'ledger.db'));
    expect(bytes.includes(Buffer.from(ANTHROPIC_KEY))).toBe(false);
    expect(bytes.includes(Buffer.from(server.token))).toBe(false);
  });
});
