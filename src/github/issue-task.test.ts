import { describe, expect, it } from 'vitest';
import { parseIssueReference, repositoryFromRemoteUrl } from './issue-ref.js';
import { checklistItems } from './issue-task.js';

describe('issues', () => {
  it('reads OWNER/REPO#N and refuses anything else', () => {
    expect(parseIssueReference('acme/widgets.js#42')).toEqual({
      owner: 'acme',
      repo: 'widgets.js',
      number: 42,
    });
    for (const bad of ['widgets#1', 'acme/widgets', 'acme/widgets#0', 'acme/widgets#x'])
      expect(() => parseIssueReference(bad)).toThrow(/OWNER\/REPO#NUMBER|not an issue reference/);
  });

  it('takes checklist items, ticked or not, outside code blocks', () => {
    const body = '- [ ] one\n* [x] two\n1. [ ] three\n- plain\n```\n- [ ] example\n```\n  - [X] nested';
    expect(checklistItems(body)).toEqual(['one', 'two', 'three', 'nested']);
  });

  it('finds the GitHub repository in a remote URL', () => {
    expect(repositoryFromRemoteUrl('https://github.com/acme/widgets.git')).toEqual({
      owner: 'acme',
      repo: 'widgets',
    });
    expect(repositoryFromRemoteUrl('git@github.com:acme/widgets.git')).toEqual({
      owner: 'acme',
      repo: 'widgets',
    });
    expect(repositoryFromRemoteUrl('/srv/git/widgets.git')).toBeUndefined();
  });
});
