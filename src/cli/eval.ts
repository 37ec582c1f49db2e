import { basename } from 'node:path';
import type { Command } from 'commander';
import type { ModeComparison, ModeRun } from '../route/compare.js';
import type { WrongRow } from '../route/wrong-rows.js';
import { createProgress, trainingProgress, type Progress } from './progress.js';
import { SwitchboardError } from '../core/errors.js';
import { ROUTE_MODES, type LabelledExample, type RouteMode } from '../core/route-types.js';
import {
  addLearnedFlag,
  addRoutingFlags,
  learnedNote,
  routerNotes,
  requireRoutes,
  resolveConfig,
  measuringRouter,
  routerOptions,
  warnSkippedSkills,
  type GlobalFlags,
  type RoutingFlags,
} from './shared.js';

interface EvalFlags extends RoutingFlags {
  dataset: string;
  modes?: string;
  disagreements?: string;
  html?: string;
  errors?: string;
  /** false with --no-learned. */
  learned: boolean;
}

function parseModes(text: string): RouteMode[] {
  const modes = text
    .split(',')
    .map((mode) => mode.trim())
    .filter((mode) => mode !== '');
  const unknown = modes.filter((mode) => !(ROUTE_MODES as readonly string[]).includes(mode));
  if (modes.length === 0 || unknown.length > 0) {
    throw new SwitchboardError(
      'INVALID_INPUT',
      `unknown mode(s) in --modes: ${unknown.join(', ') || '(none given)'}`,
      {
        hint: `use a comma-separated list of ${ROUTE_MODES.join(', ')}`,
      },
    );
  }
  return [...new Set(modes)] as RouteMode[];
}

export function registerEvalCommand(program: Command): void {
  addLearnedFlag(
    addRoutingFlags(
      program
        .command('eval')
        .description('measure routing on a labelled dataset (accuracy, F1, abstains, calibration, latency)')
        .requiredOption(
          '--dataset <file>',
          'labelled JSONL {text, expected, alternates?} or CLINC150 JSON#split,split',
        )
        .option(
          '--modes <list>',
          'compare modes on the dataset, e.g. local,hybrid,llm-only (agreement, disagreements, LLM share, cost)',
        )
        .option('--disagreements <file>', 'write the requests the modes routed differently as markdown')
        .option(
          '--html <file>',
          'write a self-contained HTML report (summary, agreement, tier mix, per skill, latency, confusion, calibration, misrouted rows)',
        )
        .option('--errors <file>', 'write the rows routed wrongly as markdown (in --json: wrongRows)')
        .option('--json', 'print the metrics (and, for one mode, the wrong rows) as JSON'),
      { measuring: true },
    ),
  ).action(async (flags: EvalFlags, command: Command) => {
    const config = resolveConfig(command.optsWithGlobals<GlobalFlags>(), flags);
    requireRoutes(config);
    // Check the flags before loading data or training anything.
    const modes = flags.modes === undefined ? undefined : parseModes(flags.modes);
    const { loadDataset } = await import('../route/datasets.js');
    const examples = loadDataset(flags.dataset);
    const progress = await createProgress(command.optsWithGlobals<GlobalFlags>().quiet);
    try {
      if (modes !== undefined) await compare(config, modes, examples, flags, progress);
      else await evaluateOneMode(config, examples, flags, progress);
    } finally {
      progress.stop();
    }
  });
}

/**
 * One mode: the text (or JSON) report is the same with or without report files; `--errors`, `--html`
 * and `--disagreements` only add files, announced on stderr.
 */
async function evaluateOneMode(
  config: ReturnType<typeof resolveConfig>,
  examples: LabelledExample[],
  flags: EvalFlags,
  progress: Progress,
): Promise<void> {
  const { formatEvalReport } = await import('../route/eval-report.js');
  const { agreementOf, measureRouter } = await import('../route/compare.js');
  const { wrongRows } = await import('../route/wrong-rows.js');
  // Evaluation measures the tiers themselves: no cache hits from repeated texts, no ledger rows.
  const router = await measuringRouter(config, {
    learned: flags.learned,
    onTrainProgress: trainingProgress(progress),
  });
  try {
    warnSkippedSkills(router);
    progress.start(`routing (${router.mode})`, examples.length);
    const run = await measureRouter(router, examples, (done) => progress.update(done));
    progress.stop();
    const { describeProviderFailures } = await import('../route/eval-report.js');
    const failures = describeProviderFailures(run);
    warnProviderFailures(failures === undefined ? [] : [failures]);
    const { metrics } = run;
    const wrong = wrongRows(run.rows);
    await writeOneModeReports(
      run,
      { count: examples.length, modes: [run], ...agreementOf([run], examples) },
      wrong,
      flags,
    );
    const settings = {
      mode: router.mode,
      confidenceThreshold: config.route.confidenceThreshold,
      marginThreshold: config.route.marginThreshold,
      routes: router.skills.length,
      model:
        router.model === undefined
          ? undefined
          : { trained: router.model.trained, ms: router.model.durationMs },
      learned: router.learned ?? false,
      primed: router.primed ?? false,
      skillThresholds: router.skillThresholds,
    };
    if (flags.json === true) {
      const { llmCalls, failedLlmCalls, providerFailures } = run;
      process.stdout.write(
        `${JSON.stringify({ settings, metrics, llmCalls, failedLlmCalls, providerFailures, wrongRows: wrong })}\n`,
      );
    } else {
      const title = `${flags.dataset}: ${router.mode} mode, ${router.skills.length} routes, confidence ≥ ${settings.confidenceThreshold}, margin ≥ ${settings.marginThreshold}`;
      const notes = [...routerNotes(router), ...(failures === undefined ? [] : [failures])];
      process.stdout.write(formatEvalReport(metrics, { title, notes }));
    }
  } finally {
    await router.close();
  }
}

