import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
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
