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
  it('expires entries after the TTL', () => {
    let now = 0;
    const cache = new DecisionCache({ ttlMs: 100, now: () => now });
    cache.set('a', decision('x'));
    now = 100;
    expect(cache.get('a')?.skill).toBe('x');
    now = 201;
    expect(cache.get('a')).toBeUndefined();
  });

  it('evicts the least recently used entry beyond its size', () => {
    const cache = new DecisionCache({ maxEntries: 2 });
    cache.set('a', decision('a'));
    cache.set('b', decision('b'));
    cache.get('a');
    cache.set('c', decision('c'));
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')?.skill).toBe('a');
    expect(cache.size).toBe(2);
  });

  it('lives in the ledger, so another process reuses a decision within the TTL and not after', () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'switchboard-cache-'));
    let now = 1_000_000;
    const first = openLedger({ stateDir });
    new DecisionCache({ ttlMs: 100, now: () => now }, first).set('a', decision('x'));
    first.close();

    // A second connection to the same file, as a later CLI call opens it.
    const second = openLedger({ stateDir });
    now += 100;
    expect(new DecisionCache({ ttlMs: 100, now: () => now }, second).get('a')?.skill).toBe('x');
    now += 1;
    expect(new DecisionCache({ ttlMs: 100, now: () => now }, second).get('a')).toBeUndefined();
    second.close();
  });

  it('keeps at most maxEntries in the ledger, dropping the oldest', () => {
    const ledger = openLedger({ stateDir: mkdtempSync(join(tmpdir(), 'switchboard-cache-')) });
    let now = 0;
    const cache = new DecisionCache({ maxEntries: 2, now: () => ++now }, ledger);
    for (const key of ['a', 'b', 'c']) cache.set(key, decision(key));
    const fresh = new DecisionCache({ now: () => now }, ledger);
    expect(['a', 'b', 'c'].map((key) => fresh.get(key)?.skill)).toEqual([undefined, 'b', 'c']);
    ledger.close();
  });
});
