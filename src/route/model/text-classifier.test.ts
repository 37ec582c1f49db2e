import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { NONE } from '../../core/route-types.js';
import { DEFAULT_CONFIDENCE_THRESHOLD, DEFAULT_MARGIN_THRESHOLD } from '../../core/config.js';
import { applyThresholds } from '../fit.js';
import { MODEL_VERSION, TextClassifier, type Prediction, type TrainingExample } from './text-classifier.js';

/** The router's abstain rule at the default thresholds: the top label, or `none`. */
function decide(predictions: readonly Prediction[]): string {
  const candidates = predictions.map((prediction) => ({
    skill: prediction.label,
    score: prediction.probability,
  }));
  return applyThresholds(candidates, {
    confidenceThreshold: DEFAULT_CONFIDENCE_THRESHOLD,
    marginThreshold: DEFAULT_MARGIN_THRESHOLD,
  }).skill;
}

/** A small synthetic routing task: three routes with a few phrasings each, plus out-of-scope rows. */
const EXAMPLES: TrainingExample[] = [
  { text: 'the build is broken', label: 'bugs' },
  { text: 'the app crashes on startup', label: 'bugs' },
  { text: 'this throws an error when I click save', label: 'bugs' },
  { text: 'fix the failing login', label: 'bugs' },
  { text: 'add a dark mode setting', label: 'features' },
  { text: 'build a new export command', label: 'features' },
  { text: 'we need an option to filter results', label: 'features' },
  { text: 'implement search in the sidebar', label: 'features' },
  { text: 'update the readme', label: 'docs' },
  { text: 'write a tutorial for new users', label: 'docs' },
  { text: 'document the api reference', label: 'docs' },
  { text: 'improve the user guide', label: 'docs' },
];

const WITH_NONE: TrainingExample[] = [
  ...EXAMPLES,
  { text: 'what is the weather tomorrow', label: NONE },
  { text: 'tell me a joke', label: NONE },
  { text: 'order a pizza for dinner', label: NONE },
  { text: 'play some music', label: NONE },
];

