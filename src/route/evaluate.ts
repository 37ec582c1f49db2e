import {
  NONE,
  type LabelledExample,
  type RouteCandidate,
  type SkillThresholds,
} from '../core/route-types.js';
import { SwitchboardError } from '../core/errors.js';
import {
  escalatesToLlm,
  fitThresholds,
  type FitObjective,
  type FitResult,
  type FitRow,
  type ThresholdSettings,
} from './fit.js';
import { fitSkillThresholds, tuningSetWarnings, type SkillFitOutcome } from './fit-skills.js';
import { computeMetrics, toScoredRow, type EvalMetrics, type ScoredRow } from './metrics.js';
import type { Router } from './router.js';

/**
 * Routes every example and measures the result. Decisions go through `router.route`, the same path
 * a user's requests take (give it a router without cache or ledger to measure the tiers alone).
 */
export async function evaluateRouter(
  router: Router,
  examples: readonly LabelledExample[],
): Promise<{ metrics: EvalMetrics; rows: ScoredRow[] }> {
  checkDatasetLabels(router, examples);
  const rows: ScoredRow[] = [];
  for (const example of examples) {
    const decision = await router.route(example.text.trim() === '' ? '(empty)' : example.text);
    rows.push(toScoredRow(example, decision));
  }
  return { metrics: computeMetrics(rows), rows };
}

/**
 * Scores examples with the router's raw candidates, ready for `fitThresholds` or `scoreWithThresholds`.
 * Only the top two candidates are kept: the abstain rule reads no more, and with 150 routes the full
 * lists of a few thousand rows would cost a hundred megabytes.
 */
export function rankExamples(
  router: Router,
  examples: readonly LabelledExample[],
  onRow?: (done: number, total: number) => void,
): FitRow[] {
  checkDatasetLabels(router, examples);
  return examples.map((example, index) => {
    onRow?.(index + 1, examples.length);
    return {
      expected: example.expected,
      ...(example.alternates === undefined ? {} : { alternates: example.alternates }),
      candidates: router.rank(example.text).candidates.slice(0, 2),
    };
  });
}

export interface FitReport {
  /**
   * The global thresholds, and the tuning set's figures at them with the skills' own thresholds
   * (`skillThresholds`, and existing ones from front matter or config that were not fitted again).
   */
  thresholds: FitResult;
  /** The tuning set's figures with global thresholds only (the existing per-skill ones kept): for comparison. */
  globalOnly: FitResult;
  /**
   * The skills' own thresholds after fitting, only the fields that differ from the global ones: what
   * `route.skill_thresholds` in switchboard.yaml should hold. Empty when no skill has any.
   */
  skillThresholds: Record<string, SkillThresholds>;
  /** How each skill that led some tuning rows was decided (empty with `perSkill: false`). */
  skills: SkillFitOutcome[];
  /** The held-out figures at the same settings, when a test set was given. */
  test?: FitResult;
  /** What makes the tuning set a weak basis (too few rows, no `none` rows), one line each. */
  warnings: string[];
}

export interface FitRouterOptions {
  onRow?: (set: 'tune' | 'test', done: number, total: number) => void;
  /**
   * Also choose thresholds per skill where the tuning set has enough rows for it (`fitSkillThresholds`).
   * @default true
   */
  perSkill?: boolean;
}

/**
 * Picks thresholds on tuning examples, globally and per skill, and reports a held-out set at them. The
 * skills' existing thresholds (front matter, config) are kept where they are not fitted again.
 */
export function fitRouter(
  router: Router,
  tune: readonly LabelledExample[],
  test: readonly LabelledExample[] | undefined,
  objective: FitObjective = 'balanced',
  { onRow, perSkill = true }: FitRouterOptions = {},
): FitReport {
  const ranked = rankExamples(router, tune, (done, total) => onRow?.('tune', done, total));
  const existing = router.skillThresholds;
  const fitted = fitSkillThresholds(ranked, {
    objective,
    existing,
    ...(perSkill ? {} : { minRows: Number.POSITIVE_INFINITY }),
  });
  const report: FitReport = {
    thresholds: fitted.global,
    globalOnly: fitted.globalOnly,
    skillThresholds: fitted.skills,
    skills: perSkill ? fitted.outcomes : [],
    warnings: tuningSetWarnings(tune),
  };
  if (test === undefined) return report;
  const rankedTest = rankExamples(router, test, (done, total) => onRow?.('test', done, total));
  const settings = { ...fitted.global, skills: fitted.skills };
  return { ...report, test: scoreWithThresholds(rankedTest, settings, objective) };
}

