import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, type CliRun } from './helpers/run-cli.js';

// `switchboard hooks install` / `uninstall` as a user runs them: the built CLI editing real Claude
// Code settings files in temporary project folders and a temporary CLAUDE_CONFIG_DIR.

const skills = join(import.meta.dirname, 'fixtures/skills');
const directories: string[] = [];

afterAll(() => {
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

function project(settings?: string): { cwd: string; file: string } {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-hooks-')));
  directories.push(cwd);
  const file = join(cwd, '.claude/settings.json');
  if (settings !== undefined) {
    mkdirSync(join(cwd, '.claude'));
    writeFileSync(file, settings);
  }
  return { cwd, file };
}

function hooks(args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<CliRun> {
  return runCli(['hooks', ...args], { cwd, env });
}

interface Settings {
  hooks?: Record<
    string,
    { matcher?: string; hooks: { type: string; command: string; timeout?: number }[] }[]
  >;
  [key: string]: unknown;
}

const parse = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as Settings;

/** The Switchboard hooks in a settings file (commands running `hooks run`). */
function ours(settings: Settings) {
  return (settings.hooks?.['UserPromptSubmit'] ?? [])
    .flatMap((group) => group.hooks)
    .filter((hook) => hook.command.includes(' hooks run '));
}

/** A settings file a user wrote by hand: four-space indent, other hooks and other keys, an API key. */
const HAND_WRITTEN = `{
    "model": "opus",
    "permissions": { "allow": ["Bash(npm test)"], "deny": [] },
    "hooks": {
        "PreToolUse": [ { "matcher": "Bash", "hooks": [ { "type": "command", "command": "echo pre" } ] } ],
        "UserPromptSubmit": [
            {
                "hooks": [ { "type": "command", "command": "~/bin/prompt-guard \\"$CLAUDE_PROJECT_DIR\\"" } ]
            }
        ],
        "Stop": []
    },
    "env": { "ANTHROPIC_API_KEY": "sk-ant-api03-handwritten-key-0123456789abcdef", "DEBUG": "1" }
}
`;

describe('hooks install / uninstall', () => {
  it('adds one entry beside the foreign hooks, keeps every other key, and uninstall gives back the file byte for byte', async () => {
    const { cwd, file } = project(HAND_WRITTEN);
    // The key in the file is also in the environment: a redacting writer would blank it in the file.
    const env = { ...process.env, ANTHROPIC_API_KEY: 'sk-ant-api03-handwritten-key-0123456789abcdef' };
    const before = parse(file);

    const installed = await hooks(['install', '--skills', skills], cwd, env);
    expect(installed.status, installed.stderr).toBe(0);
    expect(installed.stdout).toContain(`added the Switchboard prompt hook to ${file}`);
    const after = parse(file);
    const [entry, ...more] = ours(after);
    expect(more).toEqual([]);
    // An absolute command that works from any folder: this Node, this installation's launcher.
    expect(entry?.command).toContain(`${process.execPath} `);
    expect(entry?.command).toContain(join(import.meta.dirname, '..', 'dist/cli/launch.js'));
    expect(entry?.command).toContain(`--skills ${skills}`);
    expect(entry?.command).toContain(`--state-dir ${join(cwd, '.switchboard')}`);
    expect(entry?.timeout).toBeGreaterThanOrEqual(1);
    // The user's hooks come first and unchanged; everything else is as it was.
    expect(after.hooks?.['UserPromptSubmit']?.[0]).toEqual(before.hooks?.['UserPromptSubmit']?.[0]);
    expect({ ...after, hooks: { ...after.hooks, UserPromptSubmit: [] } }).toEqual({
      ...before,
      hooks: { ...before.hooks, UserPromptSubmit: [] },
    });
    expect(readFileSync(file, 'utf8')).toContain('sk-ant-api03-handwritten-key-0123456789abcdef');
    // The text before the insertion is untouched too: the edit is an insertion, not a rewrite.
    const text = readFileSync(file, 'utf8');
    const cut = HAND_WRITTEN.indexOf('        ],\n        "Stop"');
    expect(text.startsWith(HAND_WRITTEN.slice(0, cut - 1))).toBe(true);
    expect(text.endsWith(HAND_WRITTEN.slice(cut))).toBe(true);

    const again = await hooks(['install', '--skills', skills], cwd, env);
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout).toContain('already in');
    expect(readFileSync(file, 'utf8')).toBe(text);

    const removed = await hooks(['uninstall'], cwd, env);
    expect(removed.status, removed.stderr).toBe(0);
    expect(removed.stdout).toContain(`removed the Switchboard prompt hook from ${file}`);
    expect(readFileSync(file, 'utf8')).toBe(HAND_WRITTEN);

    const twice = await hooks(['uninstall'], cwd, env);
    expect(twice.stdout).toContain('no Switchboard prompt hook');
    expect(readFileSync(file, 'utf8')).toBe(HAND_WRITTEN);
  });

  it.each([
    ['minified, no hooks', '{"model":"opus","env":{"A":"1"}}'],
    [
      'tabs and CRLF, hooks without UserPromptSubmit',
      '{\r\n\t"hooks": {\r\n\t\t"Stop": [\r\n\t\t\t{ "hooks": [] }\r\n\t\t]\r\n\t}\r\n}\r\n',
    ],
    [
      'two spaces, no final newline, a foreign prompt hook',
      '{\n  "hooks": {\n    "Notification": [],\n    "UserPromptSubmit": [{ "hooks": [{ "type": "command", "command": "date" }] }]\n  }\n}',
    ],
    // (`{}` and a final newline would read as the file an install creates, which uninstall deletes.)
    ['an empty object', '{}'],
    [
      'one line with spaces',
      '{ "hooks": { "UserPromptSubmit": [ { "hooks": [ { "type": "command", "command": "x" } ] } ] } }',
    ],
  ])('round trip keeps the file byte for byte: %s', async (_name, original) => {
    const { cwd, file } = project(original);
    const installed = await hooks(['install', '--skills', skills], cwd);
    expect(installed.status, installed.stderr).toBe(0);
    expect(ours(parse(file))).toHaveLength(1);
    if (original.includes('\r\n'))
      expect(readFileSync(file, 'utf8').replaceAll('\r\n', '')).not.toContain('\n');
    expect((await hooks(['uninstall'], cwd)).status).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(original);
  });

  it('creates the settings file when there is none, and uninstall removes it again, with the .claude/ it made', async () => {
    const { cwd, file } = project();
    expect((await hooks(['install', '--skills', skills], cwd)).status).toBe(0);
    expect(ours(parse(file))).toHaveLength(1);
    expect((await hooks(['uninstall'], cwd)).status).toBe(0);
    expect(existsSync(file)).toBe(false);
    expect(existsSync(join(cwd, '.claude'))).toBe(false);
  });

  it('uninstall keeps a .claude/ that holds anything else', async () => {
    const { cwd, file } = project();
    expect((await hooks(['install', '--skills', skills], cwd)).status).toBe(0);
    writeFileSync(join(cwd, '.claude/settings.local.json'), '{}\n');
    expect((await hooks(['uninstall'], cwd)).status).toBe(0);
    expect(existsSync(file)).toBe(false);
    expect(readFileSync(join(cwd, '.claude/settings.local.json'), 'utf8')).toBe('{}\n');
  });

  it('a second install with other settings updates the entry in place: still one', async () => {
    const { cwd, file } = project(HAND_WRITTEN);
    await hooks(['install', '--skills', skills], cwd);
    const updated = await hooks(['install', '--skills', skills, '--deadline', '800'], cwd);
    expect(updated.stdout).toContain('updated the Switchboard prompt hook');
    const entries = ours(parse(file));
    expect(entries).toHaveLength(1);
    expect(entries[0]?.command).toContain('--deadline 800');
    expect((await hooks(['uninstall'], cwd)).status).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(HAND_WRITTEN);
  });

  it('uninstall takes only its own hook out of a group the user added theirs to', async () => {
    const { cwd, file } = project();
    await hooks(['install', '--skills', skills], cwd);
    const settings = parse(file);
    settings.hooks?.['UserPromptSubmit']?.[0]?.hooks.push({ type: 'command', command: 'echo also-mine' });
    writeFileSync(file, JSON.stringify(settings, null, 2));
    expect((await hooks(['uninstall'], cwd)).status).toBe(0);
    expect(parse(file).hooks?.['UserPromptSubmit']).toEqual([
      { hooks: [{ type: 'command', command: 'echo also-mine' }] },
    ]);
  });

  it('user scope writes $CLAUDE_CONFIG_DIR/settings.json, through a symbolic link, keeping its permissions', async () => {
    const { cwd } = project();
    const configDir = join(cwd, 'claude-config');
    const dotfiles = join(cwd, 'dotfiles');
    mkdirSync(configDir);
    mkdirSync(dotfiles);
    const original = '{\n  "theme": "dark"\n}\n';
    writeFileSync(join(dotfiles, 'settings.json'), original);
    chmodSync(join(dotfiles, 'settings.json'), 0o600);
    symlinkSync(join(dotfiles, 'settings.json'), join(configDir, 'settings.json'));
    const env = { ...process.env, CLAUDE_CONFIG_DIR: configDir };

    const installed = await hooks(['install', '--scope', 'user', '--skills', skills], cwd, env);
    expect(installed.status, installed.stderr).toBe(0);
    expect(installed.stdout).toContain(join(configDir, 'settings.json'));
    expect(lstatSync(join(configDir, 'settings.json')).isSymbolicLink()).toBe(true);
    expect(ours(parse(join(dotfiles, 'settings.json')))).toHaveLength(1);
    expect(statSync(join(dotfiles, 'settings.json')).mode & 0o777).toBe(0o600);
    expect(existsSync(join(cwd, '.claude'))).toBe(false);

    expect((await hooks(['uninstall', '--scope', 'user'], cwd, env)).status).toBe(0);
    expect(readFileSync(join(dotfiles, 'settings.json'), 'utf8')).toBe(original);
    expect(lstatSync(join(configDir, 'settings.json')).isSymbolicLink()).toBe(true);
  });

  it.each([
    ['not JSON', '{"hooks": {'],
    ['JSON but not an object', '[]'],
    ['hooks that is not an object', '{"hooks": []}'],
    ['UserPromptSubmit that is not a list', '{"hooks": {"UserPromptSubmit": {}}}'],
  ])('a settings file that is %s: exit 59, one line, file untouched', async (_name, original) => {
    const { cwd, file } = project(original);
    for (const command of ['install', 'uninstall']) {
      const result = await hooks(
        command === 'install' ? ['install', '--skills', skills] : ['uninstall'],
        cwd,
      );
      expect(result.status, result.stderr).toBe(59);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toContain(file);
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(readFileSync(file, 'utf8')).toBe(original);
    }
  });

  it('refuses to install without skills or a server, and with a skills folder that does not exist', async () => {
    const { cwd, file } = project();
    const none = await hooks(['install'], cwd);
    expect(none.status).toBe(2);
    expect(none.stderr).toMatch(/no skills given \(pass --skills DIR/);
    const missing = await hooks(['install', '--skills', join(cwd, 'nope')], cwd);
    expect(missing.status).toBe(4);
    expect(existsSync(file)).toBe(false);
  });
});
