/**
 * Redaction of a stream whose text arrives in pieces. A model that echoes a key writes it a few
 * characters per event, so redacting each event alone lets every piece through. Here each channel of
 * text (an Anthropic content block, a Chat choice's content or a tool call's arguments, a Responses
 * item's deltas) is read as one text: when a delta ends with what may be the start of a secret, that
 * event is held until the next delta of its channel says whether it is one, and then goes out with the
 * text up to the cut; the rest rides in the next event. An event that ends the channel (a block's stop,
 * a finish reason, a `.done`, an error, `[DONE]`) releases what is held first, so events keep their
 * order and no event is invented (Responses' `sequence_number`s stay as upstream sent them).
 *
 * Events with nothing held and nothing to redact pass byte for byte. What the secrets are is
 * `core/secrets.ts`'s one list; this file decides only where text may be cut.
 */

import { REDACTED, redactJsonText, secretPattern, secretStartAtEnd } from '../../core/secrets.js';
import type { Wire } from './models.js';
import { formatEvent, SseSplitter, type SseEvent } from './sse.js';

/** The most text held back on one channel while it may be the start of a secret. */
export const MAX_HELD_CHARS = 512;

/** How much of the text already sent on a channel is kept, for a secret's context (a URL before its password). */
const CONTEXT_CHARS = 512;

/** One text field of one event: Anthropic `delta.text`, Chat `delta.content`, Responses `delta`. */
interface Channel {
  key: string;
  /** The text is JSON (tool-call arguments): a secret in it is JSON-escaped. */
  json: boolean;
  text: string;
  set(text: string): void;
}

interface Found {
  channels: Channel[];
  /** The event also ends its channels (Chat's chunk with a `finish_reason`): nothing is held. */
  last: boolean;
}

interface Held {
  event: SseEvent;
  data: Record<string, unknown>;
  channel: Channel;
  /** The channel's text not yet sent: from where it may begin a secret to the end. */
  unsent: string;
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const ANTHROPIC_FIELDS: Record<string, { field: string; json: boolean }> = {
  text_delta: { field: 'text', json: false },
  thinking_delta: { field: 'thinking', json: false },
  input_json_delta: { field: 'partial_json', json: true },
};

function field(key: string, json: boolean, holder: Json, name: string): Channel {
  return {
    key,
    json,
    text: holder[name] as string,
    set: (text) => {
      holder[name] = text;
    },
  };
}

/** The text channels a delta event carries; undefined for any other event. */
function channelsOf(wire: Wire, data: Json): Found | undefined {
  if (wire === 'anthropic') {
    if (data['type'] !== 'content_block_delta' || !isObject(data['delta'])) return undefined;
    const delta = data['delta'];
    const shape = ANTHROPIC_FIELDS[String(delta['type'])];
    if (shape === undefined || typeof delta[shape.field] !== 'string') return undefined;
    return { channels: [field(`${String(data['index'])}`, shape.json, delta, shape.field)], last: false };
  }
  if (wire === 'chat') {
    const choices = data['choices'];
    if (!Array.isArray(choices) || choices.length === 0) return undefined;
    const channels: Channel[] = [];
    let last = false;
    for (const choice of choices) {
      if (!isObject(choice)) continue;
      if (choice['finish_reason'] !== null && choice['finish_reason'] !== undefined) last = true;
      const delta = choice['delta'];
      if (!isObject(delta)) continue;
      const index = String(choice['index']);
      for (const name of ['content', 'refusal', 'reasoning_content', 'reasoning']) {
        if (typeof delta[name] === 'string') channels.push(field(`${index}:${name}`, false, delta, name));
      }
      const calls = delta['tool_calls'];
      if (!Array.isArray(calls)) continue;
      for (const call of calls) {
        if (!isObject(call) || !isObject(call['function'])) continue;
        const fn = call['function'];
        if (typeof fn['arguments'] === 'string') {
          channels.push(field(`${index}:tool:${String(call['index'])}`, true, fn, 'arguments'));
        }
      }
    }
    return channels.length === 0 ? undefined : { channels, last };
  }
  const type = data['type'];
  if (typeof type !== 'string' || !type.endsWith('.delta') || typeof data['delta'] !== 'string') {
    return undefined;
  }
  const part = data['content_index'] ?? data['summary_index'] ?? '';
  const key = `${type}:${String(data['item_id'] ?? data['output_index'])}:${String(part)}`;
  return { channels: [field(key, type.includes('arguments'), data, 'delta')], last: false };
}

/** The text `full[from, to)` with every secret in it replaced; a secret begun before `from` was already sent for. */
function redactedRange(full: string, from: number, to: number, json: boolean): string {
  let out = '';
  let at = from;
  for (const match of full.matchAll(secretPattern(json))) {
    const start = match.index;
    const end = start + match[0].length;
    if (end <= from) continue;
    if (start >= to) break;
    if (start >= from) out += full.slice(at, start) + REDACTED;
    at = Math.min(end, to);
  }
  return out + full.slice(at, to);
}

/** Where the text of a channel may be cut: before any secret (whole or begun) that runs to its end. */
function cutOf(full: string, sent: number, json: boolean): number {
  let cut = secretStartAtEnd(full, json);
  for (const match of full.matchAll(secretPattern(json))) {
    if (match.index >= cut) break;
    if (match.index + match[0].length > cut) {
      cut = match.index;
      break;
    }
  }
  return Math.min(full.length, Math.max(cut, sent, full.length - MAX_HELD_CHARS));
}

function tail(text: string): string {
  return text.length > CONTEXT_CHARS ? text.slice(-CONTEXT_CHARS) : text;
}

/** One client stream's redaction, in the client's wire. */
export class StreamRedactor {
  private readonly wire: Wire;
  /** Each channel's text already sent (its end), for the context of what follows. */
  private readonly sent = new Map<string, string>();
  private held: Held | undefined;

