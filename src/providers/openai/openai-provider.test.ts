import { inspect } from 'node:util';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ToolDefinition } from '../../core/call-types.js';
import type { ErrorCode } from '../../core/errors.js';
import { startSimulator, type Simulator } from '../../sim/server.js';
import type { Scenario } from '../../sim/scenario.js';
import { waitFor } from '../../../test/helpers/wait-for.js';
import { createOpenAiProvider, type OpenAiProviderOptions } from './openai-provider.js';

// Every test runs the real `openai` SDK against `switchboard sim` over loopback.

const SECRET_KEY = 'sk-test-switchboard-secret-0123456789';

const simulators: Simulator[] = [];
async function simulator(scenario: Scenario): Promise<Simulator> {
  const sim = await startSimulator({ scenario, maxLifetimeMs: 30_000 });
  simulators.push(sim);
  return sim;
}

beforeEach(() => {
  // The developer's own environment must not leak into the tests.
  vi.stubEnv('OPENAI_API_KEY', '');
  vi.stubEnv('OPENAI_BASE_URL', '');
});
afterEach(async () => {
  vi.unstubAllEnvs();
  await Promise.all(simulators.splice(0).map((sim) => sim.close()));
});

const completions = (sim: Simulator) =>
  sim.requests.filter((entry) => entry.path.endsWith('/chat/completions'));

function providerFor(sim: Simulator, options: OpenAiProviderOptions = {}) {
  return createOpenAiProvider({ baseUrl: sim.openAiBaseUrl, apiKey: SECRET_KEY, ...options });
}

async function failure(promise: Promise<unknown>): Promise<Record<string, unknown> & { code: ErrorCode }> {
  try {
    await promise;
  } catch (error) {
    return error as Record<string, unknown> & { code: ErrorCode };
  }
  throw new Error('expected the call to fail');
}

const weatherSchema = {
  type: 'object',
  properties: { city: { type: 'string' }, celsius: { type: 'number' } },
  required: ['city', 'celsius'],
  additionalProperties: false,
};

