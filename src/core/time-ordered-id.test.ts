import { describe, expect, it } from 'vitest';
import { timeOrderedId } from './time-ordered-id.js';

describe('timeOrderedId', () => {
  it('is a version 7 UUID, unique, and sorts in the order it was made, also within a millisecond', () => {
    const ids = Array.from({ length: 20_000 }, () => timeOrderedId());
    for (const id of ids.slice(0, 50)) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    const millis = Number.parseInt(ids[0]!.replace(/-/g, '').slice(0, 12), 16);
    expect(Math.abs(millis - Date.now())).toBeLessThan(60_000);
  });
});
