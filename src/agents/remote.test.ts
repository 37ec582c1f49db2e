import { execFileSync } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { mergeIntoRemote } from './remote-merge.js';
import { openRemoteClone, pushBranch, remoteLocation } from './remote.js';

// Real git in temporary folders: a bare "remote", a clone cache, and a second clone that pushes to the
// remote's main while a merge is being computed.

const folders: string[] = [];
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

function folder(): string {
  const path = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-remote-')));
  folders.push(path);
  return path;
}

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();
}

/** A bare remote with one commit on main, and a working clone of it for pushing changes by hand. */
function remoteWithClone(): { remote: string; work: string; root: string } {
  const root = folder();
  const work = join(root, 'work');
  execFileSync('git', ['init', '-q', '-b', 'main', work]);
  git(work, 'config', 'user.email', 'test@example.com');
  git(work, 'config', 'user.name', 'Test');
  writeFileSync(join(work, 'README.md'), 'hello\n');
  git(work, 'add', '.');
  git(work, 'commit', '-q', '-m', 'initial');
  const remote = join(root, 'remote.git');
  execFileSync('git', ['clone', '-q', '--bare', work, remote]);
  git(work, 'remote', 'add', 'origin', remote);
  return { remote, work, root };
}

/** Commits `file` on a new branch of the clone cache (as a runner's worktree would), pushed to the remote. */
async function pushedRunCommit(remote: string, stateDir: string, file: string) {
  const clone = await openRemoteClone(stateDir, remote);
  const worktree = join(stateDir, file);
  git(clone.root, 'worktree', 'add', '-q', '-b', `agent/${file}`, worktree, 'origin/main');
  writeFileSync(join(worktree, file), `${file}\n`);
  git(worktree, 'add', '.');
  git(worktree, '-c', 'user.email=a@b', '-c', 'user.name=A', 'commit', '-q', '-m', `add ${file}`);
  const commit = git(worktree, 'rev-parse', 'HEAD');
  expect(await pushBranch(clone, remote, `agent/${file}`, commit)).toBe('pushed');
  expect(await pushBranch(clone, remote, `agent/${file}`, commit)).toBe('already-there');
  return { clone, commit };
}

describe('remoteLocation', () => {
  it('takes URLs and bare repositories for remotes, and a working tree for a local repository', async () => {
    const { remote, work } = remoteWithClone();
    expect(await remoteLocation('ssh://git@example.com/team/app.git')).toBe(
      'ssh://git@example.com/team/app.git',
    );
    expect(await remoteLocation('git@example.com:team/app.git')).toBe('git@example.com:team/app.git');
    expect(await remoteLocation(`file://${remote}`)).toBe(`file://${remote}`);
    expect(await remoteLocation(remote)).toBe(remote);
    expect(await remoteLocation(work)).toBeUndefined();
    expect(await remoteLocation(join(work, 'nowhere'))).toBeUndefined();
  });

  it('refuses a URL with a password, which would be recorded with the run', async () => {
    await expect(remoteLocation('https://me:hunter2@example.com/app.git')).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
  });
});

describe('mergeIntoRemote', () => {
  it('merges onto the fetched base; when the base moves before its push, the refused lease fetches and merges again', async () => {
    const { remote, work, root } = remoteWithClone();
    const { clone, commit } = await pushedRunCommit(remote, join(root, 'state'), 'a.txt');
    let moved = 0;
    const merged = await mergeIntoRemote({
      clone,
      url: remote,
      baseBranch: 'main',
      branch: 'agent/a.txt',
      commit,
      mode: 'no-ff',
      message: 'Merge a',
      _beforePush: async () => {
        if (moved++ > 0) return;
        writeFileSync(join(work, 'other.txt'), 'other\n');
        git(work, 'add', '.');
        git(work, 'commit', '-q', '-m', 'pushed by someone else');
        git(work, 'push', '-q', 'origin', 'main');
      },
    });
    expect(merged.kind).toBe('merged');
    expect(moved).toBe(2);
    // Nothing lost: the other push and the run's commit are both on main.
    expect(git(remote, 'log', '--format=%s', 'main').split('\n')).toEqual([
      'Merge a',
      'pushed by someone else',
      'add a.txt',
      'initial',
    ]);
    // Retried after a crash that happened after the push: already in the base, nothing merged twice.
    const again = await mergeIntoRemote({
      clone,
      url: remote,
      baseBranch: 'main',
      branch: 'agent/a.txt',
      commit,
      mode: 'no-ff',
      message: 'Merge a',
    });
    expect(again).toEqual({ kind: 'already-merged', commit: git(remote, 'rev-parse', 'main') });
  });

  it('leaves the base unmoved on a conflict', async () => {
    const { remote, work, root } = remoteWithClone();
    const { clone, commit } = await pushedRunCommit(remote, join(root, 'state'), 'README.md');
    writeFileSync(join(work, 'README.md'), 'changed on main\n');
    git(work, 'commit', '-q', '-am', 'edit README');
    git(work, 'push', '-q', 'origin', 'main');
    const before = git(remote, 'rev-parse', 'main');
    const merged = await mergeIntoRemote({
      clone,
      url: remote,
      baseBranch: 'main',
      branch: 'agent/README.md',
      commit,
      mode: 'no-ff',
      message: 'Merge',
    });
    expect(merged.kind).toBe('conflict');
    expect(git(remote, 'rev-parse', 'main')).toBe(before);
  });
});
