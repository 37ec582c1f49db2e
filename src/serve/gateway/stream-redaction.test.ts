import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { registerSecret, resetSecrets } from '../../core/secrets.js';
import type { Wire } from './models.js';
import { formatEvent, SseSplitter } from './sse.js';
import { redactedAnswer, StreamRedactor } from './stream-redaction.js';

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

    it(`${wire}: a key glued to the word before it is redacted in pieces; a known value anywhere; words ending in s or sk- are not`, () => {
      const text = `key: x${SHAPED}. done`;
      for (const size of [1, 2, 3, 5, 7]) {
        const chunks: string[] = [];
        for (let at = 0; at < text.length; at += size) chunks.push(text.slice(at, at + size));
        const sent = run(wire, stream(wire, chunks));
        // The prefix's first letters may have gone out before the key was known; its characters did not.
        expect(receive(wire, sent).text, `pieces of ${size}`).toMatch(/^key: x(?:s|sk)?\[redacted\]\. done$/);
        for (const piece of pieces(SHAPED)) expect(sent).not.toContain(piece);
      }
      const known = `id${KNOWN}x`;
      for (let cut = 1; cut < known.length; cut += 1) {
        const received = receive(wire, run(wire, stream(wire, [known.slice(0, cut), known.slice(cut)])));
        expect(received.text, `known value cut at ${cut}`).toBe('id[redacted]x');
      }
      const words = stream(wire, ['the tasks', ' and risk-', 'management-framework-for-teams', ' pass']);
      expect(receive(wire, run(wire, words)).text).toBe(
        'the tasks and risk-management-framework-for-teams pass',
      );
      const plural = stream(wire, ['the tasks', ' and the risks', ' pass']);
      expect(run(wire, plural)).toBe(plural.join(''));
    });

    it(`${wire}: a stream with no secret passes byte for byte, keep-alives in between`, () => {
      const plain = stream(wire, ['Hello', ' world, ', 'this is fine', ' with some', ' words']);
      expect(run(wire, [plain.join('')])).toBe(plain.join(''));
      // Text that might begin a key ("A", "s") moves to the next delta; the whole is the same.
      const events = stream(wire, ['Hello', ' world, ', 'this is fine. A', ' plan', ' with s', 'ome words']);
      expect(receive(wire, run(wire, events)).text).toBe('Hello world, this is fine. A plan with some words');
      // A keep-alive between the pieces releases nothing: the key is still cut whole.
      const keepAlive = wire === 'anthropic' ? 'event: ping\ndata: {"type": "ping"}\n\n' : ': keep-alive\n\n';
      const text = `x ${SHAPED} y`;
      const cutAt = 10;
      const withPings = run(wire, stream(wire, [text.slice(0, cutAt), text.slice(cutAt)]), keepAlive);
      expect(receive(wire, withPings).text).toBe('x [redacted] y');
    });

    it(`${wire}: what is held goes out as one more delta before the event that ends the channel`, () => {
      const events = stream(wire, ['the end is s', 'k']);
      const received = receive(wire, run(wire, events));
      expect(received.text).toBe('the end is sk');
      const names = receive(wire, events.join('')).names;
      // One delta more, just before the channel's end; Responses' numbers stay consecutive.
      const end = wire === 'anthropic' ? names.indexOf('content_block_stop') : names.length - 2;
      expect(received.names).toEqual([...names.slice(0, end), names[end - 1], ...names.slice(end)]);
      if (wire === 'responses') {
        expect(received.sequence).toEqual(received.sequence.map((_, index) => index));
      }
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

    it(`${wire}: a secret written with \\u escapes in a tool call's arguments, cut anywhere, is redacted; the JSON stays valid`, () => {
      // Every character of the known value escaped; the key shape's first letter only, as a model may write it.
      const spelled = [...KNOWN].map(
        (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`,
      );
      const json = `{"note":"use ${spelled.join('')} and \\u0073${SHAPED.slice(1)} now","x":"caf\\u00e9"}`;
      expect(JSON.parse(json)).toEqual({ note: `use ${KNOWN} and ${SHAPED} now`, x: 'café' });
      const expected = { note: 'use [redacted] and [redacted] now', x: 'café' };
      for (let cut = 1; cut < json.length; cut += 1) {
        const sent = run(wire, stream(wire, [json.slice(0, cut), json.slice(cut)], true));
        expect(JSON.parse(receive(wire, sent).text), `cut at ${cut}`).toEqual(expected);
        expect(sent).not.toContain(SHAPED.slice(1, 12));
      }
      for (const size of [1, 2, 3, 5, 7]) {
        const chunks: string[] = [];
        for (let at = 0; at < json.length; at += size) chunks.push(json.slice(at, at + size));
        const sent = run(wire, stream(wire, chunks, true));
        expect(JSON.parse(receive(wire, sent).text), `pieces of ${size}`).toEqual(expected);
        for (const piece of pieces(SHAPED.slice(1))) expect(sent).not.toContain(piece);
        // No three escaped characters of the known value in a row either, as the events write them.
        for (let at = 0; at + 3 <= spelled.length; at += 1) {
          expect(sent).not.toContain(JSON.stringify(spelled.slice(at, at + 3).join('')).slice(1, -1));
        }
      }
      // Escapes that spell no secret pass as they came.
      const plain = stream(wire, ['{"x":"caf\\u00e9 ', 'and \\u00fc"}'], true);
      expect(run(wire, plain)).toBe(plain.join(''));
    });
  }

  it('the password of a URL cut before its @ is redacted with the scheme already sent', () => {
    const received = receive(
      'anthropic',
      run('anthropic', stream('anthropic', ['proxy http://bob:hunter2', 'xyz@host ok'])),
    );
    expect(received.text).toBe('proxy http://bob:[redacted]@host ok');
  });

  it('a stream that ends while text is held sends it at the end; the beginning of a key cut off is not sent', () => {
    const redactor = new StreamRedactor('anthropic');
    const [start, block, delta] = stream('anthropic', ['ends with AI']);
    const sent = redactor.redact(start! + block! + delta!);
    expect(receive('anthropic', sent).text).toBe('ends with ');
    expect(receive('anthropic', sent + redactor.flush()).text).toBe('ends with AI');
    // A stream that breaks off inside a key: its first characters are not handed out either.
    const cut = new StreamRedactor('anthropic');
    const halfKey = stream('anthropic', [`the key ${SHAPED.slice(0, 18)}`])
      .slice(0, 3)
      .join('');
    expect(receive('anthropic', cut.redact(halfKey) + cut.flush()).text).toBe('the key [redacted]');
  });

  it('a secret cut across deltas stays whole while other events come between (citations, annotations, other channels)', () => {
    const text = `one ${KNOWN} two`;
    for (let at = 1; at < text.length; at += 3) {
      // Anthropic: a citation between two text deltas of one block.
      const anthropic = stream('anthropic', [text.slice(0, at), text.slice(at)]);
      const citation = formatEvent('content_block_delta', {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'citations_delta', citation: { cited_text: 'x' } },
      });
      anthropic.splice(3, 0, citation);
      expect(receive('anthropic', run('anthropic', anthropic)).text, `cut at ${at}`).toBe(
        'one [redacted] two',
      );
      // Chat: two choices interleaved, each with its own secret cut at the same place.
      const chunk = (index: number, content: string) =>
        formatEvent(undefined, { id: 'c', choices: [{ index, delta: { content }, finish_reason: null }] });
      const chat = [
        chunk(0, text.slice(0, at)),
        chunk(1, text.slice(0, at)),
        chunk(0, text.slice(at)),
        chunk(1, text.slice(at)),
        formatEvent(undefined, { id: 'c', choices: [{ index: 1, delta: {}, finish_reason: 'stop' }] }),
        formatEvent(undefined, { id: 'c', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }),
        'data: [DONE]\n\n',
      ];
      const sent = run('chat', chat);
      const byChoice = ['', ''];
      for (const event of new SseSplitter().push(sent)) {
        if (event.data === undefined || event.data === '[DONE]') continue;
        const data = JSON.parse(event.data) as { choices: { index: number; delta: { content?: string } }[] };
        for (const choice of data.choices) byChoice[choice.index] += choice.delta.content ?? '';
      }
      expect(byChoice, `cut at ${at}`).toEqual(['one [redacted] two', 'one [redacted] two']);
      // Responses: an annotation between two deltas of one item.
      const responses = stream('responses', [text.slice(0, at), text.slice(at)]);
      responses.splice(
        2,
        0,
        formatEvent('response.output_text.annotation.added', {
          type: 'response.output_text.annotation.added',
          item_id: 'i',
          sequence_number: 1,
        }),
      );
      expect(receive('responses', run('responses', responses)).text, `cut at ${at}`).toBe(
        'one [redacted] two',
      );
    }
  });

  it('a Chat audio transcript is a channel too, and an event whose text changed loses its log probabilities', () => {
    const text = `say ${SHAPED} now`;
    const events = [8, 16, 30].map((at, index, cuts) =>
      formatEvent(undefined, {
        id: 'c',
        choices: [
          {
            index: 0,
            delta: { audio: { transcript: text.slice(index === 0 ? 0 : cuts[index - 1], at) } },
            logprobs: { content: [{ token: text.slice(index === 0 ? 0 : cuts[index - 1], at) }] },
            finish_reason: null,
          },
        ],
      }),
    );
    events.push(
      formatEvent(undefined, {
        id: 'c',
        choices: [{ index: 0, delta: { audio: { transcript: text.slice(30) } }, finish_reason: 'stop' }],
      }),
    );
    const sent = run('chat', events);
    let transcript = '';
    for (const event of new SseSplitter().push(sent)) {
      if (event.data === undefined) continue;
      const data = JSON.parse(event.data) as { choices: { delta: { audio?: { transcript?: string } } }[] };
      transcript += data.choices[0]?.delta.audio?.transcript ?? '';
    }
    expect(transcript).toBe('say [redacted] now');
    for (const piece of pieces(SHAPED)) expect(sent).not.toContain(piece);
  });

  it('a key written with JSON escapes in an event is redacted as the client will read it', () => {
    const escaped = SHAPED.replace('sk-', '\\u0073k-');
    const raw = `event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":"${escaped}"}}\n\n`;
    const sent = run('anthropic', [raw]);
    expect(sent).not.toContain(SHAPED.slice(3, 20));
    expect(sent).toContain('[redacted]');
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

  it('a whole answer: untouched without a secret; else redacted, escapes read, log probabilities dropped', () => {
    const answer = (content: string) => ({
      id: 'c',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content },
          logprobs: { content: [content.slice(0, 12), content.slice(12)].map((token) => ({ token })) },
        },
      ],
    });
    const clean = JSON.stringify(answer('nothing to hide here'));
    expect(redactedAnswer(clean, JSON.parse(clean))).toBe(clean);
    const leaking = JSON.stringify(answer(`key ${SHAPED}`));
    const sent = redactedAnswer(leaking, JSON.parse(leaking));
    expect(JSON.parse(sent)).toMatchObject({
      choices: [{ message: { content: 'key [redacted]' }, logprobs: null }],
    });
    for (const piece of pieces(SHAPED)) expect(sent).not.toContain(piece);
    const escaped = leaking.replace('sk-', '\\u0073k-');
    const unescaped = redactedAnswer(escaped, JSON.parse(escaped));
    expect(JSON.parse(unescaped)).toMatchObject({ choices: [{ message: { content: 'key [redacted]' } }] });
  });
});
