import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { FunctionCallingConfigMode, GoogleGenAI, Type } from '@google/genai';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from './server.js';
import type { Scenario } from './scenario.js';

let simulator: Simulator | undefined;
afterEach(async () => {
  await simulator?.close();
  simulator = undefined;
});

async function start(scenario: Scenario, logFile?: string): Promise<Simulator> {
  simulator = await startSimulator(logFile === undefined ? { scenario } : { scenario, logFile });
  return simulator;
}

const anthropic = (sim: Simulator, options: { maxRetries?: number; timeout?: number } = {}) =>
  new Anthropic({ baseURL: sim.url, apiKey: 'sk-ant-secret-value', maxRetries: 0, ...options });
const openai = (sim: Simulator) =>
  new OpenAI({ baseURL: sim.openAiBaseUrl, apiKey: 'sk-openai-secret', maxRetries: 0 });
const gemini = (sim: Simulator) =>
  new GoogleGenAI({ apiKey: 'gemini-secret', httpOptions: { baseUrl: sim.url } });
const ask = {
  model: 'claude-haiku-4-5',
  max_tokens: 64,
  messages: [{ role: 'user' as const, content: 'hello' }],
};

describe('simulator: Anthropic Messages', () => {
  it('answers JSON and SSE with text, usage and the model to report', async () => {
    const sim = await start({
      rules: [
        {
          match: { model: 'opus' },
          reply: {
            text: 'from the rule',
            model: 'claude-sonnet-4-5',
            usage: { input: 11, output: 7, cacheRead: 5, cacheWrite: 3 },
          },
        },
      ],
    });
    const client = anthropic(sim);
    const plain = await client.messages.create({ ...ask, model: 'claude-opus-4-1' });
    expect(plain.content).toEqual([{ type: 'text', text: 'from the rule' }]);
    expect(plain.model).toBe('claude-sonnet-4-5');
    expect(plain.usage).toMatchObject({
      input_tokens: 11,
      output_tokens: 7,
      cache_read_input_tokens: 5,
      cache_creation_input_tokens: 3,
    });
    const streamed = await client.messages.stream({ ...ask, model: 'claude-opus-4-1' }).finalMessage();
    expect(streamed.content).toEqual([{ type: 'text', text: 'from the rule' }]);
    expect(streamed.usage.output_tokens).toBe(7);
    const fallback = await client.messages.create(ask);
    expect(fallback.content).toEqual([{ type: 'text', text: 'ok' }]);
  });

  it('scripts tool calls by turn and counts tokens', async () => {
    const sim = await start({
      rules: [
        {
          match: { tools: 'write', turn: 1 },
          reply: { tool: { name: 'Write', input: { file_path: 'a.txt', content: 'hi' } } },
        },
        { match: { turn: 2 }, reply: { text: 'done' } },
      ],
    });
    const client = anthropic(sim);
    const tools = [{ name: 'Write', input_schema: { type: 'object' as const } }];
    const first = await client.messages.stream({ ...ask, tools }).finalMessage();
    expect(first.stop_reason).toBe('tool_use');
    const call = first.content[0];
    expect(call).toMatchObject({
      type: 'tool_use',
      name: 'Write',
      input: { file_path: 'a.txt', content: 'hi' },
    });
    const second = await client.messages.create({
      ...ask,
      tools,
      messages: [
        ...ask.messages,
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: (call as { id: string }).id, content: 'written' }],
        },
      ],
    });
    expect(second.content).toEqual([{ type: 'text', text: 'done' }]);
    expect(sim.requests.map((entry) => entry.turn)).toEqual([1, 2]);
    const counted = await client.messages.countTokens({ model: ask.model, messages: ask.messages });
    expect(counted.input_tokens).toBeGreaterThan(0);
  });

  it('faults: 429 with retry-after, 529 overload, dropped connection, stall, malformed body', async () => {
    const sim = await start({
      rules: [
        { match: { text: 'limit' }, fault: { status: 429, retryAfter: 7 } },
        { match: { text: 'busy' }, fault: { kind: 'overload' } },
        { match: { text: 'drop' }, fault: { kind: 'drop-before' } },
        { match: { text: 'cut' }, fault: { kind: 'drop-during' } },
        { match: { text: 'stall' }, fault: { kind: 'stall' } },
        { match: { text: 'garbage' }, fault: { kind: 'malformed' } },
      ],
    });
    const client = anthropic(sim);
    const say = (content: string) =>
      client.messages.create({ ...ask, messages: [{ role: 'user', content }] });
    await expect(say('limit')).rejects.toMatchObject({ status: 429, headers: expect.anything() });
    const limited: unknown = await say('limit').catch((error: unknown) => error);
    if (!(limited instanceof Anthropic.APIError)) throw new Error('expected an API error');
    expect(limited.headers?.get('retry-after')).toBe('7');
    expect(limited.error).toMatchObject({ error: { type: 'rate_limit_error' } });
    await expect(say('busy')).rejects.toMatchObject({ status: 529 });
    await expect(say('drop')).rejects.toBeInstanceOf(Anthropic.APIConnectionError);
    await expect(
      client.messages.stream({ ...ask, messages: [{ role: 'user', content: 'cut' }] }).finalMessage(),
    ).rejects.toThrow();
    await expect(
      anthropic(sim, { timeout: 300 }).messages.create({
        ...ask,
        messages: [{ role: 'user', content: 'stall' }],
      }),
    ).rejects.toBeInstanceOf(Anthropic.APIConnectionTimeoutError);
    await expect(say('garbage')).rejects.toThrow();
  });

  it('fires a rule only `times` times and only `after` it was passed over', async () => {
    const sim = await start({
      rules: [
        { match: { text: 'retry' }, times: 2, fault: { status: 429, retryAfterMs: 1 } },
        { match: { text: 'late' }, after: 1, reply: { text: 'second time lucky' } },
      ],
    });
    const client = anthropic(sim, { maxRetries: 2 });
    const recovered = await client.messages.create({
      ...ask,
      messages: [{ role: 'user', content: 'retry please' }],
    });
    expect(recovered.content).toEqual([{ type: 'text', text: 'ok' }]);
    expect(sim.requests.map((entry) => entry.status)).toEqual([429, 429, 200]);
    const say = (content: string) =>
      client.messages.create({ ...ask, messages: [{ role: 'user', content }] });
    expect((await say('late')).content).toEqual([{ type: 'text', text: 'ok' }]);
    expect((await say('late')).content).toEqual([{ type: 'text', text: 'second time lucky' }]);
  });
});

