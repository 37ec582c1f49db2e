import { readFileSync } from 'node:fs';
import { InvalidArgumentError, type Command } from 'commander';
import type { CallResult, JsonSchema } from '../core/call-types.js';
import type { ConfigOverrides } from '../core/config.js';
import { SwitchboardError } from '../core/errors.js';
import type { CallBody } from '../serve/call-body.js';
import { parseSeconds } from './parse-seconds.js';
import { printCallResult } from './call-output.js';
import { createProgress, retryWaitProgress } from './progress.js';
import { askServer, serverAddress } from './server-client.js';
import type { GlobalFlags } from './shared.js';
import { textFromArguments } from './stdin.js';

interface CallFlags {
  stream?: boolean;
  tag: Record<string, string>;
  schemaRetries?: number;
  maxCost?: number;
  system?: string;
  schema?: string;
  json?: boolean;
  timeout?: number;
  stageTimeout?: number;
  idleTimeout?: number;
  resume?: string;
  allowedTools?: string;
  cwd?: string;
  claudePath?: string;
  baseUrl?: string;
  storeText?: boolean;
  ledger?: boolean;
  ignoreCooldown?: boolean;
  print?: 'text';
  server?: string;
}

function collectTags(value: string, previous: Record<string, string>): Record<string, string> {
  const match = /^([^=]+)=(.*)$/.exec(value);
  if (match === null) throw new InvalidArgumentError('expected key=value');
  return { ...previous, [match[1] as string]: match[2] as string };
}

function parseCount(value: string): number {
  const count = Number(value);
  if (!Number.isInteger(count) || count < 0 || count > 10)
    throw new InvalidArgumentError('expected a whole number from 0 to 10');
  return count;
}

function parseDollars(value: string): number {
  const dollars = Number(value);
  if (value.trim() === '' || !Number.isFinite(dollars) || dollars <= 0)
    throw new InvalidArgumentError('expected a positive number of dollars');
  return dollars;
}

function parsePrint(value: string): 'text' {
  if (value !== 'text') throw new InvalidArgumentError('expected text (--json prints the whole CallResult)');
  return value;
}

export function registerCallCommand(program: Command): void {
  program
    .command('call')
    .description('call an LLM or a fallback chain and print the answer')
    .argument(
      '<spec>',
      'provider:model (claude:haiku, anthropic:claude-sonnet-4-5, gemini:2.5-pro, openai:gpt-4.1-mini), a comma-separated fallback chain, or a role from switchboard.yaml',
    )
    .argument('[prompt...]', 'the prompt; omit or give "-" to read standard input')
    .option('--system <text>', 'system prompt (replaces the default one)')
    .option('--schema <file>', 'JSON Schema file: the answer must match it (printed as JSON)')
    .option('--json', 'print the whole CallResult as JSON')
    .option('--stream', 'print the answer as it arrives')
    .option(
      '--timeout <seconds>',
      'wall-clock limit for the whole call: retries and fallbacks share it',
      parseSeconds,
    )
    .option('--stage-timeout <seconds>', 'limit of each attempt (call.stage_timeout_seconds)', parseSeconds)
    .option('--idle-timeout <seconds>', 'fail when the provider sends nothing for this long', parseSeconds)
    .option('--resume <session-id>', 'continue a Claude Code session')
    .option('--allowed-tools <list>', 'comma-separated tools Claude Code may use (default: none)')
    .option('--cwd <dir>', 'working directory for Claude Code')
    .option('--claude-path <path>', 'your own claude executable (env SWITCHBOARD_CLAUDE_PATH)')
    .option('--base-url <url>', 'API base URL for Claude Code, e.g. a `switchboard sim` address')
    .option('--tag <key=value>', 'tag the call (for budgets and stats); repeatable', collectTags, {})
    .option(
      '--schema-retries <n>',
      're-asks with a diagnosis when the answer breaks the schema (0–10)',
      parseCount,
    )
    .option('--max-cost <usd>', 'the most this call may cost, all attempts together', parseDollars)
    .option('--ignore-cooldown', 'try providers even while they cool down after repeated failures')
    .option('--store-text', 'store the prompt text in the ledger (default: a hash only)')
    .option('--no-ledger', 'do not record the call')
    .option('--print <what>', 'text (the default): print only the answer', parsePrint)
    .option(
      '--server <url>',
      'send the call to a running `switchboard serve` (env SWITCHBOARD_SERVER); runs in process when it does not answer',
    )
    .action(async (spec: string, words: string[], flags: CallFlags, command: Command) => {
      const prompt = await textFromArguments(words, 'prompt');
      const schema = flags.schema === undefined ? undefined : readSchema(flags.schema);
      const body = callBody(spec, prompt, schema, flags);
      const server = serverAddress(flags.server);
      if (server !== undefined) {
        const reasons = inProcessOnly(flags);
        if (reasons.length === 0) {
          const answer = await askServer(server, '/call', body);
          if (answer !== undefined) {
            printCallResult(answer as CallResult, { json: flags.json === true, streamed: false });
            return;
          }
        } else if (flags.server !== undefined) {
          const verb = reasons.length === 1 ? 'needs' : 'need';
          process.stderr.write(
            `switchboard: warning: ${reasons.join(', ')} ${verb} this process: running in process, not on the server\n`,
          );
        }
      }
      await callInProcess(body, flags, command);
    });
}

