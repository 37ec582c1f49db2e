import type { GitHubClient, GitHubPullRequest } from '../github/client.js';
import {
  commentOnce,
  ensurePullRequest,
  outcomeComment,
  pullRequestBody,
  pullRequestTarget,
  pushRunBranch,
  runMarker,
} from './pull-request.js';
import type { AgentRunRecord } from './run-store.js';

/** Records one event of the run (the runner's `event`). */
type RecordEvent = (kind: string, message: string, data?: unknown) => Promise<void>;

/** The event a run records once its pull request exists; `agent show` and the result read it back. */
export const PULL_REQUEST_EVENT = 'pull-request';

export interface DeliverPullRequestOptions {
  run: AgentRunRecord;
  commit: string;
  /** The repository to push from: the user's checkout, or this machine's clone of the run's remote. */
  repositoryRoot: string;
  /** The run's remote, when it has one; otherwise the checkout's `origin`. */
  remote: string | undefined;
  event: RecordEvent;
  /** Test seam. @default a client from GITHUB_TOKEN / GITHUB_API_URL */
  github?: GitHubClient;
}

/**
 * The merge phase of mode `pr`: push the run's branch, find or open its pull request, tell the issue.
 * Each step is safe to repeat after a crash (see `pull-request.ts`), so a resumed run ends with one
 * pushed branch, one pull request and one comment.
 */
export async function deliverPullRequest(options: DeliverPullRequestOptions): Promise<GitHubPullRequest> {
  const { run, commit, event } = options;
  const target = await pullRequestTarget(run.task, options.repositoryRoot, options.remote);
  const pushed = await pushRunBranch({
    cwd: options.repositoryRoot,
    url: target.url,
    branch: run.branch,
    commit,
  });
  if (pushed === 'pushed')
    await event('push', `pushed ${commit.slice(0, 12)} to ${target.url} as ${run.branch}`, { commit });
  const github = options.github ?? (await (await import('../github/client.js')).openGitHub());
  const { pullRequest, opened } = await ensurePullRequest(github, target, {
    branch: run.branch,
    baseBranch: run.baseBranch,
    title: run.task.title,
    body: pullRequestBody(run.task, run.id, target),
  });
  await event(
    PULL_REQUEST_EVENT,
    `${opened ? 'opened' : 'found'} pull request #${pullRequest.number}: ${pullRequest.url}`,
    pullRequest,
  );
  if (target.issue !== undefined) {
    const body = outcomeComment({ runId: run.id, attempts: run.attempt, costUsd: run.costUsd, pullRequest });
    const comment = await commentOnce(github, target.issue, runMarker(run.id, 'succeeded'), body);
    if (comment.posted) await event('issue-comment', `commented on ${run.task.issue ?? ''}: ${comment.url}`);
  }
  return pullRequest;
}

/**
 * Tells the issue a run in mode `pr` failed (verify failed, attempts or budget spent), once. A failure
 * to reach GitHub is recorded as an event and does not hide the run's own failure.
 */
export async function reportFailureToIssue({
  run,
  code,
  message,
  event,
  github,
}: {
  run: AgentRunRecord;
  code: string;
  message: string;
  event: RecordEvent;
  github?: GitHubClient;
}): Promise<void> {
  if (run.task.issue === undefined || run.options.merge !== 'pr' || code.startsWith('GITHUB_')) return;
  try {
    const { parseIssueReference } = await import('../github/issue-ref.js');
    const client = github ?? (await (await import('../github/client.js')).openGitHub());
    const body = outcomeComment({
      runId: run.id,
      attempts: run.attempt,
      costUsd: run.costUsd,
      failure: { code, message },
    });
    const comment = await commentOnce(
      client,
      parseIssueReference(run.task.issue),
      runMarker(run.id, 'failed'),
      body,
    );
    if (comment.posted) await event('issue-comment', `commented on ${run.task.issue}: ${comment.url}`);
  } catch (error) {
    await event('issue-comment', `could not comment on ${run.task.issue}: ${(error as Error).message}`);
  }
}

/** The pull request a run recorded, read back from its events. */
export function recordedPullRequest(
  events: readonly { kind: string; data?: unknown }[],
): GitHubPullRequest | undefined {
  const found = events.findLast((entry) => entry.kind === PULL_REQUEST_EVENT);
  return found?.data as GitHubPullRequest | undefined;
}
