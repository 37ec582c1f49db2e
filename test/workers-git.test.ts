import { execFileSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type SimLogEntry } from '../src/sim/server.js';
import { claudeProcessIds, waitForNoNewClaudeProcesses } from './helpers/claude.js';
import { createRepository, git } from './helpers/git-repo.js';
import { createTestDatabase, POSTGRES_SKIP, type TestDatabase } from './helpers/postgres.js';
import { runCli } from './helpers/run-cli.js';
import { waitFor } from './helpers/wait-for.js';
import {
  enqueueAgentTasks,
  killWorkers,
  startWorker,
  waitForJobs,
  workerMachine,
} from './helpers/worker-process.js';

// Agent runs whose task names a *remote* repository (a bare repository, as a team's shared server would
// hold): each machine clones it into its state folder, pushes the run's branch and merges into the
// remote's base branch with a leased push. Real git, the real Claude Code binary against `switchboard sim`.

const folders: string[] = [];
const children = new Set<ChildProcess>();
const claudeBefore = claudeProcessIds();

afterAll(async () => {
  killWorkers(children);
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

    // `agent clean` removes the merged runs' worktrees and branches from this machine's clone.
    const cleaned = await runCli(['agent', 'clean', '--json'], { cwd, env });
    expect(cleaned.status, cleaned.stderr).toBe(0);
    const report = JSON.parse(cleaned.stdout) as { removed: { reason: string }[]; kept: unknown[] };
    expect(report.removed.map((entry) => entry.reason)).toEqual(['merged', 'merged']);
    expect(existsSync(run.worktree)).toBe(false);
  } finally {
    await sim.close();
  }
}, 120_000);

it('a workflow git step with a bare remote as `repo` pushes its branch and merges into the remote main', async () => {
  const sim = await startSimulator({
    maxLifetimeMs: 120_000,
    scenario: {
      rules: [
        {
          match: { turn: 1 },
          reply: { tool: { name: 'Write', input: { file_path: 'wf.txt', content: 'wf\n' } } },
        },
      ],
      fallback: { text: 'done' },
    },
  });
  try {
    const root = workspace();
    const remote = bareRemote(root);
    const cwd = join(root, 'machine');
    mkdirSync(join(cwd, 'claude'), { recursive: true });
    writeFileSync(
      join(cwd, 'flow.yaml'),
      [
        'workflow:',
        '  name: remote-git',
        '  entry_point: implement',
        'agents:',
        '  - name: implement',
        '    type: agent',
        '    provider: claude-agent-sdk',
        '    model: claude-haiku-4-5',
        '    prompt: Add wf.txt',
        '    effects: git',
        `    repo: ${JSON.stringify(`file://${remote}`)}`,
        '    verify: test -f wf.txt',
        '    merge: no-ff',
        '    routes:',
        '      - to: $end',
        'output:',
        "  branch: '{{ implement.output.branch }}'",
        "  merged: '{{ implement.output.merged_commit }}'",
        '',
      ].join('\n'),
    );
    const env = {
      ...process.env,
      ANTHROPIC_API_KEY: 'sk-ant-git-remote-test',
      ANTHROPIC_BASE_URL: sim.url,
      CLAUDE_CONFIG_DIR: join(cwd, 'claude'),
      SWITCHBOARD_STATE_DIR: join(cwd, '.switchboard'),
    };
    const result = await runCli(['workflow', 'run', 'flow.yaml', '--json'], { cwd, env });
    expect(result.status, result.stderr).toBe(0);
    const output = (JSON.parse(result.stdout) as { output: { branch: string; merged: string } }).output;
    expect(git(remote, 'rev-parse', 'main')).toBe(output.merged);
    expect(git(remote, 'show', 'main:wf.txt')).toBe('wf');
    // The step's branch, with the runner's commit and its trailer, is on the remote: the effect point.
    expect(
      git(remote, 'log', '-1', '--format=%(trailers:key=Switchboard-Step,valueonly)', output.branch),
    ).toMatch(/implement/);
  } finally {
    await sim.close();
  }
}, 120_000);

