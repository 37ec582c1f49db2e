import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openLedger } from '../../store/ledger.js';
import type { RouteDecision } from '../../core/route-types.js';
import { DecisionCache } from './cache-tier.js';

const decision = (skill: string): RouteDecision => ({
  id: skill,
  skill,
  confidence: 1,
  reasoning: '',
  method: 'rules',
  candidates: [],
  costUsd: 0,
  durationMs: 0,
  timings: {},
  warnings: [],
});

describe('DecisionCache', () => {
  it('expires entries after the TTL', async () => {
    let now = 0;
    const cache = new DecisionCache({ ttlMs: 100, now: () => now });
    await cache.set('a', decision('x'));
    now = 100;
    expect((await cache.get('a'))?.skill).toBe('x');
    now = 201;
    expect(await cache.get('a')).toBeUndefined();
  });

  it('evicts the least recently used entry beyond its size', async () => {
    const cache = new DecisionCache({ maxEntries: 2 });
    await cache.set('a', decision('a'));
    await cache.set('b', decision('b'));
    await cache.get('a');
    await cache.set('c', decision('c'));
    expect(await cache.get('b')).toBeUndefined();
    expect((await cache.get('a'))?.skill).toBe('a');
    expect(cache.size).toBe(2);
  });

  it('lives in the ledger, so another process reuses a decision within the TTL and not after', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'switchboard-cache-'));
    let now = 1_000_000;
    const first = openLedger({ stateDir });
    await new DecisionCache({ ttlMs: 100, now: () => now }, first).set('a', decision('x'));
    await first.close();

    // A second connection to the same file, as a later CLI call opens it.
    const second = openLedger({ stateDir });
    now += 100;
    expect((await new DecisionCache({ ttlMs: 100, now: () => now }, second).get('a'))?.skill).toBe('x');
    now += 1;
    expect(await new DecisionCache({ ttlMs: 100, now: () => now }, second).get('a')).toBeUndefined();
    await second.close();
  });

  it('keeps about maxEntries in the ledger, dropping the oldest at the trim every thousand writes', async () => {
    const ledger = openLedger({ stateDir: mkdtempSync(join(tmpdir(), 'switchboard-cache-')) });
    let now = 0;
    const cache = new DecisionCache({ maxEntries: 2, now: () => ++now }, ledger);
    const keys = Array.from({ length: 1_001 }, (_, index) => `k${index}`);
    for (const key of keys) await cache.set(key, decision(key));
    await ledger.flush();
    const fresh = new DecisionCache({ now: () => now }, ledger);
    // Trimmed at least once by the thousandth write (by chance sooner too): the first are gone.
    expect(
      await Promise.all(['k0', 'k1', 'k999', 'k1000'].map(async (key) => (await fresh.get(key))?.skill)),
    ).toEqual([undefined, undefined, 'k999', 'k1000']);
    await ledger.close();
  });
});
