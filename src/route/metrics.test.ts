import { describe, expect, it } from 'vitest';
import {
  computeMetrics,
  isCorrect,
  percentile,
  summariseLatency,
  toScoredRow,
  type ScoredRow,
} from './metrics.js';

function row(expected: string, predicted: string, extra: Partial<ScoredRow> = {}): ScoredRow {
  return { expected, predicted, confidence: 0.5, method: 'local', timings: {}, durationMs: 1, ...extra };
}

/** expected → predicted; three classes a, b, none. Hand-computed figures are in each test. */
const threeClass: ScoredRow[] = [
  row('a', 'a'),
  row('a', 'a'),
  row('a', 'b'),
  row('b', 'b'),
  row('b', 'none'),
  row('none', 'none'),
  row('none', 'a'),
];

describe('percentile', () => {
  it('is NaN for no values and the value itself for one', () => {
    expect(percentile([], 50)).toBeNaN();
    expect(percentile([7], 0)).toBe(7);
    expect(percentile([7], 50)).toBe(7);
    expect(percentile([7], 100)).toBe(7);
  });

  it('uses nearest rank', () => {
    const values = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    expect(percentile(values, 0)).toBe(1);
    expect(percentile(values, 50)).toBe(5);
    expect(percentile(values, 51)).toBe(6);
    expect(percentile(values, 95)).toBe(10);
    expect(percentile(values, 100)).toBe(10);
  });

  it('does not skip a rank through floating-point error', () => {
    const hundred = Array.from({ length: 100 }, (_, index) => index + 1);
    // 0.07 × 100 is 7.000000000000001 in floating point.
    expect(percentile(hundred, 7)).toBe(7);
    expect(percentile(hundred, 95)).toBe(95);
    expect(percentile(hundred, 99)).toBe(99);
  });

  it('rejects p outside [0, 100]', () => {
    expect(() => percentile([1], 101)).toThrow(/between 0 and 100/);
    expect(() => percentile([1], -1)).toThrow(/between 0 and 100/);
    expect(() => percentile([1], Number.NaN)).toThrow(/between 0 and 100/);
  });
});

describe('summariseLatency', () => {
  it('sorts its input and reports zeros when empty', () => {
    expect(summariseLatency([30, 10, 20])).toEqual({
      count: 3,
      mean: 20,
      p50: 20,
      p95: 30,
      p99: 30,
      max: 30,
    });
    expect(summariseLatency([])).toEqual({ count: 0, mean: 0, p50: 0, p95: 0, p99: 0, max: 0 });
  });
});

