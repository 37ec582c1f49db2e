#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { EXIT_CODES } from '../core/errors.js';
import { registerAgentCommand } from './agent.js';
import { registerCallCommand } from './call.js';
import { registerEvalCommand } from './eval.js';
import { registerFitCommand } from './fit.js';
import { registerMetricsCommand } from './metrics.js';
import { registerRouteCommand } from './route.js';
import { registerServeCommand } from './serve.js';
import { reportError } from './shared.js';
import { registerSimCommand } from './sim.js';
import { registerStatsCommand } from './stats.js';
import { useOneLineUsageErrors } from './usage-errors.js';

const packageJson = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

// A reader that stops early (`switchboard agent logs ID | head -1`) closes the pipe: that is the
// reader's choice, not a failure, so end quietly instead of dying on an unhandled EPIPE.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    process.exit(EXIT_CODES.OK);
  });
}

// Secrets and settings may live in a `.env` file in the working directory; the environment wins.
try {
  process.loadEnvFile('.env');
} catch (error) {
  if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
    process.stderr.write(`switchboard: warning: .env could not be read (${(error as Error).message})\n`);
  }
}

const program = new Command('switchboard')
  .description('Use LLMs reliably from orchestrators: routing, calls, agents, workflows.')
  .version(packageJson.version)
  .option('--config <file>', 'config file (default: ./switchboard.yaml when present)')
  .option('--state-dir <dir>', 'where the ledger and models live (default: ./.switchboard)')
  .option('--quiet', 'no progress bars on stderr (they show only on a terminal anyway)')
  .exitOverride();

registerRouteCommand(program);
registerEvalCommand(program);
registerFitCommand(program);
registerSimCommand(program);
registerCallCommand(program);
registerStatsCommand(program);
registerServeCommand(program);
registerMetricsCommand(program);
registerAgentCommand(program);
useOneLineUsageErrors(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // Help and version end with a CommanderError too; only real usage errors are failures.
    process.exitCode = error.exitCode === 0 ? EXIT_CODES.OK : EXIT_CODES.INVALID_INPUT;
  } else {
    process.exitCode = reportError(error, process.argv.includes('--json'));
  }
}
