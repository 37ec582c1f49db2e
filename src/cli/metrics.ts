import type { Command } from 'commander';
import { SwitchboardError } from '../core/errors.js';
import { writeFileAtomically } from '../store/atomic-file.js';
import { commandConfig, type GlobalFlags } from './shared.js';
import { parseSince } from './stats.js';

interface MetricsFlags {
  out?: string;
  since?: number;
}

export function registerMetricsCommand(program: Command): void {
  program
    .command('metrics')
    .description(
      "Prometheus metrics from the ledger, printed or written atomically for node_exporter's textfile collector",
    )
    .option(
      '--out <file>',
      'write to this file (e.g. /var/lib/node_exporter/switchboard.prom) instead of printing',
    )
    .option('--since <duration>', 'only the last 30m, 24h, 7d, …', parseSince)
    .action(async (flags: MetricsFlags, command: Command) => {
      const { openLedger } = await import('../store/ledger.js');
      const { metricsFromLedger } = await import('../observe/prometheus.js');
      const config = commandConfig(command.optsWithGlobals<GlobalFlags>());
      const ledger = openLedger({ stateDir: config.stateDir });
      let text: string;
      try {
        const metrics = await metricsFromLedger(
          ledger,
          flags.since === undefined ? {} : { since: flags.since },
        );
        text = await metrics.metrics();
      } finally {
        await ledger.close();
      }
      if (flags.out === undefined) process.stdout.write(text);
      else writeMetricsFile(flags.out, text);
    });
}

/** Writes the metrics atomically: the textfile collector scrapes at any moment. */
function writeMetricsFile(file: string, text: string): void {
  try {
    writeFileAtomically(file, text);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new SwitchboardError('INVALID_INPUT', `cannot write metrics to ${file} (${reason})`, {
      hint: 'check that its folder exists and is writable, and that the path is not a folder',
      cause: error,
    });
  }
}
