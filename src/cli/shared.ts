import { relative } from 'node:path';
import { InvalidArgumentError, type Command } from 'commander';
import { loadConfig, parseRouteMode, type ConfigOverrides, type SwitchboardConfig } from '../core/config.js';
import { EXIT_CODES, SwitchboardError } from '../core/errors.js';
import type { Router, RouterOptions } from '../route/router.js';

/** Options every routing command accepts; parsed by commander from the flags below. */
export interface RoutingFlags {
  skills?: string;
  mode?: string;
  provider?: string;
  train?: string[];
  rules?: string;
  confidenceThreshold?: number;
  marginThreshold?: number;
  strict?: boolean;
  storeText?: boolean;
  ledger?: boolean;
  cache?: boolean;
  json?: boolean;
}

export interface GlobalFlags {
  config?: string;
  stateDir?: string;
  quiet?: boolean;
}

export function parseFraction(value: string): number {
  const number = Number(value);
  if (value.trim() === '' || !Number.isFinite(number) || number < 0 || number > 1) {
    throw new InvalidArgumentError('expected a number between 0 and 1');
  }
  return number;
}

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/**
 * Adds the flags shared by `route`, `serve`, `eval` and `fit`. Measuring commands (`eval`, `fit`) never
 * use the cache or the ledger, so they do not offer the flags that would switch them off.
 */
export function addRoutingFlags(
  command: Command,
  { measuring = false }: { measuring?: boolean } = {},
): Command {
  command
    .option('--skills <dir>', 'skills folder (SKILL.md or *.md files with front matter)')
    .option(
      '--mode <mode>',
      'rules-only | local (rules, then the learned model) | hybrid (then an LLM when unsure) | llm-only',
    )
    .option(
      '--provider <spec>',
      'LLM for hybrid and llm-only modes, e.g. claude:haiku or anthropic:claude-haiku-4-5',
    )
    .option('--train <file>', 'labelled examples for the model (JSONL or CLINC150 JSON); repeatable', collect)
    .option('--rules <file>', 'extra rules file (YAML/JSON list of {pattern, skill, confidence})')
    .option('--confidence-threshold <p>', 'abstain below this top probability', parseFraction)
    .option('--margin-threshold <p>', 'abstain when the top two are closer than this', parseFraction)
    .option('--strict', 'fail on any invalid skill file');
  if (measuring) return command;
  return command
    .option('--store-text', 'store request text in the ledger (default: a hash only)')
    .option('--no-ledger', 'do not record decisions (and keep the decision cache in memory only)')
    .option('--no-cache', 'do not reuse decisions for identical requests (cached in the ledger for the TTL)');
}

/** Merges config file, environment and flags (in that order of precedence). */
/**
 * The config a command runs with: switchboard.yaml (or `--config`) < environment < the global
 * `--state-dir` < the command's own `overrides`.
 */
export function commandConfig(globals: GlobalFlags, overrides: ConfigOverrides = {}): SwitchboardConfig {
  const merged: ConfigOverrides = { ...overrides };
  if (globals.stateDir !== undefined && merged.stateDir === undefined) merged.stateDir = globals.stateDir;
  const config = loadConfig(
    globals.config === undefined ? { overrides: merged } : { configFile: globals.config, overrides: merged },
  );
  // Every store the command opens, and every process it starts (workflow children, agents), finds the
  // database through the variable, as a library caller's stores do.
  if (config.databaseUrl !== undefined) process.env.SWITCHBOARD_DATABASE_URL = config.databaseUrl;
  return config;
}

export function resolveConfig(globals: GlobalFlags, flags: RoutingFlags): SwitchboardConfig {
  const route: NonNullable<ConfigOverrides['route']> = {};
  if (flags.skills !== undefined) route.skills = flags.skills;
  if (flags.mode !== undefined) route.mode = parseRouteMode(flags.mode, '--mode');
  if (flags.provider !== undefined) route.provider = flags.provider;
  if (flags.train !== undefined) route.examples = flags.train;
  if (flags.rules !== undefined) route.rulesFile = flags.rules;
  if (flags.confidenceThreshold !== undefined) route.confidenceThreshold = flags.confidenceThreshold;
  if (flags.marginThreshold !== undefined) route.marginThreshold = flags.marginThreshold;
  if (flags.strict === true) route.strict = true;
  // commander sets negatable flags to true by default; only an explicit --no-x means "off".
  if (flags.cache === false) route.cache = false;
  const overrides: ConfigOverrides = { route };
  if (flags.ledger === false) overrides.ledger = false;
  if (flags.storeText === true) overrides.storeText = true;
  return commandConfig(globals, overrides);
}

/**
 * Router options for a resolved config. The LLM tier's providers load only when a mode needs them, so
 * plain routing stays quick to start.
 */
