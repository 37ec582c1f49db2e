import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ROUTE_MODES } from '../core/route-types.js';
import type { GlobalFlags } from './shared.js';

// The prompt hook runs before every prompt a user sends Claude Code, within a deadline of a few hundred
// milliseconds. Answered by a running server (the background server of its settings, or one named) it
// is one loopback request, so its start-up is most of its cost: a plain `hooks run` is read here without
// commander, as `route`'s and `call`'s arguments are (route-fast-path.ts), and the server is asked
// before the command tree, the config and the router are loaded. They load only when no server
// answered, or when a setting could change which server to ask and only the config would tell.

/** The hook's default deadline (milliseconds from its start) and confidence floor. */
export const DEFAULT_DEADLINE_MS = 300;
export const DEFAULT_MIN_CONFIDENCE = 0.5;
export const MAX_DEADLINE_MS = 60_000;

/** `hooks run`'s flags, as commander hands them over: values unparsed, the hook never refuses one. */
export interface HookRunFlags {
  skills?: string;
  server?: string | false;
  deadline?: string;
  minConfidence?: string;
}

/** A plain `hooks run` read from the arguments. */
export interface FastHook {
  flags: HookRunFlags;
  globals: GlobalFlags;
}

const GLOBAL_VALUES: Record<string, (hook: FastHook, value: string) => void> = {
  '--config': (hook, value) => (hook.globals.config = value),
  '--state-dir': (hook, value) => (hook.globals.stateDir = value),
};

const RUN_VALUES: Record<string, (hook: FastHook, value: string) => void> = {
  '--skills': (hook, value) => (hook.flags.skills = value),
  '--server': (hook, value) => (hook.flags.server = value),
  '--deadline': (hook, value) => (hook.flags.deadline = value),
  '--min-confidence': (hook, value) => (hook.flags.minConfidence = value),
};

/**
 * `args` (after the node and script paths) as a plain `hooks run`, or undefined to leave them to
 * commander: anything else before or after it (help, an option of a newer version) is its to read.
 */
export function parseFastHook(args: readonly string[]): FastHook | undefined {
  const hook: FastHook = { flags: {}, globals: {} };
  let index = 0;
  let options = GLOBAL_VALUES;
  for (; index < args.length; index++) {
    const arg = args[index] as string;
    if (options === GLOBAL_VALUES && arg === 'hooks') {
      if (args[index + 1] !== 'run') return undefined;
      index++;
      options = RUN_VALUES;
      continue;
    }
    if (options === RUN_VALUES && arg === '--no-server') {
      hook.flags.server = false;
      continue;
    }
    const equals = arg.indexOf('=');
    const setter = arg.startsWith('--') ? options[equals === -1 ? arg : arg.slice(0, equals)] : undefined;
    if (setter === undefined) return undefined;
    const value = equals === -1 ? args[++index] : arg.slice(equals + 1);
    if (value === undefined || (equals === -1 && value.startsWith('-'))) return undefined;
    setter(hook, value);
  }
  return options === RUN_VALUES ? hook : undefined;
}

/**
 * The hook: never fails and never blocks the prompt. A hard timer ends the process at the deadline
 * (counted from the process's start) with exit 0 and no output; any error is silence too. A running
 * server is asked first through the quick client; the config and the router load only without an answer.
 */
export async function runHook(flags: HookRunFlags, globals: GlobalFlags): Promise<void> {
  const debug = process.env['SWITCHBOARD_DEBUG'] === '1';
  const silence = (reason: string) => {
    if (debug) process.stderr.write(`switchboard hook: silent: ${reason}\n`);
  };
  const deadlineMs = lenientNumber(
    flags.deadline,
    DEFAULT_DEADLINE_MS,
    (value) => value >= 1 && value <= MAX_DEADLINE_MS,
  );
  const deadline = new AbortController();
  setTimeout(
    () => {
      silence(`past the deadline of ${deadlineMs} ms`);
      deadline.abort();
      process.exit(0);
    },
    Math.max(0, deadlineMs - performance.now()),
  );
  try {
    const input = import('./stdin.js').then(({ readStandardInput }) => readStandardInput());
    // Awaited below on every path; a read that fails first must not end the process with exit 1.
    input.catch(() => undefined);
    const quick = await quickServer(flags, globals);
    let served: { output: string | undefined } | undefined;
    if (quick !== undefined) {
      const { servedPromptOutput } = await import('../hooks/run.js');
      served = await servedPromptOutput({
        ...quick,
        input: await input,
        minConfidence: minConfidenceOf(flags),
        abortSignal: deadline.signal,
        onSilence: silence,
        onServed: (answered) => {
          if (debug) process.stderr.write(`switchboard hook: routed by the server ${answered.origin}\n`);
        },
      });
    }
    let output = served?.output;
    if (served === undefined) {
      const { hookOutputFor } = await import('./hooks.js');
      output = await hookOutputFor(flags, globals, input, deadline.signal, silence, quick?.server);
    }
    if (output !== undefined && !deadline.signal.aborted) process.stdout.write(output);
  } catch (error) {
    silence(error instanceof Error ? error.message : String(error));
  }
  process.exit(0);
}

