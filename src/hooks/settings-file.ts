import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmdirSync,
  rmSync,
  statSync,
} from 'node:fs';
import { claudeConfigDir } from '../core/claude-config-dir.js';
import { basename, dirname, join, resolve } from 'node:path';
import { SwitchboardError } from '../core/errors.js';
import { isPlainObject } from '../core/plain-object.js';
import { writeFileAtomically } from '../store/atomic-file.js';

/**
 * Which Claude Code settings file the hook goes into: `project` (`<dir>/.claude/settings.json`, shared
 * through git), `local` (`<dir>/.claude/settings.local.json`, this checkout only) or `user`
 * (`~/.claude/settings.json`, or `$CLAUDE_CONFIG_DIR/settings.json`).
 */
export const SETTINGS_SCOPES = ['project', 'local', 'user'] as const;
export type SettingsScope = (typeof SETTINGS_SCOPES)[number];

/** The settings file of a scope, as Claude Code finds it. */
export function settingsPath(
  scope: SettingsScope,
  { cwd = process.cwd(), env = process.env }: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): string {
  if (scope === 'user') {
    return join(claudeConfigDir(env), 'settings.json');
  }
  return join(resolve(cwd), '.claude', scope === 'local' ? 'settings.local.json' : 'settings.json');
}

/** A settings file as read: its exact text (undefined when there is none yet) and where it lives. */
export interface SettingsText {
  /** The path given; a symbolic link (a dotfiles checkout) is written through, not replaced. */
  path: string;
  text: string | undefined;
}

export function readSettings(path: string): SettingsText {
  if (!existsSync(path)) return { path, text: undefined };
  return { path, text: readFileSync(path, 'utf8') };
}

/**
 * The parsed settings, or SETTINGS_INVALID naming the file and the problem: not JSON, not an object,
 * or `hooks` / `hooks.UserPromptSubmit` of the wrong type (which Claude Code would reject too).
 */
export function parseSettings(path: string, text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw invalid(path, `is not valid JSON (${(error as Error).message})`, error);
  }
  if (!isPlainObject(value)) throw invalid(path, 'is not a JSON object');
  const hooks = value['hooks'];
  if (hooks !== undefined && !isPlainObject(hooks)) throw invalid(path, 'has "hooks" that is not an object');
  const prompt = isPlainObject(hooks) ? hooks['UserPromptSubmit'] : undefined;
  if (prompt !== undefined && !Array.isArray(prompt))
    throw invalid(path, 'has "hooks.UserPromptSubmit" that is not a list');
  return value;
}

function invalid(path: string, problem: string, cause?: unknown): SwitchboardError {
  return new SwitchboardError('SETTINGS_INVALID', `Claude Code settings file ${path} ${problem}`, {
    hint: 'fix the file (Claude Code would not read it either) and run the command again; it was left untouched',
    ...(cause === undefined ? {} : { cause }),
  });
}

/**
 * Writes the settings whole or not at all, through a symbolic link to its target, keeping the file's
 * permissions, and byte for byte as given: no secret redaction, the user's keys are theirs to keep.
 */
export function writeSettings(path: string, text: string): void {
  const target = existsSync(path) ? realpathSync(path) : path;
  const mode = existsSync(target) ? statSync(target).mode & 0o777 : 0o644;
  mkdirSync(dirname(target), { recursive: true });
  writeFileAtomically(target, text, { redact: false, mode });
}

/**
 * Deletes a settings file that holds nothing any more (its link's target, when it is a link), and the
 * `.claude/` folder it was in when nothing else is left there: an install that created the folder
 * leaves no trace once undone.
 */
export function removeSettings(path: string): void {
  const target = existsSync(path) ? realpathSync(path) : path;
  rmSync(target, { force: true });
  const folder = dirname(target);
  if (basename(folder) === '.claude' && readdirSync(folder).length === 0) rmdirSync(folder);
}