export async function routerOptions(config: SwitchboardConfig): Promise<RouterOptions> {
  const { route } = config;
  const options: RouterOptions = {
    mode: route.mode,
    confidenceThreshold: route.confidenceThreshold,
    marginThreshold: route.marginThreshold,
    skillThresholds: route.skillThresholds,
    training: route.examples,
    strict: route.strict,
    stateDir: config.stateDir,
    storeText: config.ledger.storeText,
    cache: route.cache.enabled ? { ttlMs: route.cache.ttlMs, maxEntries: route.cache.maxEntries } : false,
  };
  if (route.skills !== undefined) options.skills = route.skills;
  if (route.rulesFile !== undefined) options.rulesFile = route.rulesFile;
  if (!config.ledger.enabled) options.ledger = false;
  if (route.provider !== undefined && (route.mode === 'hybrid' || route.mode === 'llm-only')) {
    const { providerRegistry } = await import('./call-setup.js');
    options.llm = {
      provider: route.provider,
      timeoutMs: route.llmTimeoutMs,
      confidenceThreshold: route.llmConfidenceThreshold,
      race: route.llmRace,
      // The config's endpoints and prices, as `switchboard call` has them.
      callOptions: { providers: providerRegistry(config) },
    };
  }
  return options;
}

/**
 * A router for measuring (eval, fit): the config's settings without the cache, whose hits would
 * hide the tiers, and without the ledger, which measurements must not fill.
 */
export async function measuringRouter(
  config: SwitchboardConfig,
  overrides: Pick<RouterOptions, 'mode' | 'learned' | 'onTrainProgress'> = {},
): Promise<Router> {
  const { createRouter } = await import('../route/router.js');
  return createRouter({ ...(await routerOptions(config)), ...overrides, cache: false, ledger: false });
}

/** `--no-learned`, for the commands that measure a router (eval, fit). */
export function addLearnedFlag(command: Command): Command {
  return command.option(
    '--no-learned',
    'leave out the examples `route learn` wrote to <state-dir>/learned.jsonl (default: train on them, as route does)',
  );
}

/**
 * The header line that says a measurement includes what `route learn` taught, so a figure is never
 * inflated by it silently (learned examples may be the very requests being measured).
 */
export function learnedNote(learned: { file: string; examples: number } | undefined): string[] {
  if (learned === undefined) return [];
  const file = relative(process.cwd(), learned.file).startsWith('..')
    ? learned.file
    : relative(process.cwd(), learned.file);
  return [
    `model trained also on ${learned.examples} learned example(s) from ${file} (--no-learned leaves them out)`,
  ];
}

/** Skills named in a header note before "and N more". */
const NOTED_SKILLS = 5;

/**
 * A measurement's header notes on what the figures include beyond the given data and thresholds:
 * learned examples, primed examples (`route prime`) and skills judged by thresholds of their own.
 */
export function routerNotes(router: Pick<Router, 'learned' | 'primed' | 'skillThresholds'>): string[] {
  const notes = learnedNote(router.learned);
  if (router.primed !== undefined) {
    notes.push(
      `model trained also on ${router.primed.examples} primed example(s) from ${router.primed.file} (written by route prime)`,
    );
  }
  const own = Object.entries(router.skillThresholds);
  if (own.length > 0) {
    const shown = own.slice(0, NOTED_SKILLS).map(([skill, thresholds]) => {
      const parts = [
        thresholds.confidenceThreshold === undefined
          ? []
          : [`confidence ≥ ${thresholds.confidenceThreshold}`],
        thresholds.marginThreshold === undefined ? [] : [`margin ≥ ${thresholds.marginThreshold}`],
      ].flat();
      return `${skill} (${parts.join(', ')})`;
    });
    const more = own.length > NOTED_SKILLS ? ` and ${own.length - NOTED_SKILLS} more` : '';
    notes.push(`${own.length} skill(s) use thresholds of their own: ${shown.join(', ')}${more}`);
  }
  return notes;
}

export function requireRoutes(config: SwitchboardConfig): void {
  if (config.route.skills === undefined && config.route.examples.length === 0) {
    throw new SwitchboardError('INVALID_INPUT', 'no skills given', {
      hint: 'pass --skills DIR (or --train FILE), or set route.skills in switchboard.yaml',
    });
  }
}

export { reportError } from './report-error.js';

export function warn(message: string): void {
  process.stderr.write(`switchboard: warning: ${message}\n`);
}

/** Warns once about each skill file the router skipped. */
export function warnSkippedSkills(router: {
  problems: readonly { file: string; reason: string }[];
  warnings: readonly string[];
}): void {
  for (const problem of router.problems) warn(`${problem.file}: ${problem.reason} (skipped)`);
  for (const warning of router.warnings) warn(warning);
}

export { EXIT_CODES };
