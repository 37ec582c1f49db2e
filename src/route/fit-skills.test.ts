import { describe, expect, it } from 'vitest';
import { fitThresholds, type FitRow } from './fit.js';
import { fitSkillThresholds, MIN_TUNING_ROWS, tuningSetWarnings } from './fit-skills.js';

/** `count` rows the model leads with `top` at `score` (runner-up far behind), labelled `expected`. */
function rows(count: number, expected: string, top: string, score: number): FitRow[] {
  return Array.from({ length: count }, () => ({
    expected,
    candidates: [
      { skill: top, score },
      { skill: 'other', score: 0.01 },
    ],
  }));
}

/**
 * Skill `a` is confidently wrong on some requests (out-of-scope ones at 0.55), while `b`'s right answers
 * come at 0.5: no global threshold refuses a's wrong rows without losing b's right ones. `c` leads only
 * five rows.
 */
const tuning: FitRow[] = [
  ...rows(14, 'a', 'a', 0.8),
  ...rows(6, 'none', 'a', 0.55),
  ...rows(30, 'b', 'b', 0.5),
  ...rows(6, 'none', 'b', 0.2),
  ...rows(3, 'c', 'c', 0.9),
  ...rows(2, 'none', 'c', 0.6),
];

describe('fitSkillThresholds', () => {
  it('gives a stricter threshold to the skill that needs one and beats the global-only figure', () => {
    const result = fitSkillThresholds(tuning);
    const globalOnly = fitThresholds(tuning);
    // Global only: b's out-of-scope rows are refused, a's and c's are not (8 of 14 answered wrongly).
    expect(globalOnly.score).toBeCloseTo((1 + 6 / 14) / 2, 12);
    expect(result.globalOnly).toEqual(globalOnly);
    expect(result.skills['a']?.confidenceThreshold).toBe(0.56);
    // With a's own threshold its 6 out-of-scope rows are refused too, and no in-scope row is lost.
    expect(result.global).toMatchObject({ inScopeAccuracy: 1, count: tuning.length });
    expect(result.global.outOfScopeRecall).toBeCloseTo(12 / 14, 12);
    expect(result.global.score).toBeCloseTo((1 + 12 / 14) / 2, 12);
    expect(result.global.score).toBeGreaterThan(globalOnly.score + 0.2);
    expect(result.outcomes).toEqual([
      expect.objectContaining({
        skill: 'a',
        rows: 20,
        wrongRows: 6,
        outcome: 'fitted',
        confidenceThreshold: 0.56,
      }),
      expect.objectContaining({ skill: 'b', rows: 36, wrongRows: 6, outcome: 'global' }),
      expect.objectContaining({ skill: 'c', rows: 5, wrongRows: 2, outcome: 'too-few-rows' }),
    ]);
    // b and c keep the global thresholds: nothing to paste for them.
    expect(Object.keys(result.skills)).toEqual(['a']);
  });

  it('keeps the global thresholds for a skill whose rows are all right, however many', () => {
    const allRight = [...rows(30, 'a', 'a', 0.4), ...rows(10, 'none', 'b', 0.3), ...rows(20, 'b', 'b', 0.9)];
    const result = fitSkillThresholds(allRight);
    expect(result.outcomes.find((outcome) => outcome.skill === 'a')?.outcome).toBe('too-few-rows');
    expect(result.skills).toEqual({});
    expect(result.global.score).toBeCloseTo(result.globalOnly.score, 12);
  });

  it('never loosens a skill below the global thresholds, however well that fits its tuning rows', () => {
    // b's out-of-scope rows at 0.6 pull the global threshold above a's right answers at 0.5.
    const pulled = [
      ...rows(30, 'b', 'b', 0.9),
      ...rows(10, 'none', 'b', 0.6),
      ...rows(12, 'a', 'a', 0.5),
      ...rows(2, 'none', 'a', 0.3),
    ];
    const result = fitSkillThresholds(pulled);
    expect(result.global.confidenceThreshold).toBeGreaterThan(0.5);
    expect(result.outcomes.find((outcome) => outcome.skill === 'a')).toMatchObject({
      outcome: 'global',
      confidenceThreshold: result.global.confidenceThreshold,
    });
    expect(result.skills).toEqual({});
  });

  it("keeps a skill's existing thresholds when it has too few rows to fit, and counts them in", () => {
    const result = fitSkillThresholds(tuning, { existing: { c: { confidenceThreshold: 0.95 } } });
    expect(result.skills).toEqual({ a: expect.any(Object), c: { confidenceThreshold: 0.95 } });
    expect(result.outcomes.find((outcome) => outcome.skill === 'c')).toMatchObject({
      outcome: 'too-few-rows',
      confidenceThreshold: 0.95,
    });
    // c refuses its 3 right rows and its 2 wrong ones: 44 of 47 in scope, 14 of 14 refused.
    expect(result.global.inScopeAccuracy).toBeCloseTo(44 / 47, 12);
    expect(result.global.outOfScopeRecall).toBe(1);
  });

  it('chooses nothing per skill when asked for minimums no skill reaches', () => {
    const result = fitSkillThresholds(tuning, { minRows: 1000 });
    expect(result.skills).toEqual({});
    expect(result.outcomes.every((outcome) => outcome.outcome === 'too-few-rows')).toBe(true);
  });
});

describe('tuningSetWarnings', () => {
  it('warns about a small tuning set and one without none rows, one line each', () => {
    const small = Array.from({ length: MIN_TUNING_ROWS - 1 }, () => ({ expected: 'a' }));
    const warnings = tuningSetWarnings(small);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/49 row\(s\), fewer than 50/);
    expect(warnings[1]).toMatch(/no "none" rows/);
    expect(warnings.every((line) => !line.includes('\n'))).toBe(true);
  });

  it('says nothing about a large tuning set with none rows', () => {
    const rows = [
      ...Array.from({ length: MIN_TUNING_ROWS }, () => ({ expected: 'a' })),
      { expected: 'none' },
    ];
    expect(tuningSetWarnings(rows)).toEqual([]);
  });
});