describe('simulator: OpenAI chat completions', () => {
  it('answers plain, streamed, tool calls, JSON output and errors', async () => {
    const sim = await start({
      rules: [
        { match: { provider: 'openai', text: 'json' }, reply: { json: { answer: 42 } } },
        {
          match: { provider: 'openai', tools: true },
          reply: { tool: { name: 'lookup', input: { q: 'x' } } },
        },
        { match: { provider: 'openai', text: 'limit' }, fault: { status: 429, retryAfter: 1 } },
        {
          match: { provider: 'openai' },
          reply: { text: 'streamed words arrive in several chunks here', usage: { input: 9, output: 4 } },
        },
      ],
    });
    const client = openai(sim);
    const plain = await client.chat.completions.create({
      model: 'gpt-4.1-mini',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(plain.choices[0]?.message.content).toBe('streamed words arrive in several chunks here');
    expect(plain.usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 4 });
    const stream = await client.chat.completions.create({
      model: 'gpt-4.1-mini',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta.content ?? '';
    }
    expect(text).toBe('streamed words arrive in several chunks here');
    expect(chunks).toBeGreaterThan(2);
    const json = await client.chat.completions.create({
      model: 'gpt-4.1-mini',
      messages: [{ role: 'user', content: 'give json' }],
      response_format: { type: 'json_object' },
    });
    expect(JSON.parse(json.choices[0]?.message.content ?? '')).toEqual({ answer: 42 });
    const tool = await client.chat.completions.create({
      model: 'gpt-4.1-mini',
      messages: [{ role: 'user', content: 'look it up' }],
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
    });
    expect(tool.choices[0]?.message.tool_calls?.[0]).toMatchObject({
      function: { name: 'lookup', arguments: '{"q":"x"}' },
    });
    await expect(
      client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'limit' }] }),
    ).rejects.toMatchObject({ status: 429 });
  });
});

describe('simulator: Gemini', () => {
  it('answers generateContent and streamGenerateContent, function calls and quota errors', async () => {
    const sim = await start({
      rules: [
        {
          match: { provider: 'gemini', text: 'weather' },
          reply: { tool: { name: 'get_weather', input: { city: 'Lisbon' } } },
        },
        { match: { provider: 'gemini', text: 'quota' }, fault: { status: 429 } },
        {
          match: { provider: 'gemini', model: 'pro' },
          reply: { text: 'served by flash instead of pro', model: 'gemini-2.5-flash' },
        },
      ],
    });
    const client = gemini(sim);
    const plain = await client.models.generateContent({ model: 'gemini-2.5-pro', contents: 'hello' });
    expect(plain.text).toBe('served by flash instead of pro');
    expect(plain.modelVersion).toBe('gemini-2.5-flash');
    let streamed = '';
    for await (const chunk of await client.models.generateContentStream({
      model: 'gemini-2.5-pro',
      contents: 'hello',
    })) {
      streamed += chunk.text ?? '';
    }
    expect(streamed).toBe('served by flash instead of pro');
    const call = await client.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: 'weather please',
    });
    expect(call.functionCalls).toEqual([{ name: 'get_weather', args: { city: 'Lisbon' } }]);
    await expect(
      client.models.generateContent({ model: 'gemini-2.5-flash', contents: 'quota' }),
    ).rejects.toThrow(/429|RESOURCE_EXHAUSTED/);
  });
});

