import { afterEach, describe, expect, it, vi } from 'vitest';
import { OUTPUT_TOOL_NAME, type ProviderCall, type ToolDefinition } from '../../core/call-types.js';
import { isSwitchboardError, type SwitchboardError } from '../../core/errors.js';
import { startSimulator, type Simulator } from '../../sim/server.js';
import type { Scenario } from '../../sim/scenario.js';
import { waitFor } from '../../../test/helpers/wait-for.js';
import { createAnthropicProvider, type AnthropicProviderOptions } from './anthropic-provider.js';

const API_KEY = 'sk-ant-test-0123456789-do-not-leak';

let simulator: Simulator | undefined;
afterEach(async () => {
  vi.unstubAllEnvs();
  await simulator?.close();
  simulator = undefined;
});

async function start(scenario: Scenario): Promise<Simulator> {
  simulator = await startSimulator({ scenario });
  return simulator;
}

const providerFor = (sim: Simulator, options: AnthropicProviderOptions = {}) =>
  createAnthropicProvider({ apiKey: API_KEY, baseUrl: sim.url, ...options });

const ask = (overrides: Partial<ProviderCall> = {}): ProviderCall => ({
  model: 'claude-sonnet-4-6',
  prompt: 'hello',
  ...overrides,
});

async function failure(promise: Promise<unknown>): Promise<SwitchboardError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!isSwitchboardError(error)) throw new Error(`expected a SwitchboardError, got ${String(error)}`);
  return error;
}

/** Everything about an error a log or `--json` output might show. */
function everythingShown(error: SwitchboardError): string {
  const cause = error.cause instanceof Error ? `${error.cause.message} ${JSON.stringify(error.cause)}` : '';
  return `${JSON.stringify(error)} ${error.message} ${error.hint ?? ''} ${error.stack ?? ''} ${cause}`;
}

const answerSchema = {
  type: 'object',
  properties: { answer: { type: 'string' }, score: { type: 'integer', minimum: 0 } },
  required: ['answer', 'score'],
  additionalProperties: false,
};

describe('anthropic provider: plain calls', () => {
  it('returns text, usage with cache tokens, the model that answered and its cost', async () => {
    const sim = await start({
      rules: [
        {
          match: { model: 'opus' },
          reply: {
            text: 'hello back',
            model: 'claude-sonnet-4-5-20250929',
            usage: { input: 1000, output: 200, cacheRead: 4000, cacheWrite: 800 },
          },
        },
      ],
    });
    const result = await providerFor(sim).call(
      ask({ model: 'claude-opus-4-1', system: 'be brief', prompt: 'say hello' }),
    );
    expect(result).toMatchObject({
      success: true,
      text: 'hello back',
      provider: 'anthropic:claude-opus-4-1',
      modelRequested: 'claude-opus-4-1',
      modelUsed: 'claude-sonnet-4-5-20250929',
      usage: { inputTokens: 1000, outputTokens: 200, cacheReadTokens: 4000, cacheWriteTokens: 800 },
      rateLimited: false,
      warnings: [],
    });
    // Priced as the Sonnet that answered, not the Opus that was asked for.
    expect(result.costUsd).toBeCloseTo((1000 * 3 + 200 * 15 + 4000 * 0.3 + 800 * 3.75) / 1_000_000, 10);
    expect(result.structured).toBeUndefined();
    expect(result.attempts).toEqual([
      { provider: 'anthropic:claude-opus-4-1', model: 'claude-opus-4-1', durationMs: result.durationMs },
    ]);
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
    expect(sim.requests).toHaveLength(1);
    expect(sim.requests[0]?.body).toEqual({
      model: 'claude-opus-4-1',
      max_tokens: 4096,
      system: 'be brief',
      messages: [{ role: 'user', content: 'say hello' }],
    });
  });

  it('reports an unknown price as null with a warning; idleTimeoutMs is honoured, not warned about', async () => {
    const sim = await start({ rules: [{ reply: { text: 'hi', model: 'claude-future-9' } }] });
    const result = await providerFor(sim).call(ask({ model: 'claude-future-9', idleTimeoutMs: 5_000 }));
    expect(result.costUsd).toBeNull();
    expect(result.warnings).toEqual(['no price for model claude-future-9; cost unknown']);
    expect(sim.requests).toHaveLength(1);
  });

  it('prices from the prices option, sends maxTokens, and warns when the answer hit it', async () => {
    const sim = await start({
      rules: [{ reply: { text: 'cut', usage: { input: 10, output: 20 }, stopReason: 'max_tokens' } }],
    });
    const provider = providerFor(sim, {
      maxTokens: 20,
      prices: { 'claude-future': { input: 1, output: 2, cacheRead: 0, cacheWrite: 0 } },
    });
    const result = await provider.call(ask({ model: 'claude-future-9' }));
    expect(result.costUsd).toBeCloseTo((10 * 1 + 20 * 2) / 1_000_000, 12);
    expect(result.warnings).toEqual(['the answer stopped at the maxTokens limit (20); it may be cut off']);
    expect(sim.requests[0]?.body).toMatchObject({ max_tokens: 20 });
    expect(sim.requests).toHaveLength(1);
  });

  it('reads ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL from the environment', async () => {
    const sim = await start({ rules: [{ reply: { text: 'from env' } }] });
    vi.stubEnv('ANTHROPIC_API_KEY', API_KEY);
    vi.stubEnv('ANTHROPIC_BASE_URL', sim.url);
    const result = await createAnthropicProvider().call(ask());
    expect(result.text).toBe('from env');
    expect(sim.requests).toHaveLength(1);
  });
});

