import { describe, expect, it } from 'vitest';
import { costOf, findPrice } from './prices.js';

describe('prices', () => {
  it('prices input, output, cache reads and cache writes each at their own rate', () => {
    const usage = {
      inputTokens: 1_000_000,
      outputTokens: 1_000_000,
      cacheReadTokens: 1_000_000,
      cacheWriteTokens: 1_000_000,
    };
    expect(costOf('claude-haiku-4-5', usage)).toBeCloseTo(1 + 5 + 0.1 + 1.25);
  });

  it('matches the longest known prefix and returns null, not 0, for an unknown model', () => {
    expect(findPrice('gpt-4.1-mini-2025-04-14')?.input).toBe(0.4);
    expect(findPrice('gpt-4.1-2025-04-14')?.input).toBe(2);
    expect(
      costOf('llama3.2', { inputTokens: 10, outputTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 0 }),
    ).toBeNull();
  });

  it('lets a table override the defaults', () => {
    const prices = { llama3: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 } };
    expect(
      costOf(
        'llama3.2',
        { inputTokens: 10, outputTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 0 },
        prices,
      ),
    ).toBe(0);
  });
});
