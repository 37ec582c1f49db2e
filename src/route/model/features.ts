/**
 * Turns request text into sparse features: word unigrams and bigrams plus character n-grams taken
 * inside word boundaries. Character n-grams let the model match inflections and typos it never saw
 * ("broke" shares "<bro", "brok" with "broken"); word n-grams keep phrase-level signal.
 */

/** Which feature families to extract and how much each weighs. */
export interface FeatureOptions {
  /** Smallest character n-gram length (word boundary markers count as characters). */
  minCharGram: number;
  /** Largest character n-gram length. */
  maxCharGram: number;
  /** Weight of the word (unigram + bigram) block relative to the character block. */
  wordWeight: number;
  /** Weight of the character n-gram block. */
  charWeight: number;
}

export const DEFAULT_FEATURE_OPTIONS: Readonly<FeatureOptions> = {
  minCharGram: 2,
  maxCharGram: 5,
  wordWeight: 1,
  charWeight: 1,
};

/**
 * Inputs beyond this many words add little for routing but cost time; a 100 kB paste must still
 * predict within the latency budget, so only the first words count.
 */
export const MAX_WORDS = 200;

/** Longest single word kept whole; longer runs (base64, hashes) are truncated so n-gram counts stay bounded. */
const MAX_WORD_LENGTH = 40;

/** Feature families are hashed with different seeds so "ab" the word and "ab" the n-gram never collide. */
const WORD_SEED = 0x811c9dc5;
const BIGRAM_SEED = 0x01000193;
const CHAR_SEED = 0x9e3779b1;

/** Splits text into lower-case words; apostrophes are dropped so "what's" and "whats" match. */
export function tokenize(text: string): string[] {
  const normalized = text.normalize('NFKC').toLowerCase().replace(/['’`]/g, '');
  const words: string[] = [];
  for (const match of normalized.matchAll(/[\p{L}\p{N}]+/gu)) {
    const word = match[0];
    words.push(word.length > MAX_WORD_LENGTH ? word.slice(0, MAX_WORD_LENGTH) : word);
    if (words.length >= MAX_WORDS) break;
  }
  return words;
}

/** 32-bit FNV-1a over UTF-16 code units; fast, deterministic across runs, good enough spread for ids. */
export function hashString(text: string, seed: number): number {
  let hash = seed >>> 0;
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  // A final avalanche step so short strings that differ in one character spread across all bits.
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  return hash >>> 0;
}

/**
 * Raw feature counts of one text, split by block: keys are 32-bit feature hashes, values are term
 * counts. Weighting (idf, sublinear tf, normalisation) is applied later by the vocabulary.
 */
export interface RawFeatures {
  words: Map<number, number>;
  chars: Map<number, number>;
}

function increment(counts: Map<number, number>, key: number): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

/** Extracts the raw (unweighted) feature counts of `text`. */
export function extractFeatures(text: string, options: FeatureOptions): RawFeatures {
  const words = tokenize(text);
  const wordCounts = new Map<number, number>();
  const charCounts = new Map<number, number>();
  for (let index = 0; index < words.length; index++) {
    const word = words[index] as string;
    increment(wordCounts, hashString(word, WORD_SEED));
    if (index > 0) increment(wordCounts, hashString(`${words[index - 1] as string} ${word}`, BIGRAM_SEED));
    const marked = `<${word}>`;
    for (let size = options.minCharGram; size <= options.maxCharGram; size++) {
      if (size > marked.length) break;
      for (let start = 0; start + size <= marked.length; start++) {
        increment(charCounts, hashString(marked.slice(start, start + size), CHAR_SEED));
      }
    }
  }
  return { words: wordCounts, chars: charCounts };
}