describe('openai provider: plain calls', () => {
  it('returns text, usage with cached tokens apart, cost of the served model, and one attempt', async () => {
    const sim = await simulator({
      rules: [
        {
          match: { text: '^ping$', system: 'one word' },
          reply: {
            text: 'pong',
            model: 'gpt-4.1-mini-2025-04-14',
            usage: { input: 1000, output: 200, cacheRead: 400 },
          },
        },
      ],
    });
    const provider = providerFor(sim);
    const result = await provider.call({
      model: 'gpt-4.1',
      prompt: 'ping',
      system: 'You answer in one word.',
    });
    expect(result).toMatchObject({
      success: true,
      text: 'pong',
      provider: 'openai:gpt-4.1',
      modelRequested: 'gpt-4.1',
      modelUsed: 'gpt-4.1-mini-2025-04-14',
      rateLimited: false,
      warnings: [],
    });
    expect(result.usage).toEqual({
      inputTokens: 1000,
      outputTokens: 200,
      cacheReadTokens: 400,
      cacheWriteTokens: 0,
    });
    // Priced as gpt-4.1-mini (the model that answered): 0.4 in, 1.6 out, 0.1 cached per million.
    expect(result.costUsd).toBeCloseTo((1000 * 0.4 + 200 * 1.6 + 400 * 0.1) / 1_000_000, 12);
    expect(result.attempts).toEqual([
      { provider: 'openai:gpt-4.1', model: 'gpt-4.1', durationMs: result.durationMs },
    ]);
    expect(completions(sim)).toHaveLength(1);
    expect(completions(sim)[0]?.body).toMatchObject({
      model: 'gpt-4.1',
      messages: [
        { role: 'system', content: 'You answer in one word.' },
        { role: 'user', content: 'ping' },
      ],
    });
    expect(completions(sim)[0]?.body).not.toHaveProperty('stream', true);
  });

  it('reports a null cost with a warning for a model without a price, and uses prices given as options', async () => {
    const sim = await simulator({ rules: [{ reply: { text: 'hi', usage: { input: 10, output: 5 } } }] });
    const unpriced = await providerFor(sim).call({
      model: 'llama3.2',
      prompt: 'hello',
      idleTimeoutMs: 5_000,
    });
    expect(unpriced.costUsd).toBeNull();
    expect(unpriced.warnings).toContain('no price for model llama3.2; cost unknown');
    expect(unpriced.warnings.some((warning) => warning.startsWith('idleTimeoutMs'))).toBe(false);
    const priced = await providerFor(sim, {
      prices: { llama3: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0 } },
    }).call({ model: 'llama3.2', prompt: 'hello' });
    expect(priced.costUsd).toBeCloseTo((10 * 1 + 5 * 2) / 1_000_000, 12);
    expect(priced.warnings).toEqual([]);
  });

  it('sends a call to the base URL it names, with no key needed for a local server', async () => {
    const configured = await simulator({ rules: [{ reply: { text: 'from the configured server' } }] });
    const named = await simulator({ rules: [{ reply: { text: 'from the named server' } }] });
    const provider = createOpenAiProvider({ baseUrl: configured.openAiBaseUrl });
    const first = await provider.call({ model: 'llama3.2', prompt: 'hi', baseUrl: named.openAiBaseUrl });
    expect(first.text).toBe('from the named server');
    expect(completions(named)).toHaveLength(1);
    expect(completions(configured)).toHaveLength(0);
    const second = await provider.call({ model: 'llama3.2', prompt: 'hi' });
    expect(second.text).toBe('from the configured server');
    const third = await provider.call({ model: 'llama3.2', prompt: 'hi', baseUrl: named.openAiBaseUrl });
    expect(third.text).toBe('from the named server');
    expect(completions(named)).toHaveLength(2);
    expect(completions(configured)).toHaveLength(1);
    await provider.close();
  });

  it('reads the key and base URL from OPENAI_API_KEY and OPENAI_BASE_URL', async () => {
    const sim = await simulator({ rules: [{ reply: { text: 'from the environment' } }] });
    vi.stubEnv('OPENAI_BASE_URL', sim.openAiBaseUrl);
    vi.stubEnv('OPENAI_API_KEY', SECRET_KEY);
    const result = await createOpenAiProvider().call({ model: 'gpt-4.1-mini', prompt: 'hi' });
    expect(result.text).toBe('from the environment');
  });
});

