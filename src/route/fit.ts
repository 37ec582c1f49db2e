import { SwitchboardError } from '../core/errors.js';
import { NONE, type RouteCandidate, type SkillThresholds } from '../core/route-types.js';

export type { SkillThresholds } from '../core/route-types.js';

/** When the router refuses to answer. */
export interface Thresholds {
  /** Abstain when the top score is below this. */
  confidenceThreshold: number;
  /** Abstain when the top score minus the second score is below this. */
  marginThreshold: number;
}

/**
 * The global thresholds and the skills' own: a request whose top candidate is a skill listed in
 * `skills` is judged by that skill's thresholds, each field falling back to the global one.
 */
export interface ThresholdSettings extends Thresholds {
  /** By skill name. */
  skills?: Readonly<Record<string, SkillThresholds>>;
}

/** The thresholds that judge a request whose top candidate is `skill`. */
export function thresholdsFor(settings: ThresholdSettings, skill: string): Thresholds {
  const own = ownThresholds(settings.skills, skill);
  return {
    confidenceThreshold: own?.confidenceThreshold ?? settings.confidenceThreshold,
    marginThreshold: own?.marginThreshold ?? settings.marginThreshold,
  };
}

/** A skill's entry, never an inherited property (a skill may be called `constructor`). */
export function ownThresholds(
  skills: Readonly<Record<string, SkillThresholds>> | undefined,
  skill: string,
): SkillThresholds | undefined {
  return skills !== undefined && Object.hasOwn(skills, skill) ? skills[skill] : undefined;
}

/** What the abstain rule decided for one request. */
export interface ThresholdDecision {
  /** The top candidate's skill, or `none` when the router abstains. */
  skill: string;
  /** The top candidate's score, also when abstaining (0 when there are no candidates). */
  confidence: number;
}

/**
 * Slack on the margin comparison. The margin is a difference of two floats, so `0.7 − 0.6` comes out
 * as 0.0999…; without slack a configured margin of 0.1 would refuse a request whose scores differ by
 * exactly 0.1.
 */
const MARGIN_EPSILON = 1e-9;

function passesConfidence(topScore: number, confidenceThreshold: number): boolean {
  return !(topScore < confidenceThreshold);
}

function passesMargin(margin: number, marginThreshold: number): boolean {
  return !(margin + MARGIN_EPSILON < marginThreshold);
}

/** The best and second-best candidates; earlier candidates win ties, as in a list sorted best first. */
export function topTwo(candidates: readonly RouteCandidate[]): {
  top: RouteCandidate | undefined;
  second: number;
} {
  let top: RouteCandidate | undefined;
  let second = 0;
  for (const candidate of candidates) {
    if (top === undefined) {
      top = candidate;
    } else if (candidate.score > top.score) {
      second = top.score;
      top = candidate;
    } else if (candidate.score > second) {
      second = candidate.score;
    }
  }
  return { top, second };
}

/**
 * The abstain rule, and its only definition: the router and `fitThresholds` both call this. The
 * router abstains (answers `none`) when there are no candidates, the top candidate is `none`, the
 * top score is below `confidenceThreshold`, or the top score minus the second (0 when there is only
 * one candidate) is below `marginThreshold` — the top candidate's own thresholds when its skill sets
 * them (`settings.skills`), else the global ones. Candidates need not be sorted; the reported
 * confidence is always the top score.
 */
export function applyThresholds(
  candidates: readonly RouteCandidate[],
  settings: ThresholdSettings,
): ThresholdDecision {
  const { top, second } = topTwo(candidates);
  if (top === undefined) return { skill: NONE, confidence: 0 };
  const thresholds = thresholdsFor(settings, top.skill);
  const answers =
    top.skill !== NONE &&
    passesConfidence(top.score, thresholds.confidenceThreshold) &&
    passesMargin(top.score - second, thresholds.marginThreshold);
  return { skill: answers ? top.skill : NONE, confidence: top.score };
}

/**
 * True when the model's answer is a refusal it is sure of: `none` on top, passing both thresholds (a
 * model trained with `none` examples says "out of scope" this way). Such a refusal is a decision, not
 * an abstention: hybrid routing does not ask the LLM about it.
 */
