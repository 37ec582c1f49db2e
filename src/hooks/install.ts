import { lstatSync } from 'node:fs';
import { isPlainObject } from '../core/plain-object.js';
import { appendItem, appendMember, removeChild, replaceValue } from './json-edit.js';
import { jsonSpans, memberOf, type JsonArraySpan, type JsonObjectSpan, type JsonSpan } from './json-spans.js';
import { parseSettings, readSettings, removeSettings, writeSettings } from './settings-file.js';

/** Claude Code's hook event the prompt hook is registered for. */
export const HOOK_EVENT = 'UserPromptSubmit';

/** One command hook as Claude Code's settings spell it. */
export interface CommandHook {
  type: 'command';
  command: string;
  /** Seconds before Claude Code gives up on the hook itself: a backstop behind the hook's own deadline. */
  timeout: number;
}

/** What an install or uninstall did to the settings file. */
export type SettingsChange = 'added' | 'updated' | 'unchanged' | 'removed' | 'absent';

/**
 * Whether a settings hook is this tool's prompt hook: a command running `hooks run` of a switchboard
 * installation (its launcher, its `launch.js`, or a `switchboard` on PATH). Recognised by the command
 * rather than a marker key, which Claude Code's settings schema has no room for.
 */
export function isSwitchboardHook(hook: unknown): boolean {
  if (!isPlainObject(hook) || hook['type'] !== 'command' || typeof hook['command'] !== 'string') return false;
  const command = hook['command'];
  return /(^|\s)hooks\s+run(\s|$)/.test(command) && /switchboard|[\\/]cli[\\/]launch\.js/i.test(command);
}

/**
 * Adds the hook to a settings file, or brings an earlier Switchboard hook there up to date: one entry
 * whatever the number of installs. Every other byte of the file stays as it was.
 */
export function installHook(path: string, hook: CommandHook): SettingsChange {
  const { text } = readSettings(path);
  if (text === undefined) {
    writeSettings(path, freshSettings(hook));
    return 'added';
  }
  parseSettings(path, text);
  const found = ourHooks(text);
  const [first, ...others] = found;
  if (first === undefined) {
    writeSettings(path, addEntry(text, hook));
    return 'added';
  }
  const current = JSON.parse(text.slice(first.hook.start, first.hook.end)) as unknown;
  if (others.length === 0 && JSON.stringify(current) === JSON.stringify(hook)) return 'unchanged';
  let edited = replaceValue(text, first.hook, hook);
  // Copies from older installs go; the first keeps its place among the user's hooks.
  for (let rest = ourHooks(edited).slice(1); rest.length > 0; rest = ourHooks(edited).slice(1))
    edited = removeFound(edited, rest[0] as FoundHook);
  writeSettings(path, edited);
  return 'updated';
}

/**
 * Removes Switchboard's prompt hooks from a settings file, and the lists and keys that only held them.
 * A file exactly as an install created it is deleted: that install leaves no trace (a file that held
 * `{}` and a newline before the install cannot be told from none, and goes too: the same settings).
 */
export function uninstallHook(path: string): SettingsChange {
  const { text } = readSettings(path);
  if (text === undefined) return 'absent';
  parseSettings(path, text);
  const found = ourHooks(text);
  const first = found[0];
  if (first === undefined) return 'absent';
  const created = freshSettings(JSON.parse(text.slice(first.hook.start, first.hook.end)) as CommandHook);
  if (text === created && !lstatSync(path).isSymbolicLink()) {
    removeSettings(path);
    return 'removed';
  }
  let edited = text;
  for (let left = found; left.length > 0; left = ourHooks(edited))
    edited = removeFound(edited, left[0] as FoundHook);
  writeSettings(path, pruneEmpty(edited));
  return 'removed';
}

/** The file an install writes where there was none. */
function freshSettings(hook: CommandHook): string {
  return `${JSON.stringify({ hooks: { [HOOK_EVENT]: [{ hooks: [hook] }] } }, null, 2)}\n`;
}

/** A Switchboard hook's place: its group in `hooks.UserPromptSubmit`, and its index there. */
interface FoundHook {
  list: JsonArraySpan;
  groupIndex: number;
  groupHooks: JsonArraySpan;
  hookIndex: number;
  hook: JsonSpan;
}

function promptList(text: string): { root: JsonObjectSpan; hooks?: JsonObjectSpan; list?: JsonArraySpan } {
  const root = jsonSpans(text) as JsonObjectSpan;
  const hooks = memberOf(root, 'hooks')?.value as JsonObjectSpan | undefined;
  const list =
    hooks === undefined ? undefined : (memberOf(hooks, HOOK_EVENT)?.value as JsonArraySpan | undefined);
  return { root, ...(hooks === undefined ? {} : { hooks }), ...(list === undefined ? {} : { list }) };
}

function ourHooks(text: string): FoundHook[] {
  const { list } = promptList(text);
  if (list === undefined) return [];
  const found: FoundHook[] = [];
  list.items.forEach((group, groupIndex) => {
    if (group.kind !== 'object') return;
    const groupHooks = memberOf(group, 'hooks')?.value;
    if (groupHooks?.kind !== 'array') return;
    groupHooks.items.forEach((hook, hookIndex) => {
      if (isSwitchboardHook(JSON.parse(text.slice(hook.start, hook.end))))
        found.push({ list, groupIndex, groupHooks, hookIndex, hook });
    });
  });
  return found;
}

function addEntry(text: string, hook: CommandHook): string {
  const { root, hooks, list } = promptList(text);
  const group = { hooks: [hook] };
  if (list !== undefined) return appendItem(text, list, group);
  if (hooks !== undefined) return appendMember(text, hooks, HOOK_EVENT, [group]);
  return appendMember(text, root, 'hooks', { [HOOK_EVENT]: [group] });
}

/** Removes one found hook: its whole group when it is the group's only hook. */
function removeFound(text: string, found: FoundHook): string {
  if (found.groupHooks.items.length === 1) return removeChild(text, found.list, found.groupIndex);
  return removeChild(text, found.groupHooks, found.hookIndex);
}

/** Drops an emptied `UserPromptSubmit` list, then an emptied `hooks` object. */
function pruneEmpty(text: string): string {
  const { hooks: before, list } = promptList(text);
  if (before !== undefined && list !== undefined && list.items.length === 0) {
    const index = before.members.findLastIndex((member) => member.key === HOOK_EVENT);
    text = removeChild(text, before, index);
  }
  const { root, hooks } = promptList(text);
  if (hooks !== undefined && hooks.members.length === 0)
    text = removeChild(
      text,
      root,
      root.members.findLastIndex((member) => member.key === 'hooks'),
    );
  return text;
}
