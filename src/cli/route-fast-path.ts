import { resolve } from 'node:path';
import type { RouteDecision } from '../core/route-types.js';
import { PRINTABLE, printDecision, type Printable } from './route-output.js';
import type { RouteFlags } from './route.js';
import type { GlobalFlags } from './shared.js';

// `switchboard route TEXT` is what a shell script or an orchestrator runs once per request. Sent to a
// server (named, or the background server of its settings) it is one loopback request, so its start-up
// is most of its cost: a plain route's arguments are read here, without commander and the command tree,
// as `call`'s are (call-fast-path.ts). Only shapes whose meaning is certain are taken; anything else
// (help, `learn`, `feedback`, `prime`, a value commander would refuse) gives undefined and the full
// parser runs, with its own messages.

/** A plain `route` read from the arguments: what commander would have handed the command. */
export interface FastRoute {
  words: string[];
  flags: RouteFlags;
  globals: GlobalFlags;
}

type Setter = (route: FastRoute, value: string) => boolean;

const fraction = (value: string): number | undefined => {
  const number = Number(value);
  return value.trim() === '' || !Number.isFinite(number) || number < 0 || number > 1 ? undefined : number;
};

const WITH_VALUE: Record<string, Setter> = {
  '--config': (route, value) => ((route.globals.config = value), true),
  '--state-dir': (route, value) => ((route.globals.stateDir = value), true),
  '--server': (route, value) => ((route.flags.server = value), true),
  '--print': (route, value) =>
    (PRINTABLE as readonly string[]).includes(value) && ((route.flags.print = value as Printable), true),
  '--skills': (route, value) => ((route.flags.skills = value), true),
  '--mode': (route, value) => ((route.flags.mode = value), true),
  '--provider': (route, value) => ((route.flags.provider = value), true),
  '--train': (route, value) => ((route.flags.train = [...(route.flags.train ?? []), value]), true),
  '--rules': (route, value) => ((route.flags.rules = value), true),
  '--confidence-threshold': (route, value) => {
    const number = fraction(value);
    if (number !== undefined) route.flags.confidenceThreshold = number;
    return number !== undefined;
  },
  '--margin-threshold': (route, value) => {
    const number = fraction(value);
    if (number !== undefined) route.flags.marginThreshold = number;
    return number !== undefined;
  },
};

const SWITCHES: Record<string, (route: FastRoute) => void> = {
  '--quiet': (route) => (route.globals.quiet = true),
  '--json': (route) => (route.flags.json = true),
  '--strict': (route) => (route.flags.strict = true),
  '--store-text': (route) => (route.flags.storeText = true),
  '--no-ledger': (route) => (route.flags.ledger = false),
  '--no-cache': (route) => (route.flags.cache = false),
};

/** `args` (after the node and script paths) as a plain route, or undefined to leave them to commander. */
export function parseFastRoute(args: readonly string[]): FastRoute | undefined {
  // As commander leaves them: `ledger` and `cache` true unless `--no-…`.
  const route: FastRoute = { words: [], flags: { ledger: true, cache: true }, globals: {} };
  let command: string | undefined;
  for (let index = 0; index < args.length; index++) {
    const arg = args[index] as string;
    if (arg === '-' || !arg.startsWith('-')) {
      if (command === undefined) command = arg;
      else route.words.push(arg);
      continue;
    }
    const switched = SWITCHES[arg];
    if (switched !== undefined) {
      if (command === undefined && arg !== '--quiet') return undefined;
      switched(route);
      continue;
    }
    const equals = arg.indexOf('=');
    const name = equals === -1 ? arg : arg.slice(0, equals);
    const setter = WITH_VALUE[name];
    if (setter === undefined) return undefined;
    // Before the command's name only the global options are the program's.
    if (command === undefined && name !== '--config' && name !== '--state-dir') return undefined;
    const value = equals === -1 ? args[++index] : arg.slice(equals + 1);
    if (value === undefined || (equals === -1 && value.startsWith('-'))) return undefined;
    if (!setter(route, value)) return undefined;
  }
  if (command !== 'route') return undefined;
  // `--print` conflicts with `--json`: commander says so.
  if (route.flags.json === true && route.flags.print !== undefined) return undefined;
  const first = route.words[0];
  if (first === 'feedback' || first === 'prime' || (first === 'learn' && route.words.length === 1))
    return undefined;
  return route;
}

