import { SwitchboardError } from '../core/errors.js';
import {
  branchCommit,
  commitIdentity,
  git,
  gitOk,
  isAncestor,
  listWorktrees,
  trackedChanges,
  type RepositoryInfo,
} from './git.js';
import { withRepoLock } from './repo-lock.js';
import type { MergeMode } from './task.js';

/** What happened to the base branch. */
export type MergeResult =
  | { kind: 'merged' | 'fast-forward' | 'already-merged'; commit: string; checkout?: string }
  | { kind: 'branch-left' }
  | { kind: 'conflict'; output: string }
  | { kind: 'dirty'; checkout: string; output: string };

export interface MergeRequest {
  /** Any worktree of the repository. */
  repo: string;
  /** The repository's shared `.git` folder (holds the lock). */
  commonDir: string;
  baseBranch: string;
  /** The run's branch and the commit to merge. */
  branch: string;
  commit: string;
  mode: MergeMode;
  message: string;
  abortSignal?: AbortSignal;
}

/**
 * Serialises merges per target branch inside one process (several runs of `run-all`); the repository
 * lock taken inside does the same across processes.
 */
export class MergeQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, action: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const next = previous.then(action, action);
    const tail = next.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return next;
  }
}

/**
 * Merges a run's commit into the base branch without ever leaving the user's checkout half-merged.
 *
 * The merge is computed in the object store (`git merge-tree --write-tree`, then `commit-tree`), not in
 * a working tree. Then, under the repository lock:
 * - if no worktree has the base branch checked out, the branch moves by `update-ref` with the old value
 *   checked (compare and swap);
 * - if one has, it must be clean (tracked files), and it is moved by `git merge --ff-only` to the
 *   prepared commit, which updates its files and index consistently, or refuses and changes nothing.
 * On a conflict nothing is written and the git output is returned.
 */
export async function mergeIntoBase(request: MergeRequest): Promise<MergeResult> {
  if (request.mode === 'branch' || request.mode === 'pr') return { kind: 'branch-left' };
  const lockOptions = request.abortSignal === undefined ? {} : { abortSignal: request.abortSignal };
  return withRepoLock(request.commonDir, () => mergeLocked(request), lockOptions);
}

/**
 * Refuses to start (or resume) a run whose merge could not land: the base branch is checked out in a
 * worktree with uncommitted changes to tracked files. Checked before the agent runs, so no paid-for
 * work waits on a checkout the user still has to clean. A merge mode of `branch` never touches the
 * checkout, so it is never refused. A checkout dirtied during the run is caught again at the merge.
 */
export async function assertBaseCheckoutClean({
  repository,
  baseBranch,
  mode,
  runId,
}: {
  repository: RepositoryInfo;
  baseBranch: string;
  mode: MergeMode;
  /** Set on resume, for the hint. */
  runId?: string;
}): Promise<void> {
  if (mode === 'branch' || mode === 'pr') return;
  const checkout = await baseCheckout(repository.root, baseBranch);
  if (checkout === undefined) return;
  // Read under the repository lock: another run's merge updating this checkout (`merge --ff-only`)
  // shows its files as changed until it finishes, which is not the user's uncommitted work.
  const changes = await withRepoLock(repository.commonDir, () => trackedChanges(checkout));
  if (changes === '') return;
  const files = changes
    .split('\n')
    .slice(0, 3)
    // `trackedChanges` trims the output, so the first line's two-letter code may have lost a space.
    .map((line) => line.trim().replace(/^\S+\s+/, ''))
    .join(', ');
  const then = runId === undefined ? 'run the task again' : `run \`switchboard agent resume ${runId}\` again`;
  throw new SwitchboardError(
    'DIRTY_CHECKOUT',
    `${checkout} has ${baseBranch} checked out with uncommitted changes (${files}), so the change could not be merged into it`,
    {
      hint: `commit or stash them and ${then}, or use --merge branch to leave the change on its own branch`,
      details: { checkout, changes },
    },
  );
}

/** The worktree that has `baseBranch` checked out, if any. */
async function baseCheckout(repo: string, baseBranch: string): Promise<string | undefined> {
  const entry = (await listWorktrees(repo)).find(
    (worktree) => worktree.branch === baseBranch && !worktree.prunable,
  );
  return entry?.path;
}

async function mergeLocked({
  repo,
  baseBranch,
  branch,
  commit,
  mode,
  message,
}: MergeRequest): Promise<MergeResult> {
  const base = await branchCommit(repo, baseBranch);
  if (base === undefined) {
    throw new SwitchboardError('UNKNOWN_BASE', `the base branch ${baseBranch} no longer exists`, {
      hint: `the change is kept on branch ${branch}; merge it by hand or recreate ${baseBranch}`,
    });
  }
  if (await isAncestor(repo, commit, base)) return { kind: 'already-merged', commit: base };
  const prepared = await prepareMerge({ repo, base, commit, mode, message });
  if (prepared.kind === 'conflict') return prepared;
  const { kind, target } = prepared;

  const checkout = await baseCheckout(repo, baseBranch);
  if (checkout === undefined) {
    const moved = await git(repo, [
      'update-ref',
      '-m',
      `switchboard agent: merge ${branch}`,
      `refs/heads/${baseBranch}`,
      target,
      base,
    ]);
    if (moved.exitCode !== 0) {
      throw new SwitchboardError('INTERNAL', `cannot move ${baseBranch}: ${moved.stderr.trim()}`, {
        hint: `the change is kept on branch ${branch}; resume the run to try the merge again`,
      });
    }
    return { kind, commit: target };
  }

  const changes = await trackedChanges(checkout);
  if (changes !== '') return { kind: 'dirty', checkout, output: changes };
  const merged = await git(checkout, ['merge', '--ff-only', '--no-edit', target]);
  if (merged.exitCode !== 0) {
    // For example an untracked file in the checkout would be overwritten; git changed nothing.
    return { kind: 'dirty', checkout, output: `${merged.stdout}\n${merged.stderr}`.trim() };
  }
  return { kind, commit: target, checkout };
}

/** A merge computed in the object store: the commit the base would move to, or the conflict. */
export type PreparedMerge =
  { kind: 'merged' | 'fast-forward'; target: string } | { kind: 'conflict'; output: string };

/**
 * Computes the merge of `commit` onto `base` without a working tree (`git merge-tree --write-tree`, then
 * `commit-tree`), or the fast-forward in mode `ff` when `base` is an ancestor. Writes objects, no ref.
 */
export async function prepareMerge({
  repo,
  base,
  commit,
  mode,
  message,
}: {
  repo: string;
  base: string;
  commit: string;
  mode: MergeMode;
  message: string;
}): Promise<PreparedMerge> {
  if (mode === 'ff' && (await isAncestor(repo, base, commit)))
    return { kind: 'fast-forward', target: commit };
  const tree = await git(repo, ['merge-tree', '--write-tree', '--name-only', base, commit]);
  if (tree.exitCode === 1) return { kind: 'conflict', output: tree.stdout.trim() };
  if (tree.exitCode !== 0) {
    throw new SwitchboardError('INTERNAL', `git merge-tree failed: ${tree.stderr.trim()}`, {
      hint: 'git 2.38 or newer is needed for merges; check `git --version`',
      details: { stderr: tree.stderr },
    });
  }
  const treeId = tree.stdout.trim().split('\n', 1)[0] ?? '';
  const target = (
    await gitOk(
      repo,
      ['commit-tree', treeId, '-p', base, '-p', commit, '-m', message],
      'git commit-tree',
      await commitIdentity(repo),
    )
  ).trim();
  return { kind: 'merged', target };
}
