import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { registerSecret, resetSecrets } from '../../core/secrets.js';
import type { Wire } from './models.js';
import { formatEvent, SseSplitter } from './sse.js';
import { StreamRedactor } from './stream-redaction.js';

const KNOWN = 'canary-stream-Q7v9"x2\\Lm4';
const SHAPED = 'sk-ant-api03-ZyXwVuTsRqPoNmLkJiHgFeDcBa0987';

/** A stream of `pieces` as deltas of one text channel in `wire`, then the channel's end. */
function stream(wire: Wire, pieces: string[], tool = false): string[] {
  if (wire === 'anthropic') {
    const type = tool ? 'input_json_delta' : 'text_delta';
    const field = tool ? 'partial_json' : 'text';
    return [
      formatEvent('message_start', { type: 'message_start', message: { id: 'm', usage: {} } }),
      formatEvent('content_block_start', { type: 'content_block_start', index: 0 }),
      ...pieces.map((piece) =>
        formatEvent('content_block_delta', {
          type: 'content_block_delta',
          index: 0,
          delta: { type, [field]: piece },
        }),
      ),
      formatEvent('content_block_stop', { type: 'content_block_stop', index: 0 }),
      formatEvent('message_stop', { type: 'message_stop' }),
    ];
  }
  if (wire === 'chat') {
    const chunk = (delta: unknown, finish: string | null) =>
      formatEvent(undefined, {
        id: 'c',
        object: 'chat.completion.chunk',
        choices: [{ index: 0, delta, finish_reason: finish }],
      });
    return [
      ...pieces.map((piece) =>
        chunk(
          tool ? { tool_calls: [{ index: 0, function: { arguments: piece } }] } : { content: piece },
          null,
        ),
      ),
      chunk({}, 'stop'),
      'data: [DONE]\n\n',
    ];
  }
  let sequence = 0;
  const type = tool ? 'response.function_call_arguments' : 'response.output_text';
  return [
    formatEvent('response.created', { type: 'response.created', sequence_number: sequence++ }),
    ...pieces.map((piece) =>
      formatEvent(`${type}.delta`, {
        type: `${type}.delta`,
        item_id: 'i',
        output_index: 0,
        content_index: 0,
        delta: piece,
        sequence_number: sequence++,
      }),
    ),
    formatEvent(`${type}.done`, {
      type: `${type}.done`,
      item_id: 'i',
      output_index: 0,
      sequence_number: sequence++,
    }),
    formatEvent('response.completed', { type: 'response.completed', sequence_number: sequence++ }),
  ];
}

/** The fields of a sent event that carry text, in any of the three wires. */
interface Sent {
  sequence_number?: number;
  delta?: string | { text?: string; partial_json?: string };
  choices?: { delta?: { content?: string; tool_calls?: { function?: { arguments?: string } }[] } }[];
}

interface Received {
  text: string;
  names: (string | undefined)[];
  sequence: number[];
}

/** What a client reads: the channel's text put back together, the events' names and sequence numbers. */
function receive(wire: Wire, sent: string): Received {
  const received: Received = { text: '', names: [], sequence: [] };
  for (const event of new SseSplitter().push(sent)) {
    received.names.push(event.name);
    if (event.data === undefined || event.data === '[DONE]') continue;
    const data = JSON.parse(event.data) as Sent;
    if (typeof data.sequence_number === 'number') received.sequence.push(data.sequence_number);
    if (wire === 'anthropic' && typeof data.delta === 'object') {
      received.text += data.delta.text ?? data.delta.partial_json ?? '';
    } else if (wire === 'chat') {
      const delta = data.choices?.[0]?.delta;
      received.text += delta?.content ?? delta?.tool_calls?.[0]?.function?.arguments ?? '';
    } else if (typeof data.delta === 'string') received.text += data.delta;
  }
  return received;
}

function run(wire: Wire, events: string[], between?: string): string {
  const redactor = new StreamRedactor(wire);
  let out = '';
  for (const event of events) {
    out += redactor.redact(event);
    if (between !== undefined) out += redactor.redact(between);
  }
  return out + redactor.flush();
}

/** Every 8-character piece of `secret`: none may reach the client. */
function pieces(secret: string): string[] {
  const found: string[] = [];
  for (let at = 0; at + 8 <= secret.length; at += 1) found.push(secret.slice(at, at + 8));
  return found;
}

const WIRES: Wire[] = ['anthropic', 'chat', 'responses'];

beforeEach(() => {
  resetSecrets();
  registerSecret(KNOWN);
});
afterEach(() => resetSecrets());

