import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { KeyPool } from './key-pool.js';

function fakeClock(start = 1_000_000): { now: () => number; advance: (milliseconds: number) => void } {
  let time = start;
  return { now: () => time, advance: (milliseconds) => (time += milliseconds) };
}

describe('KeyPool', () => {
  it('hands keys out in turn and skips the ones resting', () => {
    const clock = fakeClock();
    const pool = new KeyPool({ keys: ['alpha', 'beta', 'gamma'], cooldownMs: 1_000, now: clock.now });
    expect([pool.next(), pool.next(), pool.next(), pool.next()].map((choice) => choice?.label)).toEqual([
      'key #1',
      'key #2',
      'key #3',
      'key #1',
    ]);
    pool.coolDown(1);
    expect(pool.isResting(1)).toBe(true);
    expect([pool.next(), pool.next(), pool.next()].map((choice) => choice?.index)).toEqual([2, 0, 2]);
    clock.advance(1_000);
    expect(pool.isResting(1)).toBe(false);
  });

  it('says how long until the first key is free when all rest, honouring a given retry-after', () => {
    const clock = fakeClock();
    const pool = new KeyPool({ keys: ['alpha', 'beta'], cooldownMs: 60_000, now: clock.now });
    pool.coolDown(0);
    pool.coolDown(1, 5_000);
    expect(pool.next()).toBeUndefined();
    expect(pool.msUntilAvailable()).toBe(5_000);
    clock.advance(4_000);
    expect(pool.msUntilAvailable()).toBe(1_000);
    // A shorter rest never cuts a longer one short.
    pool.coolDown(0, 10);
    clock.advance(1_000);
    expect(pool.next()).toEqual({ index: 1, label: 'key #2' });
    expect(pool.isResting(0)).toBe(true);
  });

  it('drops duplicate keys and never shows a key when printed', () => {
    const pool = new KeyPool({ keys: ['secret-one', ' secret-one ', 'secret-two'] });
    expect(pool.size).toBe(2);
    expect(pool.keyAt(1)).toBe('secret-two');
    expect(inspect(pool, { depth: 5, showHidden: true })).not.toContain('secret');
    expect(JSON.stringify(pool)).not.toContain('secret');
  });

  it('rejects bad options naming them', () => {
    expect(() => new KeyPool({ keys: ['ok', ''] })).toThrow(/"keys"/);
    expect(() => new KeyPool({ keys: ['ok'], cooldownMs: -1 })).toThrow(/"cooldownMs"/);
  });

  it('with no keys, offers none and waits for nothing', () => {
    const pool = new KeyPool({ keys: [] });
    expect(pool.next()).toBeUndefined();
    expect(pool.msUntilAvailable()).toBe(0);
  });
});
