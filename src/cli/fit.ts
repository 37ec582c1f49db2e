import { InvalidArgumentError, type Command } from 'commander';
import type { FitObjective, FitResult } from '../route/fit.js';
import {
  addRoutingFlags,
  requireRoutes,
  resolveConfig,
  routerOptions,
  warnSkippedSkills,
  type GlobalFlags,
  type RoutingFlags,
} from './shared.js';

interface FitFlags extends RoutingFlags {
  dataset: string;
  test?: string;
  objective: FitObjective;
}

function parseObjective(value: string): FitObjective {
  if (value === 'balanced' || value === 'accuracy') return value;
  const floor = /^min-in-scope:(0(\.\d+)?|1(\.0+)?)$/.exec(value);
  if (floor !== null) return { minInScopeAccuracy: Number(floor[1]) };
  throw new InvalidArgumentError('expected balanced, accuracy or min-in-scope:<0..1>');
}

export function registerFitCommand(program: Command): void {
  addRoutingFlags(
    program
      .command('fit')
      .description('choose the confidence and margin thresholds on tuning data; report a held-out set apart')
      .requiredOption('--dataset <file>', 'tuning (validation) set: JSONL or CLINC150 JSON#split,split')
      .option('--test <file>', 'held-out set reported at the chosen thresholds, never tuned on')
      .option(
        '--objective <name>',
        'balanced (mean of in-scope accuracy and out-of-scope recall) | accuracy | min-in-scope:<p>',
        parseObjective,
        'balanced' as FitObjective,
      )
      .option('--json', 'print the result as JSON'),
  ).action(async (flags: FitFlags, command: Command) => {
    const { loadDataset } = await import('../route/datasets.js');
    const { fitRouter } = await import('../route/evaluate.js');
    const { createRouter } = await import('../route/router.js');
    const config = resolveConfig(command.optsWithGlobals<GlobalFlags>(), flags);
    requireRoutes(config);
    const tune = loadDataset(flags.dataset);
    const test = flags.test === undefined ? undefined : loadDataset(flags.test);
    const router = createRouter({
      ...(await routerOptions(config)),
      mode: 'local',
      cache: false,
      ledger: false,
    });
    try {
      warnSkippedSkills(router);
      const report = fitRouter(router, tune, test, flags.objective);
      if (flags.json === true) {
        process.stdout.write(`${JSON.stringify(report)}\n`);
        return;
      }
      const { thresholds } = report;
      const lines = [
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
      router.close();
    }
  });
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
