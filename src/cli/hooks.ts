import { existsSync, statSync } from 'node:fs';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { SwitchboardError } from '../core/errors.js';
import type { InProcessRouter } from '../hooks/in-process-router.js';
import type { SettingsChange } from '../hooks/install.js';
import { SETTINGS_SCOPES, type SettingsScope } from '../hooks/settings-file.js';
import {
  DEFAULT_DEADLINE_MS,
  DEFAULT_MIN_CONFIDENCE,
  MAX_DEADLINE_MS,
  minConfidenceOf,
  runHook,
  type HookRunFlags,
} from './hook-fast-path.js';
import { serverAddress } from './server-client.js';
import type { SwitchboardConfig } from '../core/config.js';
import {
  commandConfig,
  parseFraction,
  routerOptions,
  warnSkippedSkills,
  type GlobalFlags,
} from './shared.js';

interface InstallFlags {
  scope: SettingsScope;
  skills?: string;
  server?: string | false;
  deadline: number;
  minConfidence: number;
}

function parseDeadline(value: string): number {
  const deadline = Number(value);
  if (!/^\d+$/.test(value.trim()) || deadline < 1 || deadline > MAX_DEADLINE_MS)
    throw new InvalidArgumentError(`expected a whole number of milliseconds from 1 to ${MAX_DEADLINE_MS}`);
  return deadline;
}

const scopeOption = () =>
  new Option('--scope <scope>', 'which Claude Code settings file: project, local or user')
    .choices(SETTINGS_SCOPES)
    .default('project');

export function registerHooksCommand(program: Command): void {
  const hooks = program
    .command('hooks')
    .description('the Claude Code prompt hook: name the routed skill to Claude before it starts');
  hooks
    .command('install')
    .description(
      'add the UserPromptSubmit hook to Claude Code settings (other hooks and keys kept as they are)',
    )
    .addOption(scopeOption())
    .option('--skills <dir>', 'skills folder to route with in process (default: route.skills of the config)')
    .option('--server <url>', 'ask this `switchboard serve` first (default: try http://127.0.0.1:8787)')
    .option('--no-server', 'never ask a server; always route in process')
    .option(
      '--deadline <ms>',
      'after this many milliseconds the hook adds nothing',
      parseDeadline,
      DEFAULT_DEADLINE_MS,
    )
    .option(
      '--min-confidence <p>',
      'name the skill only at this confidence or above',
      parseFraction,
      DEFAULT_MIN_CONFIDENCE,
    )
    .action(async (flags: InstallFlags, command: Command) =>
      install(flags, command.optsWithGlobals<GlobalFlags>()),
    );
  hooks
    .command('uninstall')
    .description(
      'remove the Switchboard hook from Claude Code settings, leaving the rest of the file as it was',
    )
    .addOption(scopeOption())
    .action(async (flags: { scope: SettingsScope }) => {
      const { settingsPath } = await import('../hooks/settings-file.js');
      const { uninstallHook } = await import('../hooks/install.js');
      const path = settingsPath(flags.scope);
      report(uninstallHook(path), path);
    });
  hooks
    .command('run')
    .description('the hook itself (Claude Code runs it): hook JSON on stdin, additional context on stdout')
    .option('--skills <dir>', 'skills folder to route with in process')
    .option('--server <url>', 'ask this `switchboard serve` first')
    .option('--no-server', 'never ask a server')
    .option('--deadline <ms>', `give up silently after this many milliseconds (${DEFAULT_DEADLINE_MS})`)
    .option(
      '--min-confidence <p>',
      `name the skill only at this confidence or above (${DEFAULT_MIN_CONFIDENCE})`,
    )
    // Exit code 2 would make Claude Code drop the user's prompt: nothing on this command line may fail.
    .allowUnknownOption()
    .allowExcessArguments()
    .action(async (flags: HookRunFlags, command: Command) =>
      runHook(flags, command.optsWithGlobals<GlobalFlags>()),
    );
}

async function install(flags: InstallFlags, globals: GlobalFlags): Promise<void> {
  const { settingsPath } = await import('../hooks/settings-file.js');
  const { installHook } = await import('../hooks/install.js');
  const { hookCommand, claudeTimeoutSeconds } = await import('../hooks/command.js');
  const config = commandConfig(
    globals,
    flags.skills === undefined ? {} : { route: { skills: flags.skills } },
  );
  const skills = config.route.skills;
  const server = typeof flags.server === 'string' ? serverAddress(flags.server)?.href : undefined;
  if (skills === undefined && server === undefined) {
    throw new SwitchboardError('INVALID_INPUT', 'no skills given', {
      hint: 'pass --skills DIR (or set route.skills in switchboard.yaml), or --server URL of a `switchboard serve` with skills',
    });
  }
  if (skills !== undefined && !(existsSync(skills) && statSync(skills).isDirectory())) {
    throw new SwitchboardError('SKILLS_INVALID', `skills folder ${skills} does not exist`, {
      hint: 'pass --skills with a folder of SKILL.md or *.md files with front matter',
    });
  }
  if (skills !== undefined) await warmRouter(config);
  const command = hookCommand({
    ...(skills === undefined ? {} : { skills }),
    ...(server === undefined ? {} : { server }),
    ...(flags.server === false ? { noServer: true } : {}),
    deadlineMs: flags.deadline,
    minConfidence: flags.minConfidence,
    stateDir: config.stateDir,
    ...(config.configFile === undefined ? {} : { configFile: config.configFile }),
  });
  const path = settingsPath(flags.scope);
  report(
    installHook(path, { type: 'command', command, timeout: claudeTimeoutSeconds(flags.deadline) }),
    path,
  );
}

