import { NONE, type LabelledExample, type ProviderFailure, type RouteMode } from '../core/route-types.js';
import { failedAttempts } from './tiers/llm-tier.js';
import { isSwitchboardError } from '../core/errors.js';
import { SwitchboardError } from '../core/errors.js';
import {
  computeMetrics,
  isCorrect,
  summariseLatency,
  toScoredRow,
  type EvalMetrics,
  type LatencySummary,
  type ScoredRow,
} from './metrics.js';
import { checkDatasetLabels } from './evaluate.js';
import { createRouter, type Router, type RouterOptions } from './router.js';

/** One evaluated example in one mode: the scored row plus what the decision cost. */
export interface ComparedRow extends ScoredRow {
  /** The request as the dataset gives it, so reports can list misrouted rows. */
  text?: string;
  costUsd: number;
  /** Set when the router failed on this request (llm-only with a dead provider); predicted is `none`. */
  error?: string;
  /** The failed attempts of the LLM call made for this row, when it failed. */
  llmFailures?: ProviderFailure[];
}

/** Everything measured for one mode over the dataset. */
export interface ModeRun {
  mode: RouteMode;
  metrics: EvalMetrics;
  /** One row per example, in dataset order. */
  rows: ComparedRow[];
  /** Rows whose decision involved an LLM call (answered, fallen back or failed). */
  llmShare: number;
  totalCostUsd: number;
  costPer1k: number;
  /** Routing time without the time spent inside provider calls: what Switchboard adds around the model. */
  overhead: LatencySummary;
  errors: number;
  /** Rows whose decision asked an LLM, and how many of those calls failed. */
  llmCalls: number;
  failedLlmCalls: number;
  /** The failed LLM attempts by provider and error code, most first (e.g. anthropic AUTH 20). */
  providerFailures: (ProviderFailure & { count: number })[];
  /** Said once by the router (e.g. hybrid running as local without a provider). */
  warnings: string[];
  /** Examples from `learned.jsonl` this mode's model trained on (0 when none). */
  learnedExamples?: number;
}

export interface Disagreement {
  /** Position in the dataset. */
  index: number;
  text: string;
  expected: string;
  alternates?: readonly string[];
  /** What each mode answered, in the order of `ModeComparison.modes`. */
  answers: { mode: RouteMode; skill: string; confidence: number; method: string; correct: boolean }[];
}

export interface ModeComparison {
  count: number;
  modes: ModeRun[];
  /** `rates[i][j]`: share of examples where modes i and j chose the same skill (`none` included). */
  agreement: { modes: RouteMode[]; rates: number[][] };
  /** Examples where at least two modes chose different skills, in dataset order. */
  disagreements: Disagreement[];
}

export interface CompareOptions {
  /** Called after each mode finishes, e.g. to print progress. */
  onMode?: (run: ModeRun) => void;
  /** Called after each routed example, e.g. to draw a progress bar. */
  onRow?: (mode: RouteMode, done: number, total: number) => void;
}

/**
 * Routes every example once per mode, each with its own router built from the same options (no
 * cache and no ledger, so every mode measures its tiers), and compares the answers.
 */
export async function compareModes(
  routerOptions: Omit<RouterOptions, 'mode'>,
  modes: readonly RouteMode[],
  examples: readonly LabelledExample[],
  options: CompareOptions = {},
): Promise<ModeComparison> {
  if (modes.length === 0) {
    throw new SwitchboardError('INVALID_INPUT', 'no modes to compare', {
      hint: 'name at least one of rules-only, local, hybrid, llm-only',
    });
  }
  const runs: ModeRun[] = [];
  for (const mode of modes) {
    const run = await runMode({ ...routerOptions, mode, cache: false, ledger: false }, examples, (done) =>
      options.onRow?.(mode, done, examples.length),
    );
    options.onMode?.(run);
    runs.push(run);
  }
  return { count: examples.length, modes: runs, ...agreementOf(runs, examples) };
}

async function runMode(
  routerOptions: RouterOptions,
  examples: readonly LabelledExample[],
  onRow?: (done: number) => void,
): Promise<ModeRun> {
  const router = createRouter(routerOptions);
  try {
    return await measureRouter(router, examples, onRow);
  } finally {
    await router.close();
  }
}