describe('simulator: conforming answers (`conform: true`)', () => {
  const verdict = {
    type: 'object',
    properties: {
      verdict: { type: 'string', enum: ['approve', 'revise'] },
      score: { type: 'number', minimum: 0, maximum: 10 },
      approved: { type: 'boolean' },
      findings: { type: 'array', items: { type: 'string' } },
    },
    required: ['verdict', 'score', 'approved', 'findings'],
  };
  const conforming = { verdict: 'approve', score: 10, approved: true, findings: ['sample finding'] };

  it("Anthropic: the forced tool, Claude Code's StructuredOutput until it ran, the JSON output format, else text", async () => {
    const sim = await start({ rules: [], fallback: { conform: true, text: 'plain answer' } });
    const client = anthropic(sim);
    const forced = {
      ...ask,
      tools: [
        { name: 'lookup', input_schema: { type: 'object' as const } },
        { name: 'emit_output', input_schema: verdict as Anthropic.Tool.InputSchema },
      ],
      tool_choice: { type: 'tool' as const, name: 'emit_output' },
    };
    const plain = await client.messages.create(forced);
    expect(plain.stop_reason).toBe('tool_use');
    expect(plain.content).toEqual([
      expect.objectContaining({ type: 'tool_use', name: 'emit_output', input: conforming }),
    ]);
    const streamed = await client.messages.stream(forced).finalMessage();
    expect(streamed.content).toEqual([expect.objectContaining({ name: 'emit_output', input: conforming })]);

    // The tool loop asks "call some tool" with its answer tool among the read tools: the answer calls it.
    const any = { ...forced, tool_choice: { type: 'any' as const } };
    expect((await client.messages.create(any)).content).toEqual([
      expect.objectContaining({ type: 'tool_use', name: 'emit_output', input: conforming }),
    ]);
    expect((await client.messages.stream(any).finalMessage()).content).toEqual([
      expect.objectContaining({ name: 'emit_output', input: conforming }),
    ]);

    // Claude Code offers StructuredOutput beside its own tools, without forcing it, and asks again
    // once it has run: that turn ends with text.
    const claudeCodeTools = [
      { name: 'Read', input_schema: { type: 'object' as const } },
      { name: 'StructuredOutput', input_schema: verdict as Anthropic.Tool.InputSchema },
    ];
    const first = await client.messages.create({ ...ask, tools: claudeCodeTools });
    const call = first.content[0] as Anthropic.ToolUseBlock;
    expect(call).toMatchObject({ type: 'tool_use', name: 'StructuredOutput', input: conforming });
    const after = await client.messages.create({
      ...ask,
      tools: claudeCodeTools,
      messages: [
        ...ask.messages,
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: call.id, content: 'Structured output provided' }],
        },
      ],
    });
    expect(after.content).toEqual([{ type: 'text', text: 'plain answer' }]);

    const format = await client.messages.create({
      ...ask,
      output_format: { type: 'json_schema', schema: verdict },
    } as Anthropic.MessageCreateParamsNonStreaming);
    expect(JSON.parse((format.content[0] as Anthropic.TextBlock).text)).toEqual(conforming);
    const text = await client.messages.create({ ...ask, tools: [claudeCodeTools[0] as Anthropic.Tool] });
    expect(text.content).toEqual([{ type: 'text', text: 'plain answer' }]);
  });

  it('OpenAI: response_format json_schema and json_object, a forced function, else text', async () => {
    const sim = await start({ rules: [{ match: { provider: 'openai' }, reply: { conform: true } }] });
    const client = openai(sim);
    const messages = [{ role: 'user' as const, content: 'review this' }];
    const json = await client.chat.completions.create({
      model: 'gpt-4.1-mini',
      messages,
      response_format: { type: 'json_schema', json_schema: { name: 'output', schema: verdict } },
    });
    expect(JSON.parse(json.choices[0]?.message.content ?? '')).toEqual(conforming);
    const stream = await client.chat.completions.create({
      model: 'gpt-4.1-mini',
      messages,
      stream: true,
      response_format: { type: 'json_schema', json_schema: { name: 'output', schema: verdict } },
    });
    let streamed = '';
    for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? '';
    expect(JSON.parse(streamed)).toEqual(conforming);
    const object = await client.chat.completions.create({
      model: 'gpt-4.1-mini',
      messages,
      response_format: { type: 'json_object' },
    });
    expect(JSON.parse(object.choices[0]?.message.content ?? '')).toEqual({});
    const tool = await client.chat.completions.create({
      model: 'gpt-4.1-mini',
      messages,
      tools: [{ type: 'function', function: { name: 'emit_output', parameters: verdict } }],
      tool_choice: { type: 'function', function: { name: 'emit_output' } },
    });
    const toolCall = tool.choices[0]?.message.tool_calls?.[0];
    expect(toolCall?.type === 'function' ? JSON.parse(toolCall.function.arguments) : undefined).toEqual(
      conforming,
    );
    // `required` with the answer tool beside another (the tool loop): the answer calls emit_output.
    const required = await client.chat.completions.create({
      model: 'gpt-4.1-mini',
      messages,
      tools: [
        { type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } },
        { type: 'function', function: { name: 'emit_output', parameters: verdict } },
      ],
      tool_choice: 'required',
    });
    const requiredCall = required.choices[0]?.message.tool_calls?.[0];
    expect(requiredCall?.type === 'function' ? requiredCall.function.name : undefined).toBe('emit_output');
    expect(
      requiredCall?.type === 'function' ? JSON.parse(requiredCall.function.arguments) : undefined,
    ).toEqual(conforming);
    const text = await client.chat.completions.create({ model: 'gpt-4.1-mini', messages });
    expect(text.choices[0]?.message.content).toBe('ok');
  });

  it('Gemini: responseJsonSchema, responseSchema with its upper-case types, a forced function, else text', async () => {
    const sim = await start({ rules: [], fallback: { conform: true } });
    const client = gemini(sim);
    const json = await client.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: 'review this',
      config: { responseMimeType: 'application/json', responseJsonSchema: verdict },
    });
    expect(JSON.parse(json.text ?? '')).toEqual(conforming);
    const typed = await client.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: 'review this',
      config: {
        responseMimeType: 'application/json',
        responseSchema: {
          type: Type.OBJECT,
          properties: {
            ok: { type: Type.BOOLEAN },
            count: { type: Type.INTEGER, maximum: 3 },
            tags: { type: Type.ARRAY, items: { type: Type.STRING }, minItems: '2' },
          },
        },
      },
    });
    expect(JSON.parse(typed.text ?? '')).toEqual({ ok: true, count: 3, tags: ['sample tag', 'sample tag'] });
    const call = await client.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: 'review this',
      config: {
        tools: [{ functionDeclarations: [{ name: 'emit_output', parametersJsonSchema: verdict }] }],
        toolConfig: {
          functionCallingConfig: {
            mode: FunctionCallingConfigMode.ANY,
            allowedFunctionNames: ['emit_output'],
          },
        },
      },
    });
    expect(call.functionCalls).toEqual([{ name: 'emit_output', args: conforming }]);
    const text = await client.models.generateContent({ model: 'gemini-2.5-flash', contents: 'hello' });
    expect(text.text).toBe('ok');
  });
});

