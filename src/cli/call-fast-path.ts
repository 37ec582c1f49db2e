import type { CallFlags } from './call-run.js';
import { reasoningEffortOf } from '../core/call-types.js';
import { countOf, dollarsOf, secondsOf, tagOf } from './option-values.js';

// `switchboard call` is what a shell script runs once per request, often sent to a running `serve`: a
// plain call's arguments are read here, without commander and the program's command tree (about a
// fifth of such a call's start-up). Only shapes whose meaning is certain are taken; for anything else
// (help, a global option, a flag that needs this process, a value commander would refuse) this gives
// undefined and the full parser runs, with its own messages.

/** A plain `call` read from the arguments: what commander would have handed the command. */
export interface FastCall {
  spec: string;
  words: string[];
  flags: CallFlags;
}

type Setter = (flags: CallFlags, value: string) => boolean;

/** Options that take a value, each with how it is stored; false: commander would refuse the value. */
const WITH_VALUE: Record<string, Setter> = {
  '--server': (flags, value) => ((flags.server = value), true),
  '--system': (flags, value) => ((flags.system = value), true),
  '--reasoning': (flags, value) => store(reasoningEffortOf(value), (effort) => (flags.reasoning = effort)),
  '--schema': (flags, value) => ((flags.schema = value), true),
  '--print': (flags, value) => value === 'text' && ((flags.print = value), true),
  '--timeout': (flags, value) => store(secondsOf(value), (seconds) => (flags.timeout = seconds)),
  '--stage-timeout': (flags, value) => store(secondsOf(value), (seconds) => (flags.stageTimeout = seconds)),
  '--idle-timeout': (flags, value) => store(secondsOf(value), (seconds) => (flags.idleTimeout = seconds)),
  '--schema-retries': (flags, value) => store(countOf(value), (count) => (flags.schemaRetries = count)),
  '--max-cost': (flags, value) => store(dollarsOf(value), (dollars) => (flags.maxCost = dollars)),
  '--tag': (flags, value) =>
    store(tagOf(value), ([key, text]) => (flags.tag = { ...flags.tag, [key]: text })),
};

/** Options without a value. */
const SWITCHES: Record<string, (flags: CallFlags) => void> = {
  '--json': (flags) => (flags.json = true),
  '--ignore-cooldown': (flags) => (flags.ignoreCooldown = true),
  '--store-text': (flags) => (flags.storeText = true),
};

function store<T>(value: T | undefined, set: (value: T) => void): boolean {
  if (value === undefined) return false;
  set(value);
  return true;
}

/** `args` (after the node and script paths) as a plain call, or undefined to leave them to commander. */
export function parseFastCall(args: readonly string[]): FastCall | undefined {
  if (args[0] !== 'call') return undefined;
  // As commander leaves them: no tags, and `ledger` true unless `--no-ledger` (which needs commander).
  const flags: CallFlags = { tag: {}, ledger: true };
  const positionals: string[] = [];
  for (let index = 1; index < args.length; index++) {
    const arg = args[index] as string;
    if (arg === '-' || !arg.startsWith('-')) {
      positionals.push(arg);
      continue;
    }
    const switched = SWITCHES[arg];
    if (switched !== undefined) {
      switched(flags);
      continue;
    }
    const equals = arg.indexOf('=');
    const name = equals === -1 ? arg : arg.slice(0, equals);
    const setter = WITH_VALUE[name];
    if (setter === undefined) return undefined;
    const value = equals === -1 ? args[++index] : arg.slice(equals + 1);
    // A missing value, or one that looks like an option, is commander's to judge.
    if (value === undefined || (equals === -1 && value.startsWith('-'))) return undefined;
    if (!setter(flags, value)) return undefined;
  }
  const [spec, ...words] = positionals;
  if (spec === undefined) return undefined;
  return { spec, words, flags };
}