/**
 * Routes every example with a router the caller built (give it no cache and no ledger to measure the
 * tiers) and measures the run: metrics, per-row answers, LLM share, cost and overhead.
 */
export async function measureRouter(
  router: Router,
  examples: readonly LabelledExample[],
  onRow?: (done: number) => void,
): Promise<ModeRun> {
  const { mode } = router;
  checkDatasetLabels(router, examples);
  const rows: ComparedRow[] = [];
  for (const example of examples) {
    const text = example.text.trim() === '' ? '(empty)' : example.text;
    const started = performance.now();
    try {
      const decision = await router.route(text);
      rows.push({
        ...toScoredRow(example, decision),
        text: example.text,
        costUsd: decision.costUsd,
        ...(decision.llmFailures === undefined ? {} : { llmFailures: decision.llmFailures }),
      });
    } catch (error) {
      const durationMs = performance.now() - started;
      rows.push({
        ...toScoredRow(example, {
          skill: NONE,
          confidence: 0,
          method: 'fallback',
          timings: {},
          durationMs,
        }),
        method: 'error',
        text: example.text,
        costUsd: 0,
        error: error instanceof Error ? error.message : String(error),
        ...(isSwitchboardError(error) && error.details?.['attempts'] !== undefined
          ? { llmFailures: failedAttempts(error, error.provider ?? 'llm') }
          : {}),
      });
    }
    onRow?.(rows.length);
  }
  const totalCostUsd = rows.reduce((sum, row) => sum + row.costUsd, 0);
  // The LLM's share counts the decisions it made; the calls made include those that failed.
  const llmRows = rows.filter((row) => row.timings.llm !== undefined).length;
  const llmCalls = rows.filter(
    (row) => row.timings.llm !== undefined || row.llmFailures !== undefined,
  ).length;
  return {
    mode,
    metrics: computeMetrics(rows),
    rows,
    llmShare: llmRows / rows.length,
    totalCostUsd,
    costPer1k: (totalCostUsd / rows.length) * 1000,
    overhead: summariseLatency(rows.map((row) => Math.max(row.durationMs - (row.timings.provider ?? 0), 0))),
    errors: rows.filter((row) => row.error !== undefined).length,
    llmCalls,
    failedLlmCalls: rows.filter((row) => row.llmFailures !== undefined).length,
    providerFailures: countFailures(rows),
    warnings: [...router.warnings],
    learnedExamples: router.learned?.examples ?? 0,
  };
}

function countFailures(rows: readonly ComparedRow[]): (ProviderFailure & { count: number })[] {
  const counts = new Map<string, ProviderFailure & { count: number }>();
  for (const failure of rows.flatMap((row) => row.llmFailures ?? [])) {
    const key = `${failure.provider} ${failure.code}`;
    const entry = counts.get(key) ?? { ...failure, count: 0 };
    entry.count++;
    counts.set(key, entry);
  }
  return [...counts.values()].sort((a, b) => b.count - a.count);
}

/** The agreement matrix and disagreements of runs over the same examples (rows in dataset order). */
export function agreementOf(
  runs: readonly ModeRun[],
  examples: readonly LabelledExample[],
): Pick<ModeComparison, 'agreement' | 'disagreements'> {
  const rates = runs.map((first) =>
    runs.map((second) => {
      let same = 0;
      first.rows.forEach((row, index) => {
        if (row.predicted === second.rows[index]?.predicted) same += 1;
      });
      return first.rows.length === 0 ? 0 : same / first.rows.length;
    }),
  );
  const disagreements: Disagreement[] = [];
  examples.forEach((example, index) => {
    const answers = runs.map((run) => {
      const row = run.rows[index] as ComparedRow;
      return {
        mode: run.mode,
        skill: row.predicted,
        confidence: row.confidence,
        method: row.method,
        correct: isCorrect(row),
      };
    });
    if (new Set(answers.map((answer) => answer.skill)).size > 1) {
      disagreements.push({
        index,
        text: example.text,
        expected: example.expected,
        ...(example.alternates === undefined ? {} : { alternates: example.alternates }),
        answers,
      });
    }
  });
  return { agreement: { modes: runs.map((run) => run.mode), rates }, disagreements };
}
