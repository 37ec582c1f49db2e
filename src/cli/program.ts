import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { registerAgentCommand } from './agent.js';
import { registerCallCommand } from './call.js';
import { registerEvalCommand } from './eval.js';
import { registerFitCommand } from './fit.js';
import { registerMetricsCommand } from './metrics.js';
import { registerRouteCommand } from './route.js';
import { registerServeCommand } from './serve.js';
import { registerSimCommand } from './sim.js';
import { registerStatsCommand } from './stats.js';
import { useOneLineUsageErrors } from './usage-errors.js';
import { registerWorkflowCommand } from './workflow.js';

const packageJson = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

/**
 * The whole `switchboard` command tree, built without parsing anything, so the docs test can walk
 * every subcommand's options and check them against the docs pages.
 */
export function createProgram(): Command {
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
  registerWorkflowCommand(program);
  useOneLineUsageErrors(program);
  return program;
}
