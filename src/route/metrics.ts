import { percentile } from '../core/percentile.js';

export { percentile };
import { NONE, type LabelledExample, type RouteDecision } from '../core/route-types.js';

/** One evaluated example: what the dataset expected and what the router decided. */
export interface ScoredRow {
  /** Expected skill, or `none` when the request must be refused. */
  expected: string;
  /** Other skills that also count as correct. */
  alternates?: readonly string[];
  /** The router's answer, or `none` when it abstained. */
  predicted: string;
  /** The router's confidence in [0, 1]. */
  confidence: number;
  /** Which tier decided (`rules`, `local`, ...). */
  method: string;
  /** Milliseconds spent in each tier that ran, by tier name. */
  timings: Readonly<Record<string, number>>;
  durationMs: number;
}

/** Precision, recall and F1 of one label, treating it as the positive class (one-vs-rest). */
export interface SkillMetrics {
  skill: string;
  precision: number;
  recall: number;
  f1: number;
  /** Rows whose (alternate-resolved) expected label is this skill. */
  support: number;
  /** Rows predicted as this skill. */
  predictedCount: number;
}

/** `counts[i][j]` = rows expected `labels[i]` and predicted `labels[j]`. */
export interface ConfusionMatrix {
  labels: string[];
  counts: number[][];
}

/** One equal-width confidence bin `[lower, upper)`; the last bin also holds confidence 1. */
export interface CalibrationBin {
  lower: number;
  upper: number;
  count: number;
  /** Mean confidence of the bin's rows; 0 when the bin is empty. */
  meanConfidence: number;
  /** Share of the bin's rows that were correct (alternates count); 0 when the bin is empty. */
  accuracy: number;
}

export interface Calibration {
  /** Expected calibration error: Σ (bin count / total) × |bin accuracy − bin mean confidence|. */
  ece: number;
  bins: CalibrationBin[];
}

/** Latency percentiles in milliseconds (nearest-rank); all 0 when `count` is 0. */
export interface LatencySummary {
  count: number;
  mean: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

/**
 * Everything `computeMetrics` measures. Plain numbers, strings and arrays only, so it survives
 * `JSON.stringify`. Every rate whose denominator is zero is reported as 0; the matching count
 * (`count`, `inScopeCount`, `outOfScopeCount`) tells the reader whether that 0 means anything.
 */
export interface EvalMetrics {
  count: number;
  /** Rows whose expected skill is not `none`. */
  inScopeCount: number;
  /** Rows whose expected skill is `none`. */
  outOfScopeCount: number;
  /** Share of rows where predicted === expected. */
  accuracy: number;
  /** Share of rows where predicted is expected or one of its alternates. */
  accuracyWithAlternates: number;
  /** In-scope rows answered correctly (alternates count). */
  inScopeAccuracy: number;
  /** Out-of-scope rows the router refused (predicted `none`). */
  outOfScopeRecall: number;
  /** Share of all rows predicted `none`. */
  abstainRate: number;
  /** Share of in-scope rows predicted `none`. */
  falseAbstainRate: number;
  /** Per-label metrics, `none` included as a class, sorted by support (descending) then name. */
  perSkill: SkillMetrics[];
  /** Unweighted mean F1 over every label in expected ∪ predicted. */
  macroF1: number;
  confusion: ConfusionMatrix;
  calibration: Calibration;
  latency: {
    overall: LatencySummary;
    /** By tier name, from each row's `timings`; a tier's count is the rows where it ran. */
    byTier: Record<string, LatencySummary>;
  };
  /** Share of rows decided by each method. */
  methodShare: Record<string, number>;
}

/** Number of equal-width confidence bins used for calibration. */
export const CALIBRATION_BINS = 10;

/** True when `predicted` is the expected skill or one of its alternates. */
export function isCorrect(row: Pick<ScoredRow, 'expected' | 'alternates' | 'predicted'>): boolean {
  return row.predicted === row.expected || (row.alternates?.includes(row.predicted) ?? false);
}

/**
 * Builds the row `computeMetrics` reads from a labelled example and the router's decision for it,
 * so callers cannot mix up which field goes where.
 */
export function toScoredRow(
  example: LabelledExample,
  decision: Pick<RouteDecision, 'skill' | 'confidence' | 'method' | 'timings' | 'durationMs'>,
): ScoredRow {
  return {
    expected: example.expected,
    ...(example.alternates === undefined ? {} : { alternates: example.alternates }),
    predicted: decision.skill,
    confidence: decision.confidence,
    method: decision.method,
    timings: decision.timings,
    durationMs: decision.durationMs,
  };
}

/** Summarises a list of latencies (any order) in milliseconds. */
export function summariseLatency(values: readonly number[]): LatencySummary {
  if (values.length === 0) return { count: 0, mean: 0, p50: 0, p95: 0, p99: 0, max: 0 };
  const sorted = [...values].sort((a, b) => a - b);
  let total = 0;
  for (const value of sorted) total += value;
  return {
    count: sorted.length,
    mean: total / sorted.length,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] as number,
  };
}

