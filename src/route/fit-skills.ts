import { NONE, type SkillThresholds } from '../core/route-types.js';
import {
  DEFAULT_CONFIDENCE_GRID,
  DEFAULT_MARGIN_GRID,
  fitThresholds,
  includesLabel,
  thresholdsFor,
  topTwo,
  type FitOptions,
  type FitResult,
  type FitRow,
  type Thresholds,
  type ThresholdSettings,
} from './fit.js';

/**
 * A skill gets thresholds of its own only when at least this many tuning rows have it as the top
 * candidate: fewer would tune to the noise of a handful of requests.
 */
export const MIN_SKILL_ROWS = 10;
/**
 * …and at least this many of those rows are wrong for it (another skill's or `none`): without
 * requests it should refuse, nothing tells a stricter threshold apart from the global one.
 */
export const MIN_SKILL_WRONG_ROWS = 2;
/** A tuning set smaller than this gives noisy thresholds; `fit` warns. */
export const MIN_TUNING_ROWS = 50;

/** How `fitSkillThresholds` decided one skill that was the top candidate of some tuning rows. */
export interface SkillFitOutcome {
  skill: string;
  /** Tuning rows whose top candidate is this skill. */
  rows: number;
  /** Of those, the rows that should not go to it (another skill or `none`). */
  wrongRows: number;
  /**
   * `fitted`: thresholds of its own beat the global ones on the tuning set. `global`: enough rows,
   * but a search of its own did no better than what it had (the global thresholds or its existing
   * ones). `too-few-rows`: fewer than the minimum, so not tried.
   */
  outcome: 'fitted' | 'global' | 'too-few-rows';
  /** The thresholds in effect for it afterwards (its own, or the global ones filled in). */
  confidenceThreshold: number;
  marginThreshold: number;
}

export interface SkillFitOptions extends Omit<FitOptions, 'skills'> {
  /**
   * Skills' thresholds already in effect (front matter, switchboard.yaml). Kept for the skills that are
   * not fitted, and for a fitted skill whose own search does not beat them.
   * @default none
   */
  existing?: Readonly<Record<string, SkillThresholds>>;
  /** @default MIN_SKILL_ROWS */
  minRows?: number;
  /** @default MIN_SKILL_WRONG_ROWS */
  minWrongRows?: number;
}

export interface SkillFitResult {
  /**
   * The global thresholds (searched on every row, existing skill thresholds held), with the figures on
   * the tuning rows at them and the skills' own (`skills`): what routing with these settings scores.
   */
  global: FitResult;
  /** The same global thresholds' figures without the newly fitted skill thresholds: for comparison. */
  globalOnly: FitResult;
  /**
   * Every skill's own thresholds after fitting (fitted ones, and existing ones kept), with only the
   * fields that differ from the global ones: what `route.skill_thresholds` should hold.
   */
  skills: Record<string, SkillThresholds>;
  /** Per skill that was the top candidate of at least one row, by name. */
  outcomes: SkillFitOutcome[];
}

/**
 * Chooses the global thresholds on every tuning row (the pooled estimate, which skills with little
 * data keep), then, for each skill with enough rows (see `MIN_SKILL_ROWS` and `MIN_SKILL_WRONG_ROWS`),
 * thresholds of its own, never looser than what it has, where they improve the objective over the
 * whole tuning set. A request is
 * judged by its top candidate's thresholds, so a skill's search moves only the rows it leads, every
 * other skill held at its thresholds. Skills with fewer rows keep the global thresholds (or the ones
 * they already had, in `existing`).
 */
export function fitSkillThresholds(rows: readonly FitRow[], options: SkillFitOptions = {}): SkillFitResult {
  const {
    existing = {},
    minRows = MIN_SKILL_ROWS,
    minWrongRows = MIN_SKILL_WRONG_ROWS,
    ...searchOptions
  } = options;
  const globalOnly = fitThresholds(rows, { ...searchOptions, skills: existing });
  const settings: Thresholds = {
    confidenceThreshold: globalOnly.confidenceThreshold,
    marginThreshold: globalOnly.marginThreshold,
  };
  const scoreAt = (skills: Readonly<Record<string, SkillThresholds>>): FitResult =>
    fitThresholds(rows, {
      ...searchOptions,
      confidenceGrid: [settings.confidenceThreshold],
      marginGrid: [settings.marginThreshold],
      skills,
    });
  const counts = countByTopSkill(rows);
  const current: Record<string, SkillThresholds> = { ...existing };
  const outcomes: SkillFitOutcome[] = [];
  for (const [skill, count] of [...counts].sort(([a], [b]) => byCodeUnits(a, b))) {
    let outcome: SkillFitOutcome['outcome'] = 'too-few-rows';
    if (count.rows >= minRows && count.wrongRows >= minWrongRows) {
      const own = bestForSkill(rows, skill, { ...settings, skills: current }, searchOptions);
      const improved = improves(scoreAt({ ...current, [skill]: own }), scoreAt(current));
      if (improved) current[skill] = own;
      outcome = improved ? 'fitted' : 'global';
    }
    outcomes.push({ skill, ...count, outcome, ...thresholdsFor({ ...settings, skills: current }, skill) });
  }
  return { global: scoreAt(current), globalOnly, skills: withoutGlobalFields(current, settings), outcomes };
}

