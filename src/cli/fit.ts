import { readFileSync } from 'node:fs';
import { InvalidArgumentError, type Command } from 'commander';
import type { SwitchboardConfig } from '../core/config.js';
import { SwitchboardError } from '../core/errors.js';
import type { FitObjective, FitResult } from '../route/fit.js';
import { createProgress, trainingProgress } from './progress.js';
import {
  addLearnedFlag,
  addRoutingFlags,
  learnedNote,
  parseFraction,
  requireRoutes,
  resolveConfig,
  measuringRouter,
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
}

function parseObjective(value: string): FitObjective {
  if (value === 'balanced' || value === 'accuracy') return value;
  const floor = /^min-in-scope:(0(\.\d+)?|1(\.0+)?)$/.exec(value);
  if (floor !== null) return { minInScopeAccuracy: Number(floor[1]) };
  throw new InvalidArgumentError('expected balanced, accuracy or min-in-scope:<0..1>');
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
          'balanced (mean of in-scope accuracy and out-of-scope recall) | accuracy | min-in-scope:<p>',
          parseObjective,
          'balanced' as FitObjective,
        )
        .option('--json', 'print the result as JSON'),
      { measuring: true },
    ),
  ).action(async (flags: FitFlags, command: Command) => {
    const { loadDataset } = await import('../route/datasets.js');
    const { fitRouter } = await import('../route/evaluate.js');
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
        onRow: (name, done, total) => {
          if (name !== set)
            progress.start(`ranking the ${name === 'tune' ? 'tuning' : 'held-out'} set`, total);
          set = name;
          progress.update(done);
        },
      });
      progress.stop();
      if (flags.json === true) {
        process.stdout.write(`${JSON.stringify({ ...report, learned: router.learned ?? false })}\n`);
        return;
      }
      const { thresholds } = report;
      const lines = [
        ...learnedNote(router.learned),
        `thresholds (objective ${thresholds.objective}): confidence ${thresholds.confidenceThreshold}, margin ${thresholds.marginThreshold}`,
        `tuning set  ${describe(thresholds)}`,
      ];
      if (report.test !== undefined) lines.push(`held-out    ${describe(report.test)}`);
      lines.push(
        '',
        'to use them, put this in switchboard.yaml:',
        'route:',
        `  confidence_threshold: ${thresholds.confidenceThreshold}`,
        `  margin_threshold: ${thresholds.marginThreshold}`,
      );
      process.stdout.write(`${lines.join('\n')}\n`);
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
        ...learnedNote(router.learned),
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