function ratio(numerator: number, denominator: number): number {
  return denominator === 0 ? 0 : numerator / denominator;
}

/**
 * The label a row counts as for per-skill metrics and the confusion matrix. When the router picked
 * an alternate, the row counts as that alternate: the dataset says that answer is right, so it
 * should sit on the diagonal rather than show up as a confusion.
 */
function resolvedExpected(row: ScoredRow): string {
  return row.predicted !== row.expected && isCorrect(row) ? row.predicted : row.expected;
}

/**
 * Computes every evaluation figure from scored rows. Per-skill metrics, macro-F1 and the confusion
 * matrix use each row's alternate-resolved expected label (see `resolvedExpected`); `accuracy` is the
 * one strict figure.
 */
export function computeMetrics(rows: readonly ScoredRow[]): EvalMetrics {
  const count = rows.length;
  let strictCorrect = 0;
  let correct = 0;
  let inScopeCount = 0;
  let inScopeCorrect = 0;
  let inScopeAbstained = 0;
  let outOfScopeCount = 0;
  let outOfScopeAbstained = 0;
  let abstained = 0;
  const methodCounts = new Map<string, number>();
  const tierDurations = new Map<string, number[]>();

  for (const row of rows) {
    const rowCorrect = isCorrect(row);
    if (row.predicted === row.expected) strictCorrect += 1;
    if (rowCorrect) correct += 1;
    const didAbstain = row.predicted === NONE;
    if (didAbstain) abstained += 1;
    if (row.expected === NONE) {
      outOfScopeCount += 1;
      if (didAbstain) outOfScopeAbstained += 1;
    } else {
      inScopeCount += 1;
      if (rowCorrect) inScopeCorrect += 1;
      if (didAbstain) inScopeAbstained += 1;
    }
    methodCounts.set(row.method, (methodCounts.get(row.method) ?? 0) + 1);
    for (const [tier, milliseconds] of Object.entries(row.timings)) {
      let list = tierDurations.get(tier);
      if (list === undefined) tierDurations.set(tier, (list = []));
      list.push(milliseconds);
    }
  }

  const { perSkill, macroF1, confusion } = computeClassMetrics(rows);
  const byTier: Record<string, LatencySummary> = {};
  for (const tier of [...tierDurations.keys()].sort()) {
    byTier[tier] = summariseLatency(tierDurations.get(tier) ?? []);
  }
  const methodShare: Record<string, number> = {};
  for (const method of [...methodCounts.keys()].sort()) {
    methodShare[method] = ratio(methodCounts.get(method) ?? 0, count);
  }

  return {
    count,
    inScopeCount,
    outOfScopeCount,
    accuracy: ratio(strictCorrect, count),
    accuracyWithAlternates: ratio(correct, count),
    inScopeAccuracy: ratio(inScopeCorrect, inScopeCount),
    outOfScopeRecall: ratio(outOfScopeAbstained, outOfScopeCount),
    abstainRate: ratio(abstained, count),
    falseAbstainRate: ratio(inScopeAbstained, inScopeCount),
    perSkill,
    macroF1,
    confusion,
    calibration: computeCalibration(rows),
    latency: { overall: summariseLatency(rows.map((row) => row.durationMs)), byTier },
    methodShare,
  };
}

