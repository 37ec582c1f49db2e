import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { SwitchboardError } from '../core/errors.js';
import { realOrResolved } from './paths.js';

/** Output of one git command. */
export interface GitResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** The worktrees the runner made, by path, and the git folder each was given (see `guardWorktree`). */
const guarded = new Map<string, string>();

/**
 * From now on, every `git()` in `worktree` uses the git folder the repository registered for it, never
 * the one its `.git` file names: that file lies in the worktree, where the agent and the verify command
 * write, and a `.git` pointing at a folder of theirs would run their code (core.fsmonitor, hooks) in the
 * runner, unsandboxed, with its environment. The folder is found from the repository's own registry.
 * @throws SwitchboardError `INTERNAL` when the repository has no such worktree.
 */
export function guardWorktree(commonDir: string, worktree: string): void {
  const dotGit = join(realOrResolved(worktree), '.git');
  const admin = join(commonDir, 'worktrees');
  const gitDir = (existsSync(admin) ? readdirSync(admin) : [])
    .map((name) => join(admin, name))
    .find((folder) => {
      try {
        return realOrResolved(readFileSync(join(folder, 'gitdir'), 'utf8').trim()) === dotGit;
      } catch {
        return false;
      }
    });
  if (gitDir === undefined)
    throw new SwitchboardError('INTERNAL', `the repository has no worktree registered at ${worktree}`);
  guarded.set(resolve(worktree), gitDir);
}

/**
 * The options that keep the worktree's own files out of git's choice of code to run: the registered git
 * folder and work tree, no file-system monitor, no hooks (`--no-verify` skips only some). A `.git` that
 * no longer names that folder fails the command: the worktree was tampered with.
 */
function guardOptions(cwd: string): string[] {
  const gitDir = guarded.get(resolve(cwd));
  if (gitDir === undefined) return [];
  let named: string | undefined;
  try {
    const match = /^gitdir:\s*(.+)$/m.exec(readFileSync(join(cwd, '.git'), 'utf8'));
    named = match === null ? undefined : realOrResolved(resolve(cwd, (match[1] ?? '').trim()));
  } catch {
    named = undefined;
  }
  if (named !== realOrResolved(gitDir)) {
    throw new SwitchboardError(
      'AGENT_FAILED',
      `the worktree's .git (${join(cwd, '.git')}) no longer names its git folder ${gitDir}: a command in the worktree replaced it`,
      {
        hint: 'nothing more was run in it; inspect the worktree, then throw it away with `switchboard agent clean --abandon <run id>`',
      },
    );
  }
  const options = ['core.fsmonitor=false', 'core.hooksPath=/dev/null'].flatMap((option) => ['-c', option]);
  return [`--git-dir=${gitDir}`, `--work-tree=${resolve(cwd)}`, ...options];
}

/**
 * Runs git with a fixed environment: no pager, no prompts, messages in English so that output kept
 * in the ledger reads the same everywhere. In a worktree the runner made, see `guardWorktree`.
 */
