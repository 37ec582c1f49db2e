import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRepository, git } from '../../test/helpers/git-repo.js';
import { listWorktrees } from './git.js';

// Real git in a temporary repository.

const temporary: string[] = [];
afterAll(() => {
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

describe('listWorktrees', () => {
  it('lists the worktrees while another process is still writing one’s admin files, instead of failing', async () => {
    const root = mkdtempSync(join(tmpdir(), 'switchboard-git-list-'));
    temporary.push(root);
    const repo = createRepository(join(root, 'repo'));
    git(repo, 'worktree', 'add', '-q', '-b', 'side', join(root, 'side'));
    // What `git worktree list` meets mid-`worktree add/remove` of another process: an empty commondir.
    const commondir = join(repo, '.git', 'worktrees', 'side', 'commondir');
    const written = readFileSync(commondir, 'utf8');
    writeFileSync(commondir, '');
    setTimeout(() => writeFileSync(commondir, written), 150);
    const entries = await listWorktrees(repo);
    expect(entries.map((entry) => entry.branch)).toEqual(['main', 'side']);
  });

  it('still fails, with git’s message, when the admin files stay broken', async () => {
    const root = mkdtempSync(join(tmpdir(), 'switchboard-git-list-'));
    temporary.push(root);
    const repo = createRepository(join(root, 'repo'));
    git(repo, 'worktree', 'add', '-q', '-b', 'side', join(root, 'side'));
    writeFileSync(join(repo, '.git', 'worktrees', 'side', 'commondir'), '');
    await expect(listWorktrees(repo)).rejects.toThrow(/git worktree list failed: fatal: failed to read/);
  });
});