describe('anthropic provider: structured output', () => {
  it('offers and forces the emit_output tool and returns its input', async () => {
    const sim = await start({
      rules: [
        {
          match: { tools: OUTPUT_TOOL_NAME },
          reply: { tool: { name: OUTPUT_TOOL_NAME, input: { answer: 'forty-two', score: 42 } } },
        },
      ],
    });
    const result = await providerFor(sim).call(ask({ schema: answerSchema }));
    expect(result.structured).toEqual({ answer: 'forty-two', score: 42 });
    expect(JSON.parse(result.text)).toEqual({ answer: 'forty-two', score: 42 });
    expect(sim.requests).toHaveLength(1);
    const body = sim.requests[0]?.body as Record<string, unknown>;
    expect(body['tools']).toEqual([
      {
        name: 'emit_output',
        description: expect.stringMatching(/final answer/i),
        input_schema: answerSchema,
      },
    ]);
    expect(body['tool_choice']).toEqual({ type: 'tool', name: 'emit_output' });
  });

  it('extracts JSON the model wrote in prose instead of calling the tool', async () => {
    const sim = await start({
      rules: [{ reply: { text: 'Sure! Here it is: {"answer": "yes", "score": 3} — hope that helps.' } }],
    });
    const result = await providerFor(sim).call(ask({ schema: answerSchema }));
    expect(result.structured).toEqual({ answer: 'yes', score: 3 });
    expect(result.text).toBe('{"answer":"yes","score":3}');
    expect(sim.requests).toHaveLength(1);
  });

  it('wraps a schema that is not an object in { value } and unwraps the answer', async () => {
    const sim = await start({
      rules: [{ reply: { tool: { name: OUTPUT_TOOL_NAME, input: { value: ['a', 'b'] } } } }],
    });
    const listSchema = { type: 'array', items: { type: 'string' } };
    const result = await providerFor(sim).call(ask({ schema: listSchema }));
    expect(result.structured).toEqual(['a', 'b']);
    const body = sim.requests[0]?.body as { tools: { input_schema: unknown }[] };
    expect(body.tools[0]?.input_schema).toEqual({
      type: 'object',
      properties: { value: listSchema },
      required: ['value'],
    });
    expect(sim.requests).toHaveLength(1);
  });

  it('fails with SCHEMA, the raw input and the errors when the tool input breaks the schema', async () => {
    const sim = await start({
      rules: [{ reply: { tool: { name: OUTPUT_TOOL_NAME, input: { answer: 7, score: -1 } } } }],
    });
    const error = await failure(providerFor(sim).call(ask({ schema: answerSchema })));
    expect(error.code).toBe('SCHEMA');
    expect(error.provider).toBe('anthropic');
    expect(error.details?.['raw']).toBe('{"answer":7,"score":-1}');
    expect(error.details?.['errors']).toEqual(['/answer: must be string', '/score: must be >= 0']);
    expect(sim.requests).toHaveLength(1);
  });

  it('fails with SCHEMA when the text holds no JSON', async () => {
    const sim = await start({ rules: [{ reply: { text: 'I would rather not answer in JSON.' } }] });
    const error = await failure(providerFor(sim).call(ask({ schema: answerSchema })));
    expect(error.code).toBe('SCHEMA');
    expect(error.details?.['raw']).toBe('I would rather not answer in JSON.');
    expect(error.details?.['errors']).toEqual(['the answer holds no JSON value']);
    expect(sim.requests).toHaveLength(1);
  });

  it('rejects an invalid schema before sending anything', async () => {
    const sim = await start({});
    const error = await failure(providerFor(sim).call(ask({ schema: { type: 'no-such-type' } })));
    expect(error.code).toBe('INVALID_INPUT');
    expect(sim.requests).toHaveLength(0);
  });
});

