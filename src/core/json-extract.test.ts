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