describe('openai provider: structured output', () => {
  it('asks with response_format json_schema and returns the validated value', async () => {
    const sim = await simulator({
      rules: [{ match: { text: 'weather' }, reply: { json: { city: 'Lisbon', celsius: 21 } } }],
    });
    const result = await providerFor(sim).call({
      model: 'gpt-4.1-mini',
      prompt: 'weather in Lisbon',
      schema: weatherSchema,
    });
    expect(result.structured).toEqual({ city: 'Lisbon', celsius: 21 });
    expect(JSON.parse(result.text)).toEqual({ city: 'Lisbon', celsius: 21 });
    expect(completions(sim)[0]?.body).toMatchObject({
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'output', schema: weatherSchema, strict: false },
      },
    });
    expect(completions(sim)[0]?.body).not.toHaveProperty('tools');
  });

  it('extracts JSON from a ```json fence with prose around it', async () => {
    const sim = await simulator({
      rules: [
        {
          reply: {
            text: 'Here is the answer:\n```json\n{"city": "Porto", "celsius": 18}\n```\nAnything else?',
          },
        },
      ],
    });
    const result = await providerFor(sim).call({
      model: 'llama3.2',
      prompt: 'weather',
      schema: weatherSchema,
    });
    expect(result.structured).toEqual({ city: 'Porto', celsius: 18 });
  });

  it('fails with SCHEMA carrying the raw answer and the errors when the JSON does not match', async () => {
    const sim = await simulator({ rules: [{ reply: { json: { city: 5 } } }] });
    const error = await failure(
      providerFor(sim).call({ model: 'gpt-4.1-mini', prompt: 'weather', schema: weatherSchema }),
    );
    expect(error).toMatchObject({ code: 'SCHEMA', provider: 'openai', retryable: false });
    const details = error['details'] as { raw: string; errors: string[] };
    expect(details.raw).toBe('{"city":5}');
    expect(details.errors).toEqual(
      expect.arrayContaining([expect.stringContaining('/city'), expect.stringContaining('celsius')]),
    );
  });

  it('fails with SCHEMA when the answer holds no JSON at all', async () => {
    const sim = await simulator({ rules: [{ reply: { text: 'I cannot tell the weather.' } }] });
    const error = await failure(
      providerFor(sim).call({ model: 'gpt-4.1-mini', prompt: 'weather', schema: weatherSchema }),
    );
    expect(error).toMatchObject({ code: 'SCHEMA', details: { raw: 'I cannot tell the weather.' } });
  });

  it('forces an emit_output function call in tool mode and reads its arguments', async () => {
    const sim = await simulator({
      rules: [
        {
          match: { tools: '^emit_output$' },
          reply: { tool: { name: 'emit_output', input: { city: 'Faro', celsius: 25 } } },
        },
      ],
    });
    const result = await providerFor(sim, { structuredOutput: 'tool' }).call({
      model: 'qwen2.5',
      prompt: 'weather',
      schema: weatherSchema,
    });
    expect(result.structured).toEqual({ city: 'Faro', celsius: 25 });
    expect(result.warnings).toEqual(['no price for model qwen2.5; cost unknown']);
    const body = completions(sim)[0]?.body;
    expect(body).toMatchObject({
      tools: [{ type: 'function', function: { name: 'emit_output', parameters: weatherSchema } }],
      tool_choice: { type: 'function', function: { name: 'emit_output' } },
    });
    expect(body).not.toHaveProperty('response_format');
  });

  it('rejects an invalid schema before any request', async () => {
    const sim = await simulator({});
    const error = await failure(
      providerFor(sim).call({ model: 'gpt-4.1-mini', prompt: 'x', schema: { type: 'no-such-type' } }),
    );
    expect(error.code).toBe('INVALID_INPUT');
    expect(completions(sim)).toHaveLength(0);
  });
});

describe('openai provider: tools and conversations', () => {
  const readFile: ToolDefinition = {
    name: 'read_file',
    description: 'Reads a file.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  };

  it('sends function tools and the conversation as tool_calls and role: tool messages, and returns the calls the model made', async () => {
    const sim = await simulator({
      rules: [
        {
          match: { turn: 2, text: 'heliotrope' },
          reply: { tool: { id: 'call_2', name: 'read_file', input: { path: 'b.txt' } } },
        },
      ],
    });
    const result = await providerFor(sim).call({
      model: 'gpt-4.1-mini',
      system: 'Be brief.',
      prompt: 'What do the notes say?',
      tools: [readFile],
      toolChoice: 'required',
      messages: [
        {
          role: 'assistant',
          text: '',
          toolCalls: [{ id: 'call_1', name: 'read_file', input: { path: 'a.txt' } }],
        },
        { role: 'tool', results: [{ id: 'call_1', name: 'read_file', content: 'heliotrope' }] },
      ],
    });
    expect(result.toolCalls).toEqual([{ id: 'call_2', name: 'read_file', input: { path: 'b.txt' } }]);
    const body = completions(sim)[0]?.body as Record<string, unknown>;
    expect(body['tools']).toEqual([
      {
        type: 'function',
        function: { name: 'read_file', description: 'Reads a file.', parameters: readFile.inputSchema },
      },
    ]);
    expect(body['tool_choice']).toBe('required');
    expect(body['messages']).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'What do the notes say?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'heliotrope' },
    ]);
  });

  it('a failed tool says so in its message; a text answer has no toolCalls', async () => {
    const sim = await simulator({ rules: [{ match: { tools: true }, reply: { text: 'It failed.' } }] });
    const result = await providerFor(sim).call({
      model: 'gpt-4.1-mini',
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
    const body = completions(sim)[0]?.body as { messages: unknown[]; tool_choice: unknown };
    expect(body.tool_choice).toBe('auto');
    expect(body.messages.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: 'c1',
      content: 'Error: no such file',
    });
  });
});

