import { SwitchboardError } from '../core/errors.js';

/** A repository on GitHub (or GitHub Enterprise): `owner/name`. */
export interface GitHubRepository {
  owner: string;
  repo: string;
}

/** One issue: `OWNER/REPO#N`. */
export interface IssueReference extends GitHubRepository {
  number: number;
}

const NAME = '[A-Za-z0-9](?:[A-Za-z0-9._-]{0,99})';
const ISSUE_PATTERN = new RegExp(`^(${NAME})/(${NAME})#([1-9][0-9]{0,9})$`);

/**
 * Reads `OWNER/REPO#N` (as GitHub writes cross-repository references).
 *
 * @throws SwitchboardError `INVALID_INPUT` naming the expected shape
 */
export function parseIssueReference(text: string): IssueReference {
  const match = ISSUE_PATTERN.exec(text.trim());
  if (match === null) {
    throw new SwitchboardError('INVALID_INPUT', `"${text}" is not an issue reference`, {
      hint: 'write the issue as OWNER/REPO#NUMBER, e.g. octo-org/website#42',
    });
  }
  return { owner: match[1] as string, repo: match[2] as string, number: Number(match[3]) };
}

export function formatIssueReference({ owner, repo, number }: IssueReference): string {
  return `${owner}/${repo}#${number}`;
}

/**
 * The GitHub repository a git remote URL names: `https://host/OWNER/REPO(.git)`, `ssh://git@host/OWNER/REPO`
 * or `git@host:OWNER/REPO(.git)`. Undefined for anything else (a local path, a bare repository).
 */
export function repositoryFromRemoteUrl(url: string): GitHubRepository | undefined {
  const match =
    /^(?:https?|ssh|git):\/\/[^/]+\/([^/\s]+)\/([^/\s]+?)(?:\.git)?\/?$/i.exec(url) ??
    /^[^\s/:@]+@[^\s/:]+:([^/\s]+)\/([^/\s]+?)(?:\.git)?\/?$/.exec(url);
  if (match === null) return undefined;
  return { owner: match[1] as string, repo: match[2] as string };
}
