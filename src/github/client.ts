import { SwitchboardError } from '../core/errors.js';
import { registerSecret } from '../core/secrets.js';
import type { GitHubRepository, IssueReference } from './issue-ref.js';
import { formatIssueReference } from './issue-ref.js';

/** The public API's address; `GITHUB_API_URL` names another (GitHub Enterprise: `https://HOST/api/v3`). */
export const DEFAULT_GITHUB_API_URL = 'https://api.github.com';

/** An issue as a task is built from it. */
export interface GitHubIssue {
  number: number;
  title: string;
  body: string;
  labels: string[];
  url: string;
}

export interface GitHubPullRequest {
  number: number;
  url: string;
  state: string;
}

export interface GitHubComment {
  id: number;
  url: string;
}

/** The few GitHub calls Switchboard makes, each failure a `SwitchboardError` with a GitHub code. */
export interface GitHubClient {
  /** The API's address, for messages. */
  readonly baseUrl: string;
  getIssue(issue: IssueReference): Promise<GitHubIssue>;
  /** The pull request (open or closed) whose head is `branch` of the same repository, if any. */
  findPullRequest(repository: GitHubRepository, branch: string): Promise<GitHubPullRequest | undefined>;
  createPullRequest(
    repository: GitHubRepository,
    request: { title: string; body: string; head: string; base: string },
  ): Promise<GitHubPullRequest>;
  /** The first comment on the issue whose body contains `marker`. */
  findComment(issue: IssueReference, marker: string): Promise<GitHubComment | undefined>;
  createComment(issue: IssueReference, body: string): Promise<GitHubComment>;
}

export interface GitHubClientOptions {
  /** @default process.env.GITHUB_TOKEN */
  token?: string;
  /** @default process.env.GITHUB_API_URL, else https://api.github.com */
  baseUrl?: string;
}

/**
 * A GitHub client over Octokit (imported now, not when Switchboard starts). The token comes from the
 * environment only, and is registered as a secret so no message carries it.
 *
 * @throws SwitchboardError `GITHUB_AUTH` when there is no token
 */
export async function openGitHub({
  token = process.env['GITHUB_TOKEN'],
  baseUrl = process.env['GITHUB_API_URL'] ?? DEFAULT_GITHUB_API_URL,
}: GitHubClientOptions = {}): Promise<GitHubClient> {
  if (token === undefined || token.trim() === '') {
    throw new SwitchboardError('GITHUB_AUTH', 'GITHUB_TOKEN is not set, so GitHub cannot be reached', {
      hint: 'export GITHUB_TOKEN with a token that may read issues and write pull requests and comments (or put it in .env)',
    });
  }
  registerSecret(token);
  const api = baseUrl.replace(/\/+$/, '');
  const { Octokit } = await import('@octokit/rest');
  const silent = (): void => {};
  const octokit = new Octokit({
    auth: token,
    baseUrl: api,
    userAgent: 'switchboard',
    log: { debug: silent, info: silent, warn: silent, error: silent },
  });
  const call = async <T>(what: string, request: () => Promise<T>): Promise<T> => {
    try {
      return await request();
    } catch (error) {
      throw gitHubError(error, what, api);
    }
  };
  return {
    baseUrl: api,
    async getIssue(issue) {
      const { data } = await call(`issue ${formatIssueReference(issue)}`, () =>
        octokit.rest.issues.get({ owner: issue.owner, repo: issue.repo, issue_number: issue.number }),
      );
      return {
        number: data.number,
        title: data.title,
        body: data.body ?? '',
        labels: data.labels
          .map((label) => (typeof label === 'string' ? label : (label.name ?? '')))
          .filter((name) => name !== ''),
        url: data.html_url,
      };
    },
    async findPullRequest({ owner, repo }, branch) {
      const { data } = await call(`pull requests of ${owner}/${repo}`, () =>
        octokit.rest.pulls.list({ owner, repo, head: `${owner}:${branch}`, state: 'all', per_page: 100 }),
      );
      // GitHub filters by `head`; a server that ignores the filter must not hand back another branch's PR.
      const found = data.find((pull) => pull.head.ref === branch);
      return found === undefined
        ? undefined
        : { number: found.number, url: found.html_url, state: found.state };
    },
    async createPullRequest({ owner, repo }, request) {
      const { data } = await call(`a pull request on ${owner}/${repo}`, () =>
        octokit.rest.pulls.create({ owner, repo, ...request }),
      );
      return { number: data.number, url: data.html_url, state: data.state };
    },
    async findComment(issue, marker) {
      const comments = await call(`comments of ${formatIssueReference(issue)}`, () =>
        octokit.paginate(octokit.rest.issues.listComments, {
          owner: issue.owner,
          repo: issue.repo,
          issue_number: issue.number,
          per_page: 100,
        }),
      );
      const found = comments.find((comment) => comment.body?.includes(marker) === true);
      return found === undefined ? undefined : { id: found.id, url: found.html_url };
    },
    async createComment(issue, body) {
      const { data } = await call(`a comment on ${formatIssueReference(issue)}`, () =>
        octokit.rest.issues.createComment({
          owner: issue.owner,
          repo: issue.repo,
          issue_number: issue.number,
          body,
        }),
      );
      return { id: data.id, url: data.html_url };
    },
  };
}

/** Octokit's `RequestError` (status, message) as Switchboard's error: auth, not found, or unreachable. */
function gitHubError(error: unknown, what: string, api: string): SwitchboardError {
  const status = (error as { status?: unknown }).status;
  const reason = firstLineOf(error instanceof Error ? error.message : String(error));
  if (status === 401 || status === 403) {
    return new SwitchboardError(
      'GITHUB_AUTH',
      `GitHub refused access to ${what} (HTTP ${status}: ${reason})`,
      {
        hint: 'check that GITHUB_TOKEN is valid and may read issues and write pull requests and comments of the repository',
        cause: error,
        details: { status },
      },
    );
  }
  if (status === 404) {
    return new SwitchboardError('GITHUB_NOT_FOUND', `GitHub has no ${what} (HTTP 404)`, {
      hint: 'check the owner, repository and number; a private repository looks missing to a token that may not read it',
      cause: error,
      details: { status },
    });
  }
  return new SwitchboardError(
    'REMOTE_UNREACHABLE',
    `GitHub at ${api} failed on ${what}: ${typeof status === 'number' ? `HTTP ${status}: ` : ''}${reason}`,
    {
      hint: 'check GITHUB_API_URL and the network, then retry (a run resumes with `switchboard agent resume`)',
      cause: error,
      details: { status },
    },
  );
}

function firstLineOf(text: string): string {
  return text.trim().split('\n', 1)[0] ?? '';
}
