/**
 * Redaction of a stream whose text arrives in pieces. A model that echoes a key writes it a few
 * characters per event, so redacting each event alone lets every piece through. Here each channel of
 * text (an Anthropic content block's text, thinking or tool input; a Chat choice's content, refusal,
 * reasoning, audio transcript or one tool call's arguments; a Responses item's deltas) is read as one
 * text. When a delta ends with what may be the start of a secret, that end is held back and the event
 * goes out with the text before it; the held text joins the channel's next delta. Events of other
 * channels, and events that carry no text (pings, citations, annotations), pass meanwhile and release
 * nothing. The event that ends a channel (a block's stop, a finish reason, a `.done`, an error, the
 * stream's end) is preceded by one more delta of that channel with what was held, redacted.
 *
 * Events with nothing held and nothing to redact pass byte for byte. An event whose text changed loses
 * its log probabilities (their tokens would spell what was redacted). Responses' `sequence_number`s
 * stay consecutive: the events after an added delta are numbered on. What the secrets are is
 * `core/secrets.ts`'s one list; this file decides only where text may be cut.
 */

import {
  MIN_SECRET_LENGTH,
  REDACTED,
  redactedJsonText,
  redactJsonText,
  secretRanges,
  secretStartAtEnd,
} from '../../core/secrets.js';
import type { Wire } from './models.js';
import { formatEvent, SseSplitter, type SseEvent } from './sse.js';

/** The most text held back on one channel while it may be the start of a secret. */
export const MAX_HELD_CHARS = 512;

/** How much of the text already sent on a channel is kept, for a secret's context (a URL before its password). */
const CONTEXT_CHARS = 512;

type Json = Record<string, unknown>;

/** One text field of one event: Anthropic `delta.text`, Chat `delta.content`, Responses `delta`. */
interface Channel {
  key: string;
  /** The text is JSON (tool-call arguments): a secret in it is JSON-escaped. */
  json: boolean;
  text: string;
  set(text: string): void;
  /** A delta event of this channel alone carrying `text`: for what is held when the channel ends. */
  alone(text: string): { name: string | undefined; data: Json };
}

