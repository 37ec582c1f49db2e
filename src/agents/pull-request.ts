import { SwitchboardError } from '../core/errors.js';
import { registerSecret } from '../core/secrets.js';
import type { GitHubClient, GitHubPullRequest } from '../github/client.js';
import { DEFAULT_GITHUB_API_URL } from '../github/client.js';
import {
  parseIssueReference,
  repositoryFromRemoteUrl,
  type GitHubRepository,
  type IssueReference,
} from '../github/issue-ref.js';
import { firstLine, git } from './git.js';
import type { AgentTask } from './task.js';

// Merge mode `pr`: the run's commit is pushed as its branch and a pull request is opened for it on
// GitHub; the issue the task came from is told how the run went. Every step can be done again after a
// crash: the push is leased and skipped when the remote has the commit, the pull request is looked up
// by its head branch before one is opened, and the comment by a marker naming the run.

/** The remote a local checkout's run pushes to. */
const PUSH_REMOTE = 'origin';

/** Where a run in mode `pr` pushes, and the GitHub repository its pull request goes to. */
export interface PullRequestTarget {
  /** The remote's URL (or path), for messages and for the token's scope. */
  url: string;
  repository: GitHubRepository;
  issue?: IssueReference;
}

/**
 * Checks before a run in mode `pr` is recorded that it can deliver: a remote to push to (a local
 * checkout's `origin`, or the run's remote), a GitHub repository for the pull request (the task's
 * issue's, else the one the remote URL names), and a token.
 *
 * @throws SwitchboardError `REMOTE_UNREACHABLE` (no origin), `TASK_INVALID` (no GitHub repository),
 * `GITHUB_AUTH` (no token)
 */
export async function pullRequestTarget(
  task: AgentTask,
  repositoryRoot: string,
  remote: string | undefined,
): Promise<PullRequestTarget> {
  const url = remote ?? (await originUrl(repositoryRoot));
  const issue = task.issue === undefined ? undefined : parseIssueReference(task.issue);
  const repository = issue ?? repositoryFromRemoteUrl(url);
  if (repository === undefined) {
    throw new SwitchboardError(
      'TASK_INVALID',
      `merge mode pr needs a GitHub repository, and ${url} does not name one`,
      {
        hint: 'give the task an `issue: OWNER/REPO#N` (or run it with --issue), or push to a GitHub remote',
      },
    );
  }
  const token = process.env['GITHUB_TOKEN'];
  if (token === undefined || token.trim() === '') {
    throw new SwitchboardError('GITHUB_AUTH', 'merge mode pr needs GITHUB_TOKEN to open the pull request', {
      hint: 'export GITHUB_TOKEN with a token that may push, open pull requests and comment (or put it in .env)',
    });
  }
  const target: PullRequestTarget = { url, repository: { owner: repository.owner, repo: repository.repo } };
  if (issue !== undefined) target.issue = issue;
  return target;
}

async function originUrl(repositoryRoot: string): Promise<string> {
  const result = await git(repositoryRoot, ['remote', 'get-url', PUSH_REMOTE]);
  if (result.exitCode !== 0) {
    throw new SwitchboardError(
      'REMOTE_UNREACHABLE',
      `${repositoryRoot} has no "${PUSH_REMOTE}" remote to push to`,
      {
        hint: `add one (git remote add ${PUSH_REMOTE} URL), pass --repo URL, or use another --merge mode`,
      },
    );
  }
  return result.stdout.trim();
}

/**
 * git's environment for talking to an https remote on the GitHub host with the token: an
 * `http.<origin>.extraHeader` given through `GIT_CONFIG_COUNT`, so the token is never in a URL, a
 * config file or an argument list. Only for the GitHub host (github.com, or `GITHUB_API_URL`'s host for
 * GitHub Enterprise): another host never receives the token.
 */
