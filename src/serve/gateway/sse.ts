/** The longest event a stream may send (an OpenAI `response.completed` carries the whole answer). */
export const MAX_SSE_EVENT_CHARS = 16 * 1024 * 1024;

/** One server-sent event as it came from upstream: its bytes, untouched, and what they say. */
export interface SseEvent {
  /** The event exactly as received, blank line included: what the client gets when it is passed on. */
  raw: string;
  /** The `event:` field; undefined when the event has none (OpenAI chat sends only `data:`). */
  name: string | undefined;
  /** The `data:` lines joined by newlines; undefined for a comment-only event (`: keep-alive`). */
  data: string | undefined;
}

/**
 * Cuts a stream of SSE text into whole events, as its chunks arrive: an event split across chunks is
 * held until its blank line comes. Lines may end in `\n` or `\r\n` (both are legal SSE).
 */
export class SseSplitter {
  private pending = '';
  /** How much of `pending` holds no event end (less the 3 characters a `\r\n\r\n` may straddle). */
  private scanned = 0;

  /**
   * The whole events `chunk` completes, oldest first.
   * @throws RangeError when an unfinished event passes `MAX_SSE_EVENT_CHARS`: a stream that never
   * sends its blank line is not held in memory without end.
   */
  push(chunk: string): SseEvent[] {
    this.pending += chunk;
    const events: SseEvent[] = [];
    for (;;) {
      const end = eventEnd(this.pending, Math.max(0, this.scanned - 3));
      if (end === -1) break;
      events.push(parseEvent(this.pending.slice(0, end)));
      this.pending = this.pending.slice(end);
      this.scanned = 0;
    }
    this.scanned = this.pending.length;
    if (this.pending.length > MAX_SSE_EVENT_CHARS) {
      throw new RangeError(`a stream event is longer than ${MAX_SSE_EVENT_CHARS} characters`);
    }
    return events;
  }

  /** Text of an event begun and not finished: a stream that ends here was cut. */
  get rest(): string {
    return this.pending;
  }
}

/** The index just past the blank line that ends the first event of `text`, or -1. */
function eventEnd(text: string, from: number): number {
  const lf = text.indexOf('\n\n', from);
  const crlf = text.indexOf('\r\n\r\n', from);
  if (lf === -1 && crlf === -1) return -1;
  if (crlf === -1 || (lf !== -1 && lf < crlf)) return lf + 2;
  return crlf + 4;
}

function parseEvent(raw: string): SseEvent {
  let name: string | undefined;
  let data: string | undefined;
  for (const line of raw.split(/\r?\n/)) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') name = value;
    else if (field === 'data') data = data === undefined ? value : `${data}\n${value}`;
  }
  return { raw, name, data };
}

/** An SSE event's text: `event:` when named, then its data as one line. */
export function formatEvent(name: string | undefined, data: unknown): string {
  const text = typeof data === 'string' ? data : JSON.stringify(data);
  return `${name === undefined ? '' : `event: ${name}\n`}data: ${text}\n\n`;
}