describe('computeMetrics', () => {
  it('computes the headline rates', () => {
    const metrics = computeMetrics(threeClass);
    expect(metrics.count).toBe(7);
    expect(metrics.inScopeCount).toBe(5);
    expect(metrics.outOfScopeCount).toBe(2);
    expect(metrics.accuracy).toBeCloseTo(4 / 7);
    expect(metrics.accuracyWithAlternates).toBeCloseTo(4 / 7);
    expect(metrics.inScopeAccuracy).toBeCloseTo(3 / 5);
    expect(metrics.outOfScopeRecall).toBeCloseTo(1 / 2);
    expect(metrics.abstainRate).toBeCloseTo(2 / 7);
    expect(metrics.falseAbstainRate).toBeCloseTo(1 / 5);
  });

  it('treats none as a class in per-skill metrics and the confusion matrix', () => {
    const metrics = computeMetrics(threeClass);
    expect(metrics.confusion).toEqual({
      labels: ['a', 'b', 'none'],
      counts: [
        [2, 1, 0],
        [0, 1, 1],
        [1, 0, 1],
      ],
    });
    const bySkill = Object.fromEntries(metrics.perSkill.map((skill) => [skill.skill, skill]));
    expect(bySkill['a']).toMatchObject({ support: 3, predictedCount: 3 });
    expect(bySkill['a']?.precision).toBeCloseTo(2 / 3);
    expect(bySkill['a']?.recall).toBeCloseTo(2 / 3);
    expect(bySkill['a']?.f1).toBeCloseTo(2 / 3);
    for (const skill of ['b', 'none']) {
      expect(bySkill[skill]).toMatchObject({
        support: 2,
        predictedCount: 2,
        precision: 0.5,
        recall: 0.5,
        f1: 0.5,
      });
    }
    expect(metrics.macroF1).toBeCloseTo((2 / 3 + 0.5 + 0.5) / 3);
  });

  it('sorts per-skill rows by support, then name', () => {
    expect(computeMetrics(threeClass).perSkill.map((skill) => skill.skill)).toEqual(['a', 'b', 'none']);
  });

  it('includes labels only ever predicted in macro-F1, with 0/0 as 0', () => {
    const metrics = computeMetrics([row('a', 'a'), row('a', 'c')]);
    const c = metrics.perSkill.find((skill) => skill.skill === 'c');
    expect(c).toEqual({ skill: 'c', precision: 0, recall: 0, f1: 0, support: 0, predictedCount: 1 });
    // a: precision 1, recall 1/2, F1 2/3; c: F1 0.
    expect(metrics.macroF1).toBeCloseTo(1 / 3);
  });

  it('counts an alternate as correct everywhere except strict accuracy', () => {
    const metrics = computeMetrics([
      row('a', 'b', { alternates: ['b'], confidence: 0.95 }),
      row('a', 'a', { confidence: 0.95 }),
    ]);
    expect(metrics.accuracy).toBe(0.5);
    expect(metrics.accuracyWithAlternates).toBe(1);
    expect(metrics.inScopeAccuracy).toBe(1);
    expect(metrics.macroF1).toBe(1);
    expect(metrics.confusion).toEqual({
      labels: ['a', 'b'],
      counts: [
        [1, 0],
        [0, 1],
      ],
    });
    expect(metrics.calibration.bins[9]?.accuracy).toBe(1);
  });

  it('computes ECE over ten equal-width bins', () => {
    const metrics = computeMetrics([
      row('a', 'a', { confidence: 0.95 }),
      row('a', 'b', { confidence: 0.95 }),
      row('a', 'a', { confidence: 0.25 }),
      row('a', 'a', { confidence: 0.25 }),
    ]);
    // Bin 0.9–1.0: confidence 0.95, accuracy 0.5 → 2/4 × 0.45; bin 0.2–0.3: 0.25 vs 1 → 2/4 × 0.75.
    expect(metrics.calibration.ece).toBeCloseTo(0.225 + 0.375);
    expect(metrics.calibration.bins).toHaveLength(10);
    expect(metrics.calibration.bins[9]).toMatchObject({ count: 2, accuracy: 0.5 });
    expect(metrics.calibration.bins[9]?.meanConfidence).toBeCloseTo(0.95);
    expect(metrics.calibration.bins[2]).toMatchObject({ count: 2, meanConfidence: 0.25, accuracy: 1 });
    expect(metrics.calibration.bins[0]).toEqual({
      lower: 0,
      upper: 0.1,
      count: 0,
      meanConfidence: 0,
      accuracy: 0,
    });
  });

  it('puts confidence 1 in the last bin and a bin edge in the bin above', () => {
    const metrics = computeMetrics([row('a', 'a', { confidence: 1 }), row('a', 'a', { confidence: 0.5 })]);
    expect(metrics.calibration.bins[9]?.count).toBe(1);
    expect(metrics.calibration.bins[5]?.count).toBe(1);
    expect(metrics.calibration.ece).toBeCloseTo(0.5 * 0 + 0.5 * 0.5);
  });

  it('is perfectly calibrated when confidence matches accuracy', () => {
    const rows = [0, 1, 2, 3].map((index) => row('a', index === 0 ? 'b' : 'a', { confidence: 0.75 }));
    expect(computeMetrics(rows).calibration.ece).toBeCloseTo(0);
  });

  it('summarises latency overall, per tier and by method', () => {
    const metrics = computeMetrics([
      row('a', 'a', { method: 'rules', timings: { rules: 1 }, durationMs: 2 }),
      row('a', 'a', { method: 'local', timings: { rules: 3, local: 10 }, durationMs: 14 }),
      row('a', 'a', { method: 'local', timings: { rules: 2, local: 20 }, durationMs: 23 }),
      row('a', 'a', { method: 'local', timings: { rules: 2, local: 30 }, durationMs: 33 }),
    ]);
    expect(metrics.latency.overall).toMatchObject({ count: 4, p50: 14, p95: 33, p99: 33, max: 33 });
    expect(metrics.latency.byTier['rules']).toMatchObject({ count: 4, p50: 2, p95: 3 });
    expect(metrics.latency.byTier['local']).toMatchObject({ count: 3, p50: 20, p99: 30 });
    expect(metrics.methodShare).toEqual({ local: 0.75, rules: 0.25 });
  });

  it('reports zeros, not NaN, for an empty run and survives JSON', () => {
    const metrics = computeMetrics([]);
    expect(metrics).toMatchObject({
      count: 0,
      accuracy: 0,
      inScopeAccuracy: 0,
      outOfScopeRecall: 0,
      macroF1: 0,
      perSkill: [],
      confusion: { labels: [], counts: [] },
    });
    expect(metrics.calibration.ece).toBe(0);
    expect(JSON.parse(JSON.stringify(metrics))).toEqual(metrics);
    expect(JSON.parse(JSON.stringify(computeMetrics(threeClass)))).toEqual(computeMetrics(threeClass));
  });

  it('gives out-of-scope figures only from none rows', () => {
    const metrics = computeMetrics([row('a', 'a'), row('a', 'none')]);
    expect(metrics.outOfScopeCount).toBe(0);
    expect(metrics.outOfScopeRecall).toBe(0);
    expect(metrics.falseAbstainRate).toBe(0.5);
    expect(metrics.abstainRate).toBe(0.5);
  });
});

describe('toScoredRow and isCorrect', () => {
  it('copies the example and decision fields', () => {
    const scored = toScoredRow(
      { text: 'refund please', expected: 'billing', alternates: ['refunds'] },
      { skill: 'refunds', confidence: 0.9, method: 'local', timings: { local: 4 }, durationMs: 5 },
    );
    expect(scored).toEqual({
      expected: 'billing',
      alternates: ['refunds'],
      predicted: 'refunds',
      confidence: 0.9,
      method: 'local',
      timings: { local: 4 },
      durationMs: 5,
    });
    expect(isCorrect(scored)).toBe(true);
    expect(isCorrect({ expected: 'billing', predicted: 'none' })).toBe(false);
  });
});