describe('anthropic provider: tools and conversations', () => {
  const readFile: ToolDefinition = {
    name: 'read_file',
    description: 'Reads a file.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  };

  it('sends the tools and the conversation as tool_use / tool_result blocks, and returns the calls the model made', async () => {
    const sim = await start({
      rules: [
        {
          match: { turn: 2, text: 'no such file' },
          reply: { text: 'Trying b.', tool: { id: 'toolu_2', name: 'read_file', input: { path: 'b.txt' } } },
        },
      ],
    });
    const result = await providerFor(sim).call(
      ask({
        prompt: 'What do the notes say?',
        tools: [readFile],
        toolChoice: 'required',
        messages: [
          {
            role: 'assistant',
            text: 'Let me read them.',
            toolCalls: [{ id: 'toolu_1', name: 'read_file', input: { path: 'a.txt' } }],
          },
          {
            role: 'tool',
            results: [{ id: 'toolu_1', name: 'read_file', content: 'no such file', isError: true }],
          },
        ],
      }),
    );
    expect(result.text).toBe('Trying b.');
    expect(result.toolCalls).toEqual([{ id: 'toolu_2', name: 'read_file', input: { path: 'b.txt' } }]);
    const body = sim.requests[0]?.body as Record<string, unknown>;
    expect(body['tools']).toEqual([
      { name: 'read_file', description: 'Reads a file.', input_schema: readFile.inputSchema },
    ]);
    expect(body['tool_choice']).toEqual({ type: 'any' });
    expect(body['messages']).toEqual([
      { role: 'user', content: 'What do the notes say?' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me read them.' },
          { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'a.txt' } },
        ],
      },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'no such file', is_error: true }],
      },
    ]);
  });

  it('lets the model choose with toolChoice auto, and a text answer has no toolCalls', async () => {
    const sim = await start({
      rules: [{ match: { tools: 'read_file' }, reply: { text: 'Nothing to read.' } }],
    });
    const result = await providerFor(sim).call(ask({ tools: [readFile] }));
    expect(result.text).toBe('Nothing to read.');
    expect(result).not.toHaveProperty('toolCalls');
    expect((sim.requests[0]?.body as Record<string, unknown>)['tool_choice']).toEqual({ type: 'auto' });
  });
});