/** The call as `POST /call` takes it: the flags' explicit values only (the config fills the rest). */
function callBody(spec: string, prompt: string, schema: JsonSchema | undefined, flags: CallFlags): CallBody {
  const seconds = (value: number | undefined) => (value === undefined ? undefined : value * 1000);
  const optional: Omit<CallBody, 'spec' | 'prompt'> = {};
  const entries: [keyof typeof optional, unknown][] = [
    ['system', flags.system],
    ['schema', schema],
    ['timeoutMs', seconds(flags.timeout)],
    ['stageTimeoutMs', seconds(flags.stageTimeout)],
    ['idleTimeoutMs', seconds(flags.idleTimeout)],
    ['tags', Object.keys(flags.tag).length === 0 ? undefined : flags.tag],
    ['maxCostUsd', flags.maxCost],
    ['schemaRetries', flags.schemaRetries],
    ['ignoreCooldown', flags.ignoreCooldown === true ? true : undefined],
    ['storeText', flags.storeText === true ? true : undefined],
  ];
  for (const [key, value] of entries)
    if (value !== undefined) (optional as Record<string, unknown>)[key] = value;
  return { spec, prompt, ...optional };
}

/** The flags a server cannot honour: they need this process (its terminal, files or own providers). */
function inProcessOnly(flags: CallFlags): string[] {
  const reasons: [boolean, string][] = [
    [flags.stream === true, '--stream'],
    [flags.resume !== undefined, '--resume'],
    [flags.allowedTools !== undefined, '--allowed-tools'],
    [flags.cwd !== undefined, '--cwd'],
    [flags.claudePath !== undefined, '--claude-path'],
    [flags.baseUrl !== undefined, '--base-url'],
    [flags.ledger === false, '--no-ledger'],
  ];
  return reasons.filter(([given]) => given).map(([, flag]) => flag);
}

async function callInProcess(body: CallBody, flags: CallFlags, command: Command): Promise<void> {
  const { call } = await import('../invoke/call.js');
  const { openLedger } = await import('../store/ledger.js');
  const { callOptions, callRequest, providerRegistry, resolveRole } = await import('./call-setup.js');
  const { commandConfig } = await import('./shared.js');
  const overrides: ConfigOverrides = {};
  if (flags.ledger === false) overrides.ledger = false;
  if (flags.storeText === true) overrides.storeText = true;
  const globals = command.optsWithGlobals<GlobalFlags>();
  const config = commandConfig(globals, overrides);
  const chain = resolveRole(body.spec, config.call.roles);
  const providers = providerRegistry(config, {
    ...(flags.claudePath === undefined ? {} : { executable: flags.claudePath }),
    ...(flags.baseUrl === undefined ? {} : { baseUrl: flags.baseUrl }),
  });
  let streamedAny = false;
  const onText =
    flags.stream === true && flags.json !== true && body.schema === undefined
      ? (delta: string) => {
          streamedAny = true;
          process.stdout.write(delta);
        }
      : undefined;
  const ledger = config.ledger.enabled
    ? openLedger({ stateDir: config.stateDir, storeText: config.ledger.storeText })
    : undefined;
  const progress = await createProgress(globals.quiet);
  try {
    const result = await call(
      chain,
      callRequest(body, onText === undefined ? {} : { onText }),
      callOptions(config, body, {
        providers,
        ledger,
        providerOptions: claudeCallOptions(flags),
        onRetryWait: retryWaitProgress(progress),
      }),
    );
    progress.stop();
    printCallResult(result, { json: flags.json === true, streamed: streamedAny });
  } finally {
    progress.stop();
    await ledger?.close();
    await providers.close();
  }
}

/** Per-call Claude Code options (`--resume`, `--allowed-tools`, `--cwd`). */
function claudeCallOptions(flags: CallFlags): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  if (flags.resume !== undefined) options['resume'] = flags.resume;
  if (flags.allowedTools !== undefined)
    options['allowedTools'] = flags.allowedTools
      .split(',')
      .map((tool) => tool.trim())
      .filter(Boolean);
  if (flags.cwd !== undefined) options['cwd'] = flags.cwd;
  return options;
}

function readSchema(file: string): JsonSchema {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new SwitchboardError('INVALID_INPUT', `schema file ${file} cannot be read`, {
      hint: 'check the --schema path',
    });
  }
  try {
    const value = JSON.parse(text) as unknown;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not an object');
    return value as JsonSchema;
  } catch (error) {
    throw new SwitchboardError(
      'INVALID_INPUT',
      `schema file ${file} is not a JSON object: ${error instanceof Error ? error.message : String(error)}`,
      {
        hint: 'write a JSON Schema such as {"type": "object", "properties": {...}}',
      },
    );
  }
}
