import { inspect } from 'node:util';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Provider, ToolDefinition } from '../../core/call-types.js';
import { isSwitchboardError, type SwitchboardError } from '../../core/errors.js';
import type { Scenario } from '../../sim/scenario.js';
import { startSimulator, type Simulator } from '../../sim/server.js';
import { waitFor } from '../../../test/helpers/wait-for.js';
import {
  createGeminiProvider,
  familyOf,
  normalizeModel,
  type GeminiProviderOptions,
} from './gemini-provider.js';

const KEYS = ['AIza-secret-key-one', 'AIza-secret-key-two', 'AIza-secret-key-three'];

let simulator: Simulator | undefined;
let provider: Provider | undefined;
afterEach(async () => {
  await provider?.close();
  await simulator?.close();
  provider = undefined;
  simulator = undefined;
  vi.unstubAllEnvs();
});

async function setUp(
  scenario: Scenario,
  options: GeminiProviderOptions = {},
): Promise<{ sim: Simulator; gemini: Provider }> {
  simulator = await startSimulator({ scenario });
  provider = createGeminiProvider({ apiKeys: KEYS, baseUrl: simulator.url, ...options });
  return { sim: simulator, gemini: provider };
}

function fakeClock(start = 1_000_000): { now: () => number; advance: (milliseconds: number) => void } {
  let time = start;
  return { now: () => time, advance: (milliseconds) => (time += milliseconds) };
}

async function failure(promise: Promise<unknown>): Promise<SwitchboardError> {
  try {
    await promise;
  } catch (error) {
    if (isSwitchboardError(error)) return error;
    throw error;
  }
  throw new Error('expected the call to fail');
}

function expectNoKeys(error: SwitchboardError): void {
  const printed = `${JSON.stringify(error)}\n${inspect(error, { depth: 8 })}\n${String(error.stack)}`;
  for (const key of KEYS) expect(printed).not.toContain(key);
}

describe('gemini provider: answers', () => {
  it('answers with text, usage, cost and the model version served', async () => {
    const { sim, gemini } = await setUp({
      rules: [
        {
          match: { provider: 'gemini', system: 'terse', text: 'capital' },
          reply: {
            text: 'Lisbon',
            model: 'gemini-2.5-pro-001',
            usage: { input: 100, output: 20, cacheRead: 30 },
          },
        },
      ],
    });
    const result = await gemini.call({
      model: 'gemini-2.5-pro',
      system: 'be terse',
      prompt: 'capital of Portugal?',
    });
    expect(result).toMatchObject({
      success: true,
      text: 'Lisbon',
      provider: 'gemini:gemini-2.5-pro',
      modelRequested: 'gemini-2.5-pro',
      modelUsed: 'gemini-2.5-pro-001',
      usage: { inputTokens: 100, outputTokens: 20, cacheReadTokens: 30, cacheWriteTokens: 0 },
      rateLimited: false,
      warnings: [],
    });
    expect(result.costUsd).toBeCloseTo((100 * 1.25 + 20 * 10 + 30 * 0.31) / 1_000_000, 12);
    expect(result.attempts).toHaveLength(1);
    expect(result.attempts[0]).not.toHaveProperty('errorCode');
    expect(result.durationMs).toBeGreaterThan(0);
    expect(sim.requests).toHaveLength(1);
    expect(sim.requests[0]?.path).toMatch(/\/models\/gemini-2\.5-pro:generateContent$/);
  });

  it('accepts the 2.5-flash shorthand', async () => {
    const { sim, gemini } = await setUp({});
    const result = await gemini.call({ model: '2.5-flash', prompt: 'hi' });
    expect(result).toMatchObject({
      text: 'ok',
      provider: 'gemini:gemini-2.5-flash',
      modelUsed: 'gemini-2.5-flash',
    });
    expect(result.costUsd).not.toBeNull();
    expect(sim.requests[0]?.model).toBe('gemini-2.5-flash');
    expect(normalizeModel('models/gemini-2.5-pro')).toBe('gemini-2.5-pro');
    expect(normalizeModel('gemma-3-27b-it')).toBe('gemma-3-27b-it');
  });

  it('reports a null cost with a warning for a model without a price, unless prices adds one', async () => {
    const { gemini } = await setUp({});
    const unknown = await gemini.call({ model: 'gemini-9-ultra', prompt: 'hi' });
    expect(unknown.costUsd).toBeNull();
    expect(unknown.warnings).toEqual([expect.stringMatching(/no price is known for gemini-9-ultra/)]);
    await provider?.close();
    provider = createGeminiProvider({
      apiKeys: KEYS,
      baseUrl: simulator?.url as string,
      prices: { 'gemini-9-ultra': { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 } },
    });
    const priced = await provider.call({ model: 'gemini-9-ultra', prompt: 'hi' });
    expect(priced.costUsd).toBeGreaterThan(0);
    expect(priced.warnings).toEqual([]);
  });

  it('reads keys and the base URL from the environment, and fails with AUTH naming the variables without any', async () => {
    simulator = await startSimulator({ scenario: {} });
    vi.stubEnv('GEMINI_API_KEYS', ' AIza-secret-key-one , AIza-secret-key-two ');
    vi.stubEnv('GEMINI_BASE_URL', simulator.url);
    provider = createGeminiProvider();
    expect((await provider.call({ model: '2.5-flash', prompt: 'hi' })).text).toBe('ok');

    vi.stubEnv('GEMINI_API_KEYS', '');
    vi.stubEnv('GEMINI_API_KEY', '');
    vi.stubEnv('GOOGLE_API_KEY', '');
    const keyless = createGeminiProvider();
    const error = await failure(keyless.call({ model: '2.5-flash', prompt: 'hi' }));
    expect(error).toMatchObject({ code: 'AUTH', retryable: false });
    expect(error.hint).toMatch(/GEMINI_API_KEYS.*GEMINI_API_KEY.*GOOGLE_API_KEY/);
    expect(simulator.requests).toHaveLength(1);
  });

  it('rejects bad options, naming the option', () => {
    expect(() => createGeminiProvider({ timeoutMs: 0 })).toThrow(/"timeoutMs"/);
    expect(() => createGeminiProvider({ keyCooldownMs: -5 })).toThrow(/"keyCooldownMs"/);
    expect(() => createGeminiProvider({ onDowngrade: 'ignore' as never })).toThrow(/"onDowngrade"/);
    expect(() => createGeminiProvider({ forbiddenModels: ['/(/'] })).toThrow(/"forbiddenModels"/);
    expect(() => createGeminiProvider({ baseUrl: 'localhost:1' })).toThrow(/"baseUrl"/);
  });
});

