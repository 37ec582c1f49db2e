import { InvalidArgumentError, type Command } from 'commander';
import { runCall, type CallFlags } from './call-run.js';
import { countOf, dollarsOf, tagOf } from './option-values.js';
import { REASONING_EFFORTS, reasoningEffortOf, type ReasoningEffort } from '../core/call-types.js';
import { parseSeconds } from './parse-seconds.js';
import type { GlobalFlags } from './shared.js';

// `switchboard call`'s options for commander; what the command does is in call-run.ts, shared with
// the fast path (call-fast-path.ts) that reads a plain call's arguments without commander.

function collectTags(value: string, previous: Record<string, string>): Record<string, string> {
  const tag = tagOf(value);
  if (tag === undefined) throw new InvalidArgumentError('expected key=value');
  return { ...previous, [tag[0]]: tag[1] };
}

function parseCount(value: string): number {
  const count = countOf(value);
  if (count === undefined) throw new InvalidArgumentError('expected a whole number from 0 to 10');
  return count;
}

function parseDollars(value: string): number {
  const dollars = dollarsOf(value);
  if (dollars === undefined) throw new InvalidArgumentError('expected a positive number of dollars');
  return dollars;
}

function parseEffort(value: string): ReasoningEffort {
  const effort = reasoningEffortOf(value);
  if (effort === undefined) throw new InvalidArgumentError(`expected one of ${REASONING_EFFORTS.join(', ')}`);
  return effort;
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
    .option(
      '--reasoning <level>',
      'think before answering: low, medium, high, xhigh or max (each provider its own setting)',
      parseEffort,
    )
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
    .option(
      '--keep-session',
      'keep this Claude Code session on disk, so its sessionId (--json) can be given to --resume',
    )
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
    .option(
      '--ignore-cooldown',
      'try providers even while their circuit breaker is open after repeated failures',
    )
    .option('--store-text', 'store the prompt text in the ledger (default: a hash only)')
    .option('--no-ledger', 'do not record the call')
    .option('--print <what>', 'text (the default): print only the answer', parsePrint)
    .option(
      '--server <url>',
      'send the call to a running `switchboard serve` (env SWITCHBOARD_SERVER); runs in process when it does not answer',
    )
    .action(async (spec: string, words: string[], flags: CallFlags, command: Command) => {
      await runCall(spec, words, flags, () => command.optsWithGlobals<GlobalFlags>());
    });
}
