import { readFileSync } from 'node:fs';
import { InvalidArgumentError, type Command } from 'commander';
import type { JsonSchema } from '../core/call-types.js';
import type { ConfigOverrides } from '../core/config.js';
import { SwitchboardError } from '../core/errors.js';
import type { ClaudeCodeProviderOptions } from '../providers/claude-code/claude-code-provider.js';
import { createProgress, retryWaitProgress } from './progress.js';
import { commandConfig, type GlobalFlags } from './shared.js';
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

/** A role name from switchboard.yaml (`drafter`) stands for its provider chain. */
export function resolveRole(spec: string, roles: Readonly<Record<string, string>>): string {
  if (spec.includes(':')) return spec;
  const chain = roles[spec];
  if (chain !== undefined) return chain;
  const known = Object.keys(roles);
  throw new SwitchboardError('INVALID_INPUT', `"${spec}" is neither a provider spec nor a role`, {
    hint:
      known.length === 0
        ? 'write provider:model (e.g. claude:haiku), or define roles in switchboard.yaml'
        : `write provider:model, or one of the roles: ${known.join(', ')}`,
  });
}

function parseSeconds(value: string): number {
  const seconds = Number(value);
  if (value.trim() === '' || !Number.isFinite(seconds) || seconds <= 0) {
    throw new InvalidArgumentError('expected a positive number of seconds');
  }
  return seconds;
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
    .action(async (spec: string, words: string[], flags: CallFlags, command: Command) => {
      const { call } = await import('../invoke/call.js');
      const { ProviderRegistry } = await import('../providers/registry.js');
      const { openLedger } = await import('../store/ledger.js');
      const overrides: ConfigOverrides = {};
      if (flags.ledger === false) overrides.ledger = false;
      if (flags.storeText === true) overrides.storeText = true;
      const config = commandConfig(command.optsWithGlobals<GlobalFlags>(), overrides);
      const prompt = await textFromArguments(words, 'prompt');
      const schema = flags.schema === undefined ? undefined : readSchema(flags.schema);

      const claude: ClaudeCodeProviderOptions = {};
      const executable = flags.claudePath ?? config.claude.executable;
      if (executable !== undefined) claude.executable = executable;
      const baseUrl = flags.baseUrl ?? config.claude.baseUrl;
      if (baseUrl !== undefined) claude.baseUrl = baseUrl;
      if (config.claude.maxRetries !== undefined) claude.maxRetries = config.claude.maxRetries;
      if (config.claude.timeoutMs !== undefined) claude.timeoutMs = config.claude.timeoutMs;
      if (config.claude.idleTimeoutMs !== undefined) claude.idleTimeoutMs = config.claude.idleTimeoutMs;
      const { call: callSettings } = config;
      const prices = Object.keys(callSettings.prices).length > 0 ? { prices: callSettings.prices } : {};
      const providers = new ProviderRegistry({
        claude,
        anthropic: { ...prices },
        openai: { ...prices },
        gemini: { ...prices, ...callSettings.gemini },
      });
      const chain = resolveRole(spec, callSettings.roles);
      let streamedAny = false;
      const streamed =
        flags.stream === true && flags.json !== true && schema === undefined
          ? (delta: string) => {
              streamedAny = true;
              process.stdout.write(delta);
            }
          : undefined;
      const ledger = config.ledger.enabled
        ? openLedger({ stateDir: config.stateDir, storeText: config.ledger.storeText })
        : undefined;

      const providerOptions: Record<string, unknown> = {};
      if (flags.resume !== undefined) providerOptions['resume'] = flags.resume;
      if (flags.allowedTools !== undefined)
        providerOptions['allowedTools'] = flags.allowedTools
          .split(',')
          .map((tool) => tool.trim())
          .filter(Boolean);
      if (flags.cwd !== undefined) providerOptions['cwd'] = flags.cwd;
      const progress = await createProgress(command.optsWithGlobals<GlobalFlags>().quiet);
      try {
        const result = await call(
          chain,
          {
            prompt,
            ...(flags.system === undefined ? {} : { system: flags.system }),
            ...(schema === undefined ? {} : { schema }),
            ...(flags.timeout === undefined ? {} : { timeoutMs: flags.timeout * 1000 }),
            ...(flags.idleTimeout === undefined ? {} : { idleTimeoutMs: flags.idleTimeout * 1000 }),
            ...(Object.keys(flags.tag).length === 0 ? {} : { tags: flags.tag }),
            ...(streamed === undefined ? {} : { onText: streamed }),
          },
          {
            providers,
            ledger: ledger ?? false,
            providerOptions,
            onRetryWait: retryWaitProgress(progress),
            retry: {
              ...(callSettings.maxAttempts === undefined ? {} : { maxAttempts: callSettings.maxAttempts }),
              ...(callSettings.retriesPerProvider === undefined
                ? {}
                : { retriesPerProvider: callSettings.retriesPerProvider }),
            },
            ...((flags.schemaRetries ?? callSettings.schemaRetries) === undefined
              ? {}
              : { schemaRetries: (flags.schemaRetries ?? callSettings.schemaRetries) as number }),
            ...stageTimeout(flags.stageTimeout, callSettings.stageTimeoutMs),
            ...(callSettings.cooldownMs === undefined
              ? {}
              : { cooldown: { cooldownMs: callSettings.cooldownMs } }),
            ...(flags.ignoreCooldown === true ? { ignoreCooldown: true } : {}),
            budget: {
              rules: callSettings.budgetRules,
              prices: callSettings.prices,
              ...((flags.maxCost ?? callSettings.maxCostPerCallUsd) === undefined
                ? {}
                : { maxCostUsd: (flags.maxCost ?? callSettings.maxCostPerCallUsd) as number }),
            },
          },
        );
        progress.stop();
        for (const warning of result.warnings) process.stderr.write(`switchboard: warning: ${warning}\n`);
        if (streamedAny) process.stdout.write(result.text.endsWith('\n') ? '' : '\n');
        else if (flags.json === true) process.stdout.write(`${JSON.stringify(result)}\n`);
        else if (result.structured !== undefined)
          process.stdout.write(`${JSON.stringify(result.structured, null, 2)}\n`);
        else process.stdout.write(result.text.endsWith('\n') ? result.text : `${result.text}\n`);
      } finally {
        progress.stop();
        ledger?.close();
        await providers.close();
      }
    });
}

/** `--stage-timeout` (seconds) wins over `call.stage_timeout_seconds`. */
function stageTimeout(
  seconds: number | undefined,
  configured: number | undefined,
): { stageTimeoutMs?: number } {
  const milliseconds = seconds === undefined ? configured : seconds * 1000;
  return milliseconds === undefined ? {} : { stageTimeoutMs: milliseconds };
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
