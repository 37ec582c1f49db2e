import { SwitchboardError } from '../core/errors.js';
import { firstLine, git, isAncestor, type RepositoryInfo } from './git.js';
import { prepareMerge, type MergeResult } from './merge.js';
import { REMOTE_NAME, refetch, remoteBranchCommit } from './remote.js';
import type { MergeMode } from './task.js';

/** How many times a merge whose leased push was refused (the base moved) is computed again. */
export const REMOTE_MERGE_ATTEMPTS = 8;

export interface RemoteMergeRequest {
  /** This machine's clone of the remote (`openRemoteClone`). */
  clone: RepositoryInfo;
  url: string;
  baseBranch: string;
  /** The run's branch (on the remote) and its commit. */
  branch: string;
  commit: string;
  mode: MergeMode;
  message: string;
  abortSignal?: AbortSignal;
  /** Test seam: runs after the merge is computed and before its push (another pusher moves the base here). */
  _beforePush?: () => Promise<void>;
}

/**
 * Merges a run's pushed commit into the remote's base branch: fetch, compute the merge onto the fetched
 * base in the clone's object store (as a local merge does), push it leased on the fetched base
 * (`--force-with-lease=refs/heads/<base>:<fetched sha>`). A refused lease means someone else moved the
 * base: fetch and try again, a bounded number of times. A commit the remote base already contains is
 * `already-merged`, so a merge retried after a crash does nothing twice.
 */
export async function mergeIntoRemote(request: RemoteMergeRequest): Promise<MergeResult> {
  if (request.mode === 'branch' || request.mode === 'pr') return { kind: 'branch-left' };
  const { clone, url, baseBranch, commit } = request;
  for (let attempt = 1; attempt <= REMOTE_MERGE_ATTEMPTS; attempt++) {
    request.abortSignal?.throwIfAborted();
    await refetch(clone, url, request.abortSignal);
    const base = await remoteBranchCommit(clone.root, baseBranch);
    if (base === undefined) {
      throw new SwitchboardError('UNKNOWN_BASE', `the remote ${url} has no branch ${baseBranch} any more`, {
        hint: `the change is kept on the remote's branch ${request.branch}; merge it by hand or recreate ${baseBranch}`,
      });
    }
    if (await isAncestor(clone.root, commit, base)) return { kind: 'already-merged', commit: base };
    const prepared = await prepareMerge({
      repo: clone.root,
      base,
      commit,
      mode: request.mode,
      message: request.message,
    });
    if (prepared.kind === 'conflict') return prepared;
    await request._beforePush?.();
    const pushed = await git(clone.root, [
      'push',
      '-q',
      `--force-with-lease=refs/heads/${baseBranch}:${base}`,
      REMOTE_NAME,
      `${prepared.target}:refs/heads/${baseBranch}`,
    ]);
    if (pushed.exitCode === 0) return { kind: prepared.kind, commit: prepared.target };
    if (!isRefusedLease(pushed.stderr)) {
      throw new SwitchboardError(
        'REMOTE_UNREACHABLE',
        `cannot push ${baseBranch} to ${url}: ${firstLine(pushed.stderr)}`,
        {
          hint: `the change is kept on the remote's branch ${request.branch}; resume the run to try the merge again`,
          details: { stderr: pushed.stderr },
        },
      );
    }
  }
  throw new SwitchboardError(
    'INTERNAL',
    `${baseBranch} on ${url} moved under each of ${REMOTE_MERGE_ATTEMPTS} merge attempts`,
    {
      hint: `the change is kept on the remote's branch ${request.branch}; resume the run to try the merge again`,
    },
  );
}

/** git's words for a push refused because the remote ref is not what the lease expected. */
function isRefusedLease(stderr: string): boolean {
  return /stale info|\[rejected\]|non-fast-forward|fetch first|failed to update ref|cannot lock ref/i.test(
    stderr,
  );
}
