import { describe, expect, it } from 'vitest';
import type { RouteCandidate } from '../core/route-types.js';
import { seededRandom } from '../core/seeded-random.js';
import { applyThresholds, fitThresholds, type FitRow, type Thresholds } from './fit.js';

const open: Thresholds = { confidenceThreshold: 0, marginThreshold: 0 };

function candidates(...pairs: [string, number][]): RouteCandidate[] {
  return pairs.map(([skill, score]) => ({ skill, score }));
}

/** In-scope rows the model gets right with score `score`, second candidate at `score − margin`. */
function rowWith(expected: string, top: string, score: number, margin = score): FitRow {
  return { expected, candidates: candidates([top, score], ['other', score - margin]) };
}

describe('applyThresholds', () => {
  it('answers the top skill when both thresholds pass', () => {
    expect(
      applyThresholds(candidates(['a', 0.8], ['b', 0.1]), { confidenceThreshold: 0.5, marginThreshold: 0.3 }),
    ).toEqual({ skill: 'a', confidence: 0.8 });
  });

  it('abstains below the confidence threshold and reports the top score', () => {
    expect(
      applyThresholds(candidates(['a', 0.49], ['b', 0.1]), { confidenceThreshold: 0.5, marginThreshold: 0 }),
    ).toEqual({ skill: 'none', confidence: 0.49 });
    // The threshold itself passes: the rule is "below", not "at or below".
    expect(
      applyThresholds(candidates(['a', 0.5]), { confidenceThreshold: 0.5, marginThreshold: 0 }).skill,
    ).toBe('a');
  });

  it('abstains when the margin to the second candidate is too small', () => {
    const close = candidates(['a', 0.7], ['b', 0.6]);
    // 0.7 − 0.6 is 0.0999… in floating point; a margin of exactly 0.1 still passes.
    expect(applyThresholds(close, { confidenceThreshold: 0, marginThreshold: 0.1 }).skill).toBe('a');
    expect(applyThresholds(close, { confidenceThreshold: 0, marginThreshold: 0.11 })).toEqual({
      skill: 'none',
      confidence: 0.7,
    });
  });

  it('measures a lone candidate’s margin from 0', () => {
    expect(
      applyThresholds(candidates(['a', 0.3]), { confidenceThreshold: 0, marginThreshold: 0.3 }).skill,
    ).toBe('a');
    expect(
      applyThresholds(candidates(['a', 0.3]), { confidenceThreshold: 0, marginThreshold: 0.31 }).skill,
    ).toBe('none');
  });

  it('abstains when the top candidate is none, whatever the thresholds', () => {
    expect(applyThresholds(candidates(['none', 0.9], ['a', 0.05]), open)).toEqual({
      skill: 'none',
      confidence: 0.9,
    });
  });

  it('abstains with confidence 0 when there are no candidates', () => {
    expect(applyThresholds([], open)).toEqual({ skill: 'none', confidence: 0 });
  });

  it('finds the top two even when candidates are not sorted, earlier winning ties', () => {
    const unsorted = candidates(['b', 0.2], ['a', 0.6], ['c', 0.5]);
    expect(applyThresholds(unsorted, { confidenceThreshold: 0, marginThreshold: 0.1 }).skill).toBe('a');
    expect(applyThresholds(unsorted, { confidenceThreshold: 0, marginThreshold: 0.11 }).skill).toBe('none');
    expect(applyThresholds(candidates(['x', 0.5], ['y', 0.5]), open).skill).toBe('x');
  });
});

describe('applyThresholds with skills that set their own', () => {
  const settings = {
    confidenceThreshold: 0.3,
    marginThreshold: 0.05,
    skills: { strict: { confidenceThreshold: 0.7 }, loose: { marginThreshold: 0 } },
  };

  it("judges a request by its top candidate's thresholds", () => {
    // 0.6 passes the global 0.3 but not strict's own 0.7.
    expect(applyThresholds(candidates(['strict', 0.6], ['other', 0.1]), settings).skill).toBe('none');
    expect(applyThresholds(candidates(['other', 0.6], ['strict', 0.1]), settings).skill).toBe('other');
    expect(applyThresholds(candidates(['strict', 0.75], ['other', 0.1]), settings).skill).toBe('strict');
  });

  it('falls back to the global threshold for a field the skill leaves out', () => {
    // loose sets only a margin: the global confidence 0.3 still refuses 0.25.
    expect(applyThresholds(candidates(['loose', 0.25], ['other', 0.24]), settings).skill).toBe('none');
    expect(applyThresholds(candidates(['loose', 0.4], ['other', 0.39]), settings).skill).toBe('loose');
    expect(applyThresholds(candidates(['other', 0.4], ['loose', 0.39]), settings).skill).toBe('none');
  });

  it('never reads an inherited property as a skill', () => {
    expect(applyThresholds(candidates(['constructor', 0.4]), settings).skill).toBe('constructor');
  });
});

