import { existsSync, mkdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { deniedPathsIn } from './file-access.js';
import {
  alwaysHidden,
  onPath,
  outermost,
  resolverFile,
  SANDBOX_VARIABLE,
  toolDirectories,
  within,
} from './sandbox.js';

/** A process to start: what the Agent SDK hands `spawnClaudeCodeProcess`. */
export interface JailedSpawn {
  command: string;
  args: string[];
  cwd?: string;
  env: Record<string, string | undefined>;
}

/** What the jail of one Claude Code process shows it besides the system (read-only). */
export interface ProcessJailOptions {
  /** The worktree or working folder: writable, its denied files masked (see `deniedPathsIn`). */
  cwd: string;
  /** Folders shown read-only although they lie in a hidden one (the repository's git folder, the key helper's). */
  readable?: readonly string[] | undefined;
  /** Folders shown writable (Claude Code's configuration folder). */
  writable?: readonly string[] | undefined;
  /** Folders hidden besides `HOME`, `/tmp` and `/run` (the repository's checkout, the state folder). */
  hidden?: readonly string[] | undefined;
  /** Leave Claude Code's login (`.credentials.json`) visible: no key forwarder stands in for it. */
  keepLogin?: boolean | undefined;
}

/** The jail's wrapper for one process, or undefined when it runs unjailed, and why. */
export interface ProcessJail {
  wrap: ((spawn: JailedSpawn) => JailedSpawn) | undefined;
  note: { enabled: boolean; reason?: string };
}

/**
 * Runs the whole Claude Code process, not only its Bash, in a bubblewrap mount namespace, so that no
 * tool of it can open what it must not, however a path is raced: a PreToolUse check of a path cannot
 * close a check-then-open race (a link flipped between the check and Claude Code's open), the kernel
 * can. Visible: the system read-only; the worktree writable with the deny list's files in it masked;
 * the folders in `readable` (git's, the key helper's, Claude Code's own binary and the tools on PATH)
 * read-only and those in `writable` writable; `HOME`, `/tmp`, `/run` and `hidden` empty and throwaway.
 * Its own process namespace (no other process's environment under `/proc`); the network is shared, since
 * Claude Code reaches the key forwarder on 127.0.0.1. Claude Code's own Bash sandbox nests inside.
 *
 * `SWITCHBOARD_AGENT_SANDBOX`: `off` never jails; `auto` jails on Linux when `bwrap` is on PATH and says
 * why not otherwise; `required` always starts bubblewrap, so a missing one fails the start.
 */
export function processJail(options: ProcessJailOptions): ProcessJail {
  const mode = process.env[SANDBOX_VARIABLE] ?? 'auto';
  if (mode === 'off') return { wrap: undefined, note: { enabled: false, reason: `${SANDBOX_VARIABLE}=off` } };
  if (mode !== 'required' && process.platform !== 'linux')
    return { wrap: undefined, note: { enabled: false, reason: `no bubblewrap on ${process.platform}` } };
  if (mode !== 'required' && !onPath('bwrap'))
    return { wrap: undefined, note: { enabled: false, reason: 'bwrap not found on PATH' } };
  return { wrap: (spawn) => jailed(spawn, options), note: { enabled: true } };
}

function jailed(spawn: JailedSpawn, options: ProcessJailOptions): JailedSpawn {
  const worktree = resolve(options.cwd);
  const isFolder = (path: string): boolean =>
    statSync(path, { throwIfNoEntry: false })?.isDirectory() === true;
  // Folders outside the worktree go first, as empty tmpfs; the worktree and the folders shown again are
  // mounted over them. What lies inside the worktree, and single files, are masked last.
  const extra = (options.hidden ?? []).map((path) => resolve(path)).filter((path) => existsSync(path));
  const hidden = outermost([
    ...alwaysHidden(),
    ...extra.filter((path) => isFolder(path) && !within(path, worktree)),
  ]).filter((path) => path !== '/' && existsSync(path));
  const inHidden = (path: string): boolean => hidden.some((folder) => within(path, folder));
  const configDir = resolve(spawn.env['CLAUDE_CONFIG_DIR'] ?? join(homedir(), '.claude'));
  const writable = [...(options.writable ?? []), configDir].map((path) => resolve(path));
  for (const folder of writable) mkdirSync(folder, { recursive: true, mode: 0o700 });
  // The binary, node and PATH's tools where they lie in a hidden folder; the resolver file under /run.
  const resolver = resolverFile();
  const readable = [
    dirname(resolve(spawn.command)),
    ...toolDirectories(),
    ...(options.readable ?? []),
    ...(resolver === undefined ? [] : [resolver]),
  ]
    .map((path) => resolve(path))
    .filter((path) => existsSync(path) && inHidden(path) && !hidden.includes(path));
  const login = join(configDir, '.credentials.json');
  const masked = [
    ...deniedPathsIn(worktree),
    ...extra.filter((path) => !isFolder(path) || within(path, worktree)),
    // Behind the key forwarder Claude Code needs no login of its own, and its tools must find none.
    ...(options.keepLogin === true || !existsSync(login) ? [] : [login]),
  ];
  const dotGit = join(worktree, '.git');
  const args = [
    '--die-with-parent',
    '--unshare-pid',
    ...['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc'],
    ...hidden.flatMap((path) => ['--tmpfs', path]),
    ...readable.flatMap((path) => ['--ro-bind', path, path]),
    ...['--bind', worktree, worktree],
    ...writable.flatMap((path) => ['--bind', path, path]),
    // The worktree's `.git` names the folder the runner's git reads its settings from (see `sandboxSettings`).
    ...(existsSync(dotGit) && !isFolder(dotGit) ? ['--ro-bind', dotGit, dotGit] : []),
    ...masked.flatMap((path) => (isFolder(path) ? ['--tmpfs', path] : ['--ro-bind', '/dev/null', path])),
    ...['--chdir', spawn.cwd ?? worktree, '--', spawn.command],
    ...spawn.args,
  ];
  return { ...spawn, command: 'bwrap', args };
}