describe('StreamRedactor', () => {
  for (const wire of WIRES) {
    it(`${wire}: a known secret cut at any point between two deltas reaches the client as [redacted]`, () => {
      const text = `before ${KNOWN} after`;
      for (let cut = 1; cut < text.length; cut += 1) {
        const received = receive(wire, run(wire, stream(wire, [text.slice(0, cut), text.slice(cut)])));
        expect(received.text, `cut at ${cut}`).toBe('before [redacted] after');
      }
    });

    it(`${wire}: a key shape sent a few characters per event reaches the client as [redacted], no piece of it`, () => {
      const text = `key: ${SHAPED}. done`;
      for (const size of [1, 2, 3, 5, 7]) {
        const chunks: string[] = [];
        for (let at = 0; at < text.length; at += size) chunks.push(text.slice(at, at + size));
        const sent = run(wire, stream(wire, chunks));
        expect(receive(wire, sent).text, `pieces of ${size}`).toBe('key: [redacted]. done');
        for (const piece of pieces(SHAPED)) expect(sent).not.toContain(piece);
      }
    });

    it(`${wire}: a stream with no secret passes byte for byte, keep-alives in between`, () => {
      const events = stream(wire, ['Hello', ' world, ', 'this is fine. A', ' plan', ' with s', 'ome words']);
      const keepAlive = wire === 'anthropic' ? 'event: ping\ndata: {"type": "ping"}\n\n' : ': keep-alive\n\n';
      const sent = run(wire, events);
      expect(receive(wire, sent).text).toBe('Hello world, this is fine. A plan with some words');
      expect(run(wire, [events.join('')])).toBe(events.join(''));
      // A keep-alive between the pieces releases nothing: the key is still cut whole.
      const text = `x ${SHAPED} y`;
      const cutAt = 10;
      const withPings = run(wire, stream(wire, [text.slice(0, cutAt), text.slice(cutAt)]), keepAlive);
      expect(receive(wire, withPings).text).toBe('x [redacted] y');
    });

    it(`${wire}: what is held goes out before the event that ends the channel, and no event is invented`, () => {
      const events = stream(wire, ['the end is s', 'k']);
      const sent = run(wire, events);
      const received = receive(wire, sent);
      expect(received.text).toBe('the end is sk');
      expect(received.names).toEqual(receive(wire, events.join('')).names);
      expect(received.sequence).toEqual([...received.sequence].sort((a, b) => a - b));
      expect(new Set(received.sequence).size).toBe(received.sequence.length);
    });

    it(`${wire}: a secret JSON-escaped in a tool call's arguments, cut anywhere, is redacted whole`, () => {
      const json = JSON.stringify({ note: `use ${KNOWN} now` });
      const escaped = JSON.stringify(KNOWN).slice(1, -1);
      for (let cut = 1; cut < json.length; cut += 1) {
        const received = receive(wire, run(wire, stream(wire, [json.slice(0, cut), json.slice(cut)], true)));
        expect(received.text, `cut at ${cut}`).toBe(JSON.stringify({ note: 'use [redacted] now' }));
        expect(received.text).not.toContain(escaped.slice(0, 12));
      }
    });
  }

  it('the password of a URL cut before its @ is redacted with the scheme already sent', () => {
    const received = receive(
      'anthropic',
      run('anthropic', stream('anthropic', ['proxy http://bob:hunter2', 'xyz@host ok'])),
    );
    expect(received.text).toBe('proxy http://bob:[redacted]@host ok');
  });

  it('a stream that ends while text is held sends it at the end, and a held event is never lost', () => {
    const redactor = new StreamRedactor('anthropic');
    const [start, block, delta] = stream('anthropic', ['ends with AI']);
    const sent = redactor.redact(start! + block! + delta!);
    expect(receive('anthropic', sent).text).toBe('');
    expect(receive('anthropic', sent + redactor.flush()).text).toBe('ends with AI');
  });

  it('text held back is bounded: a key-shaped run longer than the bound goes out as [redacted] before it ends', () => {
    const long = `sk-${'a'.repeat(1000)}`;
    const chunks: string[] = [];
    for (let at = 0; at < long.length; at += 50) chunks.push(long.slice(at, at + 50));
    const events = stream('chat', [...chunks, ' and after']);
    const redactor = new StreamRedactor('chat');
    let sent = '';
    for (const event of events.slice(0, chunks.length)) sent += redactor.redact(event);
    expect(receive('chat', sent).text).toBe('[redacted]');
    for (const event of events.slice(chunks.length)) sent += redactor.redact(event);
    sent += redactor.flush();
    expect(receive('chat', sent).text).toBe('[redacted] and after');
    expect(sent).not.toContain('aaaaaaaa');
  });
});