/** Four in-scope rows and three out-of-scope ones, all led by `a`, at spread-out probabilities. */
const FOUR_IN_THREE_OUT: FitRow[] = [
  rowWith('a', 'a', 0.9),
  rowWith('a', 'a', 0.8),
  rowWith('a', 'a', 0.6),
  rowWith('a', 'a', 0.4),
  rowWith('none', 'a', 0.7),
  rowWith('none', 'a', 0.5),
  rowWith('none', 'a', 0.3),
];

describe('fitThresholds', () => {
  it('finds the lowest confidence threshold that separates in-scope from out-of-scope rows', () => {
    const rows: FitRow[] = [
      rowWith('a', 'a', 0.9),
      rowWith('b', 'b', 0.8),
      rowWith('a', 'a', 0.7),
      rowWith('none', 'a', 0.5),
      rowWith('none', 'b', 0.3),
    ];
    const result = fitThresholds(rows);
    expect(result).toMatchObject({
      confidenceThreshold: 0.51,
      marginThreshold: 0,
      objective: 'balanced',
      score: 1,
      accuracy: 1,
      inScopeAccuracy: 1,
      outOfScopeRecall: 1,
      count: 5,
    });
    expect(result.abstainRate).toBeCloseTo(2 / 5);
    expect(result.constraintMet).toBeUndefined();
  });

  it('finds the margin threshold when confidence cannot separate', () => {
    const rows: FitRow[] = [
      rowWith('a', 'a', 0.6, 0.3),
      rowWith('b', 'b', 0.6, 0.2),
      rowWith('none', 'a', 0.6, 0.05),
      rowWith('none', 'b', 0.6, 0.01),
    ];
    const result = fitThresholds(rows);
    expect(result.confidenceThreshold).toBe(0);
    expect(result.marginThreshold).toBe(0.06);
    expect(result.score).toBe(1);
  });

  it('keeps thresholds at 0 when abstaining cannot help', () => {
    const rows = [rowWith('a', 'a', 0.4), rowWith('b', 'b', 0.2)];
    expect(fitThresholds(rows)).toMatchObject({
      confidenceThreshold: 0,
      marginThreshold: 0,
      abstainRate: 0,
      score: 1,
    });
  });

  it('prefers fewer abstains when the objective ties', () => {
    // Refusing the wrong low-score row does not change accuracy (wrong either way), so don't.
    const rows = [rowWith('a', 'a', 0.9), rowWith('a', 'b', 0.2)];
    const result = fitThresholds(rows, { objective: 'accuracy' });
    expect(result).toMatchObject({
      confidenceThreshold: 0,
      marginThreshold: 0,
      abstainRate: 0,
      accuracy: 0.5,
    });
  });

  it('counts alternates as correct answers', () => {
    const rows: FitRow[] = [
      { expected: 'a', alternates: ['b'], candidates: candidates(['b', 0.4], ['a', 0.3]) },
      rowWith('none', 'a', 0.35),
    ];
    // Any threshold in (0.35, 0.4] keeps the alternate answer and refuses the none row.
    expect(fitThresholds(rows)).toMatchObject({ confidenceThreshold: 0.36, score: 1 });
  });

  it('never answers rows whose top candidate is none', () => {
    const rows: FitRow[] = [
      { expected: 'none', candidates: candidates(['none', 0.9], ['a', 0.1]) },
      rowWith('a', 'a', 0.2),
    ];
    expect(fitThresholds(rows)).toMatchObject({
      confidenceThreshold: 0,
      outOfScopeRecall: 1,
      inScopeAccuracy: 1,
    });
  });

  it('maximises out-of-scope recall subject to a minimum in-scope accuracy', () => {
    const rows = FOUR_IN_THREE_OUT;
    // 3 of 4 in-scope rows need a threshold ≤ 0.6, which at best refuses 2 of 3 none rows (from 0.51);
    // 2 of 4 allow up to 0.8, which refuses all three (from 0.71).
    const strict = fitThresholds(rows, { objective: { minInScopeAccuracy: 0.75 } });
    expect(strict).toMatchObject({ confidenceThreshold: 0.51, inScopeAccuracy: 0.75, constraintMet: true });
    expect(strict.outOfScopeRecall).toBeCloseTo(2 / 3);
    expect(strict.objective).toBe('minInScopeAccuracy>=0.75');
    const loose = fitThresholds(rows, { objective: { minInScopeAccuracy: 0.5 } });
    expect(loose).toMatchObject({
      confidenceThreshold: 0.71,
      inScopeAccuracy: 0.5,
      outOfScopeRecall: 1,
      constraintMet: true,
    });
  });

  it('maximises in-scope accuracy subject to a minimum out-of-scope recall', () => {
    const rows = FOUR_IN_THREE_OUT;
    // Refusing 2 of 3 none rows takes a threshold above 0.5: from 0.51, which keeps 3 of 4 in scope.
    const twoThirds = fitThresholds(rows, { objective: { minOutOfScopeRecall: 0.66 } });
    expect(twoThirds).toMatchObject({
      confidenceThreshold: 0.51,
      inScopeAccuracy: 0.75,
      constraintMet: true,
    });
    expect(twoThirds.objective).toBe('minOutOfScopeRecall>=0.66');
    // All three take one above 0.7, which keeps only 2 of 4.
    expect(fitThresholds(rows, { objective: { minOutOfScopeRecall: 1 } })).toMatchObject({
      confidenceThreshold: 0.71,
      inScopeAccuracy: 0.5,
      outOfScopeRecall: 1,
    });
    expect(() => fitThresholds(rows, { objective: { minOutOfScopeRecall: -0.1 } })).toThrow(
      /minOutOfScopeRecall must be between 0 and 1/,
    );
  });

  it('falls back to the best in-scope accuracy when the minimum is unreachable', () => {
    const rows = [rowWith('a', 'b', 0.9), rowWith('none', 'a', 0.5)];
    expect(fitThresholds(rows, { objective: { minInScopeAccuracy: 0.9 } })).toMatchObject({
      confidenceThreshold: 0,
      marginThreshold: 0,
      constraintMet: false,
    });
  });

  it('uses custom grids', () => {
    const rows = [rowWith('a', 'a', 0.9), rowWith('none', 'a', 0.5)];
    expect(fitThresholds(rows, { confidenceGrid: [0.8, 0, 0.6], marginGrid: [0] })).toMatchObject({
      confidenceThreshold: 0.6,
      score: 1,
    });
  });

  it('rejects empty data, empty grids and impossible constraints', () => {
    expect(() => fitThresholds([])).toThrow(/empty dataset/);
    expect(() => fitThresholds([rowWith('a', 'a', 0.9)], { marginGrid: [] })).toThrow(/marginGrid/);
    expect(() => fitThresholds([rowWith('a', 'a', 0.9)], { objective: { minInScopeAccuracy: 2 } })).toThrow(
      /between 0 and 1/,
    );
  });

  it('holds skills that set their own thresholds at them and searches the other rows', () => {
    const rows: FitRow[] = [
      rowWith('a', 'a', 0.9),
      rowWith('a', 'a', 0.7),
      rowWith('none', 'a', 0.5),
      // A row led by b: b's own threshold decides it, wherever the global search goes.
      rowWith('none', 'b', 0.6),
    ];
    const result = fitThresholds(rows, { skills: { b: { confidenceThreshold: 0.95 } } });
    expect(result).toMatchObject({ confidenceThreshold: 0.51, inScopeAccuracy: 1, outOfScopeRecall: 1 });
    const loose = fitThresholds(rows, { skills: { b: { confidenceThreshold: 0.2 } } });
    expect(loose).toMatchObject({ confidenceThreshold: 0.51, inScopeAccuracy: 1, outOfScopeRecall: 0.5 });
  });

  it('agrees with a brute-force search that calls applyThresholds directly', () => {
    const random = seededRandom(7);
    const labels = ['a', 'b', 'c', 'none'];
    const rows: FitRow[] = Array.from({ length: 300 }, () => {
      const scores = labels.map((skill) => ({ skill, score: Math.round(random() * 100) / 100 }));
      scores.sort((x, y) => y.score - x.score);
      const expected = labels[Math.floor(random() * labels.length)] as string;
      return { expected, candidates: scores };
    });
    const confidenceGrid = [0, 0.1, 0.25, 0.3, 0.5, 0.7, 0.9];
    const marginGrid = [0, 0.05, 0.1, 0.2, 0.3];
    // Without skill thresholds, and with some skills holding their own (whole or one field).
    const settings = [
      undefined,
      { b: { confidenceThreshold: 0.6 }, c: { confidenceThreshold: 0.2, marginThreshold: 0.15 } },
    ];
    for (const [objective, skills] of (['balanced', 'accuracy'] as const).flatMap((name) =>
      settings.map((own) => [name, own] as const),
    )) {
      let bestScore = -1;
      for (const confidenceThreshold of confidenceGrid) {
        for (const marginThreshold of marginGrid) {
          let inScope = 0;
          let inScopeCorrect = 0;
          let outOfScopeCorrect = 0;
          for (const row of rows) {
            const { skill } = applyThresholds(row.candidates, {
              confidenceThreshold,
              marginThreshold,
              ...(skills === undefined ? {} : { skills }),
            });
            if (row.expected === 'none') outOfScopeCorrect += skill === 'none' ? 1 : 0;
            else {
              inScope += 1;
              inScopeCorrect += skill === row.expected ? 1 : 0;
            }
          }
          const outOfScope = rows.length - inScope;
          const score =
            objective === 'accuracy'
              ? (inScopeCorrect + outOfScopeCorrect) / rows.length
              : (inScopeCorrect / inScope + outOfScopeCorrect / outOfScope) / 2;
          bestScore = Math.max(bestScore, score);
        }
      }
      const fitted = fitThresholds(rows, {
        objective,
        confidenceGrid,
        marginGrid,
        ...(skills === undefined ? {} : { skills }),
      });
      expect(fitted.score).toBeCloseTo(bestScore, 12);
    }
  });
});
