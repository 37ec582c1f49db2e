import { describe, expect, it } from 'vitest';
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
});
