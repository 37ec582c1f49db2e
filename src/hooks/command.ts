import { fileURLToPath } from 'node:url';

/** How the installed hook runs: what `hooks install` writes as the settings hook's command. */
export interface HookCommandOptions {
  /** Absolute skills folder for in-process routing; without it the hook only asks a server. */
  skills?: string;
  /** A `switchboard serve` to ask first. */
  server?: string;
  /** Never look for a server; route in process. */
  noServer?: boolean;
  /** Milliseconds from the hook's start after which it gives up silently. */
  deadlineMs: number;
  /** Lowest confidence at which the skill is named to Claude. */
  minConfidence: number;
  /** Absolute state folder (ledger, trained model), so the hook does not litter Claude Code's cwd. */
  stateDir: string;
  /** Absolute config file, when one was in use at install time. */
  configFile?: string;
}

/**
 * The shell command Claude Code runs for each prompt: this Node and this installation's launcher by
 * absolute path (Claude Code runs hooks from the project folder, with a PATH that may hold another
 * Node or none), and every setting spelled out, so the hook behaves the same from any folder.
 */
export function hookCommand(options: HookCommandOptions): string {
  const launcher = fileURLToPath(new URL('../cli/launch.js', import.meta.url));
  const words = [process.execPath, launcher, '--state-dir', options.stateDir];
  if (options.configFile !== undefined) words.push('--config', options.configFile);
  words.push('hooks', 'run');
  if (options.skills !== undefined) words.push('--skills', options.skills);
  if (options.server !== undefined) words.push('--server', options.server);
  if (options.noServer === true) words.push('--no-server');
  words.push('--deadline', String(options.deadlineMs), '--min-confidence', String(options.minConfidence));
  return words.map(shellQuote).join(' ');
}

/** A word as a POSIX shell reads it back unchanged. */
export function shellQuote(word: string): string {
  return /^[\w/.,:=@%+-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** Claude Code's own timeout for the hook (seconds): a backstop well behind the hook's deadline. */
export function claudeTimeoutSeconds(deadlineMs: number): number {
  return Math.max(2, Math.ceil(deadlineMs / 1000) + 1);
}