/**
 * Loads the skills and trains the model the hook will load, now: a hook that had to train it would
 * pass its deadline, prompt after prompt. Skipped skill files are reported here, where someone reads.
 */
async function warmRouter(config: SwitchboardConfig): Promise<void> {
  const { createRouter } = await import('../route/router.js');
  const router = createRouter({
    ...(await routerOptions(localTiersOnly(config))),
    ledger: false,
    cache: false,
  });
  warnSkippedSkills(router);
  await router.close();
}

/** Never an LLM inside the hook's deadline: hybrid and llm-only route on their local tiers there. */
function localTiersOnly(config: SwitchboardConfig): SwitchboardConfig {
  const mode = config.route.mode === 'rules-only' ? 'rules-only' : 'local';
  return { ...config, route: { ...config.route, mode } };
}

function report(change: SettingsChange, path: string): void {
  const lines: Record<SettingsChange, string> = {
    added: `added the Switchboard prompt hook to ${path}`,
    updated: `updated the Switchboard prompt hook in ${path}`,
    unchanged: `the Switchboard prompt hook is already in ${path}; nothing changed`,
    removed: `removed the Switchboard prompt hook from ${path}`,
    absent: `no Switchboard prompt hook in ${path}; nothing changed`,
  };
  process.stdout.write(`${lines[change]}\n`);
}

/**
 * The hook's output with its config and router (cli/hook-fast-path.ts's `runHook` comes here when no
 * server answered its quick client). `unanswered`: the server that quick client asked without an
 * answer, not asked again.
 */
export async function hookOutputFor(
  flags: HookRunFlags,
  globals: GlobalFlags,
  input: Promise<string>,
  abortSignal: AbortSignal,
  onSilence: (reason: string) => void,
  unanswered?: URL,
): Promise<string | undefined> {
  const config = commandConfig(
    globals,
    flags.skills === undefined ? {} : { route: { skills: flags.skills } },
  );
  const { promptHookOutput, DEFAULT_SERVER_URL } = await import('../hooks/run.js');
  const named = flags.server === false ? undefined : serverAddress(flags.server);
  let server = flags.server === false ? undefined : (named ?? DEFAULT_SERVER_URL);
  let router: InProcessRouter | undefined;
  let onServerMissing: (() => void) | undefined;
  if (config.route.skills !== undefined || config.route.examples.length > 0) {
    const { inProcessRouter } = await import('../hooks/in-process-router.js');
    router = inProcessRouter(await routerOptions(localTiersOnly(config)));
    // No server named: the background server of these settings, or one started for the next prompt.
    if (flags.server !== false && named === undefined) {
      const background = await backgroundServer(config, globals, flags, onSilence);
      if (background?.server !== undefined) server = background.server;
      onServerMissing = background?.onServerMissing;
    }
  }
  if (unanswered !== undefined && server?.href === unanswered.href) {
    server = undefined;
    onServerMissing?.();
  }
  // With no server to ask, the router loads while the input is read.
  if (server === undefined) router?.start();
  return promptHookOutput({
    input: await input,
    router,
    server,
    stateDir: config.stateDir,
    minConfidence: minConfidenceOf(flags),
    abortSignal,
    onSilence,
    ...(onServerMissing === undefined ? {} : { onServerMissing }),
    onServed: (answered) => {
      if (process.env['SWITCHBOARD_DEBUG'] === '1')
        process.stderr.write(`switchboard hook: routed by the server ${answered.origin}\n`);
    },
  });
}

/**
 * The hook's background server (cli/background-serve.ts): routing with the hook's skills and state
 * folder on its local tiers, as the hook would in process. Its address when it runs; else the default
 * address stays the one to try, and `onServerMissing` starts it when nothing answered there either.
 */
async function backgroundServer(
  config: SwitchboardConfig,
  globals: GlobalFlags,
  flags: HookRunFlags,
  onSilence: (reason: string) => void,
): Promise<{ server?: URL; onServerMissing: () => void } | undefined> {
  const background = await import('./background-serve.js');
  if (!background.backgroundServeEnabled()) return undefined;
  const { resolve } = await import('node:path');
  const cwd = process.cwd();
  const serveArgs: string[] = [];
  if (flags.skills !== undefined) serveArgs.push('--skills', resolve(cwd, flags.skills));
  const mode = localTiersOnly(config).route.mode;
  if (mode !== config.route.mode) serveArgs.push('--mode', mode);
  const settings = {
    stateDir: config.stateDir,
    cwd,
    configFile: globals.config === undefined ? undefined : resolve(cwd, globals.config),
    serveArgs,
    environment: process.env,
  };
  const found = background.findBackgroundServer(settings);
  return {
    ...(found === undefined ? {} : { server: new URL(found.record.url) }),
    onServerMissing: () => {
      if (found !== undefined) background.forgetServer(found);
      onSilence(`no server answered; background server: ${background.startBackgroundServe(settings)}`);
    },
  };
}
