import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { claudeProcessIds, waitForNoNewClaudeProcesses } from './helpers/claude.js';
import { createRepository, git } from './helpers/git-repo.js';
import { createTestDatabase, POSTGRES_SKIP, type TestDatabase } from './helpers/postgres.js';
import { runCli, type CliRun } from './helpers/run-cli.js';
import { waitFor } from './helpers/wait-for.js';
import {
  enqueueAgentTasks,
  killWorkers,
  startWorker,
  waitForJobs,
  workerMachine,
} from './helpers/worker-process.js';

// `switchboard worker` and `agent run --enqueue` as users run them on several machines sharing one
// PostgreSQL database: the built CLI, real worker processes, real git, the real Claude Code binary
// against `switchboard sim`. Each "machine" has its own working directory and state folder.

const folders: string[] = [];
const children = new Set<ChildProcess>();
const claudeBefore = claudeProcessIds();

afterAll(async () => {
  killWorkers(children);
  expect(await waitForNoNewClaudeProcesses(claudeBefore)).toEqual([]);
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

function workspace(): string {
  const folder = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-workers-')));
  folders.push(folder);
  return folder;
}

function expectOneLine(result: CliRun): void {
  expect(result.stderr, 'no stack trace').not.toMatch(/\n\s+at /);
  expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
}

function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

describe('workers need PostgreSQL', () => {
  const env = { ...process.env, SWITCHBOARD_DATABASE_URL: '' };

  it('`worker` without a database URL is one line, exit 2', async () => {
    const result = await runCli(['worker'], { cwd: workspace(), env });
    expect(result.status, result.stderr).toBe(2);
    expectOneLine(result);
    expect(result.stderr).toContain('workers share a PostgreSQL database; set SWITCHBOARD_DATABASE_URL');
  });

  it('`agent run --enqueue` without a database URL is one line, exit 2, and records nothing', async () => {
    const cwd = workspace();
    const result = await runCli(['agent', 'run', '--enqueue', '--id', 'x', '--title', 'X'], {
      cwd,
      env: { ...env, SWITCHBOARD_STATE_DIR: join(cwd, 'state') },
    });
    expect(result.status, result.stderr).toBe(2);
    expectOneLine(result);
    expect(result.stderr).toContain('set SWITCHBOARD_DATABASE_URL');
  });

  it('an unreachable database is exit 8 for `worker` and for `--enqueue`, without the password', async () => {
    const url = `postgres://switchboard:hunter2-hunter2@127.0.0.1:${await closedPort()}/switchboard`;
    const cwd = createRepository(join(workspace(), 'repo'));
    const unreachable = { ...process.env, SWITCHBOARD_DATABASE_URL: url };
    for (const args of [['worker'], ['agent', 'run', '--enqueue', '--id', 'x', '--title', 'X']]) {
      const result = await runCli(args, { cwd, env: unreachable });
      expect(result.status, result.stderr).toBe(8);
      expectOneLine(result);
      expect(result.stderr + result.stdout).not.toContain('hunter2-hunter2');
    }
  });
});

it('a worker that cannot start Claude Code refuses to start (exit 28) instead of taking jobs', async () => {
  const url = `postgres://switchboard:hunter2-hunter2@127.0.0.1:${await closedPort()}/switchboard`;
  const result = await runCli(['worker', '--claude-path', '/nonexistent/claude'], {
    cwd: workspace(),
    env: { ...process.env, SWITCHBOARD_DATABASE_URL: url },
  });
  expect(result.status, result.stderr).toBe(28);
  expectOneLine(result);
  expect(result.stderr).toContain('/nonexistent/claude does not exist');
});

describe.skipIf(POSTGRES_SKIP !== undefined)('workers on a shared PostgreSQL database', () => {
  let database: TestDatabase;
  let sim: Simulator;
  const ids = ['t1', 't2', 't3', 't4', 't5', 't6'];

  beforeAll(async () => {
    database = await createTestDatabase();
    sim = await startSimulator({
      maxLifetimeMs: 300_000,
      scenario: {
        rules: ids.map((id) => ({
          match: { text: `Task ${id}:` },
          reply: { tool: { name: 'Write', input: { file_path: `${id}.txt`, content: `${id}\n` } } },
        })),
        fallback: { text: 'done' },
      },
    });
    return async () => {
      killWorkers(children);
      await sim.close();
      await database.drop();
    };
  });

  const machine = (root: string, name: string) => workerMachine(root, name, database.url);

  it('two workers run six enqueued tasks; every change is merged once; `agent ls` elsewhere sees them', async () => {
    const root = workspace();
    const repo = createRepository(join(root, 'repo'));
    const submitter = machine(root, 'submitter');
    const runIds = await enqueueAgentTasks(submitter, { root, ids, baseUrl: sim.url }, repo);
    expect(runIds).toHaveLength(6);

    // A third machine sees the queued runs at once, before any worker exists.
    const observer = machine(root, 'observer');
    const listed = await runCli(['agent', 'ls', '--json'], { cwd: observer.cwd, env: observer.env });
    const queued = JSON.parse(listed.stdout) as { id: string; phase: string; resumable: boolean }[];
    expect(queued.map((run) => run.id).sort()).toEqual([...runIds].sort());
    expect(new Set(queued.map((run) => run.phase))).toEqual(new Set(['queued']));
    // Waiting for a worker is not an interrupted run to resume by hand.
    expect(queued.map((run) => run.resumable)).toEqual(Array(6).fill(false));

    const workers = await Promise.all(
      ['w1', 'w2'].map((name) => {
        const m = machine(root, name);
        return startWorker(['--config', m.config, 'worker', '--concurrency', '2', '--port', '0'], {
          cwd: m.cwd,
          env: m.env,
          children,
        });
      }),
    );
    const ended = async (): Promise<{ id: string; status: string }[]> => {
      const result = await runCli(['agent', 'ls', '--json'], { cwd: observer.cwd, env: observer.env });
      return (JSON.parse(result.stdout) as { id: string; status: string }[]).filter(
        (run) => run.status !== 'running',
      );
    };
    const deadline = Date.now() + 180_000;
    while ((await ended()).length < 6 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 500));
    const runs = await ended();
    expect(runs.map((run) => run.status)).toEqual(Array(6).fill('succeeded'));

    const subjects = git(repo, 'log', '--format=%s', 'main').split('\n');
    for (const id of ids)
      expect(subjects.filter((subject) => subject === `feat(${id}): Add ${id}`)).toHaveLength(1);
    // Every job ran on exactly one of the two workers, and both took some.
    const lines = workers.flatMap((worker) => worker.jobLines());
    expect(lines).toHaveLength(6);
    for (const line of lines) expect(line).toMatch(/^job switchboard\.agents \S+ succeeded \d+\.\d+s$/);
    expect(new Set(lines.map((line) => line.split(' ')[2]))).toEqual(new Set(runIds));

    // Each job was completed once, on its first attempt.
    const jobs = await waitForJobs(database.url, (all) => all.every((job) => job.state === 'completed'));
    expect(jobs.map((job) => job.runId).sort()).toEqual([...runIds].sort());
    expect(jobs.map((job) => job.retryCount)).toEqual(Array(6).fill(0));

    // Health and metrics of a worker that ran jobs.
    const [first] = workers;
    const health = await fetch(`${first!.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({
      ok: true,
      queues: ['switchboard.agents', 'switchboard.workflows', 'switchboard.members', 'switchboard.merges'],
      active: 0,
    });
    const metrics = await (await fetch(`${first!.url}/metrics`)).text();
    expect(metrics).toContain(
      `switchboard_worker_jobs_total{queue="switchboard.agents",outcome="completed"} ${first!.jobLines().length}`,
    );
    expect(metrics).toMatch(
      /switchboard_worker_job_duration_seconds_count\{queue="switchboard.agents",outcome="completed"\} \d/,
    );
    expect(metrics).toContain('switchboard_queue_jobs{queue="switchboard.agents",state="queued"} 0');

    // SIGTERM on idle workers: they stop at once, exit 0.
    for (const worker of workers) worker.child.kill('SIGTERM');
    for (const worker of workers) expect((await worker.exited).code).toBe(0);
  }, 240_000);

  it('a run cancelled while queued is not started: the worker completes its job as cancelled', async () => {
    const root = workspace();
    const repo = createRepository(join(root, 'repo'));
    const submitter = machine(root, 'submitter');
    const enqueued = await runCli(
      ['agent', 'run', '--enqueue', '--id', 'never', '--title', 'Never run', '--base-url', sim.url, '--json'],
      { cwd: repo, env: submitter.env },
    );
    expect(enqueued.status, enqueued.stderr).toBe(0);
    // `id`, as `agent run --json` names the run.
    const printed = JSON.parse(enqueued.stdout) as { taskId: string; id: string; jobId: string };
    expect(Object.keys(printed).sort()).toEqual(['id', 'jobId', 'taskId']);
    const runId = printed.id;
    const cancelled = await runCli(['agent', 'cancel', runId], { cwd: repo, env: submitter.env });
    expect(cancelled.status, cancelled.stderr).toBe(0);
    const requestsBefore = sim.requests.length;

    const m = machine(root, 'w');
    const worker = await startWorker(['--config', m.config, 'worker'], { cwd: m.cwd, env: m.env, children });
    await waitForJobs(database.url, (jobs) =>
      jobs.some((job) => job.runId === runId && job.state === 'completed'),
    );
    await waitFor(() => worker.jobLines().length > 0, { what: 'the job line' });
    expect(worker.jobLines()).toEqual([
      expect.stringMatching(new RegExp(`^job switchboard\\.agents ${runId} cancelled `)),
    ]);
    expect(sim.requests.length).toBe(requestsBefore);
    expect(git(repo, 'branch', '--list', `agent/${runId}`)).toBe('');
    worker.child.kill('SIGTERM');
    expect((await worker.exited).code).toBe(0);
  });
});
