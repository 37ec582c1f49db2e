import { describe, expect, it } from 'vitest';
import type { Skill } from '../../core/route-types.js';
import { bodyProse, descriptionPhrases, examplesFromSkills, humanizeName } from './skill-examples.js';
import { DEFAULT_CONFIDENCE_THRESHOLD, DEFAULT_MARGIN_THRESHOLD } from '../../core/config.js';
import { applyThresholds } from '../fit.js';
import { TextClassifier, type Prediction } from './text-classifier.js';

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

function skill(name: string, description: string, examples: string[] = []): Skill {
  return { name, description, examples, patterns: [], file: `/skills/${name}.md` };
}

/** Skills described in one sentence and nothing else: the few-shot regime. */
const SKILLS: Skill[] = [
  skill(
    'defect-fixer',
    'Investigate and fix a defect. Use when something is broken, crashes, throws an error, or behaves differently than it should.',
  ),
  skill('writer', 'Write or update documentation, such as a README, a user guide or a tutorial.'),
  skill(
    'shipper',
    'Prepare and ship a release, covering version bumps, changelog entries, tags and publishing packages.',
  ),
  skill(
    'speedup',
    'Measure and improve speed or memory use, for example profiling, benchmarks or slow queries.',
    ['the dashboard takes forever to load'],
  ),
];

describe('examplesFromSkills', () => {
  it('splits names and descriptions into request-like phrases', () => {
    expect(humanizeName('bug-brief')).toBe('bug brief');
    expect(humanizeName('researchAndPlan')).toBe('research and plan');
    const phrases = descriptionPhrases(
      'Investigate a defect. Use when something is broken, crashes, or hangs.',
    );
    expect(phrases).toContain('something is broken');
    expect(phrases).toContain('crashes');
    expect(phrases).toContain('hangs');
    expect(phrases).toContain('Investigate a defect');
    expect(descriptionPhrases('   ')).toEqual([]);
  });

  it('labels every phrase with its skill and keeps listed examples', () => {
    const examples = examplesFromSkills(SKILLS);
    expect(new Set(examples.map((example) => example.label))).toEqual(
      new Set(SKILLS.map((entry) => entry.name)),
    );
    expect(examples).toContainEqual({ text: 'the dashboard takes forever to load', label: 'speedup' });
    expect(examples).toContainEqual({ text: 'defect fixer', label: 'defect-fixer' });
    expect(examples.every((example) => example.text.trim().length >= 3)).toBe(true);
  });

  it('learns from the prose that opens a skill body, not from its code, headings or links', () => {
    const body = [
      '# Bug brief',
      'Reproduce the problem, find the root cause, and fix it.',
      '',
      '```sh',
      'npm test -- --grep regression',
      '```',
      '- Add a [regression test](docs/tests.md) that fails before the fix.',
      '| step | owner |',
    ].join('\n');
    expect(bodyProse(body)).toBe(
      'Reproduce the problem, find the root cause, and fix it. Add a regression test that fails before the fix.',
    );
    const examples = examplesFromSkills([{ ...skill('bug-brief', 'Investigate a defect.'), body }]);
    expect(examples).toContainEqual({
      text: 'Reproduce the problem, find the root cause, and fix it',
      label: 'bug-brief',
    });
    expect(examples).toContainEqual({
      text: 'Add a regression test that fails before the fix',
      label: 'bug-brief',
    });
    expect(examples.some((example) => example.text.includes('npm') || example.text.includes('owner'))).toBe(
      false,
    );
  });

  it('trains a model that routes unseen phrasings from descriptions alone', () => {
    const model = TextClassifier.train(examplesFromSkills(SKILLS));
    const route = (text: string): string => decide(model.predict(text));
    expect(model.predict('can you check why this broke')[0]?.label).toBe('defect-fixer');
    expect(model.predict('the readme is out of date')[0]?.label).toBe('writer');
    expect(model.predict('publish the new version')[0]?.label).toBe('shipper');
    expect(model.predict('profile the slow query')[0]?.label).toBe('speedup');
    expect(route('the app crashes when I save')).toBe('defect-fixer');
  });

  it('refuses requests that match no skill, and stop words alone route nowhere', () => {
    const model = TextClassifier.train(examplesFromSkills(SKILLS));
    const route = (text: string): string => decide(model.predict(text));
    for (const unrelated of [
      'book a table for two at an italian restaurant',
      'how tall is the eiffel tower',
    ]) {
      expect(route(unrelated)).toBe('none');
      expect(model.predict(unrelated)[0]?.probability ?? 1).toBeLessThan(
        (model.predict('the app crashes on startup')[0]?.probability ?? 0) - 0.2,
      );
    }
    // "with", "or", "a" and "for" occur in several descriptions; on their own they say nothing.
    expect(route('can you do this with a or for me please')).toBe('none');
  });
});