describe('anthropic provider: faults', () => {
  const cases: {
    name: string;
    fault: NonNullable<Scenario['rules']>[number]['fault'];
    code: string;
    retryable: boolean;
    timeoutMs?: number;
    retryAfterMs?: number;
  }[] = [
    {
      name: '429 with retry-after',
      fault: { status: 429, retryAfter: 7 },
      code: 'RATE_LIMITED',
      retryable: true,
      retryAfterMs: 7000,
    },
    { name: '529 overload', fault: { kind: 'overload' }, code: 'OVERLOADED', retryable: true },
    { name: '500', fault: { status: 500 }, code: 'PROVIDER_ERROR', retryable: true },
    { name: '401', fault: { status: 401 }, code: 'AUTH', retryable: false },
    { name: 'drop-before', fault: { kind: 'drop-before' }, code: 'PROVIDER_UNAVAILABLE', retryable: true },
    { name: 'drop-during', fault: { kind: 'drop-during' }, code: 'PROVIDER_ERROR', retryable: true },
    { name: 'stall', fault: { kind: 'stall' }, code: 'TIMEOUT', retryable: true, timeoutMs: 300 },
    { name: 'malformed body', fault: { kind: 'malformed' }, code: 'PARSE', retryable: true },
  ];

  it.each(cases)('$name → $code after exactly one request', async (testCase) => {
    const sim = await start({ rules: [{ fault: testCase.fault }] });
    const request = ask(testCase.timeoutMs === undefined ? {} : { timeoutMs: testCase.timeoutMs });
    const error = await failure(providerFor(sim).call(request));
    expect(error.code).toBe(testCase.code);
    expect(error.retryable).toBe(testCase.retryable);
    expect(error.provider).toBe('anthropic');
    if (testCase.retryAfterMs !== undefined) expect(error.retryAfterMs).toBe(testCase.retryAfterMs);
    expect(everythingShown(error)).not.toContain(API_KEY);
    expect(sim.requests).toHaveLength(1);
  });

  it('names the base URL when the server cannot be reached', async () => {
    const sim = await start({ rules: [{ fault: { kind: 'drop-before' } }] });
    const error = await failure(providerFor(sim).call(ask()));
    expect(error.message).toContain(sim.url);
    expect(error.hint).toMatch(new RegExp(`is the server at ${sim.url}.* reachable`));
  });

  it('maps an abort to ABORTED, not retryable', async () => {
    const sim = await start({ rules: [{ fault: { kind: 'stall' } }] });
    const controller = new AbortController();
    const started = performance.now();
    const pending = failure(providerFor(sim).call(ask({ abortSignal: controller.signal })));
    // Aborted while the request is in flight (the simulator stalls it), not before it leaves.
    await waitFor(() => sim.requests.length > 0, { what: 'the request to reach the simulator' });
    controller.abort();
    const error = await pending;
    expect(error.code).toBe('ABORTED');
    expect(error.retryable).toBe(false);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(sim.requests).toHaveLength(1);
    const aborted = await failure(providerFor(sim).call(ask({ abortSignal: AbortSignal.abort() })));
    expect(aborted.code).toBe('ABORTED');
    expect(sim.requests).toHaveLength(1);
  });

  it('fails with AUTH naming ANTHROPIC_API_KEY, before any request, when there is no key', async () => {
    const sim = await start({});
    vi.stubEnv('ANTHROPIC_API_KEY', '');
    const error = await failure(createAnthropicProvider({ baseUrl: sim.url }).call(ask()));
    expect(error.code).toBe('AUTH');
    expect(error.retryable).toBe(false);
    expect(error.hint).toContain('ANTHROPIC_API_KEY');
    expect(sim.requests).toHaveLength(0);
  });

  it('never repeats the key, even when the server echoes it back', async () => {
    const sim = await start({
      rules: [{ fault: { status: 401, message: `invalid x-api-key: ${API_KEY}` } }],
    });
    const error = await failure(providerFor(sim).call(ask()));
    expect(error.code).toBe('AUTH');
    expect(error.message).toContain('[redacted]');
    expect(everythingShown(error)).not.toContain(API_KEY);
    expect(sim.requests).toHaveLength(1);
  });
});

describe('anthropic provider: options', () => {
  it.each([
    [{ timeoutMs: 0 }, '"timeoutMs"'],
    [{ maxTokens: 1.5 }, '"maxTokens"'],
    [{ baseUrl: 'not a url' }, '"baseUrl"'],
  ] as const)('rejects %o with a message naming the option', (options, named) => {
    expect(() => createAnthropicProvider(options)).toThrow(named);
  });

  it('rejects an empty prompt before sending anything', async () => {
    const sim = await start({});
    const error = await failure(providerFor(sim).call(ask({ prompt: '  ' })));
    expect(error.code).toBe('INVALID_INPUT');
    expect(sim.requests).toHaveLength(0);
  });
});

