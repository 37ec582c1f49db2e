import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { rawPost, type RawExchange } from './__fixtures__/raw-client.js';
import type { Scenario, SimWire } from './scenario.js';
import { startSimulator, type Simulator } from './server.js';

let simulator: Simulator | undefined;
afterEach(async () => {
  await simulator?.close();
  simulator = undefined;
});

const FAULT_KINDS = ['drop-after', 'error-event', 'garbage-after', 'stall-after'] as const;

/** One rule per fault kind, matched by the kind's name in the user's text. */
const scenario = (events: number): Scenario => ({
  rules: FAULT_KINDS.map((kind) => ({ match: { text: kind }, fault: { kind, events } })),
});

async function start(events: number): Promise<Simulator> {
  simulator = await startSimulator({ scenario: scenario(events) });
  return simulator;
}

/** A streamed request on one wire, saying `text`. */
function ask(
  sim: Simulator,
  wire: Exclude<SimWire, 'gemini'>,
  text: string,
  idleMs = 1_000,
): Promise<RawExchange> {
  switch (wire) {
    case 'anthropic':
      return rawPost(
        `${sim.url}/v1/messages`,
        {
          model: 'claude-haiku-4-5',
          max_tokens: 64,
          stream: true,
          messages: [{ role: 'user', content: text }],
        },
        { idleMs },
      );
    case 'chat':
      return rawPost(
        `${sim.openAiBaseUrl}/chat/completions`,
        { model: 'gpt-5-mini', stream: true, messages: [{ role: 'user', content: text }] },
        { idleMs },
      );
    case 'responses':
      return rawPost(
        `${sim.openAiBaseUrl}/responses`,
        { model: 'gpt-5-mini', stream: true, input: text },
        { idleMs },
      );
  }
}

/** The event that ends a complete stream on each wire: none of the faults may send it. */
const COMPLETE: Record<Exclude<SimWire, 'gemini'>, (exchange: RawExchange) => boolean> = {
  anthropic: (exchange) => exchange.events.some((event) => event.event === 'message_stop'),
  chat: (exchange) => exchange.events.some((event) => event.data === '[DONE]'),
  responses: (exchange) => exchange.events.some((event) => event.event === 'response.completed'),
};

describe.each(['anthropic', 'chat', 'responses'] as const)(
  'simulator: stream faults on the %s wire',
  (wire) => {
    it('drop-after: the first N events, then the connection resets', async () => {
      const sim = await start(3);
      const exchange = await ask(sim, wire, 'drop-after');
      expect(exchange.status).toBe(200);
      expect(exchange.events).toHaveLength(3);
      expect(exchange.ending).toBe('reset');
      expect(COMPLETE[wire](exchange)).toBe(false);
      expect(sim.requests[0]).toMatchObject({ outcome: 'fault:drop-after', wire });
    });

    it("error-event: N events, the wire's own error event, and a clean end", async () => {
      const sim = await start(2);
      const exchange = await ask(sim, wire, 'error-event');
      expect(exchange.ending).toBe('end');
      expect(exchange.events).toHaveLength(3);
      expect(COMPLETE[wire](exchange)).toBe(false);
      const last = exchange.events[2];
      const data = JSON.parse(last?.data ?? '{}') as Record<string, unknown>;
      if (wire === 'anthropic') {
        expect(last?.event).toBe('error');
        expect(data).toEqual({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
      } else if (wire === 'chat') {
        expect(last?.event).toBeUndefined();
        expect(data).toMatchObject({ error: { type: 'server_error', message: expect.any(String) } });
      } else {
        expect(last?.event).toBe('response.failed');
        expect(data).toMatchObject({
          type: 'response.failed',
          sequence_number: 2,
          response: { status: 'failed', error: { code: 'server_error', message: expect.any(String) } },
        });
      }
    });

    it('garbage-after: N events, one data line that is not JSON, and a clean end', async () => {
      const sim = await start(2);
      const exchange = await ask(sim, wire, 'garbage-after');
      expect(exchange.ending).toBe('end');
      expect(exchange.events.map((event) => event.data).slice(2)).toEqual(['{this is not json']);
      expect(exchange.text.endsWith('data: {this is not json\n\n')).toBe(true);
    });

    it('stall-after: N events, then silence with the connection open', async () => {
      const sim = await start(2);
      const exchange = await ask(sim, wire, 'stall-after', 300);
      expect(exchange.ending).toBe('silent');
      expect(exchange.events).toHaveLength(2);
    });
  },
);

describe('simulator: the event-counting faults asked for JSON', () => {
  const json = (sim: Simulator, text: string, idleMs = 1_000) =>
    rawPost(
      `${sim.url}/v1/messages`,
      { model: 'claude-haiku-4-5', max_tokens: 64, messages: [{ role: 'user', content: text }] },
      { idleMs },
    );

  it('drop-after cuts the body, error-event is the overload error, garbage-after is not JSON, stall-after never sends the body', async () => {
    const sim = await start(2);
    const dropped = await json(sim, 'drop-after');
    expect(dropped).toMatchObject({ status: 200, ending: 'reset' });
    expect(dropped.text.length).toBeGreaterThan(0);
    expect(() => JSON.parse(dropped.text) as unknown).toThrow();
    const overloaded = await json(sim, 'error-event');
    expect(overloaded.status).toBe(529);
    expect(JSON.parse(overloaded.text)).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message: 'Overloaded' },
    });
    const garbage = await json(sim, 'garbage-after');
    expect(garbage).toMatchObject({ status: 200, ending: 'end', text: '{this is not json' });
    const stalled = await json(sim, 'stall-after', 300);
    expect(stalled).toMatchObject({ status: 200, ending: 'silent', text: '' });
  });
});

describe('simulator: stream faults seen through the SDKs', () => {
  it("Anthropic: error-event rejects the stream with the API's overloaded error", async () => {
    const sim = await start(3);
    const client = new Anthropic({ baseURL: sim.url, apiKey: 'sk-ant-x', maxRetries: 0 });
    const request = {
      model: 'claude-haiku-4-5',
      max_tokens: 64,
      messages: [{ role: 'user' as const, content: 'error-event' }],
    };
    await expect(client.messages.stream(request).finalMessage()).rejects.toMatchObject({
      error: { type: 'error', error: { type: 'overloaded_error' } },
    });
    // Asked for JSON, drop-after cuts the body after the 200 headers: reading it fails.
    await expect(
      client.messages.create({ ...request, messages: [{ role: 'user', content: 'drop-after' }] }),
    ).rejects.toThrow(/terminated/);
  });

  it('OpenAI: error-event throws from the chat stream and ends the Responses stream failed', async () => {
    const sim = await start(2);
    const client = new OpenAI({ baseURL: sim.openAiBaseUrl, apiKey: 'sk-openai-x', maxRetries: 0 });
    const chat = await client.chat.completions.create({
      model: 'gpt-5-mini',
      stream: true,
      messages: [{ role: 'user', content: 'error-event' }],
    });
    await expect(
      (async () => {
        for await (const chunk of chat) void chunk;
      })(),
    ).rejects.toBeInstanceOf(OpenAI.APIError);
    const stream = client.responses.stream({ model: 'gpt-5-mini', input: 'error-event' });
    const types: string[] = [];
    stream.on('event', (event) => types.push(event.type));
    await expect(stream.finalResponse()).resolves.toMatchObject({
      status: 'failed',
      error: { code: 'server_error' },
      output: [],
    });
    expect(types).toEqual(['response.created', 'response.in_progress', 'response.failed']);
  });
});