/**
 * The arguments `serve` routes with to decide as this route would in process: its routing flags, the
 * paths made absolute (the server may be asked from another folder).
 */
export function servedRoutingArgs(flags: RouteFlags, cwd: string): string[] {
  const args: string[] = [];
  const path = (value: string) => resolve(cwd, value);
  if (flags.skills !== undefined) args.push('--skills', path(flags.skills));
  if (flags.mode !== undefined) args.push('--mode', flags.mode);
  if (flags.provider !== undefined) args.push('--provider', flags.provider);
  for (const file of flags.train ?? []) args.push('--train', path(file));
  if (flags.rules !== undefined) args.push('--rules', path(flags.rules));
  if (flags.confidenceThreshold !== undefined)
    args.push('--confidence-threshold', String(flags.confidenceThreshold));
  if (flags.marginThreshold !== undefined) args.push('--margin-threshold', String(flags.marginThreshold));
  if (flags.strict === true) args.push('--strict');
  if (flags.storeText === true) args.push('--store-text');
  if (flags.ledger === false) args.push('--no-ledger');
  if (flags.cache === false) args.push('--no-cache');
  return args;
}

/**
 * Runs a plain route: on the named server, else on the background server of its settings (started
 * now when there is none, for the next route; this one runs in process), else in process.
 */
export async function runFastRoute({ words, flags, globals }: FastRoute): Promise<void> {
  const [{ askServer, clientStateDir, serverAddress }, { textFromArguments }] = await Promise.all([
    import('./server-client.js'),
    import('./stdin.js'),
  ]);
  const named = serverAddress(flags.server);
  const text = await textFromArguments(words, 'request');
  const stateDir = clientStateDir(globals.stateDir);
  const answer = async (server: URL, quiet: boolean) =>
    (await askServer(server, '/route', { text }, { stateDir, quiet })) as RouteDecision | undefined;
  if (named !== undefined) {
    const decision = await answer(named, false);
    if (decision !== undefined) return printDecision(decision, flags);
  } else {
    const decision = await viaBackgroundServer(flags, globals, stateDir, answer);
    if (decision !== undefined) return printDecision(decision, flags);
  }
  const { routeHere } = await import('./route.js');
  await routeHere(text, globals, flags);
}

async function viaBackgroundServer(
  flags: RouteFlags,
  globals: GlobalFlags,
  stateDir: string,
  answer: (server: URL, quiet: boolean) => Promise<RouteDecision | undefined>,
): Promise<RouteDecision | undefined> {
  const background = await import('./background-serve.js');
  if (!background.backgroundServeEnabled()) return undefined;
  const cwd = process.cwd();
  const settings = {
    stateDir,
    cwd,
    configFile: globals.config === undefined ? undefined : resolve(cwd, globals.config),
    serveArgs: servedRoutingArgs(flags, cwd),
    environment: process.env,
  };
  const given = globals.stateDir !== undefined || (process.env['SWITCHBOARD_STATE_DIR'] ?? '').trim() !== '';
  if (!background.stateFolderKnown(settings, given)) return undefined;
  const found = background.findBackgroundServer(settings);
  if (found !== undefined) {
    const decision = await answer(new URL(found.record.url), true);
    if (decision !== undefined) {
      if (process.env['SWITCHBOARD_DEBUG'] === '1')
        process.stderr.write(
          `switchboard: routed by the background server ${found.record.url} (pid ${found.record.pid})\n`,
        );
      return decision;
    }
    // Its pid is someone else's now, or it is stopping: the next client must not try it again.
    background.forgetServer(found);
  }
  const started = background.startBackgroundServe(settings);
  if (process.env['SWITCHBOARD_DEBUG'] === '1')
    process.stderr.write(`switchboard: background server for ${stateDir}: ${started}; routing in process\n`);
  return undefined;
}
