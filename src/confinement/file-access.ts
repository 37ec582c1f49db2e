import { existsSync, readdirSync } from 'node:fs';
import { secretFolderList } from '../core/secrets.js';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';

// The one decision of which files inside a folder no tool may read or write, whoever reads: the API
// providers' file tools, Claude Code's Read/Glob/Grep/Write/Edit (its PreToolUse policy and its own
// `permissions.deny` rules), the masks of the Bash sandbox and of the process jail, serve and MCP when
// they load a file a caller named. Two lists of one rule drift: a Claude Code step once read the nested
// `.env` files the API tools refused. Names are compared in any case, at any depth.

/** One kind of file that holds credentials next to code, and the names that make it one. */
export interface DeniedEntry {
  /** What the user is told: `.env files`, `SSH private keys`. */
  readonly kind: string;
  /** Whether a path's names (from the folder being guarded down) are, or lie inside, such a file. */
  readonly matches: (names: readonly string[]) => boolean;
  /** Claude Code `permissions.deny` patterns (gitignore-style, `**` for any depth) for the same files. */
  readonly patterns: readonly string[];
}

/** Whether some name in `names` matches `pattern` (a folder: everything below it is denied too). */
const anyName =
  (pattern: RegExp) =>
  (names: readonly string[]): boolean =>
    names.some((name) => pattern.test(name));

/** Whether `folder` is followed by `file` somewhere in `names` (`.docker/config.json`). */
const pair =
  (folder: string, file: string) =>
  (names: readonly string[]): boolean =>
    names.some(
      (name, index) =>
        name.toLowerCase() === folder && (names[index + 1] ?? '').toLowerCase() === file.toLowerCase(),
    );

/**
 * The deny list. Private keys are matched by their usual names (`id_rsa`, `id_ed25519`, …, not every
 * `id_*`, which would hide source files such as `id_map.go`); public halves (`.pub`) are not secrets.
 */
export const DENIED_ENTRIES: readonly DeniedEntry[] = [
  {
    kind: '.env files',
    matches: anyName(/^\.env([._-].*|rc)?$/i),
    patterns: ['.env', '.env.*', '.env_*', '.env-*', '.envrc'],
  },
  {
    kind: "git's own folders (a config may hold a remote token)",
    matches: anyName(/^\.git$/i),
    patterns: ['.git'],
  },
  {
    kind: 'package registry credentials',
    matches: anyName(/^\.(npmrc|pypirc)$/i),
    patterns: ['.npmrc', '.pypirc'],
  },
  { kind: 'netrc logins', matches: anyName(/^[._]netrc$/i), patterns: ['.netrc', '_netrc'] },
  {
    kind: "Docker's registry logins",
    matches: pair('.docker', 'config.json'),
    patterns: ['.docker/config.json'],
  },
  { kind: 'AWS credentials', matches: anyName(/^\.aws$/i), patterns: ['.aws'] },
  {
    kind: 'SSH private keys',
    matches: anyName(/^id_(rsa|dsa|ecdsa|ed25519|xmss)(_sk)?$/i),
    patterns: ['id_rsa', 'id_dsa', 'id_ecdsa', 'id_ed25519', 'id_xmss', 'id_ecdsa_sk', 'id_ed25519_sk'],
  },
  { kind: 'PEM keys and certificates', matches: anyName(/\.pem$/i), patterns: ['*.pem'] },
  {
    kind: "Switchboard's state folders (ledgers, transcripts)",
    matches: anyName(/^\.switchboard$/i),
    patterns: ['.switchboard'],
  },
];

/** A path's names below `root` (or all of them when it is not inside), `.` and empty names left out. */
function namesOf(path: string, root: string | undefined): string[] {
  const absolute = resolve(root ?? sep, path);
  const inside = root === undefined ? undefined : relative(resolve(root), absolute);
  const below =
    inside !== undefined && inside !== '..' && !inside.startsWith(`..${sep}`) && !isAbsolute(inside)
      ? inside
      : absolute;
  return below.split(sep).filter((name) => name !== '' && name !== '.');
}

/** Options of `fileRefusal`. */
export interface FileRefusalOptions {
  /**
   * The folder being guarded (a worktree, a step's working directory): only the names below it are
   * checked, so a worktree that itself lies under `.switchboard/` is not refused whole.
   * @default none: every name of the path is checked
   */
  root?: string | undefined;
  /** Further folders no tool may reach (a state folder named by `SWITCHBOARD_STATE_DIR`), absolute. */
  hidden?: readonly string[] | undefined;
  /** How the answer names the path (as the model or caller wrote it). @default path */
  named?: string | undefined;
}

/**
 * Why no tool may read or write `path`, or undefined when the deny list lets it through. The answer
 * names the path and the kind of file, never anything of its content. This checks names only: the
 * caller resolves links first (or checks what an opened descriptor leads to) and keeps to its root.
 */