describe.skipIf(POSTGRES_SKIP !== undefined)('workers with a remote repository', () => {
  let database: TestDatabase;
  const ids = ['r1', 'r2', 'r3', 'r4'];
  let simUrl = '';
  let requests: () => readonly SimLogEntry[] = () => [];

  beforeAll(async () => {
    database = await createTestDatabase();
    const sim = await startSimulator({
      maxLifetimeMs: 300_000,
      scenario: {
        rules: [
          ...[...ids, 'held'].map((id) => ({
            name: id,
            match: { text: `Task ${id}:`, turn: 1 },
            reply: { tool: { name: 'Write', input: { file_path: `${id}.txt`, content: `${id}\n` } } },
          })),
        ],
        fallback: { text: 'done' },
      },
    });
    simUrl = sim.url;
    requests = () => sim.requests;
    return async () => {
      killWorkers(children);
      await sim.close();
      await database.drop();
    };
  });

  /** Enqueues tasks on `remote` from a submitter machine with no clone of it; returns the run ids. */
  function enqueue(
    root: string,
    remote: string,
    ids: string[],
    verify = (id: string) => `test -f ${id}.txt`,
    baseUrl = simUrl,
  ): Promise<string[]> {
    const submitter = workerMachine(root, 'submitter', database.url);
    return enqueueAgentTasks(submitter, { root, ids, repo: remote, baseUrl, verify });
  }

  const worker = (root: string, name: string) => {
    const m = workerMachine(root, name, database.url);
    return startWorker(['--config', m.config, 'worker', '--concurrency', '2'], {
      cwd: m.cwd,
      env: m.env,
      children,
    });
  };

  const subjectsOn = (remote: string): string[] => git(remote, 'log', '--format=%s', 'main').split('\n');

  it('two workers with their own clones: every run is pushed and merged into the remote main exactly once, one merge job each', async () => {
    const root = workspace();
    const remote = bareRemote(root);
    const runIds = await enqueue(root, remote, ids);
    const workers = await Promise.all([worker(root, 'w1'), worker(root, 'w2')]);
    await waitFor(
      () =>
        workers.flatMap((w) => w.jobLines()).filter((line) => line.startsWith('job switchboard.merges'))
          .length >= ids.length,
      {
        withinMs: 180_000,
        what: 'every merge job to end',
      },
    );
    const subjects = subjectsOn(remote);
    for (const id of ids)
      expect(subjects.filter((subject) => subject === `feat(${id}): Add ${id}`)).toHaveLength(1);
    for (const id of ids) expect(git(remote, 'show', `main:${id}.txt`)).toBe(id);
    const lines = workers.flatMap((w) => w.jobLines());
    const agentLines = lines.filter((line) => line.startsWith('job switchboard.agents'));
    const mergeLines = lines.filter((line) => line.startsWith('job switchboard.merges'));
    for (const line of agentLines) expect(line).toMatch(/^job switchboard\.agents \S+ merge-queued /);
    for (const line of mergeLines) expect(line).toMatch(/^job switchboard\.merges \S+ succeeded /);
    expect(new Set(mergeLines.map((line) => line.split(' ')[2]))).toEqual(new Set(runIds));
    // Each worker worked in its own clone cache, under its own state folder.
    for (const name of ['w1', 'w2'])
      expect(existsSync(join(root, name, '.switchboard', 'remotes'))).toBe(true);
    for (const w of workers) w.child.kill('SIGTERM');
    for (const w of workers) expect((await w.exited).code).toBe(0);
  }, 240_000);

  it('kill -9 of the worker merging a pushed run: another worker merges it, the agent is not called again', async () => {
    const root = workspace();
    const remote = bareRemote(root);
    // The remote holds the first push to main until told to refuse it: the merging worker dies meanwhile.
    const marks = join(root, 'marks');
    mkdirSync(marks);
    const hook = join(remote, 'hooks', 'pre-receive');
    writeFileSync(
      hook,
      [
        '#!/bin/sh',
        'while read old new ref; do',
        `  if [ "$ref" = refs/heads/main ] && [ ! -f ${marks}/held ]; then`,
        `    touch ${marks}/held`,
        `    while [ ! -f ${marks}/refuse ]; do sleep 0.1; done`,
        '    exit 1',
        '  fi',
        'done',
        'exit 0',
        '',
      ].join('\n'),
    );
    chmodSync(hook, 0o755);
    const [runId] = await enqueue(root, remote, ['held']);
    const first = await worker(root, 'first');
    await waitFor(() => existsSync(join(marks, 'held')), {
      withinMs: 120_000,
      what: 'the merge push to be held',
    });
    const agentRequests = requests().filter((entry) => entry.rule === 'held').length;
    expect(agentRequests).toBe(1);
    // The run's branch is on the remote (the effect point) before the merge.
    expect(git(remote, 'branch', '--list', `agent/${runId}`)).toContain(`agent/${runId}`);
    first.child.kill('SIGKILL');
    await first.exited;
    writeFileSync(join(marks, 'refuse'), '');

    const second = await worker(root, 'second');
    await waitFor(() => second.jobLines().some((line) => line.startsWith('job switchboard.merges')), {
      withinMs: 60_000,
      what: 'the other worker to take the merge',
    });
    expect(second.jobLines()).toEqual([
      expect.stringMatching(new RegExp(`^job switchboard\\.merges ${runId} succeeded `)),
    ]);
    expect(subjectsOn(remote).filter((subject) => subject === 'feat(held): Add held')).toHaveLength(1);
    expect(requests().filter((entry) => entry.rule === 'held').length).toBe(agentRequests);
    await waitForJobs(database.url, (jobs) =>
      jobs.some((job) => job.runId === runId && job.state === 'completed'),
    );
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
  }, 240_000);

  it('kill -9 of a worker in the agent step: another worker, with its own clone, redoes the attempt in a new worktree and merges once', async () => {
    const root = workspace();
    const remote = bareRemote(root);
    // Turn 1 writes a file and turn 2 hangs; the attempt redone on another machine (told it was
    // interrupted elsewhere) writes the file the verify command checks.
    const sim = await startSimulator({
      maxLifetimeMs: 300_000,
      scenario: {
        rules: [
          {
            name: 'moved',
            match: { text: 'another machine' },
            times: 1,
            reply: { tool: { name: 'Write', input: { file_path: 'part2.txt', content: 'two\n' } } },
          },
          {
            name: 'stuck-1',
            match: { turn: 1 },
            times: 1,
            reply: { tool: { name: 'Write', input: { file_path: 'part1.txt', content: 'one\n' } } },
          },
          { name: 'stuck-2', match: { turn: 2 }, times: 1, reply: { text: 'late', delayMs: 120_000 } },
        ],
        fallback: { text: 'done' },
      },
    });
    const requests = (): readonly SimLogEntry[] => sim.requests;
    try {
      const [runId] = await enqueue(root, remote, ['stuck'], () => 'test -f part2.txt', sim.url);
      const workers = await Promise.all([worker(root, 'a'), worker(root, 'b')]);
      await waitFor(() => requests().some((entry) => entry.rule === 'stuck-2'), {
        withinMs: 60_000,
        what: 'the hanging agent turn',
      });
      const observer = workerMachine(root, 'observer', database.url);
      const show = async () =>
        JSON.parse(
          (await runCli(['agent', 'show', runId!, '--json'], { cwd: observer.cwd, env: observer.env }))
            .stdout,
        ) as {
          runnerPid: number;
          status: string;
          worktree: string;
        };
      const holderPid = (await show()).runnerPid;
      const holder = workers.find((w) => w.pid === holderPid)!;
      const other = workers.find((w) => w !== holder)!;
      holder.child.kill('SIGKILL');
      await holder.exited;
      await waitFor(() => other.jobLines().some((line) => line.startsWith('job switchboard.merges')), {
        withinMs: 90_000,
        what: 'the other worker to finish the run',
      });
      const run = await show();
      expect(run.status).toBe('succeeded');
      // The run moved to the other machine's clone; the dead machine's unpushed file did not come along.
      expect(run.worktree.startsWith(join(root, other === workers[0] ? 'a' : 'b'))).toBe(true);
      expect(requests().filter((entry) => entry.rule === 'moved')).toHaveLength(1);
      expect(subjectsOn(remote).filter((subject) => subject === 'feat(stuck): Add stuck')).toHaveLength(1);
      expect(git(remote, 'show', 'main:part2.txt')).toBe('two');
      other.child.kill('SIGTERM');
      expect((await other.exited).code).toBe(0);
    } finally {
      await sim.close();
    }
  }, 240_000);
});
