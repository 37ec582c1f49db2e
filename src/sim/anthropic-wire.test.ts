import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { rawPost } from './__fixtures__/raw-client.js';
import type { Scenario } from './scenario.js';
import { startSimulator, type Simulator } from './server.js';

const simulators: Simulator[] = [];
afterEach(async () => {
  await Promise.all(simulators.splice(0).map((sim) => sim.close()));
});

async function start(scenario: Scenario): Promise<Simulator> {
  const sim = await startSimulator({ scenario });
  simulators.push(sim);
  return sim;
}

const anthropic = (sim: Simulator) =>
  new Anthropic({ baseURL: sim.url, apiKey: 'sk-ant-secret-value', maxRetries: 0 });
const ask = {
  model: 'claude-haiku-4-5',
  max_tokens: 1024,
  messages: [{ role: 'user' as const, content: 'think first' }],
};
const THOUGHT = 'The user wants an answer. I should weigh both options before replying, then keep it short.';

/** The conversation continued with an assistant turn, as a client sends it back. */
const continued = (content: Anthropic.ContentBlockParam[]): Anthropic.MessageCreateParamsNonStreaming => ({
  ...ask,
  messages: [...ask.messages, { role: 'assistant', content }, { role: 'user', content: 'go on' }],
});

describe('simulator: Anthropic thinking', () => {
  it('streams a signed thinking block the SDK assembles, and verifies it when sent back', async () => {
    const sim = await start({ rules: [], fallback: { thinking: THOUGHT, text: 'the answer' } });
    const client = anthropic(sim);
    const streamed = await client.messages.stream(ask).finalMessage();
    const [thinking, text] = streamed.content;
    expect(thinking).toMatchObject({ type: 'thinking', thinking: THOUGHT });
    const signature = (thinking as Anthropic.ThinkingBlock).signature;
    expect(signature.length).toBeGreaterThan(20);
    expect(text).toEqual({ type: 'text', text: 'the answer' });
    // The same text gets the same signature, streamed or not.
    const plain = await client.messages.create(ask);
    expect(plain.content[0]).toEqual({ type: 'thinking', thinking: THOUGHT, signature });

    const accepted = await client.messages.create(continued(streamed.content));
    expect(accepted.content.at(-1)).toEqual({ type: 'text', text: 'the answer' });

    const edited = { ...(thinking as Anthropic.ThinkingBlock), thinking: `${THOUGHT} (trimmed by a proxy)` };
    const refused: unknown = await client.messages
      .create(continued([edited, text as Anthropic.TextBlock]))
      .catch((error: unknown) => error);
    if (!(refused instanceof Anthropic.BadRequestError)) throw new Error('expected a 400');
    expect(refused.error).toEqual({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message: 'messages.1.content.0: Invalid `signature` in `thinking` block',
      },
    });
    expect(sim.requests.at(-1)).toMatchObject({
      outcome: 'invalid_request',
      status: 400,
      error: 'messages.1.content.0: Invalid `signature` in `thinking` block',
    });
  });

  it('streams thinking as thinking_delta pieces and one signature_delta', async () => {
    const sim = await start({ rules: [], fallback: { thinking: THOUGHT, text: 'done' } });
    const exchange = await rawPost(`${sim.url}/v1/messages`, { ...ask, stream: true });
    const events = exchange.events.map((event) => JSON.parse(event.data) as Record<string, unknown>);
    const ofBlock0 = events.filter((event) => event['index'] === 0);
    expect(ofBlock0[0]).toEqual({
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'thinking', thinking: '', signature: '' },
    });
    const deltas = ofBlock0.slice(1, -1).map((event) => event['delta'] as Record<string, string>);
    const thinkingDeltas = deltas.filter((delta) => delta['type'] === 'thinking_delta');
    expect(thinkingDeltas.length).toBeGreaterThan(1);
    expect(thinkingDeltas.map((delta) => delta['thinking']).join('')).toBe(THOUGHT);
    expect(deltas.filter((delta) => delta['type'] === 'signature_delta')).toHaveLength(1);
    expect(deltas.at(-1)?.['type']).toBe('signature_delta');
    expect(ofBlock0.at(-1)).toEqual({ type: 'content_block_stop', index: 0 });
  });

  it("refuses another simulator's signature: each signs with its own secret", async () => {
    const first = await start({ rules: [], fallback: { thinking: THOUGHT, text: 'a' } });
    const second = await start({ rules: [], fallback: { text: 'b' } });
    const answer = await anthropic(first).messages.create(ask);
    await expect(anthropic(second).messages.create(continued(answer.content))).rejects.toMatchObject({
      status: 400,
    });
    await expect(anthropic(first).messages.create(continued(answer.content))).resolves.toMatchObject({
      content: [{ type: 'thinking' }, { type: 'text', text: 'a' }],
    });
  });

  it('issues redacted thinking it accepts back, and refuses data it did not issue', async () => {
    const sim = await start({ rules: [], fallback: { redactedThinking: true, text: 'answer' } });
    const client = anthropic(sim);
    const streamed = await client.messages.stream(ask).finalMessage();
    const [redacted, text] = streamed.content;
    expect(redacted).toMatchObject({ type: 'redacted_thinking', data: expect.any(String) });
    expect(text).toEqual({ type: 'text', text: 'answer' });
    const plain = await client.messages.create(ask);
    expect(plain.content.map((block) => block.type)).toEqual(['redacted_thinking', 'text']);
    await expect(client.messages.create(continued(streamed.content))).resolves.toBeDefined();
    const forged = {
      type: 'redacted_thinking' as const,
      data: Buffer.from('x'.repeat(48)).toString('base64'),
    };
    await expect(client.messages.create(continued([forged]))).rejects.toMatchObject({
      status: 400,
      error: { error: { message: 'messages.1.content.0: Invalid `data` in `redacted_thinking` block' } },
    });
  });
});

