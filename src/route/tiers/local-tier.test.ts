import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TextClassifier, type TrainingExample } from '../model/text-classifier.js';
import { hashTrainingSet, loadOrTrainModel } from './local-tier.js';

/** The examples `__fixtures__/format-4.model` was trained on (by the build before format 5). */
const EXAMPLES: TrainingExample[] = [
  { text: 'the build is broken', label: 'bugs' },
  { text: 'the app crashes on startup', label: 'bugs' },
  { text: 'add a dark mode setting', label: 'features' },
  { text: 'build a new export command', label: 'features' },
  { text: 'update the readme', label: 'docs' },
  { text: 'write a tutorial for new users', label: 'docs' },
];
const FORMAT_4 = join(import.meta.dirname, '../model/__fixtures__/format-4.model');
const formatOf = (file: string) => new DataView(readFileSync(file).buffer).getUint32(4, true);

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

describe('loadOrTrainModel', () => {
  it('retrains and rewrites a model cached in an older layout instead of misreading it', () => {
    const folder = mkdtempSync(join(tmpdir(), 'switchboard-local-tier-'));
    folders.push(folder);
    const file = join(folder, `${hashTrainingSet(EXAMPLES)}.model`);
    copyFileSync(FORMAT_4, file);
    expect(formatOf(file)).toBe(4);

    const first = loadOrTrainModel(EXAMPLES, folder);
    expect(first.trained).toBe(true);
    expect(formatOf(file)).toBe(5);
    const second = loadOrTrainModel(EXAMPLES, folder);
    expect(second.trained).toBe(false);
    for (const text of ['the build crashes', 'a tutorial please', 'zzz qqq', '']) {
      expect(second.classifier.probabilities(text)).toEqual(first.classifier.probabilities(text));
    }
    expect(second.classifier.predict('the build crashes')[0]?.label).toBe('bugs');
  });

  it('predicts from a stored phrase index exactly as from one built by training', () => {
    const trained = TextClassifier.train(EXAMPLES);
    const loaded = TextClassifier.deserialize(trained.serialize());
    // Texts that share some n-grams with the phrases, none, or all of one: the trust blend differs.
    for (const text of ['the build is broken', 'build docs', 'new users crash', 'qqq', 'the the the']) {
      expect(loaded.probabilities(text)).toEqual(trained.probabilities(text));
    }
  });
});
