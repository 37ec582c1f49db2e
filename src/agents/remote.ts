import { createHash } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { SwitchboardError } from '../core/errors.js';
import { firstLine, git, gitOk, type RepositoryInfo } from './git.js';
import { realOrResolved } from './paths.js';
import { withRepoLock } from './repo-lock.js';

// A task's `repo` may name a remote: a URL or the path of a bare repository. Each machine then keeps
// its own clone of it under its state folder, makes the run's worktree there, and pushes: the remote is
// what all machines share, the clone is a cache any machine may lose.

/** The name the clone gives the remote. */
export const REMOTE_NAME = 'origin';

/** `scheme://…` git understands, and scp-like `user@host:path`. */
const URL_PATTERN = /^(?:file|ssh|git|https?|ftps?):\/\//i;
const SCP_PATTERN = /^[^\s/:@]+@[^\s/:]+:/;

/**
 * The remote a task's `repo` names, or undefined for a directory with a working tree (today's local
 * runs). A URL is kept as written; the path of a bare repository becomes absolute, so every machine
 * that shares the path reads the same remote.
 */
export async function remoteLocation(repo: string): Promise<string | undefined> {
  if (URL_PATTERN.test(repo)) return withoutPassword(repo);
  if (SCP_PATTERN.test(repo)) return repo;
  const path = isAbsolute(repo) ? repo : resolve(repo);
  if (!existsSync(path)) return undefined;
  const bare = await git(path, ['rev-parse', '--is-bare-repository']).catch(() => undefined);
  return bare?.exitCode === 0 && bare.stdout.trim() === 'true' ? realOrResolved(path) : undefined;
}

/** A URL is recorded in the ledger and printed: a password in it would be a secret kept in the open. */
function withoutPassword(url: string): string {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  if (parsed.password === '') return url;
  throw new SwitchboardError(
    'INVALID_INPUT',
    'the remote URL holds a password, which would be recorded with the run',
    {
      hint: 'drop it from the URL and let git find the credentials (a credential helper, an SSH key)',
    },
  );
}

/** The remote's branch names and tips, and the branch its HEAD names, read without cloning. */
export interface RemoteHeads {
  head?: string;
  branches: Map<string, string>;
}

/**
 * Lists the remote's branches (`git ls-remote`): checks it can be reached before anything is recorded.
 *
 * @throws SwitchboardError `REMOTE_UNREACHABLE` with git's reason
 */
export async function remoteHeads(url: string): Promise<RemoteHeads> {
  const listed = await git(process.cwd(), ['ls-remote', '--symref', url, 'HEAD', 'refs/heads/*']);
  if (listed.exitCode !== 0) throw unreachable(url, listed.stderr);
  const heads: RemoteHeads = { branches: new Map() };
  for (const line of listed.stdout.split('\n')) {
    const symbolic = /^ref: refs\/heads\/(\S+)\tHEAD$/.exec(line);
    if (symbolic !== null) {
      heads.head = symbolic[1] as string;
      continue;
    }
    const [sha, ref] = line.split('\t');
    if (sha !== undefined && ref?.startsWith('refs/heads/') === true)
      heads.branches.set(ref.slice('refs/heads/'.length), sha);
  }
  return heads;
}

function unreachable(url: string, stderr: string): SwitchboardError {
  return new SwitchboardError('REMOTE_UNREACHABLE', `cannot read the remote ${url}: ${firstLine(stderr)}`, {
    hint: 'check the URL or path and that this machine may read it (git ls-remote URL), then retry',
    details: { stderr },
  });
}

/** Where this machine keeps its clone of `url`: one folder per remote under the state folder. */
export function cloneDirectory(stateDir: string, url: string): string {
  const hash = createHash('sha256').update(url).digest('hex').slice(0, 16);
  return join(stateDir, 'remotes', hash);
}

