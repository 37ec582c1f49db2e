import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { useOneLineUsageErrors } from './usage-errors.js';

const packageJson = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

type Register = (program: Command) => void;

/**
 * Each command's module, in `--help` order, imported only when that command is wanted: a command's
 * start-up should not pay for loading the other nine (the workflow engine, the agent runner, …).
 */
const COMMANDS: Record<string, () => Promise<Register>> = {
  route: async () => (await import('./route.js')).registerRouteCommand,
  eval: async () => (await import('./eval.js')).registerEvalCommand,
  fit: async () => (await import('./fit.js')).registerFitCommand,
  sim: async () => (await import('./sim.js')).registerSimCommand,
  call: async () => (await import('./call.js')).registerCallCommand,
  stats: async () => (await import('./stats.js')).registerStatsCommand,
  db: async () => (await import('./db.js')).registerDbCommand,
  keys: async () => (await import('./keys.js')).registerKeysCommand,
  serve: async () => (await import('./serve.js')).registerServeCommand,
  ui: async () => (await import('./serve.js')).registerUiCommand,
  mcp: async () => (await import('./mcp.js')).registerMcpCommand,
  metrics: async () => (await import('./metrics.js')).registerMetricsCommand,
  agent: async () => (await import('./agent.js')).registerAgentCommand,
  workflow: async () => (await import('./workflow.js')).registerWorkflowCommand,
  worker: async () => (await import('./worker.js')).registerWorkerCommand,
  hooks: async () => (await import('./hooks.js')).registerHooksCommand,
};

/** Command names that reach a command under another name. */
const ALIASES: Record<string, string> = { wf: 'workflow' };

/** Global options that take a value, so that the value is not mistaken for the command's name. */
const GLOBALS_WITH_VALUE = new Set(['--config', '--state-dir']);

/**
 * The `switchboard` command tree, built without parsing anything. Given the arguments to be parsed,
 * only the command they name is loaded (none for a bare `--version`); without them, or when they name
 * no known command, every command is, so that `--help`, the docs test and "did you mean" see them all.
 */
export async function createProgram(args?: readonly string[]): Promise<Command> {
  const program = new Command('switchboard')
    .description('Use LLMs reliably from orchestrators: routing, calls, agents, workflows.')
    .version(packageJson.version)
    .option('--config <file>', 'config file (default: ./switchboard.yaml when present)')
    .option('--state-dir <dir>', 'where the ledger and models live (default: ./.switchboard)')
    .option('--quiet', 'no progress bars on stderr (they show only on a terminal anyway)')
    .exitOverride();

  for (const name of commandsFor(args)) {
    const register = await (COMMANDS[name] as () => Promise<Register>)();
    register(program);
  }
  useOneLineUsageErrors(program);
  return program;
}

function commandsFor(args: readonly string[] | undefined): string[] {
  const all = Object.keys(COMMANDS);
  if (args === undefined) return all;
  const word = commandWord(args);
  if (word === undefined) {
    const versionOnly = args.includes('--version') || args.includes('-V');
    return versionOnly && !args.includes('--help') && !args.includes('-h') ? [] : all;
  }
  const name = ALIASES[word] ?? word;
  return name in COMMANDS ? [name] : all;
}

/** The first argument that is not a global option or its value: the command's name, if any. */
function commandWord(args: readonly string[]): string | undefined {
  for (let index = 0; index < args.length; index++) {
    const arg = args[index] as string;
    if (GLOBALS_WITH_VALUE.has(arg)) {
      index++;
      continue;
    }
    if (arg.startsWith('-')) continue;
    return arg;
  }
  return undefined;
}