/** The confidence floor: `--min-confidence` when it is a fraction, else the default. */
export function minConfidenceOf(flags: HookRunFlags): number {
  return lenientNumber(flags.minConfidence, DEFAULT_MIN_CONFIDENCE, (value) => value >= 0 && value <= 1);
}

/**
 * The server the full hook would ask first, when that is known without the config: the one named
 * (`--server`, `SWITCHBOARD_SERVER`), else the running background server of the hook's settings (its
 * `--skills` given, a routing mode the config file does not set). Undefined: leave it to the full hook.
 */
async function quickServer(
  flags: HookRunFlags,
  globals: GlobalFlags,
): Promise<
  { server: URL; skills: string | undefined; stateDir: string; serverHasSkills?: boolean } | undefined
> {
  if (flags.server === false) return undefined;
  const cwd = process.cwd();
  const configFile = globals.config === undefined ? undefined : resolve(cwd, globals.config);
  const text = configText(cwd, configFile);
  if (text === undefined) return undefined;
  // Skills or a mode from the config file (or its folders, its state folder) only the config can say.
  const skills = flags.skills === undefined ? undefined : resolve(cwd, flags.skills);
  if (skills === undefined && (hasKey(text, 'skills') || hasKey(text, 'examples'))) return undefined;
  if ((process.env['SWITCHBOARD_ROUTE_SKILLS'] ?? '').trim() !== '' && skills === undefined) return undefined;
  const { clientStateDir, serverAddress } = await import('./server-client.js');
  const background = await import('./background-serve.js');
  const stateDir = clientStateDir(globals.stateDir);
  const settings = { stateDir, cwd, configFile, serveArgs: [] as string[], environment: process.env };
  const stateDirGiven =
    globals.stateDir !== undefined || (process.env['SWITCHBOARD_STATE_DIR'] ?? '').trim() !== '';
  if (!background.stateFolderKnown(settings, stateDirGiven)) return undefined;
  let named: URL | undefined;
  try {
    named = serverAddress(flags.server);
  } catch {
    return undefined; // the full hook says why, under SWITCHBOARD_DEBUG
  }
  if (named !== undefined) return { server: named, skills, stateDir };
  if (skills === undefined || !background.backgroundServeEnabled()) return undefined;
  const mode = localTiersArgs(text);
  if (mode === undefined) return undefined;
  settings.serveArgs = ['--skills', skills, ...mode];
  const found = background.findBackgroundServer(settings);
  if (found === undefined) return undefined;
  // Started with `--skills` of this very folder: its answer can name the skill's description and file.
  return { server: new URL(found.record.url), skills, stateDir, serverHasSkills: true };
}

/** The config file's text, `''` when there is none to read; undefined when the one named is missing. */
function configText(cwd: string, configFile: string | undefined): string | undefined {
  try {
    return readFileSync(configFile ?? resolve(cwd, 'switchboard.yaml'), 'utf8');
  } catch {
    return configFile === undefined ? '' : undefined;
  }
}

/** Whether YAML text may set `key` anywhere (any spelling a parser reads as the key): a cheap look. */
function hasKey(text: string, key: string): boolean {
  return new RegExp(`${key}['"]?\\s*:`).test(text);
}

/**
 * serve's `--mode` for the hook's local tiers (hybrid and llm-only route on their local tiers in the
 * hook, as cli/hooks.ts's `localTiersOnly`), from SWITCHBOARD_ROUTE_MODE or the default; undefined when
 * the config file may set a mode, or the variable names none.
 */
function localTiersArgs(text: string): string[] | undefined {
  const chosen = process.env['SWITCHBOARD_ROUTE_MODE']?.trim();
  let mode: string;
  if (chosen !== undefined && chosen !== '') mode = chosen;
  else if (hasKey(text, 'mode')) return undefined;
  else mode = 'local';
  if (!(ROUTE_MODES as readonly string[]).includes(mode)) return undefined;
  return mode === 'local' || mode === 'rules-only' ? [] : ['--mode', 'local'];
}

export function lenientNumber(
  text: string | undefined,
  fallback: number,
  valid: (value: number) => boolean,
): number {
  const value = Number(text);
  return text !== undefined && text.trim() !== '' && Number.isFinite(value) && valid(value)
    ? value
    : fallback;
}