export async function git(
  cwd: string,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<GitResult> {
  const { execa } = await import('execa');
  const result = await execa('git', [...guardOptions(cwd), ...args], {
    cwd,
    reject: false,
    stripFinalNewline: true,
    env: { GIT_TERMINAL_PROMPT: '0', GIT_PAGER: 'cat', LC_ALL: 'C', ...env },
  });
  if (result.failed && result.exitCode === undefined) {
    throw new SwitchboardError('INTERNAL', `git could not be started: ${result.shortMessage}`, {
      hint: 'install git and make sure it is on PATH',
      cause: result,
    });
  }
  return { exitCode: result.exitCode ?? 1, stdout: String(result.stdout), stderr: String(result.stderr) };
}

/** Runs git and returns its standard output, or throws with git's own message. */
export async function gitOk(
  cwd: string,
  args: readonly string[],
  what: string,
  env: Record<string, string> = {},
): Promise<string> {
  const result = await git(cwd, args, env);
  if (result.exitCode !== 0) {
    throw new SwitchboardError('INTERNAL', `${what} failed: ${firstLine(result.stderr || result.stdout)}`, {
      hint: 'see the git message; the run was left as it was so it can be inspected or resumed',
      details: { args, stderr: result.stderr, stdout: result.stdout },
    });
  }
  return result.stdout;
}

export function firstLine(text: string): string {
  return text.trim().split('\n', 1)[0] ?? '';
}

/** What the runner needs to know about a repository. */
export interface RepositoryInfo {
  /** Absolute path of the main worktree (where the user works). */
  root: string;
  /** Absolute path of the shared `.git` folder (holds the lock and the worktree registry). */
  commonDir: string;
}

/** @throws SwitchboardError `NOT_A_GIT_REPO` when `directory` is not inside a git repository. */
export async function repositoryInfo(directory: string): Promise<RepositoryInfo> {
  const absolute = resolve(directory);
  let result: GitResult;
  try {
    result = await git(absolute, ['rev-parse', '--path-format=absolute', '--git-common-dir']);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      result = { exitCode: 128, stdout: '', stderr: '' };
    else throw error;
  }
  if (result.exitCode !== 0) {
    throw new SwitchboardError('NOT_A_GIT_REPO', `${absolute} is not a git repository`, {
      hint: 'pass --repo with the path of a git repository, or run `git init` there first',
    });
  }
  const commonDir = realpathSync(result.stdout.trim());
  const bare = (await git(absolute, ['rev-parse', '--is-bare-repository'])).stdout.trim() === 'true';
  if (bare) {
    throw new SwitchboardError('NOT_A_GIT_REPO', `${absolute} is a bare repository`, {
      hint: 'pass --repo with a repository that has a working tree',
    });
  }
  // The main worktree is the first entry of `git worktree list`, whichever worktree we were given.
  const worktrees = await listWorktrees(absolute);
  const root = worktrees[0]?.path ?? absolute;
  return { root: realpathSync(root), commonDir };
}

/** The branch checked out in `directory`, or undefined on a detached HEAD. */
export async function currentBranch(directory: string): Promise<string | undefined> {
  const result = await git(directory, ['symbolic-ref', '--quiet', '--short', 'HEAD']);
  return result.exitCode === 0 ? result.stdout.trim() : undefined;
}

/** The commit a branch points to; `undefined` when there is no such local branch. */
export async function branchCommit(directory: string, branch: string): Promise<string | undefined> {
  const result = await git(directory, ['rev-parse', '--verify', '--quiet', `refs/heads/${branch}^{commit}`]);
  return result.exitCode === 0 ? result.stdout.trim() : undefined;
}

export async function isAncestor(directory: string, ancestor: string, descendant: string): Promise<boolean> {
  return (await git(directory, ['merge-base', '--is-ancestor', ancestor, descendant])).exitCode === 0;
}

/** One entry of `git worktree list --porcelain`. */
export interface WorktreeEntry {
  path: string;
  head?: string;
  /** Short branch name, when one is checked out. */
  branch?: string;
  prunable: boolean;
}

/** git's complaint about a worktree's admin folder that another process is creating or removing. */
const WORKTREE_IN_FLUX = /failed to read \S*worktrees\//;

/**
 * The repository's worktrees. Another runner may be adding or removing one meanwhile (under the
 * repository lock, which readers do not take); git then fails on that worktree's half-written admin
 * files, so the listing is tried again a few times before it counts as an error.
 */
export async function listWorktrees(directory: string): Promise<WorktreeEntry[]> {
  let output: string | undefined;
  for (let tries = 1; output === undefined; tries++) {
    const result = await git(directory, ['worktree', 'list', '--porcelain']);
    if (result.exitCode === 0) output = result.stdout;
    else if (tries < 10 && WORKTREE_IN_FLUX.test(result.stderr))
      await new Promise((r) => setTimeout(r, 50 * tries));
    else output = await gitOk(directory, ['worktree', 'list', '--porcelain'], 'git worktree list');
  }
  const entries: WorktreeEntry[] = [];
  let current: WorktreeEntry | undefined;
  for (const line of output.split('\n')) {
    if (line.startsWith('worktree ')) {
      current = { path: line.slice('worktree '.length), prunable: false };
      entries.push(current);
    } else if (current !== undefined && line.startsWith('HEAD ')) {
      current.head = line.slice('HEAD '.length);
    } else if (current !== undefined && line.startsWith('branch ')) {
      current.branch = line.slice('branch '.length).replace(/^refs\/heads\//, '');
    } else if (current !== undefined && line.startsWith('prunable')) {
      current.prunable = true;
    }
  }
  return entries;
}

/** Tracked changes (staged or not) in a checkout; untracked files do not count. */
export async function trackedChanges(directory: string): Promise<string> {
  return (await gitOk(directory, ['status', '--porcelain', '--untracked-files=no'], 'git status')).trim();
}

/** Resolves `path` against `base` unless it is absolute. */
export function absolutePath(base: string, path: string): string {
  return isAbsolute(path) ? path : resolve(base, path);
}

/**
 * Environment giving commits an author when the repository has no identity configured (a fresh CI
 * machine); empty when it has one, so the user's own identity is used.
 */
export async function commitIdentity(directory: string): Promise<Record<string, string>> {
  const email = await git(directory, ['config', '--get', 'user.email']);
  const name = await git(directory, ['config', '--get', 'user.name']);
  if (email.exitCode === 0 && name.exitCode === 0) return {};
  return {
    GIT_AUTHOR_NAME: 'Switchboard agent',
    GIT_AUTHOR_EMAIL: 'switchboard-agent@localhost',
    GIT_COMMITTER_NAME: 'Switchboard agent',
    GIT_COMMITTER_EMAIL: 'switchboard-agent@localhost',
  };
}

/**
 * Keeps Switchboard's state folder out of the user's `git status` and `git add -A` when it lies inside
 * the repository (the default `.switchboard`): its worktrees would otherwise be picked up as embedded
 * repositories and its ledger as a new file. Adds one line to the repository's own `info/exclude`
 * (local, never committed) unless a line already covers it or git already ignores the folder.
 */
export async function excludeStateFolder(repository: RepositoryInfo, stateDir: string): Promise<void> {
  const relativePath = relative(repository.root, realOrResolved(stateDir));
  if (relativePath === '' || relativePath.startsWith('..') || isAbsolute(relativePath)) return;
  const pattern = `/${relativePath.split(sep).join('/')}/`;
  if ((await git(repository.root, ['check-ignore', '-q', '--', relativePath])).exitCode === 0) return;
  const file = join(repository.commonDir, 'info', 'exclude');
  const current = existsSync(file) ? readFileSync(file, 'utf8') : '';
  if (current.split('\n').includes(pattern)) return;
  mkdirSync(dirname(file), { recursive: true });
  appendFileSync(
    file,
    `${current === '' || current.endsWith('\n') ? '' : '\n'}# switchboard state (agent worktrees, ledger)\n${pattern}\n`,
  );
}
