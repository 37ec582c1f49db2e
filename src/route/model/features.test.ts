import { describe, expect, it } from 'vitest';
import { DEFAULT_FEATURE_OPTIONS, extractFeatures, hashString, STOP_WORDS, tokenize } from './features.js';

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

  it('hashes character n-grams as their own strings hash, so models saved before read the same features', () => {
    // The character block's seed; a saved model's vocabulary holds these hashes.
    const seed = 0x9e3779b1;
    const marked = '<crash>';
    const expected = new Set<number>();
    for (let size = 3; size <= 5; size++) {
      for (let start = 0; start + size <= marked.length; start++) {
        expected.add(hashString(marked.slice(start, start + size), seed));
        expect(hashString(marked, seed, start, start + size)).toBe(
          hashString(marked.slice(start, start + size), seed),
        );
      }
    }
    expect(new Set(extractFeatures('crash', DEFAULT_FEATURE_OPTIONS).chars.keys())).toEqual(expected);
    expect(hashString('cra', seed)).toBe(3071286985);
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
