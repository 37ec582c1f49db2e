import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isSwitchboardError } from '../core/errors.js';
import { call } from '../invoke/call.js';
import { startSimulator, type Simulator } from '../sim/server.js';
import { ProviderRegistry } from './registry.js';

// Node's fetch gives up after 300 s without response headers (or between body chunks), whatever a
// call's timeout says. These tests lower that default limit of Node's own dispatcher to 300 ms and let
// `switchboard sim` answer later than that: the calls must still succeed, once, at the first provider,
// while a call's own `timeoutMs` and `idleTimeoutMs` still end a late answer.

const GLOBAL_DISPATCHER = Symbol.for('undici.globalDispatcher.1');
const LOWERED_LIMIT_MS = 300;
const LATE_MS = 1_500;

type Agent = { close(): Promise<void> };
type AgentClass = new (options: { headersTimeout: number; bodyTimeout: number }) => Agent;
const globals = globalThis as unknown as Record<symbol, Agent | undefined>;

let sim: Simulator;
let original: Agent | undefined;
let lowered: Agent;
const registries: ProviderRegistry[] = [];

beforeAll(async () => {
  sim = await startSimulator({
    maxLifetimeMs: 60_000,
    scenario: {
      rules: [
        { match: { text: 'late' }, reply: { text: 'late answer', delayMs: LATE_MS } },
        {
          match: { text: 'slow stream' },
          // undici checks body silence on a coarse (one-second) clock: a gap well past it.
          reply: { text: 'one two', firstTokenDelayMs: 2_500, usage: { input: 3, output: 2 } },
        },
        { match: {}, reply: { text: 'ok' } },
      ],
    },
  });
  // Node's fetch creates its global dispatcher (an undici Agent) when first used; its class makes the
  // stand-in with the lowered limits.
  await fetch('data:,');
  original = globals[GLOBAL_DISPATCHER];
  const Agent = (original as object).constructor as AgentClass;
  lowered = new Agent({ headersTimeout: LOWERED_LIMIT_MS, bodyTimeout: LOWERED_LIMIT_MS });
  globals[GLOBAL_DISPATCHER] = lowered;
});

afterEach(async () => {
  await Promise.all(registries.splice(0).map((registry) => registry.close()));
});

afterAll(async () => {
  globals[GLOBAL_DISPATCHER] = original;
  await lowered.close();
  await sim.close();
});

function registry(): ProviderRegistry {
  const providers = new ProviderRegistry({
    anthropic: { apiKey: 'sk-ant-late-test', baseUrl: sim.url },
    gemini: { apiKeys: ['AIza-late-test'], baseUrl: sim.url },
    openai: { apiKey: 'sk-late-test', baseUrl: sim.openAiBaseUrl },
  });
  registries.push(providers);
  return providers;
}

it('the lowered limit is in force for plain fetch (the stand-in for Node’s five minutes)', async () => {
  const error = await fetch(`${sim.openAiBaseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'late' }] }),
  }).catch((caught: unknown) => caught);
  expect((error as { cause?: { code?: string } }).cause?.code).toBe('UND_ERR_HEADERS_TIMEOUT');
});

describe('a provider answering after Node’s fetch limit', () => {
  const specs = ['openai:gpt-4.1-mini', 'anthropic:claude-haiku-4-5', 'gemini:2.5-flash'];

  it.each(specs)('%s: a late plain answer arrives, from the first provider, in one attempt', async (spec) => {
    // A fallback behind it would be paid for a second answer if the first were given up on.
    const result = await call(`${spec},openai:fallback-model`, { prompt: 'late' }, { providers: registry() });
    expect(result.text).toBe('late answer');
    expect(result.provider).toBe(spec);
    expect(result.attempts).toHaveLength(1);
  });

  it.each(specs)(
    '%s: a stream silent for longer than the limit after its headers completes',
    async (spec) => {
      let streamed = '';
      const result = await call(
        spec,
        { prompt: 'slow stream', onText: (delta) => (streamed += delta) },
        { providers: registry() },
      );
      expect(result.text).toBe('one two');
      expect(streamed).toBe('one two');
    },
  );

  it.each(specs)('%s: the call’s own timeout and idle limit still end a late answer', async (spec) => {
    const timedOut = await call(
      spec,
      { prompt: 'late', timeoutMs: LOWERED_LIMIT_MS },
      { providers: registry() },
    ).catch((error: unknown) => error);
    expect(isSwitchboardError(timedOut) && timedOut.code).toBe('TIMEOUT');

    const idle = await call(
      spec,
      { prompt: 'late', idleTimeoutMs: LOWERED_LIMIT_MS },
      { providers: registry(), retry: { maxAttempts: 1 } },
    ).catch((error: unknown) => error);
    expect(isSwitchboardError(idle) && idle.code).toBe('IDLE_TIMEOUT');
  });
});

describe('a configured endpoint that redirects', () => {
  it.each([
    ['anthropic:claude-haiku-4-5', 'x-api-key'],
    ['gemini:2.5-flash', 'x-goog-api-key'],
  ])('%s: the key does not follow a 307 to another host; the call fails', async (spec, header) => {
    const planted = `PLANTED-${header}-${Math.random().toString(36).slice(2)}`;
    const seen: IncomingHttpHeaders[] = [];
    const thief = createServer((request, response) => {
      seen.push(request.headers);
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((resolve) => thief.listen(0, '127.0.0.1', resolve));
    const thiefPort = (thief.address() as AddressInfo).port;
    const redirecting = createServer((request, response) => {
      request.resume();
      response.writeHead(307, { location: `http://localhost:${thiefPort}/stolen` }).end();
    });
    await new Promise<void>((resolve) => redirecting.listen(0, '127.0.0.1', resolve));
    const baseUrl = `http://127.0.0.1:${(redirecting.address() as AddressInfo).port}`;
    const providers = new ProviderRegistry({
      anthropic: { apiKey: planted, baseUrl },
      gemini: { apiKeys: [planted], baseUrl },
    });
    registries.push(providers);
    try {
      const failure = await call(spec, { prompt: 'hello' }, { providers }).catch((error: unknown) => error);
      expect(isSwitchboardError(failure)).toBe(true);
      expect(seen).toEqual([]);
    } finally {
      await new Promise((resolve) => thief.close(resolve));
      await new Promise((resolve) => redirecting.close(resolve));
    }
  });
});
