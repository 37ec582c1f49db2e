import { describe, expect, it } from 'vitest';
import { extractJson } from './json-extract.js';

describe('extractJson', () => {
  it('reads plain JSON, a fenced block, and an object inside prose', () => {
    expect(extractJson(' {"a": 1} ')).toEqual({ ok: true, value: { a: 1 } });
    expect(extractJson('Here you go:\n```json\n{"a": [1, 2]}\n```\nAnything else?')).toEqual({
      ok: true,
      value: { a: [1, 2] },
    });
    expect(extractJson('The answer is {"city": "Lisbon", "note": "a } in a string"} as asked.')).toEqual({
      ok: true,
      value: { city: 'Lisbon', note: 'a } in a string' },
    });
  });

  it('says why when there is no JSON', () => {
    expect(extractJson('')).toEqual({ ok: false, reason: 'the answer is empty' });
    expect(extractJson('sunny, about {21 degrees')).toMatchObject({
      ok: false,
      reason: 'the answer holds no JSON value',
    });
  });
});

describe('extractJson on text built to be slow', () => {
  it('finds the same values as a left-to-right search of every bracket', () => {
    expect(extractJson('{not json [1, 2]} and then {"b": 2}')).toEqual({ ok: true, value: [1, 2] });
    expect(extractJson('The list ["notes] is here: {"a": 1}')).toEqual({ ok: true, value: { a: 1 } });
    expect(extractJson('{"a": "[1]" ] trailing')).toEqual({ ok: true, value: [1] });
    expect(extractJson('say {"q": "\\"}\\u0041"} ok')).toEqual({ ok: true, value: { q: '"}A' } });
    expect(extractJson('x {"a": [1, {"b": null}, "]"], "c": -1.5e3} y')).toEqual({
      ok: true,
      value: { a: [1, { b: null }, ']'], c: -1500 },
    });
    expect(extractJson('x {"a": 01} {"a": 1.} [tru] [1]')).toEqual({ ok: true, value: [1] });
    expect(extractJson('bad ```json\n{nope}\n``` good ```\n[3]\n```')).toEqual({ ok: true, value: [3] });
  });

  const adversarial: Record<string, string> = {
    '50 KB of unclosed [': '['.repeat(50_000),
    '25,000 { with a stray quote': '{'.repeat(12_500) + '"' + '{'.repeat(12_500),
    'a quote then 25,000 {': 'x "' + '{'.repeat(25_000),
    'deep nesting with an error at the core': '['.repeat(20_000) + 'x' + ']'.repeat(20_000),
    'many unclosed objects and arrays': '{"a": ['.repeat(10_000),
    'balanced but invalid brackets': '{'.repeat(20_000) + '1' + '}'.repeat(20_000),
    'escaped quotes splitting the string state': '["' + '[\\"'.repeat(15_000) + '"' + '['.repeat(15_000),
    'an unclosed fence then whitespace': 'a ```' + ' '.repeat(50_000) + 'b',
    'unclosed strings in every candidate': '{"'.repeat(25_000),
  };
  for (const [name, text] of Object.entries(adversarial)) {
    it(`stays linear: ${name}`, () => {
      const work = { steps: 0 };
      const result = extractJson(text, { _internal: { work } });
      expect(result.ok).toBe(false);
      // It reads the text at least once, and only a bounded number of times.
      expect(work.steps).toBeGreaterThanOrEqual(text.length);
      expect(work.steps).toBeLessThanOrEqual(10 * text.length);
    });
  }

  it('stays linear when deep nesting hides a valid value at its core', () => {
    const text = 'note: ' + '['.repeat(20_000) + '[1]' + ', x]'.repeat(20_000);
    const work = { steps: 0 };
    expect(extractJson(text, { _internal: { work } })).toEqual({ ok: true, value: [1] });
    expect(work.steps).toBeLessThanOrEqual(10 * text.length);
  });
});