export function isConfidentRefusal(
  candidates: readonly RouteCandidate[],
  thresholds: ThresholdSettings,
): boolean {
  const { top, second } = topTwo(candidates);
  return (
    top?.skill === NONE &&
    passesConfidence(top.score, thresholds.confidenceThreshold) &&
    passesMargin(top.score - second, thresholds.marginThreshold)
  );
}

/** True when hybrid routing would ask the LLM: the local tiers abstain without a confident refusal. */
export function escalatesToLlm(
  candidates: readonly RouteCandidate[],
  thresholds: ThresholdSettings,
): boolean {
  return (
    applyThresholds(candidates, thresholds).skill === NONE && !isConfidentRefusal(candidates, thresholds)
  );
}

/** One labelled example with the model's raw candidates, before any threshold. */
export interface FitRow {
  expected: string;
  alternates?: readonly string[];
  /** The raw model output, best first. */
  candidates: readonly RouteCandidate[];
}

/**
 * What `fitThresholds` maximises.
 * - `balanced`: mean of in-scope accuracy and out-of-scope recall; when the data has only one kind
 *   of row, the figure for that kind (so with no `none` rows, accuracy counting alternates).
 * - `accuracy`: share of all rows decided correctly, where refusing a `none` row is correct.
 * - `{ minInScopeAccuracy }`: the highest out-of-scope recall whose in-scope accuracy is at least
 *   this; when no setting reaches it, the highest in-scope accuracy (and `constraintMet: false`).
 * - `{ minOutOfScopeRecall }`: the highest in-scope accuracy whose out-of-scope recall is at least
 *   this (refuse at least this share of out-of-scope requests, otherwise answer as well as possible);
 *   when no setting reaches it, the highest out-of-scope recall (and `constraintMet: false`).
 */
export type FitObjective =
  'balanced' | 'accuracy' | { minInScopeAccuracy: number } | { minOutOfScopeRecall: number };

export interface FitOptions {
  /** @default 'balanced' */
  objective?: FitObjective;
  /**
   * Confidence thresholds to try.
   * @default 0, 0.01, …, 0.99
   */
  confidenceGrid?: readonly number[];
  /**
   * Margin thresholds to try.
   * @default 0, 0.01, …, 0.5
   */
  marginGrid?: readonly number[];
  /**
   * Skills' own thresholds, held fixed: a row whose top candidate is one of these skills is judged by
   * them (a field left out takes the grid's value), so the search covers the other rows only.
   * @default none
   */
  skills?: Readonly<Record<string, SkillThresholds>>;
}

export interface FitResult extends Thresholds {
  /** The objective maximised, e.g. `balanced` or `minInScopeAccuracy>=0.9`. */
  objective: string;
  /** The objective's value at the chosen thresholds. */
  score: number;
  /** Share of all rows decided correctly (refusing a `none` row is correct; alternates count). */
  accuracy: number;
  /** In-scope rows answered correctly; 0 when there are none. */
  inScopeAccuracy: number;
  /** `none` rows refused; 0 when there are none. */
  outOfScopeRecall: number;
  abstainRate: number;
  count: number;
  /** Only for `{ minInScopeAccuracy }`: whether any setting reached the required accuracy. */
  constraintMet?: boolean;
}

/** Evenly spaced grid built by division rather than repeated addition, so 0.3 is exactly 0.3. */
function evenGrid(steps: number, maximum: number): number[] {
  return Array.from({ length: steps + 1 }, (_, position) => (position * maximum) / steps);
}

/** The confidence thresholds `fitThresholds` tries by default: 0, 0.01, …, 0.99. */
export const DEFAULT_CONFIDENCE_GRID: readonly number[] = evenGrid(100, 1).slice(0, -1);
/** The margin thresholds `fitThresholds` tries by default: 0, 0.01, …, 0.5. */
export const DEFAULT_MARGIN_GRID: readonly number[] = evenGrid(50, 0.5);

function normaliseGrid(grid: readonly number[], name: string): number[] {
  const values = [...new Set(grid)].sort((a, b) => a - b);
  if (values.length === 0 || values.some((value) => !Number.isFinite(value))) {
    throw new SwitchboardError('INVALID_INPUT', `${name} must be a non-empty list of finite numbers`);
  }
  return values;
}

