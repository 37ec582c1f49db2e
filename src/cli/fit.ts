import { readFileSync } from 'node:fs';
import { InvalidArgumentError, type Command } from 'commander';
import type { SwitchboardConfig } from '../core/config.js';
import { SwitchboardError } from '../core/errors.js';
import type { FitReport } from '../route/evaluate.js';
import type { FitObjective, FitResult } from '../route/fit.js';
import { createProgress, trainingProgress } from './progress.js';
import {
  addLearnedFlag,
  addRoutingFlags,
  routerNotes,
  parseFraction,
  requireRoutes,
  resolveConfig,
  measuringRouter,
  warn,
  warnSkippedSkills,
  type GlobalFlags,
  type RoutingFlags,
} from './shared.js';

interface FitFlags extends RoutingFlags {
  dataset?: string;
  llmShare?: number;
  requests?: string;
  test?: string;
  objective: FitObjective;
  /** false with --no-learned. */
  learned: boolean;
  /** false with --no-per-skill. */
  perSkill: boolean;
}

function parseObjective(value: string): FitObjective {
  if (value === 'balanced' || value === 'accuracy') return value;
  const floor = /^min-in-scope:(0(\.\d+)?|1(\.0+)?)$/.exec(value);
  if (floor !== null) return { minInScopeAccuracy: Number(floor[1]) };
  const refusal = /^min-oos-recall:(0(\.\d+)?|1(\.0+)?)$/.exec(value);
  if (refusal !== null) return { minOutOfScopeRecall: Number(refusal[1]) };
  throw new InvalidArgumentError('expected balanced, accuracy, min-in-scope:<0..1> or min-oos-recall:<0..1>');
}

export function registerFitCommand(program: Command): void {
  addLearnedFlag(
    addRoutingFlags(
      program
        .command('fit')
        .description(
          'choose the confidence and margin thresholds on tuning data; report a held-out set apart',
        )
        .option('--dataset <file>', 'tuning (validation) set: JSONL or CLINC150 JSON#split,split')
        .option(
          '--llm-share <p>',
          'instead: the confidence threshold that sends at most this share of --requests to the LLM',
          parseFraction,
        )
        .option(
          '--requests <file>',
          'with --llm-share: unlabelled requests, one per line (or JSONL with "text")',
        )
        .option('--test <file>', 'held-out set reported at the chosen thresholds, never tuned on')
        .option(
          '--objective <name>',
          'balanced (mean of in-scope accuracy and out-of-scope recall) | accuracy | min-in-scope:<p> | min-oos-recall:<p>',
          parseObjective,
          'balanced' as FitObjective,
        )
        .option(
          '--no-per-skill',
          'choose the global thresholds only (default: also per skill, for skills with enough tuning rows)',
        )
        .option('--json', 'print the result as JSON'),
      { measuring: true },
    ),
  ).action(async (flags: FitFlags, command: Command) => {
    const { loadDataset } = await import('../route/datasets.js');
    const { fitRouter } = await import('../route/evaluate.js');
    const minimums = await import('../route/fit-skills.js');
    const config = resolveConfig(command.optsWithGlobals<GlobalFlags>(), flags);
    requireRoutes(config);
    if (flags.llmShare !== undefined) {
      await fitLlmShare(config, flags);
      return;
    }
    if (flags.dataset === undefined) {
      throw new SwitchboardError(
        'INVALID_INPUT',
        'fit needs --dataset (labelled) or --llm-share with --requests',
        {
          hint: 'e.g. switchboard fit --skills DIR --dataset val.jsonl --test test.jsonl',
        },
      );
    }
    const tune = loadDataset(flags.dataset);
    const test = flags.test === undefined ? undefined : loadDataset(flags.test);
    const progress = await createProgress(command.optsWithGlobals<GlobalFlags>().quiet);
    const router = await measuringRouter(config, {
      mode: 'local',
      learned: flags.learned,
      onTrainProgress: trainingProgress(progress),
    });
    try {
      warnSkippedSkills(router);
      let set: string | undefined;
      const report = fitRouter(router, tune, test, flags.objective, {
        perSkill: flags.perSkill,
        onRow: (name, done, total) => {
          if (name !== set)
            progress.start(`ranking the ${name === 'tune' ? 'tuning' : 'held-out'} set`, total);
          set = name;
          progress.update(done);
        },
      });
      progress.stop();
      for (const warning of report.warnings) warn(warning);
      if (flags.json === true) {
        process.stdout.write(`${JSON.stringify({ ...report, learned: router.learned ?? false })}\n`);
        return;
      }
      process.stdout.write(`${[...routerNotes(router), ...formatFitReport(report, minimums)].join('\n')}\n`);
    } finally {
      progress.stop();
      await router.close();
    }
  });
}

