import { describe, expect, it } from 'vitest';
import { MAX_SSE_EVENT_CHARS, SseSplitter } from './sse.js';

describe('SseSplitter', () => {
  const text = 'event: a\r\ndata: 1\r\n\r\nevent: b\ndata: 2\n\n: keep-alive\r\n\r\ndata: 3\n\n';

  it('finds every event whatever the chunks (a blank line split across two included)', () => {
    for (let cut = 0; cut <= text.length; cut++) {
      for (let second = cut; second <= text.length; second++) {
        const splitter = new SseSplitter();
        const events = [
          ...splitter.push(text.slice(0, cut)),
          ...splitter.push(text.slice(cut, second)),
          ...splitter.push(text.slice(second)),
        ];
        expect(events.map((event) => event.data)).toEqual(['1', '2', undefined, '3']);
        expect(events.map((event) => event.raw).join('')).toBe(text);
        expect(splitter.rest).toBe('');
      }
    }
  });

  it('refuses an unfinished event past its limit', () => {
    const splitter = new SseSplitter();
    const chunk = `data: ${'x'.repeat(1024 * 1024)}`;
    expect(() => {
      for (let i = 0; i <= MAX_SSE_EVENT_CHARS / chunk.length + 1; i++) splitter.push(chunk);
    }).toThrow(RangeError);
  });
});
