import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { confinedCommand, sandboxSettings } from './sandbox.js';

// The folders Claude Code's sandbox lets an agent's Bash read. The worktree is the agent's to write,
// its `.git` file included: a folder named there must not become readable on the next attempt.

const root = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-sandbox-settings-')));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const saved = process.env['SWITCHBOARD_AGENT_SANDBOX'];
beforeEach(() => {
  // `required` gives the settings whether or not this machine has bwrap (they are not started here).
  process.env['SWITCHBOARD_AGENT_SANDBOX'] = 'required';
});
afterEach(() => {
  if (saved === undefined) delete process.env['SWITCHBOARD_AGENT_SANDBOX'];
  else process.env['SWITCHBOARD_AGENT_SANDBOX'] = saved;
});

/** A worktree whose `.git` file an agent rewrote to name `target` as the repository's git folder. */
function rewrittenWorktree(name: string, target: string): string {
  const worktree = join(root, name);
  mkdirSync(join(worktree, 'fake'), { recursive: true });
  writeFileSync(join(worktree, '.git'), `gitdir: ${join(worktree, 'fake')}\n`);
  writeFileSync(join(worktree, 'fake', 'commondir'), `${target}\n`);
  return worktree;
}

describe('sandboxSettings', () => {
  it('lets Bash read the git folder the runner found, not one a rewritten .git file names', () => {
    const secrets = join(root, 'home-like');
    const realGit = join(root, 'repo', '.git');
    const worktree = rewrittenWorktree('given', secrets);
    const { settings } = sandboxSettings({
      cwd: worktree,
      hiddenDirectories: [secrets],
      gitDirectory: realGit,
    });
    expect(settings?.filesystem.allowRead).toEqual([worktree, realGit]);
    expect(settings?.filesystem.denyRead).toContain(secrets);
  });

  it('without the runner’s git folder, reads the one the .git file names (what passing it prevents)', () => {
    const secrets = join(root, 'home-like-2');
    const worktree = rewrittenWorktree('derived', secrets);
    const { settings } = sandboxSettings({ cwd: worktree, hiddenDirectories: [secrets] });
    expect(settings?.filesystem.allowRead).toContain(secrets);
  });
});

describe('confinedCommand', () => {
  const platform = Object.getOwnPropertyDescriptor(process, 'platform');
  afterEach(() => {
    if (platform !== undefined) Object.defineProperty(process, 'platform', platform);
  });

  it('under required, never runs a command unconfined on a platform without bubblewrap', () => {
    Object.defineProperty(process, 'platform', { ...platform, value: 'darwin' });
    const confined = confinedCommand({ cwd: root, argv: ['/bin/sh', '-c', 'true'] });
    expect(confined.argv[0]).toBe('bwrap');
    expect(confined.argv.slice(-3)).toEqual(['/bin/sh', '-c', 'true']);
    expect(confined.note).toEqual({ enabled: true });
    // `auto` there still runs it as it is, saying why.
    process.env['SWITCHBOARD_AGENT_SANDBOX'] = 'auto';
    expect(confinedCommand({ cwd: root, argv: ['true'] })).toEqual({
      argv: ['true'],
      note: { enabled: false, reason: 'no bubblewrap on darwin' },
    });
  });
});