describe('anthropic provider: streaming with onText', () => {
  const longText =
    'Streaming sends the answer in pieces. Each piece reaches onText as soon as it arrives, ' +
    'in order, and the pieces joined are the whole answer that the call returns at the end.';

  it('hands each text delta to onText in order and returns what the non-streaming call returns', async () => {
    const sim = await start({
      rules: [
        {
          reply: {
            text: longText,
            model: 'claude-sonnet-4-5-20250929',
            usage: { input: 1000, output: 200, cacheRead: 4000, cacheWrite: 800 },
            chunkDelayMs: 15,
          },
        },
      ],
    });
    const provider = providerFor(sim);
    const plain = await provider.call(ask({ system: 'be brief' }));

    const deltas: { text: string; at: number }[] = [];
    const streamed = await provider.call(
      ask({ system: 'be brief', onText: (delta) => deltas.push({ text: delta, at: performance.now() }) }),
    );
    const finishedAt = performance.now();

    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.map((delta) => delta.text).join('')).toBe(longText);
    // The first piece came while the rest of the answer was still on its way.
    expect(finishedAt - (deltas[0]?.at ?? finishedAt)).toBeGreaterThanOrEqual(15 * (deltas.length - 2));
    expect(streamed.text).toBe(longText);
    expect(streamed).toMatchObject({
      success: true,
      text: plain.text,
      provider: plain.provider,
      modelRequested: plain.modelRequested,
      modelUsed: 'claude-sonnet-4-5-20250929',
      usage: { inputTokens: 1000, outputTokens: 200, cacheReadTokens: 4000, cacheWriteTokens: 800 },
      costUsd: plain.costUsd,
      rateLimited: false,
      warnings: [],
    });
    expect(streamed.usage).toEqual(plain.usage);
    expect(streamed.costUsd).toBeCloseTo((1000 * 3 + 200 * 15 + 4000 * 0.3 + 800 * 3.75) / 1_000_000, 10);
    expect(streamed.attempts).toEqual([
      {
        provider: 'anthropic:claude-sonnet-4-6',
        model: 'claude-sonnet-4-6',
        durationMs: streamed.durationMs,
      },
    ]);
    expect(sim.requests).toHaveLength(2);
    expect(sim.requests[0]?.stream).toBe(false);
    expect(sim.requests[1]?.stream).toBe(true);
    expect(sim.requests[1]?.body).toEqual({
      model: 'claude-sonnet-4-6',
      max_tokens: 4096,
      system: 'be brief',
      messages: [{ role: 'user', content: 'hello' }],
      stream: true,
    });
  });

  it('hands no text to onText after the deadline, even when the rest of the stream is read before its timer runs', async () => {
    // The whole answer arrives at once; the first piece's callback holds the event loop past the
    // deadline, as a starved worker would, so the rest is read from the buffer before any timer runs.
    const sim = await start({ rules: [{ reply: { text: longText, chunkDelayMs: 0 } }] });
    const deltas: string[] = [];
    const error = await failure(
      providerFor(sim, { timeoutMs: 1_000 }).call(
        ask({
          onText: (delta) => {
            deltas.push(delta);
            if (deltas.length > 1) return;
            const until = performance.now() + 1_100;
            while (performance.now() < until);
          },
        }),
      ),
    );
    expect(error.code).toBe('TIMEOUT');
    expect(deltas).toHaveLength(1);
  });

  it('warns when the streamed answer hit maxTokens', async () => {
    const sim = await start({
      rules: [{ reply: { text: longText, usage: { input: 10, output: 20 }, stopReason: 'max_tokens' } }],
    });
    const deltas: string[] = [];
    const result = await providerFor(sim, { maxTokens: 20 }).call(
      ask({ onText: (delta) => deltas.push(delta) }),
    );
    expect(deltas.join('')).toBe(longText);
    expect(result.usage).toMatchObject({ inputTokens: 10, outputTokens: 20 });
    expect(result.warnings).toEqual(['the answer stopped at the maxTokens limit (20); it may be cut off']);
    expect(sim.requests[0]?.stream).toBe(true);
  });

  it('drop-during → PROVIDER_ERROR, retryable, after some deltas were delivered', async () => {
    const sim = await start({ rules: [{ fault: { kind: 'drop-during' } }] });
    const deltas: string[] = [];
    const error = await failure(providerFor(sim).call(ask({ onText: (delta) => deltas.push(delta) })));
    expect(deltas.length).toBeGreaterThanOrEqual(1);
    expect(error.code).toBe('PROVIDER_ERROR');
    expect(error.retryable).toBe(true);
    expect(error.provider).toBe('anthropic');
    expect(everythingShown(error)).not.toContain(API_KEY);
    expect(sim.requests).toHaveLength(1);
    expect(sim.requests[0]?.stream).toBe(true);
  });

  it('stall before the first byte → TIMEOUT with no delta', async () => {
    const sim = await start({ rules: [{ fault: { kind: 'stall' } }] });
    const deltas: string[] = [];
    const started = performance.now();
    const error = await failure(
      providerFor(sim).call(ask({ timeoutMs: 300, onText: (delta) => deltas.push(delta) })),
    );
    expect(error.code).toBe('TIMEOUT');
    expect(error.retryable).toBe(true);
    expect(error.message).toContain('300 ms');
    expect(deltas).toEqual([]);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(sim.requests).toHaveLength(1);
    expect(sim.requests[0]?.stream).toBe(true);
  });

  it('a stream that stalls after its headers → TIMEOUT within the call timeout', async () => {
    const sim = await start({ rules: [{ reply: { text: longText, firstTokenDelayMs: 10_000 } }] });
    const deltas: string[] = [];
    const started = performance.now();
    const error = await failure(
      providerFor(sim).call(ask({ timeoutMs: 300, onText: (delta) => deltas.push(delta) })),
    );
    expect(error.code).toBe('TIMEOUT');
    expect(error.retryable).toBe(true);
    expect(deltas).toEqual([]);
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('an abort in the middle of the stream → ABORTED, not retryable', async () => {
    const sim = await start({ rules: [{ reply: { text: longText, chunkDelayMs: 50 } }] });
    const controller = new AbortController();
    const deltas: string[] = [];
    const error = await failure(
      providerFor(sim).call(
        ask({
          abortSignal: controller.signal,
          onText: (delta) => {
            deltas.push(delta);
            controller.abort();
          },
        }),
      ),
    );
    expect(error.code).toBe('ABORTED');
    expect(error.retryable).toBe(false);
    expect(deltas).toHaveLength(1);
  });

  it('a malformed stream → PARSE', async () => {
    const sim = await start({ rules: [{ fault: { kind: 'malformed' } }] });
    const error = await failure(providerFor(sim).call(ask({ onText: () => undefined })));
    expect(error.code).toBe('PARSE');
    expect(error.retryable).toBe(true);
    expect(sim.requests[0]?.stream).toBe(true);
  });

  it('does not stream a call with a schema, and says so in a warning', async () => {
    const sim = await start({
      rules: [{ reply: { tool: { name: OUTPUT_TOOL_NAME, input: { answer: 'forty-two', score: 42 } } } }],
    });
    const deltas: string[] = [];
    const result = await providerFor(sim).call(
      ask({ schema: answerSchema, onText: (delta) => deltas.push(delta) }),
    );
    expect(result.structured).toEqual({ answer: 'forty-two', score: 42 });
    expect(result.warnings).toContain('streaming is not used with a schema');
    expect(deltas).toEqual([]);
    expect(sim.requests).toHaveLength(1);
    expect(sim.requests[0]?.stream).toBe(false);
    expect(sim.requests[0]?.body).not.toHaveProperty('stream');
  });
});