describe('simulator: Anthropic server tools', () => {
  it('answers a server_tool_use block and its result before the text, streamed and not', async () => {
    const result = [
      {
        type: 'web_search_result',
        url: 'https://example.com/lisbon',
        title: 'Lisbon weather',
        encrypted_content: 'opaque',
        page_age: null,
      },
    ];
    const sim = await start({
      rules: [],
      fallback: {
        serverTool: { name: 'web_search', input: { query: 'weather in Lisbon' }, result },
        text: 'Sunny.',
      },
    });
    const client = anthropic(sim);
    for (const message of [
      await client.messages.stream(ask).finalMessage(),
      await client.messages.create(ask),
    ]) {
      const [use, searched, text] = message.content;
      expect(use).toEqual({
        type: 'server_tool_use',
        id: expect.stringMatching(/^srvtoolu_/),
        name: 'web_search',
        input: { query: 'weather in Lisbon' },
      });
      expect(searched).toEqual({
        type: 'web_search_tool_result',
        tool_use_id: (use as Anthropic.ServerToolUseBlock).id,
        content: result,
      });
      expect(text).toEqual({ type: 'text', text: 'Sunny.' });
      expect(message.stop_reason).toBe('end_turn');
    }
    const exchange = await rawPost(`${sim.url}/v1/messages`, { ...ask, stream: true });
    const deltas = exchange.events
      .map((event) => JSON.parse(event.data) as { type: string; index?: number; delta?: { type: string } })
      .filter((event) => event.type === 'content_block_delta' && event.index === 0);
    expect(deltas.map((event) => event.delta?.type)).toContain('input_json_delta');
  });
});

describe('simulator: Anthropic stream timing and usage', () => {
  it('waits contentDelayMs after message_start and its ping, before the first content block', async () => {
    const sim = await start({ rules: [], fallback: { text: 'late', contentDelayMs: 400 } });
    const exchange = await rawPost(`${sim.url}/v1/messages`, { ...ask, stream: true });
    const names = exchange.events.map((event) => event.event);
    expect(names.slice(0, 3)).toEqual(['message_start', 'ping', 'content_block_start']);
    const [started = 0, , content = 0] = exchange.arrivals;
    expect(started).toBeLessThan(300);
    expect(content - started).toBeGreaterThanOrEqual(350);
  });

  it('reports the real input tokens in message_start, the same the JSON answer reports', async () => {
    const sim = await start({ rules: [], fallback: { text: 'counted' } });
    const long = { ...ask, messages: [{ role: 'user' as const, content: 'a longer prompt '.repeat(40) }] };
    const exchange = await rawPost(`${sim.url}/v1/messages`, { ...long, stream: true });
    const start_ = JSON.parse(exchange.events[0]?.data ?? '{}') as {
      message: { usage: { input_tokens: number } };
    };
    const plain = await anthropic(sim).messages.create(long);
    expect(plain.usage.input_tokens).toBeGreaterThan(100);
    expect(start_.message.usage.input_tokens).toBe(plain.usage.input_tokens);
    const streamed = await anthropic(sim).messages.stream(long).finalMessage();
    expect(streamed.usage.input_tokens).toBe(plain.usage.input_tokens);
  });
});

describe('simulator: log and models', () => {
  it('logs the anthropic-beta header and no credential; GET /v1/models answers both SDKs', async () => {
    const sim = await start({});
    const client = anthropic(sim);
    await client.messages.create(ask, {
      headers: { 'anthropic-beta': 'interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14' },
    });
    const [entry] = sim.requests;
    expect(entry?.headers['anthropic-beta']).toBe(
      'interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14',
    );
    expect(entry?.wire).toBe('anthropic');
    expect(JSON.stringify(sim.requests)).not.toContain('sk-ant-secret-value');
    expect(entry?.headers).not.toHaveProperty('x-api-key');

    const models: unknown[] = [];
    for await (const model of client.models.list()) models.push(model);
    expect(models).toEqual([]);
    const openai = new OpenAI({ baseURL: sim.openAiBaseUrl, apiKey: 'sk-openai-secret', maxRetries: 0 });
    const listed = await openai.models.list();
    expect(listed.data).toEqual([]);
    expect(sim.requests.slice(1).map((request) => [request.path, request.outcome])).toEqual([
      ['/v1/models', 'models'],
      ['/v1/models', 'models'],
    ]);
    expect(JSON.stringify(sim.requests)).not.toContain('sk-openai-secret');
  });
});