describe('openai provider: faults', () => {
  const cases: {
    name: string;
    rule: NonNullable<Scenario['rules']>[number];
    code: ErrorCode;
    retryable: boolean;
    extra?: Record<string, unknown>;
    /** Abort once the request has reached the simulator (it stalls there). */
    abortInFlight?: boolean;
  }[] = [
    {
      name: '429 with retry-after',
      rule: { fault: { status: 429, retryAfter: 2 } },
      code: 'RATE_LIMITED',
      retryable: true,
      extra: { retryAfterMs: 2000 },
    },
    { name: '503 overload', rule: { fault: { kind: 'overload' } }, code: 'OVERLOADED', retryable: true },
    { name: '500', rule: { fault: { status: 500 } }, code: 'PROVIDER_ERROR', retryable: true },
    { name: '401', rule: { fault: { status: 401 } }, code: 'AUTH', retryable: false },
    { name: '400', rule: { fault: { status: 400 } }, code: 'INVALID_INPUT', retryable: false },
    {
      name: 'connection dropped before the answer',
      rule: { fault: { kind: 'drop-before' } },
      code: 'PROVIDER_UNAVAILABLE',
      retryable: true,
    },
    {
      name: 'connection dropped during the answer',
      rule: { fault: { kind: 'drop-during' } },
      code: 'PROVIDER_ERROR',
      retryable: true,
    },
    { name: 'stall past timeoutMs', rule: { fault: { kind: 'stall' } }, code: 'TIMEOUT', retryable: true },
    { name: 'malformed body', rule: { fault: { kind: 'malformed' } }, code: 'PARSE', retryable: false },
    {
      name: 'abort',
      rule: { fault: { kind: 'stall' } },
      code: 'ABORTED',
      retryable: false,
      abortInFlight: true,
    },
  ];

  it.each(cases)(
    '$name → $code after exactly one request',
    async ({ rule, code, retryable, extra, abortInFlight = false }) => {
      const sim = await simulator({ rules: [rule] });
      const controller = new AbortController();
      const started = performance.now();
      const pending = failure(
        providerFor(sim, { timeoutMs: abortInFlight ? 10_000 : 300 }).call({
          model: 'gpt-4.1-mini',
          prompt: 'hello',
          abortSignal: controller.signal,
        }),
      );
      if (abortInFlight) {
        await waitFor(() => completions(sim).length > 0, { what: 'the request to reach the simulator' });
        controller.abort();
      }
      const error = await pending;
      expect(error).toMatchObject({
        name: 'SwitchboardError',
        code,
        retryable,
        provider: 'openai',
        ...extra,
      });
      expect(completions(sim)).toHaveLength(1);
      expect(performance.now() - started).toBeLessThan(3_000);
      const shown = JSON.stringify(error) + inspect(error, { depth: 10 });
      expect(shown).not.toContain(SECRET_KEY);
    },
  );

  it('names the server to start when nothing listens at the base URL', async () => {
    const sim = await simulator({});
    const baseUrl = sim.openAiBaseUrl;
    await sim.close();
    const error = await failure(createOpenAiProvider({ baseUrl }).call({ model: 'llama3.2', prompt: 'hi' }));
    expect(error).toMatchObject({ code: 'PROVIDER_UNAVAILABLE', retryable: true });
    expect(error['hint']).toContain(baseUrl);
    expect(error['hint']).toContain('ollama serve');
  });

  it('fails with AUTH naming OPENAI_API_KEY, before any request, when the default URL has no key', async () => {
    const fetchSpy = vi.fn<typeof fetch>(() => Promise.reject(new Error('no request expected')));
    const error = await failure(
      createOpenAiProvider({ fetch: fetchSpy }).call({ model: 'gpt-4.1-mini', prompt: 'hi' }),
    );
    expect(error).toMatchObject({ code: 'AUTH', retryable: false, provider: 'openai' });
    expect(error['message']).toContain('OPENAI_API_KEY');
    expect(fetchSpy).not.toHaveBeenCalled();
  });

  it('never shows the key, even when the server quotes it back', async () => {
    const sim = await simulator({
      rules: [{ fault: { status: 401, message: `Incorrect API key provided: ${SECRET_KEY}` } }],
    });
    const error = await failure(providerFor(sim).call({ model: 'gpt-4.1-mini', prompt: 'hi' }));
    expect(error.code).toBe('AUTH');
    expect(error['message']).toContain('Incorrect API key provided');
    expect(JSON.stringify(error)).not.toContain(SECRET_KEY);
    expect(inspect(error, { depth: 10 })).not.toContain(SECRET_KEY);
    expect(JSON.stringify(error)).not.toContain('sk-test');
  });
});