/** What a channel has sent (its end, for context) and holds back. */
interface ChannelState {
  sent: string;
  unsent: string;
  /** What was sent ends inside a secret, sent as `[redacted]`. */
  open: boolean;
  json: boolean;
  alone: Channel['alone'];
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const ANTHROPIC_FIELDS: Record<string, { field: string; json: boolean }> = {
  text_delta: { field: 'text', json: false },
  thinking_delta: { field: 'thinking', json: false },
  input_json_delta: { field: 'partial_json', json: true },
};

const CHAT_FIELDS = ['content', 'refusal', 'reasoning_content', 'reasoning'];
/** The fields of a Chat chunk an added chunk repeats. */
const CHAT_CHUNK_FIELDS = ['id', 'object', 'created', 'model', 'system_fingerprint', 'service_tier'];

function pick(data: Json, fields: readonly string[]): Json {
  return Object.fromEntries(fields.filter((field) => field in data).map((field) => [field, data[field]]));
}

function field(key: string, json: boolean, holder: Json, name: string, alone: Channel['alone']): Channel {
  return {
    key,
    json,
    text: holder[name] as string,
    set: (text) => {
      holder[name] = text;
    },
    alone,
  };
}

/** The text channels an event carries (none for most events). */
function channelsOf(wire: Wire, name: string | undefined, data: Json): Channel[] {
  if (wire === 'anthropic') {
    if (data['type'] !== 'content_block_delta' || !isObject(data['delta'])) return [];
    const delta = data['delta'];
    const type = String(delta['type']);
    const shape = ANTHROPIC_FIELDS[type];
    if (shape === undefined || typeof delta[shape.field] !== 'string') return [];
    const index = data['index'];
    return [
      field(`${String(index)}`, shape.json, delta, shape.field, (text) => ({
        name: 'content_block_delta',
        data: { type: 'content_block_delta', index, delta: { type, [shape.field]: text } },
      })),
    ];
  }
  if (wire === 'chat') {
    const choices = data['choices'];
    if (!Array.isArray(choices)) return [];
    const channels: Channel[] = [];
    const chunk = pick(data, CHAT_CHUNK_FIELDS);
    for (const choice of choices) {
      if (!isObject(choice) || !isObject(choice['delta'])) continue;
      const delta = choice['delta'];
      const index = choice['index'];
      const added = (inner: Json) => ({
        name,
        data: { ...chunk, choices: [{ index, delta: inner, finish_reason: null }] },
      });
      for (const text of CHAT_FIELDS) {
        if (typeof delta[text] !== 'string') continue;
        channels.push(
          field(`${String(index)}:${text}`, false, delta, text, (held) => added({ [text]: held })),
        );
      }
      const audio = delta['audio'];
      if (isObject(audio) && typeof audio['transcript'] === 'string') {
        channels.push(
          field(`${String(index)}:audio`, false, audio, 'transcript', (held) =>
            added({ audio: { transcript: held } }),
          ),
        );
      }
      const calls = delta['tool_calls'];
      if (!Array.isArray(calls)) continue;
      for (const call of calls) {
        if (!isObject(call) || !isObject(call['function'])) continue;
        const fn = call['function'];
        if (typeof fn['arguments'] !== 'string') continue;
        const callIndex = call['index'];
        channels.push(
          field(`${String(index)}:tool:${String(callIndex)}`, true, fn, 'arguments', (held) =>
            added({ tool_calls: [{ index: callIndex, function: { arguments: held } }] }),
          ),
        );
      }
    }
    return channels;
  }
  const type = data['type'];
  if (typeof type !== 'string' || !type.endsWith('.delta') || typeof data['delta'] !== 'string') return [];
  const part = data['content_index'] ?? data['summary_index'] ?? '';
  const key = `${itemOf(data)}:${type}:${String(part)}`;
  const template = { ...data };
  delete template['logprobs'];
  return [
    field(key, type.includes('arguments'), data, 'delta', (text) => ({
      name,
      data: { ...template, delta: text },
    })),
  ];
}

/** A Responses event's item, as its channels' keys begin. */
function itemOf(data: Json): string {
  return String(data['item_id'] ?? data['output_index']);
}

/**
 * Which channels an event ends, after its own text (if any) is taken: their held text goes out first.
 * `all` for the end of the answer or an error.
 */
function endsOf(wire: Wire, data: Json): ((key: string) => boolean) | 'all' | undefined {
  const type = data['type'];
  if (wire === 'anthropic') {
    if (type === 'content_block_stop') return (key) => key === String(data['index']);
    if (type === 'message_delta' || type === 'message_stop' || type === 'error') return 'all';
    return undefined;
  }
  if (wire === 'chat') {
    if (data['error'] !== undefined) return 'all';
    const choices = data['choices'];
    if (!Array.isArray(choices)) return undefined;
    if (choices.length === 0) return 'all';
    const finished = choices
      .filter(
        (choice) =>
          isObject(choice) && choice['finish_reason'] !== null && choice['finish_reason'] !== undefined,
      )
      .map((choice) => `${String((choice as Json)['index'])}:`);
    return finished.length === 0 ? undefined : (key) => finished.some((prefix) => key.startsWith(prefix));
  }
  if (typeof type !== 'string') return undefined;
  if (type.endsWith('.done')) {
    const item = `${itemOf(data)}:`;
    return (key) => key.startsWith(item);
  }
  if (/^(?:response\.(?:completed|failed|incomplete)|error)$/.test(type)) return 'all';
  return undefined;
}

/** A channel's text made ready to send, and whether it ends inside a secret it sent as `[redacted]`. */
interface Redacted {
  text: string;
  open: boolean;
}

/**
 * The text `full[from, to)` with every secret in it replaced. A secret begun before `from` gets its
 * `[redacted]` here unless the text sent before ended inside it (`open`): a key glued to a word is
 * known for one only once its prefix is whole, after its first letters went out.
 */
function redactedRange(full: string, from: number, to: number, json: boolean, open: boolean): Redacted {
  let out = '';
  let at = from;
  let inside = false;
  for (const [start, end] of secretRanges(full, json)) {
    if (end <= from) continue;
    if (start >= to) break;
    if (start >= from) out += full.slice(at, start) + REDACTED;
    else if (!open) out += REDACTED;
    at = Math.min(end, to);
    inside = end > to;
  }
  return { text: out + full.slice(at, to), open: inside };
}

/**
 * The last of a channel's text, `full` from `from`: what it held back goes out, redacted, except the
 * beginning of a secret it ended in when that is `MIN_SECRET_LENGTH` characters or more (a stream cut
 * in the middle of a key must not hand out most of it).
 */
function endOfChannel(full: string, from: number, json: boolean, open: boolean): string {
  const start = Math.max(from, secretStartAtEnd(full, json));
  if (full.length - start < MIN_SECRET_LENGTH) return redactedRange(full, from, full.length, json, open).text;
  const before = redactedRange(full, from, start, json, open);
  return before.open ? before.text : before.text + REDACTED;
}

/** Where the text of a channel may be cut: before any secret (whole or begun) that runs to its end. */
function cutOf(full: string, sent: number, json: boolean): number {
  let cut = secretStartAtEnd(full, json);
  for (const [start, end] of secretRanges(full, json)) {
    if (start >= cut) break;
    if (end > cut) {
      cut = start;
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
  private readonly channels = new Map<string, ChannelState>();
  /** Responses: how many deltas were added, so every later `sequence_number` moves on by as many. */
  private added = 0;

  constructor(wire: Wire) {
    this.wire = wire;
  }

  /** Whole SSE events as they are to be sent; what goes out now (some text may be held back). */
  redact(text: string): string {
    const splitter = new SseSplitter();
    let out = '';
    for (const event of splitter.push(text)) out += this.event(event);
    if (splitter.rest !== '') out += this.release(() => true) + redactJsonText(splitter.rest);
    return out;
  }

  /** Everything held, sent now: the stream is ending. */
  flush(): string {
    return this.release(() => true);
  }

  private event(event: SseEvent): string {
    // Comments and pings carry no text: they pass and release nothing (a keep-alive must not cut a key).
    if (event.data === undefined || event.name === 'ping') return redactJsonText(event.raw);
    let data: unknown;
    try {
      data = JSON.parse(event.data);
    } catch {
      data = undefined;
    }
    // Not JSON (`[DONE]`): the end of the answer.
    if (!isObject(data)) return this.release(() => true) + redactJsonText(event.raw);
    const ends = endsOf(this.wire, data);
    const ending = ends === 'all' ? () => true : (ends ?? (() => false));
    let changed = false;
    for (const channel of channelsOf(this.wire, event.name, data)) {
      const state = this.channels.get(channel.key) ?? {
        sent: '',
        unsent: '',
        open: false,
        json: channel.json,
        alone: channel.alone,
      };
      state.alone = channel.alone;
      this.channels.set(channel.key, state);
      const full = state.sent + state.unsent + channel.text;
      const from = state.sent.length;
      const cut = ending(channel.key) ? full.length : cutOf(full, from, channel.json);
      const { text, open } = redactedRange(full, from, cut, channel.json, state.open);
      state.open = open;
      state.unsent = full.slice(cut);
      state.sent = tail(full.slice(0, cut));
      if (text !== channel.text) {
        channel.set(text);
        changed = true;
      }
    }
    if (changed) dropLogprobs(data);
    const before = ends === undefined ? '' : this.release(ending, data['sequence_number']);
    return before + this.send(event, data, changed);
  }

  /**
   * The held text of the channels `ending` names, each as one more delta, for the event about to end
   * them; `sequence` is that event's number (Responses), which the added deltas take before it.
   */
  private release(ending: (key: string) => boolean, sequence?: unknown): string {
    let out = '';
    for (const [key, state] of this.channels) {
      if (!ending(key)) continue;
      this.channels.delete(key);
      if (state.unsent === '') continue;
      const full = state.sent + state.unsent;
      const { name, data } = state.alone(endOfChannel(full, state.sent.length, state.json, state.open));
      if (typeof sequence === 'number') {
        data['sequence_number'] = sequence + this.added;
        this.added += 1;
      }
      out += redactJsonText(formatEvent(name, data));
    }
    return out;
  }

  /** An event as it goes out: its own bytes unless its text changed or its number moved on. */
  private send(event: SseEvent, data: Json, changed: boolean): string {
    const sequence = data['sequence_number'];
    if (this.added > 0 && typeof sequence === 'number') {
      data['sequence_number'] = sequence + this.added;
      changed = true;
    }
    if (changed) return redactJsonText(formatEvent(event.name, data));
    // A secret written with JSON escapes (`\u0073k-…`) is found there too: redactJsonText reads them.
    return redactJsonText(event.raw);
  }
}

/**
 * A whole (non-streamed) JSON answer as the client gets it: its own bytes when nothing in it is a
 * secret; else rebuilt from `parsed` with the secrets redacted in its decoded strings (a key written
 * with `\u` escapes too) and its log probabilities dropped, whose tokens would spell what was redacted.
 */
export function redactedAnswer(raw: string, parsed: unknown): string {
  if (redactJsonText(raw) === raw) return raw;
  const copy = structuredClone(parsed);
  dropLogprobs(copy);
  return redactedJsonText(copy);
}

/**
 * Log probabilities spell out the text token by token: an event or answer whose text changed loses
 * them, wherever they sit (Chat's per choice, an object or null; Responses' per delta, a list).
 */
function dropLogprobs(value: unknown): void {
  if (Array.isArray(value)) {
    for (const item of value) dropLogprobs(item);
    return;
  }
  if (!isObject(value)) return;
  for (const [key, item] of Object.entries(value)) {
    if (key === 'logprobs') value[key] = Array.isArray(item) ? [] : null;
    else dropLogprobs(item);
  }
}