function byCodeUnits(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}

/** Tuning rows per top candidate's skill, and how many of them that skill would get wrong. */
function countByTopSkill(rows: readonly FitRow[]): Map<string, { rows: number; wrongRows: number }> {
  const counts = new Map<string, { rows: number; wrongRows: number }>();
  for (const row of rows) {
    const { top } = topTwo(row.candidates);
    if (top === undefined || top.skill === NONE) continue;
    const count = counts.get(top.skill) ?? { rows: 0, wrongRows: 0 };
    count.rows += 1;
    if (!includesLabel(row, top.skill)) count.wrongRows += 1;
    counts.set(top.skill, count);
  }
  return counts;
}

/** The skill's best thresholds for the rows it leads, every other skill held at `settings`. */
function bestForSkill(
  rows: readonly FitRow[],
  skill: string,
  settings: ThresholdSettings,
  searchOptions: Omit<FitOptions, 'skills'>,
): Thresholds {
  const pinned: Record<string, SkillThresholds> = {};
  for (const row of rows) {
    const { top } = topTwo(row.candidates);
    if (top !== undefined && top.skill !== skill && !Object.hasOwn(pinned, top.skill)) {
      pinned[top.skill] = thresholdsFor(settings, top.skill);
    }
  }
  // Only stricter than what the skill has: a looser threshold fitted on a skill's few rows lets
  // through the out-of-scope requests its tuning rows happened not to include (measured on CLINC150).
  const now = thresholdsFor(settings, skill);
  const stricter = (grid: readonly number[], floor: number) => {
    const kept = grid.filter((value) => value >= floor);
    return kept.length > 0 ? kept : [floor];
  };
  const searched = fitThresholds(rows, {
    ...searchOptions,
    confidenceGrid: stricter(
      searchOptions.confidenceGrid ?? DEFAULT_CONFIDENCE_GRID,
      now.confidenceThreshold,
    ),
    marginGrid: stricter(searchOptions.marginGrid ?? DEFAULT_MARGIN_GRID, now.marginThreshold),
    skills: pinned,
  });
  return { confidenceThreshold: searched.confidenceThreshold, marginThreshold: searched.marginThreshold };
}

/** Scores within this are ties: equal counts can still differ in the last bit after division. */
const SCORE_EPSILON = 1e-12;

/** Strictly better: a met constraint first, then the objective's figure. */
function improves(candidate: FitResult, incumbent: FitResult): boolean {
  const met = (result: FitResult) => result.constraintMet !== false;
  if (met(candidate) !== met(incumbent)) return met(candidate);
  return candidate.score > incumbent.score + SCORE_EPSILON;
}

/** Drops the fields equal to the global thresholds, and skills left with none. */
function withoutGlobalFields(
  skills: Readonly<Record<string, SkillThresholds>>,
  global: Thresholds,
): Record<string, SkillThresholds> {
  const kept: Record<string, SkillThresholds> = {};
  for (const [skill, thresholds] of Object.entries(skills)) {
    const own: SkillThresholds = {};
    if (
      thresholds.confidenceThreshold !== undefined &&
      thresholds.confidenceThreshold !== global.confidenceThreshold
    )
      own.confidenceThreshold = thresholds.confidenceThreshold;
    if (thresholds.marginThreshold !== undefined && thresholds.marginThreshold !== global.marginThreshold)
      own.marginThreshold = thresholds.marginThreshold;
    if (Object.keys(own).length > 0) kept[skill] = own;
  }
  return kept;
}

/**
 * What makes a tuning set a weak basis for thresholds, one line each: too few rows, or no `none` rows
 * (then nothing says when to refuse, and the fitted confidence threshold only trades answers away).
 */
export function tuningSetWarnings(rows: readonly { expected: string }[]): string[] {
  const warnings: string[] = [];
  if (rows.length < MIN_TUNING_ROWS) {
    warnings.push(
      `the tuning set has ${rows.length} row(s), fewer than ${MIN_TUNING_ROWS}: the thresholds fitted on it are noisy; label more requests`,
    );
  }
  if (!rows.some((row) => row.expected === NONE)) {
    warnings.push(
      `the tuning set has no "${NONE}" rows, so nothing sets when to abstain: add requests no skill should take, labelled "${NONE}"`,
    );
  }
  return warnings;
}