  constructor(wire: Wire) {
    this.wire = wire;
  }

  /** Whole SSE events as they are to be sent; what goes out now (an event may be held back). */
  redact(text: string): string {
    const splitter = new SseSplitter();
    let out = '';
    for (const event of splitter.push(text)) out += this.event(event);
    if (splitter.rest !== '') out += this.flush() + redactJsonText(splitter.rest);
    return out;
  }

  /** What is held, sent now: the stream is ending. */
  flush(): string {
    const held = this.held;
    if (held === undefined) return '';
    this.held = undefined;
    const { channel } = held;
    const context = this.sent.get(channel.key) ?? '';
    const full = context + held.unsent;
    channel.set(redactedRange(full, context.length, full.length, channel.json));
    this.sent.set(channel.key, tail(full));
    return this.format(held.event, held.data);
  }

  private event(event: SseEvent): string {
    // Comments and pings carry no text: they pass and release nothing (a keep-alive must not cut a key).
    if (event.data === undefined || event.name === 'ping') return redactJsonText(event.raw);
    let data: unknown;
    if (event.raw.includes('delta')) {
      try {
        data = JSON.parse(event.data);
      } catch {
        data = undefined;
      }
    }
    const found = isObject(data) ? channelsOf(this.wire, data) : undefined;
    if (found === undefined || !isObject(data)) return this.flush() + redactJsonText(event.raw);
    if (found.channels.length > 1 || found.last) {
      // Several texts in one event, or the last piece of its channel: sent now, whole, nothing held.
      const held = this.held;
      let out = '';
      if (held !== undefined && !found.channels.some((channel) => channel.key === held.channel.key)) {
        out = this.flush();
      }
      this.held = undefined;
      let changed = false;
      for (const channel of found.channels) {
        const context = this.sent.get(channel.key) ?? '';
        const mine = held !== undefined && held.channel.key === channel.key;
        const unsent = mine ? held.unsent : '';
        const full = context + unsent + channel.text;
        const heldEnd = context.length + unsent.length;
        if (mine) {
          held.channel.set(redactedRange(full, context.length, heldEnd, channel.json));
          out += this.format(held.event, held.data);
        }
        const text = redactedRange(full, heldEnd, full.length, channel.json);
        if (text !== channel.text) changed = true;
        channel.set(text);
        this.sent.set(channel.key, tail(full));
      }
      return out + (changed ? this.format(event, data) : redactJsonText(event.raw));
    }
    const [channel] = found.channels as [Channel];
    let out = '';
    if (this.held !== undefined && this.held.channel.key !== channel.key) out = this.flush();
    const held = this.held;
    this.held = undefined;
    const context = this.sent.get(channel.key) ?? '';
    const unsent = held?.unsent ?? '';
    const full = context + unsent + channel.text;
    const from = context.length;
    const heldEnd = from + unsent.length;
    const cut = cutOf(full, from, channel.json);
    if (held !== undefined) {
      if (cut <= heldEnd) {
        // Still undecided: the held event goes out with the text before the cut; this one is held.
        held.channel.set(redactedRange(full, from, cut, channel.json));
        this.sent.set(channel.key, tail(full.slice(0, cut)));
        this.held = { event, data, channel, unsent: full.slice(cut) };
        return out + this.format(held.event, held.data);
      }
      held.channel.set(redactedRange(full, from, heldEnd, channel.json));
      out += this.format(held.event, held.data);
      this.sent.set(channel.key, tail(full.slice(0, heldEnd)));
      if (cut < full.length) {
        this.held = { event, data, channel, unsent: channel.text };
        return out;
      }
      return out + this.send(event, data, channel, full, heldEnd);
    }
    if (cut < full.length) {
      this.held = { event, data, channel, unsent: channel.text };
      return out;
    }
    return out + this.send(event, data, channel, full, from);
  }

  /** Sends an event whose text is `full[from, end)`, untouched when there was nothing to redact. */
  private send(event: SseEvent, data: Json, channel: Channel, full: string, from: number): string {
    const text = redactedRange(full, from, full.length, channel.json);
    this.sent.set(channel.key, tail(full));
    if (text === channel.text) return redactJsonText(event.raw);
    channel.set(text);
    return this.format(event, data);
  }

  private format(event: SseEvent, data: Json): string {
    return redactJsonText(formatEvent(event.name, data));
  }
}