async function writeOneModeReports(
  run: ModeRun,
  comparison: ModeComparison,
  wrong: readonly WrongRow[],
  flags: EvalFlags,
): Promise<void> {
  const { writeReport } = await import('./write-report.js');
  const written: [string, string][] = [];
  if (flags.errors !== undefined) {
    const { formatWrongRowsReport } = await import('../route/wrong-rows.js');
    writeReport(
      flags.errors,
      formatWrongRowsReport(wrong, { dataset: flags.dataset, count: run.rows.length }),
    );
    written.push(['Misrouted rows', flags.errors]);
  }
  if (flags.disagreements !== undefined) {
    const { formatDisagreementReport } = await import('../route/disagreement-report.js');
    writeReport(flags.disagreements, formatDisagreementReport(comparison, { dataset: flags.dataset }));
    written.push(['Disagreements', flags.disagreements]);
  }
  if (flags.html !== undefined) {
    const { renderHtmlReport } = await import('../observe/html-report.js');
    const title = `${basename(flags.dataset)}: ${run.mode} mode, ${run.rows.length} examples`;
    writeReport(flags.html, renderHtmlReport(comparison, { title, dataset: flags.dataset }));
    written.push(['HTML report', flags.html]);
  }
  if (flags.json !== true) {
    for (const [what, file] of written) process.stderr.write(`switchboard: ${what} written to ${file}\n`);
  }
}

async function compare(
  config: ReturnType<typeof resolveConfig>,
  modes: RouteMode[],
  examples: LabelledExample[],
  flags: EvalFlags,
  progress: Progress,
): Promise<void> {
  const { compareModes } = await import('../route/compare.js');
  const { formatComparisonReport } = await import('../route/eval-report.js');
  const { writeReport } = await import('./write-report.js');
  const needsLlm = modes.includes('hybrid') || modes.includes('llm-only');
  if (modes.includes('llm-only') && config.route.provider === undefined) {
    throw new SwitchboardError('CONFIG_INVALID', 'llm-only mode needs an LLM provider', {
      hint: 'pass --provider SPEC (e.g. claude:haiku) or set route.provider in switchboard.yaml',
    });
  }
  // One set of router options for every mode; the LLM tier is built when any mode needs it.
  const options = {
    ...(await routerOptions(needsLlm ? { ...config, route: { ...config.route, mode: 'hybrid' } } : config)),
    learned: flags.learned,
    onTrainProgress: trainingProgress(progress),
  };
  let current: RouteMode | undefined;
  const comparison = await compareModes(options, modes, examples, {
    onRow: (mode, done, total) => {
      if (mode !== current) progress.start(`routing (${mode})`, total);
      current = mode;
      progress.update(done);
    },
    onMode: (run) => {
      progress.stop();
      current = undefined;
      if (flags.json !== true) {
        process.stderr.write(`switchboard: ${run.mode}: ${run.rows.length} requests routed\n`);
      }
    },
  });
  const { describeProviderFailures } = await import('../route/eval-report.js');
  warnProviderFailures(comparison.modes.flatMap((run) => describeProviderFailures(run) ?? []));
  const title = `${flags.dataset}: ${modes.join(' vs ')}, ${examples.length} examples`;
  const learnedExamples = Math.max(...comparison.modes.map((run) => run.learnedExamples ?? 0));
  const { learnedFilePath } = await import('../route/learn.js');
  const notes = learnedNote(
    learnedExamples === 0 ? undefined : { file: learnedFilePath(config.stateDir), examples: learnedExamples },
  );
  if (flags.disagreements !== undefined) {
    const { formatDisagreementReport } = await import('../route/disagreement-report.js');
    writeReport(flags.disagreements, formatDisagreementReport(comparison, { dataset: flags.dataset }));
  }
  if (flags.html !== undefined) {
    const { renderHtmlReport } = await import('../observe/html-report.js');
    const htmlTitle = `${basename(flags.dataset)}: ${modes.join(' vs ')}, ${examples.length} examples`;
    writeReport(flags.html, renderHtmlReport(comparison, { title: htmlTitle, dataset: flags.dataset }));
  }
  if (flags.errors !== undefined) {
    const { formatWrongRowsByMode } = await import('../route/wrong-rows.js');
    writeReport(flags.errors, formatWrongRowsByMode(comparison, flags.dataset));
  }
  if (flags.json === true) {
    // Per-row data stays out of the JSON: the reports hold it, and CLINC would make it megabytes.
    const { modes: runs, ...rest } = comparison;
    const summary = runs.map(({ rows: _rows, ...run }) => run);
    process.stdout.write(`${JSON.stringify({ ...rest, modes: summary })}\n`);
  } else {
    process.stdout.write(formatComparisonReport(comparison, { title, notes }));
    for (const [what, file] of [
      ['Disagreements', flags.disagreements],
      ['HTML report', flags.html],
      ['Misrouted rows', flags.errors],
    ] as const) {
      if (file !== undefined) process.stdout.write(`${what} written to ${file}\n`);
    }
  }
}

/**
 * Failed LLM calls leave the local decision in place, so a mode's figures quietly measure the local
 * tiers: say so on stderr, whatever the output format.
 */
function warnProviderFailures(lines: readonly string[]): void {
  for (const line of lines) {
    process.stderr.write(
      `switchboard: warning: ${line}; its figures measure the local fallback, not the LLM: check the provider's key and endpoint\n`,
    );
  }
}
