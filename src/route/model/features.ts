/**
 * Turns request text into sparse features: word unigrams and bigrams plus character n-grams taken
 * inside word boundaries. Character n-grams let the model match inflections and typos it never saw
 * ("broke" shares "<bro", "brok" with "broken"); word n-grams keep phrase-level signal. Stop words
 * can be kept apart in a block of their own so that, in a tiny training set, they carry no route.
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
  /** Weight of the function-word block: stop words and the bigrams that contain one. */
  functionWordWeight: number;
  /**
   * Whether stop words go to their own, lightly weighted block (and make no character n-grams);
   * otherwise they are ordinary words. Right for a few phrases per label, where idf cannot tell "can
   * you" from "crash"; wrong for thousands of examples, where the model learns what they are worth.
   */
  separateFunctionWords: boolean;
}

export const DEFAULT_FEATURE_OPTIONS: Readonly<FeatureOptions> = {
  minCharGram: 3,
  maxCharGram: 5,
  wordWeight: 1,
  charWeight: 1,
  functionWordWeight: 0.25,
  separateFunctionWords: true,
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

/**
 * Splits text into lower-case words. A possessive or contracted "'s" is dropped ("something's" →
 * "something", "user's" → "user"); other apostrophes are removed so "doesn't" and "doesnt" match.
 */
export function tokenize(text: string): string[] {
  const normalized = text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/(\p{L})['’`]s\b/gu, '$1')
    .replace(/['’`]/g, '');
  const words: string[] = [];
  for (const match of normalized.matchAll(/[\p{L}\p{N}]+/gu)) {
    const word = match[0];
    words.push(word.length > MAX_WORD_LENGTH ? word.slice(0, MAX_WORD_LENGTH) : word);
    if (words.length >= MAX_WORDS) break;
  }
  return words;
}

/**
 * 32-bit FNV-1a over UTF-16 code units; fast, deterministic across runs, good enough spread for ids.
 * `start` and `end` hash a part of `text` as its slice would hash, without making the slice: a
 * request's character n-grams are a hundred short strings otherwise, each for the collector.
 */
export function hashString(text: string, seed: number, start = 0, end = text.length): number {
  let hash = seed >>> 0;
  for (let index = start; index < end; index++) {
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
 * English function words: pronouns, articles, auxiliaries, prepositions, conjunctions (after NLTK's
 * list, apostrophes dropped as `tokenize` does). Negations ("not", "doesnt") are deliberately absent:
 * "it doesn't work" is a request about a defect. In a training set of a few dozen phrases idf cannot
 * tell these words from content words, so without this list "can you" or "with the" could carry a route.
 */
export const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her ' +
    'hers herself it its itself they them their theirs themselves what which who whom whose this that ' +
    'these those am is are was were be been being have has had having do does did doing a an the and ' +
    'but if or because as until while of at by for with about against between into through during ' +
    'before after above below to from up down in out on off over under again further then once here ' +
    'there when where why how all any both each few more most other some such only own same so than ' +
    'too very s t can will just should now d ll m o re ve y ma could would shall might must also ' +
    'please us lets whats thats theres heres im ive youre weve theyre hes shes youd youll ' +
    'something anything everything nothing someone anyone everyone somebody anybody everybody'
  ).split(' '),
);

/**
 * Raw feature counts of one text, split by block: keys are 32-bit feature hashes, values are term
 * counts. Weighting (idf, sublinear tf, normalisation) is applied later by the vocabulary.
 */
export interface RawFeatures {
  words: Map<number, number>;
  chars: Map<number, number>;
  functionWords: Map<number, number>;
}

function increment(counts: Map<number, number>, key: number): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

/** Extracts the raw (unweighted) feature counts of `text`. */
export function extractFeatures(text: string, options: FeatureOptions): RawFeatures {
  const words = tokenize(text);
  const wordCounts = new Map<number, number>();
  const charCounts = new Map<number, number>();
  const functionCounts = new Map<number, number>();
  for (let index = 0; index < words.length; index++) {
    const word = words[index] as string;
    const isFunction = options.separateFunctionWords && STOP_WORDS.has(word);
    const previous = index > 0 ? (words[index - 1] as string) : undefined;
    if (previous !== undefined) {
      // A bigram with a stop word in it ("the build", "can you") is as weak a cue as the stop word.
      const weak = isFunction || (options.separateFunctionWords && STOP_WORDS.has(previous));
      increment(weak ? functionCounts : wordCounts, hashString(`${previous} ${word}`, BIGRAM_SEED));
    }
    if (isFunction) {
      increment(functionCounts, hashString(word, WORD_SEED));
      continue;
    }
    increment(wordCounts, hashString(word, WORD_SEED));
    const marked = `<${word}>`;
    for (let size = options.minCharGram; size <= options.maxCharGram; size++) {
      if (size > marked.length) break;
      for (let start = 0; start + size <= marked.length; start++) {
        increment(charCounts, hashString(marked, CHAR_SEED, start, start + size));
      }
    }
  }
  return { words: wordCounts, chars: charCounts, functionWords: functionCounts };
}