describe('openai provider: options', () => {
  it('names the bad option', () => {
    expect(() => createOpenAiProvider({ timeoutMs: -1 })).toThrow(/"timeoutMs"/);
    // A JavaScript caller or a config file can pass any string.
    expect(() => createOpenAiProvider({ structuredOutput: 'xml' as 'tool' })).toThrow(/"structuredOutput"/);
    expect(() => createOpenAiProvider({ baseUrl: 'localhost:11434' })).toThrow(/"baseUrl"/);
    expect(() => createOpenAiProvider({ apiKey: ' ' })).toThrow(/"apiKey"/);
  });

  it('rejects a bad per-call base URL and an empty prompt without a request', async () => {
    const sim = await simulator({});
    const provider = providerFor(sim);
    await expect(provider.call({ model: 'm', prompt: 'hi', baseUrl: 'not a url' })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringContaining('"baseUrl"'),
    });
    await expect(provider.call({ model: 'm', prompt: '  ' })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
    expect(completions(sim)).toHaveLength(0);
  });
});

describe('openai provider: streaming with onText', () => {
  const longText =
    'Streaming hands the answer over piece by piece, so a reader sees the first words long before ' +
    'the last ones are written; this reply is long enough to arrive in many separate chunks.';

  it('hands over each delta in order and returns the same result as the non-streaming call', async () => {
    const sim = await simulator({
      rules: [
        {
          reply: {
            text: longText,
            model: 'gpt-4.1-mini-2025-04-14',
            usage: { input: 1000, output: 200, cacheRead: 400 },
            chunkDelayMs: 2,
          },
        },
      ],
    });
    const provider = providerFor(sim);
    const deltas: string[] = [];
    const streamed = await provider.call({
      model: 'gpt-4.1',
      prompt: 'tell me',
      onText: (delta) => deltas.push(delta),
    });
    const plain = await provider.call({ model: 'gpt-4.1', prompt: 'tell me' });

    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.every((delta) => delta !== '')).toBe(true);
    expect(deltas.join('')).toBe(longText);
    expect(streamed.text).toBe(longText);
    const { durationMs: _streamedMs, attempts: _streamedAttempts, ...streamedRest } = streamed;
    const { durationMs: _plainMs, attempts: _plainAttempts, ...plainRest } = plain;
    expect(streamedRest).toEqual(plainRest);
    expect(streamed).toMatchObject({
      modelUsed: 'gpt-4.1-mini-2025-04-14',
      usage: { inputTokens: 1000, outputTokens: 200, cacheReadTokens: 400, cacheWriteTokens: 0 },
      warnings: [],
    });
    expect(streamed.costUsd).toBeCloseTo((1000 * 0.4 + 200 * 1.6 + 400 * 0.1) / 1_000_000, 12);
    expect(streamed.attempts).toEqual([
      { provider: 'openai:gpt-4.1', model: 'gpt-4.1', durationMs: streamed.durationMs },
    ]);

    expect(completions(sim).map((entry) => entry.stream)).toEqual([true, false]);
    expect(completions(sim)[0]?.body).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('hands no text to onText after the deadline, even when the rest of the stream is read before its timer runs', async () => {
    // The whole answer arrives at once; the first piece's callback holds the event loop past the
    // deadline, as a starved worker would, so the rest is read from the buffer before any timer runs.
    const sim = await simulator({ rules: [{ reply: { text: longText, chunkDelayMs: 0 } }] });
    const deltas: string[] = [];
    const error = await failure(
      providerFor(sim, { timeoutMs: 1_000 }).call({
        model: 'gpt-4.1-mini',
        prompt: 'hello',
        onText: (delta) => {
          deltas.push(delta);
          if (deltas.length > 1) return;
          const until = performance.now() + 1_100;
          while (performance.now() < until);
        },
      }),
    );
    expect(error.code).toBe('TIMEOUT');
    expect(deltas).toHaveLength(1);
  });

  it('calls onText while the answer is still arriving, not all at the end', async () => {
    const sim = await simulator({ rules: [{ reply: { text: longText, chunkDelayMs: 40 } }] });
    const arrivals: number[] = [];
    const started = performance.now();
    const result = await providerFor(sim).call({
      model: 'llama3.2',
      prompt: 'tell me',
      onText: () => arrivals.push(performance.now() - started),
    });
    const total = performance.now() - started;
    expect(arrivals.length).toBeGreaterThan(2);
    expect(arrivals[0]).toBeLessThan(total - 80);
    expect(result.text).toBe(longText);
  });

  it('fails with PROVIDER_ERROR (retryable) when the stream is cut, after the first deltas arrived', async () => {
    const sim = await simulator({ rules: [{ fault: { kind: 'drop-during' } }] });
    const deltas: string[] = [];
    const error = await failure(
      providerFor(sim, { timeoutMs: 2_000 }).call({
        model: 'gpt-4.1-mini',
        prompt: 'hello',
        onText: (delta) => deltas.push(delta),
      }),
    );
    expect(error).toMatchObject({ name: 'SwitchboardError', code: 'PROVIDER_ERROR', retryable: true });
    expect(deltas.length).toBeGreaterThanOrEqual(1);
    expect(completions(sim)).toHaveLength(1);
    expect(completions(sim)[0]?.stream).toBe(true);
    expect(JSON.stringify(error) + inspect(error, { depth: 10 })).not.toContain(SECRET_KEY);
  });

  it('fails with TIMEOUT and no delta when the server stalls before the first byte', async () => {
    const sim = await simulator({ rules: [{ fault: { kind: 'stall' } }] });
    const deltas: string[] = [];
    const started = performance.now();
    const error = await failure(
      providerFor(sim, { timeoutMs: 300 }).call({
        model: 'gpt-4.1-mini',
        prompt: 'hello',
        onText: (delta) => deltas.push(delta),
      }),
    );
    expect(error).toMatchObject({ code: 'TIMEOUT', retryable: true, provider: 'openai' });
    expect(deltas).toEqual([]);
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(completions(sim)[0]?.stream).toBe(true);
  });

  it('keeps timeoutMs over the body: headers sent, then no token in time → TIMEOUT', async () => {
    const sim = await simulator({ rules: [{ reply: { text: 'late', firstTokenDelayMs: 5_000 } }] });
    const deltas: string[] = [];
    const started = performance.now();
    const error = await failure(
      providerFor(sim).call({
        model: 'gpt-4.1-mini',
        prompt: 'hello',
        timeoutMs: 300,
        onText: (delta) => deltas.push(delta),
      }),
    );
    expect(error).toMatchObject({ code: 'TIMEOUT', retryable: true });
    expect(deltas).toEqual([]);
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it('honours idleTimeoutMs between chunks with IDLE_TIMEOUT, without the "ignored" warning', async () => {
    const slow = await simulator({ rules: [{ reply: { text: longText, chunkDelayMs: 1_000 } }] });
    const started = performance.now();
    const error = await failure(
      providerFor(slow).call({
        model: 'gpt-4.1-mini',
        prompt: 'hello',
        idleTimeoutMs: 200,
        onText: () => undefined,
      }),
    );
    expect(error).toMatchObject({ code: 'IDLE_TIMEOUT', retryable: true, provider: 'openai' });
    // The first chunk (the role) arrives at once; the next would come a second later.
    expect(performance.now() - started).toBeLessThan(900);

    const brisk = await simulator({ rules: [{ reply: { text: longText, chunkDelayMs: 5 } }] });
    const result = await providerFor(brisk).call({
      model: 'gpt-4.1-mini',
      prompt: 'hello',
      idleTimeoutMs: 2_000,
      onText: () => undefined,
    });
    expect(result.text).toBe(longText);
    expect(result.warnings.some((warning) => warning.startsWith('idleTimeoutMs'))).toBe(false);
  });

  it('fails with ABORTED, not a partial answer, when aborted mid-stream', async () => {
    const sim = await simulator({ rules: [{ reply: { text: longText, chunkDelayMs: 50 } }] });
    const controller = new AbortController();
    const deltas: string[] = [];
    const error = await failure(
      providerFor(sim).call({
        model: 'gpt-4.1-mini',
        prompt: 'hello',
        abortSignal: controller.signal,
        onText: (delta) => {
          deltas.push(delta);
          if (deltas.length === 2) controller.abort();
        },
      }),
    );
    expect(error).toMatchObject({ code: 'ABORTED', retryable: false });
    expect(deltas).toHaveLength(2);
  });

  it('fails with PARSE on a malformed event stream', async () => {
    const sim = await simulator({ rules: [{ fault: { kind: 'malformed' } }] });
    const error = await failure(
      providerFor(sim, { timeoutMs: 2_000 }).call({
        model: 'gpt-4.1-mini',
        prompt: 'hello',
        onText: () => undefined,
      }),
    );
    expect(error).toMatchObject({ code: 'PARSE', retryable: false, provider: 'openai' });
    expect(completions(sim)[0]?.stream).toBe(true);
  });

  it('rethrows what onText throws, unchanged', async () => {
    const sim = await simulator({ rules: [{ reply: { text: longText } }] });
    const thrown = new Error('the caller broke');
    const error = await failure(
      providerFor(sim).call({
        model: 'gpt-4.1-mini',
        prompt: 'hello',
        onText: () => {
          throw thrown;
        },
      }),
    );
    expect(error).toBe(thrown);
  });

  it('does not stream with a schema: onText is not called and a warning says so', async () => {
    const sim = await simulator({ rules: [{ reply: { json: { city: 'Lisbon', celsius: 21 } } }] });
    const deltas: string[] = [];
    const result = await providerFor(sim).call({
      model: 'gpt-4.1-mini',
      prompt: 'weather in Lisbon',
      schema: weatherSchema,
      onText: (delta) => deltas.push(delta),
    });
    expect(result.structured).toEqual({ city: 'Lisbon', celsius: 21 });
    expect(result.warnings).toContain('streaming is not used with a schema');
    expect(deltas).toEqual([]);
    expect(completions(sim)).toHaveLength(1);
    expect(completions(sim)[0]?.stream).toBe(false);
    expect(completions(sim)[0]?.body).not.toHaveProperty('stream');
  });
});