/** The figures a threshold setting gives on ranked rows (a one-point grid search). */
export function scoreWithThresholds(
  rows: readonly FitRow[],
  thresholds: ThresholdSettings,
  objective: FitObjective,
): FitResult {
  return fitThresholds(rows, {
    objective,
    confidenceGrid: [thresholds.confidenceThreshold],
    marginGrid: [thresholds.marginThreshold],
    ...(thresholds.skills === undefined ? {} : { skills: thresholds.skills }),
  });
}

/** A dataset whose labels the router cannot produce would make every metric quietly wrong. */
export function checkDatasetLabels(router: Router, examples: readonly LabelledExample[]): void {
  if (examples.length === 0) {
    throw new SwitchboardError('DATASET_INVALID', 'the dataset holds no examples', {
      hint: 'check the file and the split names',
    });
  }
  const known = new Set(router.skills.map((skill) => skill.name));
  const unknown = new Set<string>();
  for (const example of examples) {
    for (const label of [example.expected, ...(example.alternates ?? [])]) {
      if (label !== NONE && !known.has(label)) unknown.add(label);
    }
  }
  if (unknown.size > 0) {
    const listed = [...unknown].slice(0, 5).join(', ');
    throw new SwitchboardError(
      'DATASET_INVALID',
      `the dataset uses ${unknown.size} label(s) that are not routes: ${listed}`,
      { hint: `label rows with skill names from the skills folder or "${NONE}"` },
    );
  }
}

/**
 * The share of requests, given as `router.rank` candidates, that hybrid routing would send to the LLM
 * at these thresholds: those the local tiers abstain on (a confident refusal is a decision).
 */
export function escalationShare(
  ranked: readonly (readonly RouteCandidate[])[],
  thresholds: ThresholdSettings,
): number {
  if (ranked.length === 0) return 0;
  return ranked.filter((candidates) => escalatesToLlm(candidates, thresholds)).length / ranked.length;
}

export interface LlmShareFit {
  confidenceThreshold: number;
  marginThreshold: number;
  /** Share of the requests the local tiers would leave to the LLM at these thresholds. */
  llmShare: number;
  count: number;
}

/**
 * Escalation by budget: the highest confidence threshold (so the local model decides only what it is
 * surest of) at which no more than `targetShare` of these unlabelled requests would go to the LLM.
 * Rule matches and confident refusals never go to the LLM. The margin threshold stays as given unless
 * even a confidence threshold of 0 sends too many: then it is lowered, in steps of 0.01, until the
 * target is met (or reaches 0).
 */
export function fitForLlmShare(
  router: Router,
  texts: readonly string[],
  targetShare: number,
  marginThreshold: number,
): LlmShareFit {
  if (!(targetShare >= 0 && targetShare <= 1)) {
    throw new SwitchboardError(
      'INVALID_INPUT',
      `Expected the LLM share to be between 0 and 1, got ${targetShare}`,
    );
  }
  if (texts.length === 0) {
    throw new SwitchboardError('DATASET_INVALID', 'there are no requests to fit on', {
      hint: 'give a file with one request per line',
    });
  }
  const ranked = texts.map((text) => router.rank(text).candidates.slice(0, 2));
  // The skills' own thresholds still apply to the requests they lead; the search moves the global ones.
  const shareAt = (confidenceThreshold: number, margin: number): number =>
    escalationShare(ranked, { confidenceThreshold, marginThreshold: margin, skills: router.skillThresholds });
  let margin = marginThreshold;
  while (margin > 0 && shareAt(0, margin) > targetShare)
    margin = Math.max(0, Math.round((margin - 0.01) * 100) / 100);
  let best = 0;
  for (let step = 0; step <= 99; step++) {
    const threshold = step / 100;
    if (shareAt(threshold, margin) <= targetShare) best = threshold;
    else break;
  }
  return {
    confidenceThreshold: best,
    marginThreshold: margin,
    llmShare: shareAt(best, margin),
    count: texts.length,
  };
}