/** How many grid values (sorted ascending) let `value` through; the predicate is monotone in the grid. */
function countPassing(grid: readonly number[], passes: (threshold: number) => boolean): number {
  let low = 0;
  let high = grid.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (passes(grid[middle] as number)) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** `countPassing`, or all-or-nothing when the threshold is fixed rather than searched. */
function gridIndex(
  grid: readonly number[],
  fixed: number | undefined,
  passes: (threshold: number) => boolean,
): number {
  if (fixed === undefined) return countPassing(grid, passes);
  return passes(fixed) ? grid.length : 0;
}

function describeObjective(objective: FitObjective): string {
  if (typeof objective === 'string') return objective;
  return 'minInScopeAccuracy' in objective
    ? `minInScopeAccuracy>=${objective.minInScopeAccuracy}`
    : `minOutOfScopeRecall>=${objective.minOutOfScopeRecall}`;
}

/** Whether answering `label` is correct for this row (its expected skill or an alternate). */
export function includesLabel(row: FitRow, label: string): boolean {
  return row.expected === label || (row.alternates?.includes(label) ?? false);
}

/**
 * Grid-searches the confidence and margin thresholds that maximise `objective` on labelled rows.
 * Ties go to fewer abstains, then the lower confidence threshold, then the lower margin threshold,
 * so the router refuses no more than the data justifies.
 *
 * Runs in O(rows × candidates + grid²): each row's top two scores are found once, the row is filed
 * in a 2-D histogram by how many grid thresholds it passes, and suffix sums over that histogram give
 * every grid cell's counts without revisiting the rows.
 */
export function fitThresholds(rows: readonly FitRow[], options: FitOptions = {}): FitResult {
  const objective = options.objective ?? 'balanced';
  if (typeof objective === 'object') {
    const [name, floor] = Object.entries(objective)[0] as [string, number];
    if (!(floor >= 0 && floor <= 1)) {
      throw new SwitchboardError('INVALID_INPUT', `${name} must be between 0 and 1`);
    }
  }
  if (rows.length === 0) {
    throw new SwitchboardError('INVALID_INPUT', 'cannot fit thresholds on an empty dataset', {
      hint: 'pass labelled rows with the model candidates for each',
    });
  }
  const confidenceGrid = normaliseGrid(options.confidenceGrid ?? DEFAULT_CONFIDENCE_GRID, 'confidenceGrid');
  const marginGrid = normaliseGrid(options.marginGrid ?? DEFAULT_MARGIN_GRID, 'marginGrid');
  const width = marginGrid.length + 1;
  const cells = (confidenceGrid.length + 1) * width;

  // Per histogram cell: rows that would be answered, and how answering rather than refusing changes
  // the number of correct in-scope and out-of-scope rows.
  const answerable = new Float64Array(cells);
  const inScopeGain = new Float64Array(cells);
  const outOfScopeGain = new Float64Array(cells);
  let inScopeCount = 0;
  let outOfScopeCount = 0;
  // Correct counts when every row abstains; answered rows adjust these by their gain.
  let inScopeCorrectIfRefused = 0;
  let outOfScopeCorrectIfRefused = 0;

  for (const row of rows) {
    const inScope = row.expected !== NONE;
    const correctIfRefused = includesLabel(row, NONE) ? 1 : 0;
    if (inScope) {
      inScopeCount += 1;
      inScopeCorrectIfRefused += correctIfRefused;
    } else {
      outOfScopeCount += 1;
      outOfScopeCorrectIfRefused += correctIfRefused;
    }
    const { top, second } = topTwo(row.candidates);
    // No threshold makes the router answer these, so they only ever count as refused.
    if (top === undefined || top.skill === NONE) continue;
    const own = ownThresholds(options.skills, top.skill);
    // A skill's own threshold passes the row at every grid point or at none.
    const confidenceIndex = gridIndex(confidenceGrid, own?.confidenceThreshold, (threshold) =>
      passesConfidence(top.score, threshold),
    );
    const marginIndex = gridIndex(marginGrid, own?.marginThreshold, (threshold) =>
      passesMargin(top.score - second, threshold),
    );
    const cell = confidenceIndex * width + marginIndex;
    const gain = (includesLabel(row, top.skill) ? 1 : 0) - correctIfRefused;
    answerable[cell] = (answerable[cell] as number) + 1;
    if (inScope) inScopeGain[cell] = (inScopeGain[cell] as number) + gain;
    else outOfScopeGain[cell] = (outOfScopeGain[cell] as number) + gain;
  }

  // 2-D suffix sums: cell (c, m) then totals every row passing at least c confidence and m margin
  // thresholds, which is exactly the set answered at grid point (c − 1, m − 1).
  for (const table of [answerable, inScopeGain, outOfScopeGain]) {
    for (let confidence = confidenceGrid.length; confidence >= 0; confidence -= 1) {
      for (let margin = marginGrid.length; margin >= 0; margin -= 1) {
        const cell = confidence * width + margin;
        const right = margin < marginGrid.length ? (table[cell + 1] as number) : 0;
        const below = confidence < confidenceGrid.length ? (table[cell + width] as number) : 0;
        const diagonal =
          margin < marginGrid.length && confidence < confidenceGrid.length
            ? (table[cell + width + 1] as number)
            : 0;
        table[cell] = (table[cell] as number) + right + below - diagonal;
      }
    }
  }

  const total = rows.length;
  let best: (FitResult & { satisfied: boolean }) | undefined;
  for (let confidence = 0; confidence < confidenceGrid.length; confidence += 1) {
    for (let margin = 0; margin < marginGrid.length; margin += 1) {
      const cell = (confidence + 1) * width + margin + 1;
      const inScopeCorrect = inScopeCorrectIfRefused + (inScopeGain[cell] as number);
      const outOfScopeCorrect = outOfScopeCorrectIfRefused + (outOfScopeGain[cell] as number);
      const inScopeAccuracy = inScopeCount === 0 ? 0 : inScopeCorrect / inScopeCount;
      const outOfScopeRecall = outOfScopeCount === 0 ? 0 : outOfScopeCorrect / outOfScopeCount;
      const accuracy = (inScopeCorrect + outOfScopeCorrect) / total;
      const abstainRate = (total - (answerable[cell] as number)) / total;
      let score: number;
      let satisfied = true;
      if (objective === 'accuracy') {
        score = accuracy;
      } else if (objective === 'balanced') {
        score =
          inScopeCount === 0
            ? outOfScopeRecall
            : outOfScopeCount === 0
              ? inScopeAccuracy
              : (inScopeAccuracy + outOfScopeRecall) / 2;
      } else if ('minInScopeAccuracy' in objective) {
        satisfied = inScopeAccuracy >= objective.minInScopeAccuracy - 1e-12;
        score = satisfied && outOfScopeCount > 0 ? outOfScopeRecall : inScopeAccuracy;
      } else {
        satisfied = outOfScopeRecall >= objective.minOutOfScopeRecall - 1e-12;
        score = satisfied && inScopeCount > 0 ? inScopeAccuracy : outOfScopeRecall;
      }
      if (best === undefined || isBetter({ satisfied, score, abstainRate }, best)) {
        best = {
          confidenceThreshold: confidenceGrid[confidence] as number,
          marginThreshold: marginGrid[margin] as number,
          objective: describeObjective(objective),
          score,
          accuracy,
          inScopeAccuracy,
          outOfScopeRecall,
          abstainRate,
          count: total,
          satisfied,
        };
      }
    }
  }

  // The grids are non-empty, so the loop ran at least once.
  const { satisfied, ...result } = best as FitResult & { satisfied: boolean };
  return typeof objective === 'object' ? { ...result, constraintMet: satisfied } : result;
}

/** Scores within this are ties: equal counts can still differ in the last bit after division. */
const SCORE_EPSILON = 1e-12;

/**
 * Whether a grid point beats the best so far. Grid points are visited from the lowest thresholds
 * up (confidence outer, margin inner), so keeping the incumbent on a full tie prefers lower ones.
 */
function isBetter(
  candidate: { satisfied: boolean; score: number; abstainRate: number },
  incumbent: { satisfied: boolean; score: number; abstainRate: number },
): boolean {
  if (candidate.satisfied !== incumbent.satisfied) return candidate.satisfied;
  if (candidate.score > incumbent.score + SCORE_EPSILON) return true;
  if (candidate.score < incumbent.score - SCORE_EPSILON) return false;
  return candidate.abstainRate < incumbent.abstainRate - SCORE_EPSILON;
}