describe('gemini provider: key rotation', () => {
  it('moves to the next key at once when one is rate limited, and lets the tired key rest', async () => {
    const { sim, gemini } = await setUp({
      rules: [{ name: 'quota', match: { provider: 'gemini' }, times: 1, fault: { status: 429 } }],
    });
    const result = await gemini.call({ model: '2.5-flash', prompt: 'hi' });
    expect(result.text).toBe('ok');
    expect(result.rateLimited).toBe(true);
    expect(result.attempts.map((attempt) => attempt.errorCode ?? 'ok')).toEqual(['RATE_LIMITED', 'ok']);
    expect(result.attempts[0]?.errorMessage).toMatch(/^key #1: /);
    expect(result.warnings).toEqual([expect.stringMatching(/key #1 is rate limited/)]);
    expect(sim.requests.map((request) => request.outcome)).toEqual(['fault:status', 'reply']);

    // Key #1 rests, so the next calls take turns between #3 and #2 without another 429.
    const next = await gemini.call({ model: '2.5-flash', prompt: 'again' });
    expect(next.attempts).toHaveLength(1);
    expect(next.rateLimited).toBe(false);
    for (const text of [result.attempts[0]?.errorMessage, ...result.warnings]) {
      for (const key of KEYS) expect(text).not.toContain(key);
    }
  });

  it('fails with RATE_LIMITED and the wait until the first key is free when every key is exhausted', async () => {
    const clock = fakeClock();
    const { sim, gemini } = await setUp(
      { rules: [{ match: { provider: 'gemini' }, fault: { status: 429, retryAfter: 30 } }] },
      { _internal: { now: clock.now } },
    );
    const error = await failure(gemini.call({ model: '2.5-pro', prompt: 'hi' }));
    expect(error).toMatchObject({ code: 'RATE_LIMITED', retryable: true, retryAfterMs: 30_000 });
    expect(error.message).toMatch(/every Gemini key is rate limited \(3 keys\)/);
    const attempts = error.details?.['attempts'] as { errorCode: string; errorMessage: string }[];
    expect(attempts.map((attempt) => attempt.errorMessage.slice(0, 7))).toEqual([
      'key #1:',
      'key #2:',
      'key #3:',
    ]);
    expect(sim.requests).toHaveLength(3);
    expectNoKeys(error);

    // While they rest, a call fails at once without a request.
    clock.advance(10_000);
    const resting = await failure(gemini.call({ model: '2.5-pro', prompt: 'hi' }));
    expect(resting).toMatchObject({ code: 'RATE_LIMITED', retryAfterMs: 20_000 });
    expect(sim.requests).toHaveLength(3);
  });

  it('brings a key back when its cooldown ends, by the injected clock', async () => {
    const clock = fakeClock();
    const { sim, gemini } = await setUp(
      { rules: [{ match: { provider: 'gemini' }, times: 1, fault: { status: 429, retryAfterMs: 1_000 } }] },
      { apiKeys: [KEYS[0] as string], _internal: { now: clock.now } },
    );
    const first = await failure(gemini.call({ model: '2.5-flash', prompt: 'hi' }));
    expect(first).toMatchObject({ code: 'RATE_LIMITED', retryAfterMs: 1_000 });
    expect(first.message).toMatch(/\(1 key\)/);
    clock.advance(999);
    expect(await failure(gemini.call({ model: '2.5-flash', prompt: 'hi' }))).toMatchObject({
      code: 'RATE_LIMITED',
      retryAfterMs: 1,
    });
    expect(sim.requests).toHaveLength(1);
    clock.advance(1);
    expect((await gemini.call({ model: '2.5-flash', prompt: 'hi' })).text).toBe('ok');
    expect(sim.requests).toHaveLength(2);
  });

  it('leaves a single key free after a 429 that did not say how long to wait: the caller backs off', async () => {
    const { sim, gemini } = await setUp(
      { rules: [{ match: { provider: 'gemini' }, times: 1, fault: { status: 429 } }] },
      { apiKeys: [KEYS[0] as string] },
    );
    const first = await failure(gemini.call({ model: '2.5-flash', prompt: 'hi' }));
    expect(first.code).toBe('RATE_LIMITED');
    expect(first.retryAfterMs).toBeUndefined();
    expect((await gemini.call({ model: '2.5-flash', prompt: 'hi' })).text).toBe('ok');
    expect(sim.requests).toHaveLength(2);
  });

  it("rests a key for the RetryInfo delay in Gemini's RESOURCE_EXHAUSTED body", async () => {
    const clock = fakeClock();
    const { gemini } = await setUp(
      {
        rules: [
          {
            match: { provider: 'gemini' },
            fault: {
              status: 429,
              body: {
                error: {
                  code: 429,
                  message: 'You exceeded your current quota.',
                  status: 'RESOURCE_EXHAUSTED',
                  details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '7s' }],
                },
              },
            },
          },
        ],
      },
      { apiKeys: [KEYS[0] as string], _internal: { now: clock.now } },
    );
    const error = await failure(gemini.call({ model: '2.5-flash', prompt: 'hi' }));
    expect(error).toMatchObject({ code: 'RATE_LIMITED', retryAfterMs: 7_000 });
    const attempts = error.details?.['attempts'] as { errorMessage: string }[];
    expect(attempts[0]?.errorMessage).toMatch(/You exceeded your current quota/);
  });
});

describe('gemini provider: model checks', () => {
  const downgrade: Scenario = {
    rules: [
      { match: { provider: 'gemini', model: 'pro' }, reply: { text: 'cheap', model: 'gemini-2.5-flash' } },
    ],
  };

  it('fails with MODEL_DOWNGRADED when served another family, by default', async () => {
    const { gemini } = await setUp(downgrade);
    const error = await failure(gemini.call({ model: '2.5-pro', prompt: 'hi' }));
    expect(error).toMatchObject({
      code: 'MODEL_DOWNGRADED',
      retryable: true,
      details: { requested: 'gemini-2.5-pro', served: 'gemini-2.5-flash' },
    });
    expect(error.details?.['usage']).toMatchObject({ outputTokens: expect.any(Number) });
    expectNoKeys(error);
  });

  it("answers with a warning when onDowngrade is 'warn'", async () => {
    const { gemini } = await setUp(downgrade, { onDowngrade: 'warn' });
    const result = await gemini.call({ model: '2.5-pro', prompt: 'hi' });
    expect(result).toMatchObject({ text: 'cheap', modelUsed: 'gemini-2.5-flash' });
    expect(result.warnings).toEqual(['gemini answered with gemini-2.5-flash instead of gemini-2.5-pro']);
  });

  it('treats versions and dated previews of the same model as the same model', async () => {
    expect(familyOf('gemini-2.5-pro-001')).toBe('gemini-2.5-pro');
    expect(familyOf('gemini-2.5-pro-preview-06-05')).toBe('gemini-2.5-pro');
    expect(familyOf('gemini-2.5-flash-preview-09-2025')).toBe('gemini-2.5-flash');
    expect(familyOf('gemini-2.5-flash-lite-preview-06-17')).toBe('gemini-2.5-flash-lite');
    expect(familyOf('models/gemini-2.0-flash-001')).toBe('gemini-2.0-flash');
    const { gemini } = await setUp({
      rules: [{ match: { model: 'pro' }, reply: { text: 'fine', model: 'gemini-2.5-pro-preview-06-05' } }],
    });
    const result = await gemini.call({ model: '2.5-pro', prompt: 'hi' });
    expect(result.warnings).toEqual([]);
    expect(result.modelUsed).toBe('gemini-2.5-pro-preview-06-05');
  });

  it('refuses a forbidden model when asked for it, and when it is served even with warn', async () => {
    const { sim, gemini } = await setUp(
      {
        rules: [
          {
            match: { model: 'gemini-2.5-flash$' },
            reply: { text: 'lite', model: 'gemini-2.5-flash-lite-001' },
          },
        ],
      },
      { forbiddenModels: ['2.5-flash-lite', '/-exp/i'], onDowngrade: 'warn' },
    );
    const asked = await failure(gemini.call({ model: 'gemini-2.5-flash-lite', prompt: 'hi' }));
    expect(asked).toMatchObject({ code: 'INVALID_INPUT', retryable: false });
    expect(asked.message).toMatch(/forbiddenModels/);
    expect(await failure(gemini.call({ model: 'gemini-2.0-flash-exp', prompt: 'hi' }))).toMatchObject({
      code: 'INVALID_INPUT',
    });
    expect(sim.requests).toHaveLength(0);
    const served = await failure(gemini.call({ model: '2.5-flash', prompt: 'hi' }));
    expect(served).toMatchObject({
      code: 'MODEL_DOWNGRADED',
      retryable: true,
      details: { requested: 'gemini-2.5-flash', served: 'gemini-2.5-flash-lite-001' },
    });
    expect((await gemini.call({ model: '2.5-pro', prompt: 'hi' })).text).toBe('ok');
  });
});

describe('gemini provider: structured output', () => {
  const schema = {
    $schema: 'http://json-schema.org/draft-07/schema#',
    type: 'object',
    properties: { answer: { type: 'number' } },
    required: ['answer'],
  };

  it('asks for JSON with the schema and returns the validated value', async () => {
    const { sim, gemini } = await setUp({ rules: [{ reply: { json: { answer: 42 } } }] });
    const result = await gemini.call({ model: '2.5-flash', prompt: 'the answer?', schema });
    expect(result.structured).toEqual({ answer: 42 });
    expect(result.text).toBe('{"answer":42}');
    const body = sim.requests[0]?.body as { generationConfig?: Record<string, unknown> };
    expect(body.generationConfig).toMatchObject({
      responseMimeType: 'application/json',
      responseJsonSchema: { type: 'object', required: ['answer'] },
    });
    expect(body.generationConfig?.['responseJsonSchema']).not.toHaveProperty('$schema');
  });

  it('fails with SCHEMA carrying the raw answer when it is not JSON or does not match', async () => {
    const { gemini } = await setUp({
      rules: [
        { match: { text: 'prose' }, reply: { text: 'I think it is forty-two.' } },
        { match: { text: 'wrong' }, reply: { json: { answer: 'forty-two' } } },
      ],
    });
    const prose = await failure(gemini.call({ model: '2.5-flash', prompt: 'prose', schema }));
    expect(prose).toMatchObject({ code: 'SCHEMA', details: { raw: 'I think it is forty-two.' } });
    const wrong = await failure(gemini.call({ model: '2.5-flash', prompt: 'wrong', schema }));
    expect(wrong).toMatchObject({
      code: 'SCHEMA',
      details: { raw: '{"answer":"forty-two"}', errors: ['/answer: must be number'] },
    });
  });

  it('rejects an invalid schema before any request', async () => {
    const { sim, gemini } = await setUp({});
    const error = await failure(
      gemini.call({ model: '2.5-flash', prompt: 'hi', schema: { type: 'no-such-type' } }),
    );
    expect(error.code).toBe('INVALID_INPUT');
    expect(sim.requests).toHaveLength(0);
  });
});

describe('gemini provider: tools and conversations', () => {
  const readFile: ToolDefinition = {
    name: 'read_file',
    description: 'Reads a file.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  };

  it('sends function declarations and the conversation as functionCall / functionResponse parts, and returns the calls the model made', async () => {
    const { sim, gemini } = await setUp({
      rules: [
        {
          match: { turn: 2, text: 'heliotrope' },
          reply: { text: 'One more.', tool: { name: 'read_file', input: { path: 'b.txt' } } },
        },
      ],
    });
    const result = await gemini.call({
      model: 'gemini-2.5-flash',
      prompt: 'What do the notes say?',
      tools: [readFile],
      toolChoice: 'required',
      messages: [
        {
          role: 'assistant',
          text: '',
          toolCalls: [
            { id: 'call_1', name: 'read_file', input: { path: 'a.txt' }, signature: 'c2lnbmF0dXJl' },
          ],
        },
        { role: 'tool', results: [{ id: 'call_1', name: 'read_file', content: 'heliotrope' }] },
      ],
    });
    expect(result.text).toBe('One more.');
    // The simulator, like Gemini models before 3, gives the call no id: one is made up.
    expect(result.toolCalls).toEqual([
      { id: expect.stringMatching(/^call_/), name: 'read_file', input: { path: 'b.txt' } },
    ]);
    const body = sim.requests[0]?.body as Record<string, unknown>;
    expect(body['tools']).toEqual([
      {
        functionDeclarations: [
          { name: 'read_file', description: 'Reads a file.', parametersJsonSchema: readFile.inputSchema },
        ],
      },
    ]);
    expect(body['toolConfig']).toEqual({ functionCallingConfig: { mode: 'ANY' } });
    expect(body['contents']).toEqual([
      { role: 'user', parts: [{ text: 'What do the notes say?' }] },
      {
        role: 'model',
        parts: [
          {
            functionCall: { id: 'call_1', name: 'read_file', args: { path: 'a.txt' } },
            thoughtSignature: 'c2lnbmF0dXJl',
          },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { id: 'call_1', name: 'read_file', response: { output: 'heliotrope' } } },
        ],
      },
    ]);
  });

  it('a failed tool answers with {error}; a text answer has no toolCalls', async () => {
    const { sim, gemini } = await setUp({
      rules: [{ match: { tools: true }, reply: { text: 'It failed.' } }],
    });
    const result = await gemini.call({
      model: 'gemini-2.5-flash',
      prompt: 'Read a.txt',
      tools: [readFile],
      messages: [
        {
          role: 'assistant',
          text: 'Reading.',
          toolCalls: [{ id: 'c1', name: 'read_file', input: { path: 'a.txt' } }],
        },
        { role: 'tool', results: [{ id: 'c1', name: 'read_file', content: 'no such file', isError: true }] },
      ],
    });
    expect(result.text).toBe('It failed.');
    expect(result).not.toHaveProperty('toolCalls');
    const body = sim.requests[0]?.body as { contents: unknown[]; toolConfig: unknown };
    expect(body.toolConfig).toEqual({ functionCallingConfig: { mode: 'AUTO' } });
    expect(body.contents.at(-1)).toEqual({
      role: 'user',
      parts: [{ functionResponse: { id: 'c1', name: 'read_file', response: { error: 'no such file' } } }],
    });
  });
});

describe('gemini provider: faults', () => {
  const cases: {
    name: string;
    fault: NonNullable<Scenario['rules']>[number]['fault'];
    code: string;
    retryable: boolean;
  }[] = [
    { name: '503 overload', fault: { kind: 'overload' }, code: 'OVERLOADED', retryable: true },
    { name: '500', fault: { status: 500 }, code: 'PROVIDER_ERROR', retryable: true },
    { name: '401', fault: { status: 401 }, code: 'AUTH', retryable: false },
    { name: 'drop-before', fault: { kind: 'drop-before' }, code: 'PROVIDER_UNAVAILABLE', retryable: true },
    { name: 'stall', fault: { kind: 'stall' }, code: 'TIMEOUT', retryable: true },
    { name: 'malformed', fault: { kind: 'malformed' }, code: 'PARSE', retryable: true },
  ];

  for (const { name, fault, code, retryable } of cases) {
    it(`maps ${name} to ${code} after one request, without trying other keys`, async () => {
      const { sim, gemini } = await setUp(
        { rules: [{ match: { provider: 'gemini' }, fault: fault as never }] },
        { timeoutMs: 300 },
      );
      const started = performance.now();
      const error = await failure(gemini.call({ model: '2.5-flash', prompt: 'hi' }));
      expect(error).toMatchObject({ code, retryable, provider: 'gemini' });
      expect(sim.requests).toHaveLength(1);
      const attempts = error.details?.['attempts'] as { errorCode: string }[];
      expect(attempts.map((attempt) => attempt.errorCode)).toEqual([code]);
      expectNoKeys(error);
      if (name === 'stall') expect(performance.now() - started).toBeLessThan(3_000);
    });
  }

  it('honours a per-request timeoutMs and the abort signal', async () => {
    const { gemini } = await setUp({ rules: [{ fault: { kind: 'stall' } }] });
    expect(await failure(gemini.call({ model: '2.5-flash', prompt: 'hi', timeoutMs: 200 }))).toMatchObject({
      code: 'TIMEOUT',
    });
    const controller = new AbortController();
    const inFlight = simulator?.requests.length ?? 0;
    const pending = failure(
      gemini.call({ model: '2.5-flash', prompt: 'hi', abortSignal: controller.signal }),
    );
    // Aborted while the request is in flight (the simulator stalls it), not before it leaves.
    await waitFor(() => (simulator?.requests.length ?? 0) > inFlight, {
      what: 'the request to reach the simulator',
    });
    controller.abort();
    const aborted = await pending;
    expect(aborted).toMatchObject({ code: 'ABORTED', retryable: false });
    const requestsSoFar = simulator?.requests.length;
    const early = await failure(
      gemini.call({ model: '2.5-flash', prompt: 'hi', abortSignal: AbortSignal.abort() }),
    );
    expect(early).toMatchObject({ code: 'ABORTED', details: { attempts: [] } });
    expect(simulator?.requests.length).toBe(requestsSoFar);
  });
});

describe('gemini provider: streaming', () => {
  const longText =
    'The Tagus rises in the Sierra de Albarracín and flows west across Spain and Portugal, ' +
    'reaching the Atlantic at Lisbon after more than a thousand kilometres.';

  it('hands each piece of text to onText in order and answers as without streaming', async () => {
    const { sim, gemini } = await setUp({
      rules: [
        {
          match: { provider: 'gemini' },
          reply: {
            text: longText,
            model: 'gemini-2.5-pro-001',
            usage: { input: 100, output: 20, cacheRead: 30 },
            chunkDelayMs: 5,
          },
        },
      ],
    });
    const deltas: string[] = [];
    const result = await gemini.call({
      model: '2.5-pro',
      prompt: 'tell me about the Tagus',
      onText: (delta) => deltas.push(delta),
    });
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe(longText);
    expect(result).toMatchObject({
      success: true,
      text: longText,
      provider: 'gemini:gemini-2.5-pro',
      modelUsed: 'gemini-2.5-pro-001',
      usage: { inputTokens: 100, outputTokens: 20, cacheReadTokens: 30, cacheWriteTokens: 0 },
      rateLimited: false,
      warnings: [],
    });
    expect(result.costUsd).toBeCloseTo((100 * 1.25 + 20 * 10 + 30 * 0.31) / 1_000_000, 12);
    expect(sim.requests).toHaveLength(1);
    expect(sim.requests[0]?.stream).toBe(true);
    expect(sim.requests[0]?.path).toMatch(/:streamGenerateContent(\?|$)/);
  });

  it('moves to the next key on a 429 before the first piece', async () => {
    const { sim, gemini } = await setUp({
      rules: [
        { match: { provider: 'gemini' }, times: 1, fault: { status: 429 } },
        { match: { provider: 'gemini' }, reply: { text: longText } },
      ],
    });
    const deltas: string[] = [];
    const result = await gemini.call({ model: '2.5-flash', prompt: 'hi', onText: (d) => deltas.push(d) });
    expect(deltas.join('')).toBe(longText);
    expect(result.attempts.map((attempt) => attempt.errorCode ?? 'ok')).toEqual(['RATE_LIMITED', 'ok']);
    expect(sim.requests.map((request) => request.stream)).toEqual([true, true]);
  });

  it('fails with PROVIDER_ERROR when the stream breaks off after some text', async () => {
    const { sim, gemini } = await setUp({
      rules: [{ match: { provider: 'gemini' }, fault: { kind: 'drop-during' } }],
    });
    const deltas: string[] = [];
    const error = await failure(
      gemini.call({ model: '2.5-flash', prompt: 'hi', onText: (delta) => deltas.push(delta) }),
    );
    expect(deltas.length).toBeGreaterThanOrEqual(1);
    expect(error).toMatchObject({ code: 'PROVIDER_ERROR', retryable: true, provider: 'gemini' });
    expect(error.message).toMatch(/stream broke off/);
    expect(sim.requests).toHaveLength(1);
    expect(sim.requests[0]?.stream).toBe(true);
    expectNoKeys(error);
  });

  it('fails with TIMEOUT and no text when the stream stalls before the first byte', async () => {
    const { sim, gemini } = await setUp(
      { rules: [{ match: { provider: 'gemini' }, fault: { kind: 'stall' } }] },
      { timeoutMs: 300 },
    );
    const deltas: string[] = [];
    const error = await failure(
      gemini.call({ model: '2.5-flash', prompt: 'hi', onText: (delta) => deltas.push(delta) }),
    );
    expect(error).toMatchObject({ code: 'TIMEOUT', retryable: true });
    expect(deltas).toEqual([]);
    expect(sim.requests).toHaveLength(1);
    expect(sim.requests[0]?.stream).toBe(true);
  });

  it('fails with TIMEOUT when the first piece comes too late, and ABORTED when aborted mid-stream', async () => {
    const { gemini } = await setUp({
      rules: [
        { match: { text: 'slow' }, reply: { text: longText, firstTokenDelayMs: 2_000 } },
        { match: { text: 'drip' }, reply: { text: longText, chunkDelayMs: 200 } },
      ],
    });
    const deltas: string[] = [];
    const late = await failure(
      gemini.call({ model: '2.5-flash', prompt: 'slow', timeoutMs: 200, onText: (d) => deltas.push(d) }),
    );
    expect(late).toMatchObject({ code: 'TIMEOUT' });
    expect(deltas).toEqual([]);

    const controller = new AbortController();
    const aborted = await failure(
      gemini.call({
        model: '2.5-flash',
        prompt: 'drip',
        abortSignal: controller.signal,
        onText: (delta) => {
          deltas.push(delta);
          controller.abort();
        },
      }),
    );
    expect(aborted).toMatchObject({ code: 'ABORTED', retryable: false });
    expect(deltas).toHaveLength(1);
  });

  it('hands no text to onText after the deadline, even when the rest of the stream is read before its timer runs', async () => {
    // The whole answer arrives at once; the first piece's callback then holds the event loop past the
    // deadline, as a starved worker would. The rest is read from the buffer before any timer can run.
    const { gemini } = await setUp({ rules: [{ reply: { text: longText, chunkDelayMs: 0 } }] });
    const deltas: string[] = [];
    const late = await failure(
      gemini.call({
        model: '2.5-flash',
        prompt: 'all at once',
        timeoutMs: 1_000,
        onText: (delta) => {
          deltas.push(delta);
          if (deltas.length === 1) {
            const until = performance.now() + 1_100;
            while (performance.now() < until);
          }
        },
      }),
    );
    expect(late).toMatchObject({ code: 'TIMEOUT' });
    expect(deltas).toHaveLength(1);
  });

  it('does not stream with a schema, and says so', async () => {
    const { sim, gemini } = await setUp({ rules: [{ reply: { json: { answer: 42 } } }] });
    const deltas: string[] = [];
    const result = await gemini.call({
      model: '2.5-flash',
      prompt: 'the answer?',
      schema: { type: 'object', properties: { answer: { type: 'number' } }, required: ['answer'] },
      onText: (delta) => deltas.push(delta),
    });
    expect(result.structured).toEqual({ answer: 42 });
    expect(deltas).toEqual([]);
    expect(result.warnings).toEqual([expect.stringContaining('streaming is not used with a schema')]);
    expect(sim.requests[0]?.stream).toBe(false);
  });
});
