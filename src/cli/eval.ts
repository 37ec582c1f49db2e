import type { Command } from 'commander';
import {
  addRoutingFlags,
  requireRoutes,
  resolveConfig,
  routerOptions,
  warnSkippedSkills,
  type GlobalFlags,
  type RoutingFlags,
} from './shared.js';

interface EvalFlags extends RoutingFlags {
  dataset: string;
}

export function registerEvalCommand(program: Command): void {
  addRoutingFlags(
    program
      .command('eval')
      .description('measure routing on a labelled dataset (accuracy, F1, abstains, calibration, latency)')
      .requiredOption(
        '--dataset <file>',
        'labelled JSONL {text, expected, alternates?} or CLINC150 JSON#split,split',
      )
      .option('--json', 'print the metrics as JSON'),
  ).action(async (flags: EvalFlags, command: Command) => {
    const { formatEvalReport } = await import('../route/eval-report.js');
    const { loadDataset } = await import('../route/datasets.js');
    const { evaluateRouter } = await import('../route/evaluate.js');
    const { createRouter } = await import('../route/router.js');
    const config = resolveConfig(command.optsWithGlobals<GlobalFlags>(), flags);
    requireRoutes(config);
    const examples = loadDataset(flags.dataset);
    // Evaluation measures the tiers themselves: no cache hits from repeated texts, no ledger rows.
    const router = createRouter({ ...(await routerOptions(config)), cache: false, ledger: false });
    try {
      warnSkippedSkills(router);
      const { metrics } = await evaluateRouter(router, examples);
      const settings = {
        mode: router.mode,
        confidenceThreshold: config.route.confidenceThreshold,
        marginThreshold: config.route.marginThreshold,
        routes: router.skills.length,
        model:
          router.model === undefined
            ? undefined
            : { trained: router.model.trained, ms: router.model.durationMs },
      };
      if (flags.json === true) {
        process.stdout.write(`${JSON.stringify({ settings, metrics })}\n`);
      } else {
        const title = `${flags.dataset}: ${router.mode} mode, ${router.skills.length} routes, confidence ≥ ${settings.confidenceThreshold}, margin ≥ ${settings.marginThreshold}`;
        process.stdout.write(formatEvalReport(metrics, { title }));
      }
    } finally {
      router.close();
    }
  });
}