/**
 * One-vs-rest precision/recall/F1 per label, sklearn-style: labels are those in expected ∪ predicted
 * (so a label nobody expected but the router predicted drags macro-F1 down, as it should), and any
 * 0/0 is 0. The confusion matrix uses the same labels, sorted by name.
 */
function computeClassMetrics(rows: readonly ScoredRow[]): {
  perSkill: SkillMetrics[];
  macroF1: number;
  confusion: ConfusionMatrix;
} {
  const pairs = rows.map((row) => ({ expected: resolvedExpected(row), predicted: row.predicted }));
  const labels = [...new Set(pairs.flatMap((pair) => [pair.expected, pair.predicted]))].sort();
  const index = new Map(labels.map((label, position) => [label, position]));
  const counts = labels.map(() => labels.map(() => 0));
  for (const pair of pairs) {
    const row = counts[index.get(pair.expected) as number] as number[];
    const column = index.get(pair.predicted) as number;
    row[column] = (row[column] ?? 0) + 1;
  }

  const perSkill = labels.map((skill, position): SkillMetrics => {
    const truePositives = counts[position]?.[position] ?? 0;
    let support = 0;
    for (const value of counts[position] ?? []) support += value;
    let predictedCount = 0;
    for (const row of counts) predictedCount += row[position] ?? 0;
    const precision = ratio(truePositives, predictedCount);
    const recall = ratio(truePositives, support);
    const f1 = ratio(2 * precision * recall, precision + recall);
    return { skill, precision, recall, f1, support, predictedCount };
  });
  let f1Total = 0;
  for (const skill of perSkill) f1Total += skill.f1;
  const macroF1 = ratio(f1Total, perSkill.length);
  perSkill.sort((a, b) => b.support - a.support || (a.skill < b.skill ? -1 : a.skill > b.skill ? 1 : 0));
  return { perSkill, macroF1, confusion: { labels, counts } };
}

/**
 * Expected calibration error over `CALIBRATION_BINS` equal-width bins. Confidence outside [0, 1] is
 * clamped so a misbehaving tier still lands in a bin instead of vanishing from the figure.
 */
export function computeCalibration(rows: readonly ScoredRow[]): Calibration {
  const totals = Array.from({ length: CALIBRATION_BINS }, () => ({ count: 0, confidence: 0, correct: 0 }));
  for (const row of rows) {
    const confidence = Number.isFinite(row.confidence) ? Math.min(Math.max(row.confidence, 0), 1) : 0;
    const binIndex = Math.min(Math.floor(confidence * CALIBRATION_BINS), CALIBRATION_BINS - 1);
    const bin = totals[binIndex];
    if (bin === undefined) continue;
    bin.count += 1;
    bin.confidence += confidence;
    if (isCorrect(row)) bin.correct += 1;
  }
  let ece = 0;
  const bins = totals.map((bin, position): CalibrationBin => {
    const meanConfidence = ratio(bin.confidence, bin.count);
    const accuracy = ratio(bin.correct, bin.count);
    ece += ratio(bin.count, rows.length) * Math.abs(accuracy - meanConfidence);
    return {
      lower: position / CALIBRATION_BINS,
      upper: (position + 1) / CALIBRATION_BINS,
      count: bin.count,
      meanConfidence,
      accuracy,
    };
  });
  return { ece, bins };
}