/** Escalation by budget: the threshold that keeps the LLM's share of these requests at the target. */
async function fitLlmShare(config: SwitchboardConfig, flags: FitFlags): Promise<void> {
  const { fitForLlmShare } = await import('../route/evaluate.js');
  if (flags.requests === undefined) {
    throw new SwitchboardError('INVALID_INPUT', '--llm-share needs --requests FILE', {
      hint: 'give unlabelled requests, one per line',
    });
  }
  let content: string;
  try {
    content = readFileSync(flags.requests, 'utf8');
  } catch {
    throw new SwitchboardError('DATASET_INVALID', `cannot read requests file ${flags.requests}`, {
      hint: 'check the --requests path',
    });
  }
  const texts = content
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .map((line) => {
      if (!line.startsWith('{')) return line;
      try {
        const row = JSON.parse(line) as { text?: unknown };
        return typeof row.text === 'string' ? row.text : line;
      } catch {
        return line;
      }
    });
  const router = await measuringRouter(config, { mode: 'local', learned: flags.learned });
  try {
    warnSkippedSkills(router);
    const fit = fitForLlmShare(router, texts, flags.llmShare as number, config.route.marginThreshold);
    if (flags.json === true) {
      process.stdout.write(`${JSON.stringify({ ...fit, learned: router.learned ?? false })}\n`);
      return;
    }
    process.stdout.write(
      [
        ...routerNotes(router),
        `confidence ${fit.confidenceThreshold} (margin ${fit.marginThreshold}) sends ${(fit.llmShare * 100).toFixed(1)}% of ${fit.count} requests to the LLM (target ≤ ${((flags.llmShare as number) * 100).toFixed(0)}%)`,
        '',
        'to use it, put this in switchboard.yaml:',
        'route:',
        `  confidence_threshold: ${fit.confidenceThreshold}`,
        // The margin changes only when the target could not be met without lowering it.
        ...(fit.marginThreshold === config.route.marginThreshold
          ? []
          : [`  margin_threshold: ${fit.marginThreshold}`]),
      ].join('\n') + '\n',
    );
  } finally {
    await router.close();
  }
}

/** The fit as text: the thresholds, the figures at them, and the switchboard.yaml lines to paste. */
function formatFitReport(
  report: FitReport,
  { MIN_SKILL_ROWS, MIN_SKILL_WRONG_ROWS }: { MIN_SKILL_ROWS: number; MIN_SKILL_WRONG_ROWS: number },
): string[] {
  const { thresholds, skillThresholds } = report;
  const fitted = report.skills.filter((skill) => skill.outcome === 'fitted');
  const lines = [
    `thresholds (objective ${thresholds.objective}): confidence ${thresholds.confidenceThreshold}, margin ${thresholds.marginThreshold}`,
  ];
  for (const skill of fitted) {
    lines.push(
      `  ${skill.skill}: confidence ${skill.confidenceThreshold}, margin ${skill.marginThreshold} (${skill.rows} rows led by it, ${skill.wrongRows} wrong)`,
    );
  }
  if (report.skills.length > 0) {
    const few = report.skills.filter((skill) => skill.outcome === 'too-few-rows').length;
    const kept = report.skills.length - fitted.length - few;
    lines.push(
      [
        `per skill: ${fitted.length} with thresholds of their own`,
        ...(kept > 0 ? [`${kept} did no better with their own`] : []),
        ...(few > 0
          ? [
              `${few} led fewer than ${MIN_SKILL_ROWS} rows or ${MIN_SKILL_WRONG_ROWS} wrong ones, too few to fit`,
            ]
          : []),
      ].join(', '),
    );
  }
  if (fitted.length > 0) {
    lines.push(
      `per-skill thresholds raise the tuning ${thresholds.objective} figure from ${report.globalOnly.score.toFixed(4)} (global only) to ${thresholds.score.toFixed(4)}`,
    );
  }
  lines.push(`tuning set  ${describe(thresholds)}`);
  if (report.test !== undefined) lines.push(`held-out    ${describe(report.test)}`);
  lines.push(
    '',
    'to use them, put this in switchboard.yaml:',
    'route:',
    `  confidence_threshold: ${thresholds.confidenceThreshold}`,
    `  margin_threshold: ${thresholds.marginThreshold}`,
  );
  const named = Object.entries(skillThresholds);
  if (named.length > 0) lines.push('  skill_thresholds:');
  for (const [skill, own] of named) {
    const fields = [
      ...(own.confidenceThreshold === undefined ? [] : [`confidence_threshold: ${own.confidenceThreshold}`]),
      ...(own.marginThreshold === undefined ? [] : [`margin_threshold: ${own.marginThreshold}`]),
    ];
    const why = fitted.some((outcome) => outcome.skill === skill) ? '' : ' # kept: not fitted again';
    lines.push(`    ${yamlKey(skill)}: { ${fields.join(', ')} }${why}`);
  }
  return lines;
}

/** A skill name as a YAML mapping key: bare when plain, else quoted (JSON strings are valid YAML). */
function yamlKey(name: string): string {
  return /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(name) ? name : JSON.stringify(name);
}

function describe(result: FitResult): string {
  const percent = (value: number) => `${(value * 100).toFixed(1)}%`;
  return [
    `n=${result.count}`,
    `accuracy ${percent(result.accuracy)}`,
    `in-scope accuracy ${percent(result.inScopeAccuracy)}`,
    `out-of-scope recall ${percent(result.outOfScopeRecall)}`,
    `abstain ${percent(result.abstainRate)}`,
  ].join('  ');
}
