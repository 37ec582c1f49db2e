import { describe, expect, it } from 'vitest';
import { DEFAULT_FEATURE_OPTIONS, extractFeatures, STOP_WORDS, tokenize } from './features.js';

describe('tokenize', () => {
  it('drops a possessive or contracted "s" and other apostrophes', () => {
    expect(tokenize("Something's wrong with the user's plugin")).toEqual([
      'something',
      'wrong',
      'with',
      'the',
      'user',
      'plugin',
    ]);
    expect(tokenize("it doesn't work")).toEqual(['it', 'doesnt', 'work']);
  });
});

describe('extractFeatures', () => {
  it('keeps stop words, and bigrams containing one, in their own block without character n-grams', () => {
    const separate = extractFeatures('can you', { ...DEFAULT_FEATURE_OPTIONS, separateFunctionWords: true });
    expect(separate.words.size).toBe(0);
    expect(separate.chars.size).toBe(0);
    expect(separate.functionWords.size).toBe(3);
    const mixed = extractFeatures('fix the crash', {
      ...DEFAULT_FEATURE_OPTIONS,
      separateFunctionWords: true,
    });
    // "fix" and "crash" as words; the bigrams "fix the" and "the crash" are function-word features.
    expect(mixed.words.size).toBe(2);
    expect(mixed.functionWords.size).toBe(3);
  });

  it('treats stop words as ordinary words when asked to', () => {
    const ordinary = extractFeatures('can you', { ...DEFAULT_FEATURE_OPTIONS, separateFunctionWords: false });
    expect(ordinary.functionWords.size).toBe(0);
    expect(ordinary.words.size).toBe(3);
    expect(ordinary.chars.size).toBeGreaterThan(0);
  });

  it('keeps negations out of the stop words', () => {
    for (const word of ['not', 'no', 'doesnt', 'dont', 'cant']) expect(STOP_WORDS.has(word)).toBe(false);
    expect(STOP_WORDS.has('the')).toBe(true);
  });
});