describe('TextClassifier', () => {
  const model = TextClassifier.train(EXAMPLES);

  it('learns a small task', () => {
    expect(model.labels).toEqual(['bugs', 'docs', 'features']);
    expect(model.predict('the app crashes')[0]?.label).toBe('bugs');
    expect(model.predict('add a new setting')[0]?.label).toBe('features');
    expect(model.predict('update the tutorial')[0]?.label).toBe('docs');
  });

  it('generalises to unseen word forms through character n-grams', () => {
    // "broke" and "crashing" never occur in training; "broken" and "crashes" do.
    expect(model.predict('why this broke')[0]?.label).toBe('bugs');
    expect(model.predict('crashing constantly')[0]?.label).toBe('bugs');
    expect(model.predict('documentation please')[0]?.label).toBe('docs');
  });

  it('returns every label, probabilities summing to 1, best first', () => {
    const predictions = model.predict('the build crashes');
    expect(predictions.map((prediction) => prediction.label).sort()).toEqual([...model.labels].sort());
    const total = predictions.reduce((sum, prediction) => sum + prediction.probability, 0);
    expect(total).toBeCloseTo(1, 6);
    for (let index = 1; index < predictions.length; index++) {
      expect(predictions[index - 1]?.probability).toBeGreaterThanOrEqual(
        predictions[index]?.probability ?? 0,
      );
    }
    expect(model.predict('the build crashes', 2)).toHaveLength(2);
    expect(model.predict('the build crashes', 0)).toHaveLength(0);
  });

  it('is deterministic for a given seed', () => {
    const again = TextClassifier.train(EXAMPLES);
    expect(again.predict('fix the export command')).toEqual(model.predict('fix the export command'));
    expect(Buffer.from(again.serialize()).equals(Buffer.from(model.serialize()))).toBe(true);
    const otherSeed = TextClassifier.train(EXAMPLES, { seed: 7 });
    expect(otherSeed.predict('the app crashes')[0]?.label).toBe('bugs');
  });

  it('round-trips through serialize/deserialize with identical predictions', () => {
    const restored = TextClassifier.deserialize(model.serialize());
    expect(restored.labels).toEqual(model.labels);
    for (const text of ['the build is broken', 'a brand new feature', 'docs', '', 'zzz qqq']) {
      expect(restored.predict(text)).toEqual(model.predict(text));
    }
  });

  it('stores weights as int8, about a quarter of their float32 size', () => {
    // Forty labels, so the weight rows dominate the file as they do in a real model.
    const many: TrainingExample[] = [];
    for (let label = 0; label < 40; label++) {
      for (const phrase of ['alpha task', 'beta job number', 'gamma request for']) {
        many.push({ text: `${phrase} item${label} topic${label * 7}`, label: `label-${label}` });
      }
    }
    const manyLabels = TextClassifier.train(many);
    const bytes = manyLabels.serialize();
    const headerLength = new DataView(bytes.buffer, bytes.byteOffset).getUint32(8, true);
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(12, 12 + headerLength))) as {
      featureCount: number;
      phrases: string[];
      phrasePostings: number;
    };
    // The body (after the JSON header, without the stored phrase index: row offsets, then a phrase
    // number and a value per posting, then a norm per phrase) against what float32 weights would take.
    const phraseIndexBytes =
      4 * (header.featureCount + 1) + 8 * header.phrasePostings + 8 * header.phrases.length;
    const bodyBytes = bytes.length - 12 - headerLength - phraseIndexBytes;
    expect(bodyBytes).toBeLessThan(header.featureCount * 40 * 4 * 0.35);
    const restored = TextClassifier.deserialize(bytes);
    for (const text of ['alpha task item3', 'gamma request for topic70', 'nothing known here']) {
      expect(restored.probabilities(text)).toEqual(manyLabels.probabilities(text));
    }
    expect(manyLabels.predict('beta job number item12 topic84')[0]?.label).toBe('label-12');
  });

  it('averages a separate word model and character model when asked to', () => {
    const ensemble = TextClassifier.train(WITH_NONE, { ensemble: true });
    expect(ensemble.predict('the app crashes')[0]?.label).toBe('bugs');
    expect(ensemble.predict('update the tutorial')[0]?.label).toBe('docs');
    // Only the character model knows "crashing"; the word model, seeing nothing, stays flat.
    expect(ensemble.predict('crashing constantly')[0]?.label).toBe('bugs');
    const restored = TextClassifier.deserialize(ensemble.serialize());
    for (const text of ['the build is broken', 'tell me a joke', 'zzz qqq']) {
      expect(restored.probabilities(text)).toEqual(ensemble.probabilities(text));
    }
    for (const prediction of ensemble.predict('zzzz qqqq'))
      expect(prediction.probability).toBeCloseTo(1 / ensemble.labels.length, 6);
  });

  it('rejects corrupt, truncated, foreign and outdated bytes with a clear error', () => {
    const bytes = model.serialize();
    const flipped = bytes.slice();
    flipped[Math.floor(flipped.length / 2)] = (flipped[Math.floor(flipped.length / 2)] ?? 0) ^ 0xff;
    expect(() => TextClassifier.deserialize(flipped)).toThrow(/checksum/);
    expect(() => TextClassifier.deserialize(bytes.subarray(0, bytes.length - 10))).toThrow(/text classifier/);
    expect(() => TextClassifier.deserialize(new Uint8Array(3))).toThrow(/too short/);
    expect(() => TextClassifier.deserialize(new TextEncoder().encode('{"not":"a model at all"}'))).toThrow(
      /not a Switchboard text classifier/,
    );
    const otherFormat = bytes.slice();
    new DataView(otherFormat.buffer).setUint32(4, 999, true);
    expect(() => TextClassifier.deserialize(otherFormat)).toThrow(/binary format 999/);
    // A phrase index whose offsets run past its entries, with a checksum that matches: refused, not read.
    const header = new TextDecoder().decode(
      bytes.subarray(12, 12 + new DataView(bytes.buffer).getUint32(8, true)),
    );
    const { phrases, phrasePostings } = JSON.parse(header) as { phrases: string[]; phrasePostings: number };
    const outOfRange = bytes.slice();
    // Layout from the end: checksum, a norm per phrase, a value and a phrase number per entry, offsets.
    const lastOffset = outOfRange.length - 4 - 8 * phrases.length - 8 * phrasePostings - 4;
    new DataView(outOfRange.buffer).setUint32(lastOffset, phrasePostings + 1, true);
    new DataView(outOfRange.buffer).setUint32(
      outOfRange.length - 4,
      crc32(outOfRange.subarray(0, outOfRange.length - 4)),
      true,
    );
    expect(() => TextClassifier.deserialize(outOfRange)).toThrow(/phrase index out of range/);
    expect(MODEL_VERSION).toMatch(/\S/);
  });

  it('does not throw on empty, whitespace, huge or odd Unicode input', () => {
    const inputs = [
      '',
      '   \n\t ',
      'x'.repeat(100_000),
      'fix the bug '.repeat(10_000),
      '🔥🔥 ça plante 💥 \u0000 \uD800 ﷽ 𝔟𝔲𝔤',
      '日本語のテキストが壊れた',
    ];
    for (const text of inputs) {
      const predictions = model.predict(text);
      expect(predictions).toHaveLength(3);
      const total = predictions.reduce((sum, prediction) => sum + prediction.probability, 0);
      expect(total).toBeCloseTo(1, 6);
      for (const prediction of predictions) expect(Number.isFinite(prediction.probability)).toBe(true);
    }
  });

  it('learns a NONE class from out-of-scope examples', () => {
    const withNone = TextClassifier.train(WITH_NONE);
    expect(withNone.labels).toContain(NONE);
    expect(withNone.predict('what is the weather like')[0]?.label).toBe(NONE);
    expect(withNone.predict('tell me a joke please')[0]?.label).toBe(NONE);
    expect(withNone.predict('the app crashes on save')[0]?.label).toBe('bugs');
  });

  it('is less confident on unrelated requests than on related ones', () => {
    const unrelated = model.predict('quarterly tax filing deadline in norway')[0]?.probability ?? 1;
    const related = model.predict('the app crashes on startup')[0]?.probability ?? 0;
    expect(unrelated).toBeLessThan(related - 0.3);
    expect(decide(model.predict('the app crashes on startup', 2))).toBe('bugs');
  });

  it('flattens a few-shot prediction that no training phrase explains', () => {
    // Three labels put a flat prediction at 0.33, above the default confidence threshold, so only
    // the margin can refuse; a stray n-gram overlap ("movie" and "improve") must not open one up.
    for (const text of [
      'recommend a good movie for tonight',
      'translate good morning into spanish',
      'play some relaxing music',
    ]) {
      expect(decide(model.predict(text, 2))).toBe(NONE);
    }
    expect(model.predict('the app crashes')[0]?.probability).toBeGreaterThan(0.9);
    expect(decide(model.predict('update the tutorial', 2))).toBe('docs');
  });

  it('gives a flat prediction, not the most frequent label, when no feature is known', () => {
    const unbalanced = TextClassifier.train([
      ...EXAMPLES,
      { text: 'the save button is broken', label: 'bugs' },
      { text: 'the export crashes on large files', label: 'bugs' },
      { text: 'an error appears after login', label: 'bugs' },
    ]);
    for (const prediction of unbalanced.predict('zzzz qqqq'))
      expect(prediction.probability).toBeCloseTo(1 / 3, 6);
  });

  it('refuses to train on nothing and copes with a single label', () => {
    expect(() => TextClassifier.train([])).toThrow(/without examples/);
    const single = TextClassifier.train([{ text: 'anything', label: 'only' }]);
    expect(single.predict('whatever')).toEqual([{ label: 'only', probability: 1 }]);
  });
});
