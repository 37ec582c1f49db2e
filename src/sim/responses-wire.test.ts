import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { rawPost } from './__fixtures__/raw-client.js';
import type { Scenario } from './scenario.js';
import { startSimulator, type Simulator } from './server.js';

let simulator: Simulator | undefined;
afterEach(async () => {
  await simulator?.close();
  simulator = undefined;
});

async function start(scenario: Scenario): Promise<Simulator> {
  simulator = await startSimulator({ scenario });
  return simulator;
}

const openai = (sim: Simulator) =>
  new OpenAI({ baseURL: sim.openAiBaseUrl, apiKey: 'sk-openai-secret', maxRetries: 0 });
const TEXT = 'a Responses answer long enough to arrive in several deltas';
const lookup = {
  type: 'function' as const,
  name: 'lookup',
  parameters: { type: 'object', properties: { q: { type: 'string' } } },
  strict: false,
};

describe('simulator: OpenAI Responses', () => {
  it('answers responses.create with text, usage and the system prompt from instructions', async () => {
    const sim = await start({
      rules: [
        { match: { wire: 'chat' }, reply: { text: 'chat answer' } },
        {
          match: { wire: 'responses', system: 'terse' },
          reply: { text: TEXT, usage: { input: 12, output: 5, cacheRead: 3 } },
        },
      ],
    });
    const response = await openai(sim).responses.create({
      model: 'gpt-5-mini',
      instructions: 'Be terse.',
      input: 'hello',
    });
    expect(response.id).toMatch(/^resp_/);
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe(TEXT);
    expect(response.output).toEqual([
      {
        type: 'message',
        id: expect.any(String),
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: TEXT, annotations: [] }],
      },
    ]);
    expect(response.usage).toEqual({
      input_tokens: 15,
      output_tokens: 5,
      total_tokens: 20,
      input_tokens_details: { cached_tokens: 3 },
      output_tokens_details: { reasoning_tokens: 0 },
    });
    expect(sim.requests[0]).toMatchObject({ provider: 'openai', wire: 'responses', text: 'hello' });
    const chat = await openai(sim).chat.completions.create({
      model: 'gpt-5-mini',
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect(chat.choices[0]?.message.content).toBe('chat answer');
  });

  it('calls functions and counts a function_call_output as the next turn', async () => {
    const sim = await start({
      rules: [
        {
          match: { wire: 'responses', turn: 1, tools: 'lookup' },
          reply: { tool: { name: 'lookup', input: { q: 'x' } } },
        },
        { match: { wire: 'responses', turn: 2, text: 'found' }, reply: { text: 'it says found' } },
      ],
    });
    const client = openai(sim);
    const first = await client.responses.create({
      model: 'gpt-5-mini',
      input: 'look it up',
      tools: [lookup],
    });
    const call = first.output[0];
    if (call?.type !== 'function_call') throw new Error('expected a function call');
    expect(call).toMatchObject({ name: 'lookup', arguments: '{"q":"x"}', call_id: expect.any(String) });
    const second = await client.responses.create({
      model: 'gpt-5-mini',
      tools: [lookup],
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'look it up' }] },
        { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
        { type: 'function_call_output', call_id: call.call_id, output: 'found' },
      ],
    });
    expect(second.output_text).toBe('it says found');
    expect(sim.requests.map((entry) => [entry.turn, entry.tools])).toEqual([
      [1, ['lookup']],
      [2, ['lookup']],
    ]);
  });

  it('streams numbered events the SDK assembles into the final response', async () => {
    const sim = await start({
      rules: [],
      fallback: { text: TEXT, tool: { name: 'lookup', input: { q: 'y' } } },
    });
    const stream = openai(sim).responses.stream({ model: 'gpt-5-mini', input: 'hi', tools: [lookup] });
    const seen: { type: string; sequence: number }[] = [];
    let deltas = '';
    stream.on('event', (event) => seen.push({ type: event.type, sequence: event.sequence_number }));
    stream.on('response.output_text.delta', (event) => (deltas += event.delta));
    const final = await stream.finalResponse();
    expect(final.output_text).toBe(TEXT);
    expect(deltas).toBe(TEXT);
    expect(final.output.map((item) => item.type)).toEqual(['message', 'function_call']);
    expect(final.output[1]).toMatchObject({ name: 'lookup', arguments: '{"q":"y"}' });
    expect(final.usage?.total_tokens).toBeGreaterThan(0);
    expect(seen.map((event) => event.sequence)).toEqual(seen.map((_, index) => index));
    const types = seen.map((event) => event.type);
    expect(types.slice(0, 4)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    expect(types.filter((type) => type === 'response.output_text.delta').length).toBeGreaterThan(1);
    expect(types).toContain('response.function_call_arguments.delta');
    expect(types.slice(-5)).toEqual([
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
  });

  it('sends each event with its type on the event: line', async () => {
    const sim = await start({ rules: [], fallback: { text: 'short' } });
    const exchange = await rawPost(`${sim.openAiBaseUrl}/responses`, {
      model: 'm',
      input: 'hi',
      stream: true,
    });
    expect(exchange.ending).toBe('end');
    for (const event of exchange.events) {
      expect((JSON.parse(event.data) as { type: string }).type).toBe(event.event);
    }
    expect(exchange.text).not.toContain('[DONE]');
  });

  it('refuses previous_response_id with a 400: the simulator keeps no responses', async () => {
    const sim = await start({});
    await expect(
      openai(sim).responses.create({ model: 'gpt-5-mini', input: 'again', previous_response_id: 'resp_1' }),
    ).rejects.toMatchObject({ status: 400, error: { type: 'invalid_request_error' } });
    expect(sim.requests[0]).toMatchObject({ outcome: 'invalid_request', status: 400, wire: 'responses' });
  });

  it('conforms to text.format json_schema and to a forced function', async () => {
    const sim = await start({ rules: [], fallback: { conform: true } });
    const schema = {
      type: 'object',
      properties: { verdict: { type: 'string', enum: ['approve', 'revise'] } },
      required: ['verdict'],
      additionalProperties: false,
    };
    const client = openai(sim);
    const json = await client.responses.create({
      model: 'gpt-5-mini',
      input: 'review',
      text: { format: { type: 'json_schema', name: 'verdict', schema } },
    });
    expect(JSON.parse(json.output_text)).toEqual({ verdict: 'approve' });
    const forced = await client.responses.create({
      model: 'gpt-5-mini',
      input: 'review',
      tools: [{ type: 'function', name: 'emit', parameters: schema, strict: true }],
      tool_choice: { type: 'function', name: 'emit' },
    });
    expect(forced.output[0]).toMatchObject({
      type: 'function_call',
      name: 'emit',
      arguments: '{"verdict":"approve"}',
    });
    // `required` with the answer tool beside another (the tool loop): the answer calls emit_output.
    const required = await client.responses.create({
      model: 'gpt-5-mini',
      input: 'review',
      tools: [
        { type: 'function', name: 'lookup', parameters: { type: 'object' }, strict: false },
        { type: 'function', name: 'emit_output', parameters: schema, strict: true },
      ],
      tool_choice: 'required',
    });
    expect(required.output[0]).toMatchObject({
      type: 'function_call',
      name: 'emit_output',
      arguments: '{"verdict":"approve"}',
    });
  });
});
