import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { startSimulator } from '../src/sim/server.js';
import { claudeProcessIds, waitForNoNewClaudeProcesses } from './helpers/claude.js';
import { createRepository, git } from './helpers/git-repo.js';
import { runCli } from './helpers/run-cli.js';

// Agent runs whose task names a *remote* repository (a bare repository, as a team's shared server would
// hold): each machine clones it into its state folder, pushes the run's branch and merges into the
// remote's base branch with a leased push. Real git, the real Claude Code binary against `switchboard sim`.

const folders: string[] = [];
const claudeBefore = claudeProcessIds();

afterAll(async () => {
  expect(await waitForNoNewClaudeProcesses(claudeBefore)).toEqual([]);
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

function workspace(): string {
  const folder = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-git-remote-')));
  folders.push(folder);
  return folder;
}

/** A bare "remote" with one commit on main, made from a scratch repository. */
function bareRemote(root: string): string {
  const seed = createRepository(join(root, 'seed'));
  const remote = join(root, 'remote.git');
  execFileSync('git', ['clone', '-q', '--bare', seed, remote]);
  return remote;
}

it('a plain `agent run` with a bare remote (no workers) clones it, pushes the run branch and merges into main', async () => {
  const sim = await startSimulator({
    maxLifetimeMs: 120_000,
    scenario: {
      rules: [
        ...['a', 'b'].map((name) => ({
          match: { text: `Task remote-${name}:`, turn: 1 },
          reply: { tool: { name: 'Write', input: { file_path: `${name}.txt`, content: `${name}\n` } } },
        })),
      ],
      fallback: { text: 'done' },
    },
  });
  try {
    const root = workspace();
    const remote = bareRemote(root);
    const cwd = join(root, 'machine');
    mkdirSync(join(cwd, 'claude'), { recursive: true });
    const env = {
      ...process.env,
      ANTHROPIC_API_KEY: 'sk-ant-git-remote-test',
      CLAUDE_CONFIG_DIR: join(cwd, 'claude'),
      SWITCHBOARD_STATE_DIR: join(cwd, '.switchboard'),
    };
    const task = join(root, 'task.json');
    writeFileSync(task, JSON.stringify({ id: 'remote-a', title: 'Add a', verify: 'test -f a.txt' }));
    const result = await runCli(
      ['agent', 'run', '--task', task, '--repo', remote, '--base-url', sim.url, '--json'],
      { cwd, env },
    );
    expect(result.status, result.stderr).toBe(0);
    const run = JSON.parse(result.stdout) as {
      id: string;
      status: string;
      mergedCommit: string;
      worktree: string;
    };
    expect(run.status).toBe('succeeded');
    // The remote's main holds the change once, merged; the run's branch is on the remote too.
    expect(git(remote, 'rev-parse', 'main')).toBe(run.mergedCommit);
    expect(git(remote, 'log', '--format=%s', 'main').split('\n')).toEqual([
      `Merge agent/${run.id}: Add a`,
      'feat(remote-a): Add a',
      'initial',
    ]);
    expect(git(remote, 'show', 'main:a.txt')).toBe('a');
    expect(git(remote, 'branch', '--list', `agent/${run.id}`)).toContain(`agent/${run.id}`);
    // The worktree was made in this machine's clone cache, under its state folder.
    expect(run.worktree.startsWith(join(cwd, '.switchboard'))).toBe(true);

    // A second run on the same machine reuses the clone and merges onto the new tip.
    writeFileSync(task, JSON.stringify({ id: 'remote-b', title: 'Add b', verify: 'test -f b.txt' }));
    const second = await runCli(
      ['agent', 'run', '--task', task, '--repo', `file://${remote}`, '--base-url', sim.url, '--json'],
      { cwd, env },
    );
    expect(second.status, second.stderr).toBe(0);
    const subjects = git(remote, 'log', '--format=%s', 'main').split('\n');
    expect(subjects.filter((subject) => subject === 'feat(remote-a): Add a')).toHaveLength(1);
    expect(subjects.filter((subject) => subject === 'feat(remote-b): Add b')).toHaveLength(1);
  } finally {
    await sim.close();
  }
}, 120_000);