/**
 * This machine's clone of the remote, fetched now: a bare repository whose own branches are the runs'
 * branches and whose `refs/remotes/origin/*` mirror the remote's. Made on first use. The fetch runs under
 * the clone's repository lock, as worktree creation and merges do, so no process reads a half-updated ref.
 *
 * @throws SwitchboardError `REMOTE_UNREACHABLE` when the remote cannot be fetched
 */
export async function openRemoteClone(
  stateDir: string,
  url: string,
  abortSignal?: AbortSignal,
): Promise<RepositoryInfo> {
  const directory = cloneDirectory(resolve(stateDir), url);
  mkdirSync(directory, { recursive: true });
  const root = realOrResolved(directory);
  await withRepoLock(
    root,
    async () => {
      if (!existsSync(join(root, 'HEAD'))) {
        await gitOk(root, ['init', '-q', '--bare'], 'git init');
        await gitOk(root, ['remote', 'add', REMOTE_NAME, url], 'git remote add');
      }
      await fetchRemote(root, url);
    },
    abortSignal === undefined ? {} : { abortSignal },
  );
  return { root, commonDir: root };
}

/** Brings the clone's `refs/remotes/origin/*` up to the remote (the caller holds the lock). */
async function fetchRemote(clone: string, url: string): Promise<void> {
  const fetched = await git(clone, [
    'fetch',
    '-q',
    '--prune',
    REMOTE_NAME,
    `+refs/heads/*:refs/remotes/${REMOTE_NAME}/*`,
  ]);
  if (fetched.exitCode !== 0) throw unreachable(url, fetched.stderr);
}

/** Fetches again under the clone's lock (before a merge, after a refused push). */
export async function refetch(clone: RepositoryInfo, url: string, abortSignal?: AbortSignal): Promise<void> {
  await withRepoLock(
    clone.commonDir,
    () => fetchRemote(clone.root, url),
    abortSignal === undefined ? {} : { abortSignal },
  );
}

/** The remote's tip of `branch` as last fetched into the clone; undefined when it has no such branch. */
export async function remoteBranchCommit(clone: string, branch: string): Promise<string | undefined> {
  const result = await git(clone, [
    'rev-parse',
    '--verify',
    '--quiet',
    `refs/remotes/${REMOTE_NAME}/${branch}^{commit}`,
  ]);
  return result.exitCode === 0 ? result.stdout.trim() : undefined;
}

/** Whether the clone holds `commit` (made here, or fetched). */
export async function hasCommit(clone: string, commit: string): Promise<boolean> {
  return (await git(clone, ['cat-file', '-e', `${commit}^{commit}`])).exitCode === 0;
}

/**
 * Pushes `commit` as the remote's `branch`, the run's effect point. The push is leased on the branch's
 * tip as last fetched (absent: it must not exist), so a branch another runner of the same run pushed
 * meanwhile is not overwritten unseen; a push of what the remote already has is skipped.
 *
 * @throws SwitchboardError `REMOTE_UNREACHABLE` when git refuses the push
 */
export async function pushBranch(
  clone: RepositoryInfo,
  url: string,
  branch: string,
  commit: string,
): Promise<'pushed' | 'already-there'> {
  const known = await remoteBranchCommit(clone.root, branch);
  if (known === commit) return 'already-there';
  const pushed = await git(clone.root, [
    'push',
    '-q',
    `--force-with-lease=refs/heads/${branch}:${known ?? ''}`,
    REMOTE_NAME,
    `${commit}:refs/heads/${branch}`,
  ]);
  if (pushed.exitCode !== 0) {
    throw new SwitchboardError(
      'REMOTE_UNREACHABLE',
      `cannot push ${branch} to ${url}: ${firstLine(pushed.stderr)}`,
      {
        hint: 'check that this machine may push to the remote; the run keeps its commit and resumes from the push',
        details: { stderr: pushed.stderr },
      },
    );
  }
  // The push moved the clone's `refs/remotes/origin/<branch>` too (the remote's fetch refspec).
  return 'pushed';
}