export function fileRefusal(
  path: string,
  { root, hidden = [], named = path }: FileRefusalOptions = {},
): string | undefined {
  const names = namesOf(path, root);
  const entry = DENIED_ENTRIES.find((candidate) => candidate.matches(names));
  if (entry !== undefined) return `${named}: ${entry.kind} hold secrets; no tool reads or writes them`;
  const absolute = resolve(root ?? sep, path);
  for (const folder of hidden) {
    if (isWithin(absolute, resolve(folder)))
      return `${named}: Switchboard's state folder (its ledger and transcripts); no tool reads or writes it`;
  }
  return undefined;
}

/** `.env` → `.[eE][nN][vV]`: Claude Code's rules in any case, whatever its own matching does. */
function anyCase(pattern: string): string {
  return pattern.replace(/[a-z]/gi, (letter) => `[${letter.toLowerCase()}${letter.toUpperCase()}]`);
}

/**
 * The deny list as Claude Code `permissions.deny` rules: each entry at any depth and everything below
 * it (`Read(**\/.[eE][nN][vV])`, `Read(**\/.[eE][nN][vV]/**)`), and each hidden folder by its absolute
 * path. Claude Code applies Read rules to Grep and Glob too (measured against 2.1.330: a search of the
 * whole folder then leaves these files out), which a check of the path a tool names cannot do; Edit
 * rules cover its writing tools.
 */
export function claudeCodeDenyRules(cwd: string, hidden: readonly string[] = []): string[] {
  const patterns = DENIED_ENTRIES.flatMap((entry) => entry.patterns).map(anyCase);
  const anywhere = patterns.flatMap((pattern) => [`**/${pattern}`, `**/${pattern}/**`]);
  // A hidden folder that holds the worktree (a state folder with its runs' worktrees) stays hidden by
  // the sandbox's masks; as a rule it would refuse the worktree itself.
  const folders = hidden.map((folder) => resolve(folder)).filter((folder) => !isWithin(resolve(cwd), folder));
  const absolute = folders.flatMap((folder) => [`/${folder}`, `/${folder}/**`]);
  return ['Read', 'Edit'].flatMap((tool) => [...anywhere, ...absolute].map((rule) => `${tool}(${rule})`));
}

function isWithin(path: string, folder: string): boolean {
  const inside = relative(folder, path);
  return inside === '' || (inside !== '..' && !inside.startsWith(`..${sep}`) && !isAbsolute(inside));
}

/** How many entries `deniedPathsIn` looks at before it stops (a checkout with a huge tree). */
const WALK_LIMIT = 50_000;
/** Folders not walked: installed packages' files are theirs, and there are many. */
const NOT_WALKED = new Set(['node_modules']);

/**
 * The paths under `root` the deny list names, as they exist now (outermost only): what a mount
 * namespace can mask, since bubblewrap hides only paths that exist. Files created later are the
 * agent's own. `.git` is left to the caller (git in the agent's Bash needs it).
 */
export function deniedPathsIn(root: string, { skipGit = true }: { skipGit?: boolean } = {}): string[] {
  const found: string[] = [];
  let seen = 0;
  const walk = (folder: string): void => {
    let entries;
    try {
      entries = readdirSync(folder, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (++seen > WALK_LIMIT) return;
      const path = join(folder, entry.name);
      if (/^\.git$/i.test(entry.name) && skipGit) continue;
      if (fileRefusal(path, { root }) !== undefined) {
        found.push(path);
        continue;
      }
      if (entry.isDirectory() && !NOT_WALKED.has(entry.name)) walk(path);
    }
  };
  walk(resolve(root));
  return found;
}

/**
 * The secrets inside a working folder that is not a worktree, as absolute paths that exist now (what
 * the Bash sandbox can mask, and the tool policy hides besides the deny list): every path the one deny
 * list names in it (`deniedPathsIn`; git's folder stays, its Bash needs it), the `.env` files of every
 * folder Switchboard loaded a `.env` from, and Switchboard's state folder (`.switchboard` in it, and
 * `SWITCHBOARD_STATE_DIR` when set).
 */
export function secretPaths(cwd: string): string[] {
  const paths = new Set<string>(deniedPathsIn(cwd));
  for (const folder of secretFolderList()) {
    let names: string[];
    try {
      names = readdirSync(folder);
    } catch {
      continue;
    }
    for (const name of names) if (fileRefusal(name) !== undefined) paths.add(join(folder, name));
  }
  for (const state of [join(cwd, '.switchboard'), process.env['SWITCHBOARD_STATE_DIR']]) {
    if (state !== undefined && state !== '' && existsSync(resolve(cwd, state)))
      paths.add(resolve(cwd, state));
  }
  return [...paths];
}