describe('simulator: request log', () => {
  it('logs every request as JSONL without credentials', async () => {
    const logFile = join(mkdtempSync(join(tmpdir(), 'switchboard-sim-')), 'requests.jsonl');
    const sim = await start({}, logFile);
    await anthropic(sim).messages.create(ask);
    await openai(sim).chat.completions.create({
      model: 'gpt-4.1-mini',
      messages: [{ role: 'user', content: 'hi' }],
    });
    await gemini(sim).models.generateContent({ model: 'gemini-2.5-flash', contents: 'hi' });
    const lines = readFileSync(logFile, 'utf8').trim().split('\n');
    expect(lines.map((line) => (JSON.parse(line) as { provider: string }).provider)).toEqual([
      'anthropic',
      'openai',
      'gemini',
    ]);
    const content = readFileSync(logFile, 'utf8');
    for (const secret of ['sk-ant-secret-value', 'sk-openai-secret', 'gemini-secret'])
      expect(content).not.toContain(secret);
    expect(sim.requests[0]).toMatchObject({
      text: 'hello',
      model: 'claude-haiku-4-5',
      outcome: 'reply',
      status: 200,
    });
  });

  it('rejects a malformed scenario with the key that is wrong', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'switchboard-sim-')), 'bad.yaml');
    writeFileSync(file, 'rules:\n  - match: { text: "(" }\n    reply: { text: x }\n');
    await expect(startSimulator({ scenario: file })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringMatching(/rules\.0\.match\.text/),
    });
    await expect(
      startSimulator({ scenario: { rules: [{ reply: { txt: 'x' } }] } as never }),
    ).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
  });
});