export function gitAuthEnvironment(
  url: string,
  token = process.env['GITHUB_TOKEN'],
  apiUrl = process.env['GITHUB_API_URL'] ?? DEFAULT_GITHUB_API_URL,
): Record<string, string> {
  if (token === undefined || token === '' || !/^https:\/\//i.test(url)) return {};
  let remoteHost: URL;
  let apiHost: string;
  try {
    remoteHost = new URL(url);
    apiHost = new URL(apiUrl).host.replace(/^api\./, '');
  } catch {
    return {};
  }
  if (remoteHost.host !== apiHost) return {};
  const credentials = Buffer.from(`x-access-token:${token}`).toString('base64');
  registerSecret(credentials);
  return {
    GIT_CONFIG_COUNT: '1',
    GIT_CONFIG_KEY_0: `http.${remoteHost.origin}/.extraheader`,
    GIT_CONFIG_VALUE_0: `AUTHORIZATION: basic ${credentials}`,
  };
}

/**
 * Pushes `commit` as `branch` of the checkout's `origin` (or a remote clone's), leased on what the
 * remote has now, so a branch another runner of the same run pushed is not overwritten unseen; a
 * branch already at `commit` is left alone.
 *
 * @throws SwitchboardError `REMOTE_UNREACHABLE` with git's reason
 */
export async function pushRunBranch({
  cwd,
  url,
  branch,
  commit,
}: {
  cwd: string;
  url: string;
  branch: string;
  commit: string;
}): Promise<'pushed' | 'already-there'> {
  const env = gitAuthEnvironment(url);
  const listed = await git(cwd, ['ls-remote', PUSH_REMOTE, `refs/heads/${branch}`], env);
  if (listed.exitCode !== 0) throw pushFailed(url, branch, listed.stderr);
  const known = listed.stdout.split('\t', 1)[0]?.trim() ?? '';
  if (known === commit) return 'already-there';
  const pushed = await git(
    cwd,
    [
      'push',
      '-q',
      `--force-with-lease=refs/heads/${branch}:${known}`,
      PUSH_REMOTE,
      `${commit}:refs/heads/${branch}`,
    ],
    env,
  );
  if (pushed.exitCode !== 0) throw pushFailed(url, branch, pushed.stderr);
  return 'pushed';
}

function pushFailed(url: string, branch: string, stderr: string): SwitchboardError {
  return new SwitchboardError('REMOTE_UNREACHABLE', `cannot push ${branch} to ${url}: ${firstLine(stderr)}`, {
    hint: 'check that this machine may push there (GITHUB_TOKEN for an https GitHub remote), then `switchboard agent resume` the run',
    details: { stderr },
  });
}

/** The pull request of `branch`: the one already open (or closed) for it, else a new one. */
export async function ensurePullRequest(
  github: GitHubClient,
  target: PullRequestTarget,
  request: { branch: string; baseBranch: string; title: string; body: string },
): Promise<{ pullRequest: GitHubPullRequest; opened: boolean }> {
  const found = await github.findPullRequest(target.repository, request.branch);
  if (found !== undefined) return { pullRequest: found, opened: false };
  const pullRequest = await github.createPullRequest(target.repository, {
    title: request.title,
    body: request.body,
    head: request.branch,
    base: request.baseBranch,
  });
  return { pullRequest, opened: true };
}

/**
 * The hidden line that marks a run's comment on an outcome, so a resumed run finds it instead of writing
 * another. The outcome is part of it: a workflow step that failed and succeeded when resumed says both.
 */
export function runMarker(runId: string, outcome: 'succeeded' | 'failed'): string {
  return `<!-- switchboard-run: ${runId} ${outcome} -->`;
}

/** Comments `body` on the issue unless the run's comment on this outcome is there already. */
export async function commentOnce(
  github: GitHubClient,
  issue: IssueReference,
  marker: string,
  body: string,
): Promise<{ url: string; posted: boolean }> {
  const found = await github.findComment(issue, marker);
  if (found !== undefined) return { url: found.url, posted: false };
  const comment = await github.createComment(issue, `${body}\n\n${marker}`);
  return { url: comment.url, posted: true };
}

/** The body of the pull request a run opens. */
export function pullRequestBody(task: AgentTask, runId: string, target: PullRequestTarget): string {
  const parts: string[] = [];
  if (target.issue !== undefined) {
    const sameRepository =
      target.issue.owner === target.repository.owner && target.issue.repo === target.repository.repo;
    parts.push(
      `Closes ${sameRepository ? '' : `${target.issue.owner}/${target.issue.repo}`}#${target.issue.number}.`,
    );
  }
  if (task.acceptance.length > 0)
    parts.push(['Acceptance:', ...task.acceptance.map((item) => `- [ ] ${item}`)].join('\n'));
  parts.push(`Made by switchboard run \`${runId}\` (task \`${task.id}\`); the task's verify passed.`);
  return parts.join('\n\n');
}

/** What a run tells its issue: the outcome, the cost and, when there is one, the pull request. */
export function outcomeComment({
  runId,
  attempts,
  costUsd,
  pullRequest,
  failure,
}: {
  runId: string;
  /** Unknown for a workflow step. */
  attempts?: number;
  costUsd: number;
  pullRequest?: GitHubPullRequest;
  failure?: { code: string; message: string };
}): string {
  const spent = `${attempts === undefined ? '' : `${attempts} attempt${attempts === 1 ? '' : 's'}, `}$${costUsd.toFixed(4)}`;
  if (pullRequest !== undefined) {
    return `**Switchboard**: the change passed its checks; pull request #${pullRequest.number}: ${pullRequest.url}\n\nOutcome: succeeded (run \`${runId}\`, ${spent}).`;
  }
  return `**Switchboard** could not complete this issue: ${failure?.code ?? 'failed'}: ${failure?.message ?? ''}\n\nOutcome: failed (run \`${runId}\`, ${spent}); no pull request was opened.`;
}
