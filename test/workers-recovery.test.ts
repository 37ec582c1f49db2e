import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import type { Scenario } from '../src/sim/scenario.js';
import { claudeProcessIds, waitForNoNewClaudeProcesses } from './helpers/claude.js';
import { createRepository, git } from './helpers/git-repo.js';
import { adminQuery, createTestDatabase, POSTGRES_SKIP, type TestDatabase } from './helpers/postgres.js';
import { runCli } from './helpers/run-cli.js';
import { waitFor } from './helpers/wait-for.js';
import {
  killWorkers,
  startWorker,
  waitForJobs,
  workerMachine,
  type WorkerProcess,
} from './helpers/worker-process.js';

// Workers that die or are stopped while a run is in its agent step: the job goes to another worker,
// which resumes the run from its recorded phase; the change lands on the base branch once. Real worker
// processes of the built CLI, real PostgreSQL, git and the Claude Code binary against `switchboard sim`.

const folders: string[] = [];
const children = new Set<ChildProcess>();
const cleanups: (() => Promise<void>)[] = [];
const claudeBefore = claudeProcessIds();

afterEach(async () => {
  killWorkers(children);
  for (const cleanup of cleanups.splice(0)) await cleanup();
});
afterAll(async () => {
  expect(await waitForNoNewClaudeProcesses(claudeBefore)).toEqual([]);
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

interface RunView {
  id: string;
  status: string;
  phase: string;
  runnerPid?: number;
}

/** A repository, a database, a simulator and one enqueued task whose first agent turn is slow. */
async function slowRun(scenario: Scenario, task: Record<string, unknown>) {
  const database: TestDatabase = await createTestDatabase();
  const sim: Simulator = await startSimulator({ scenario, maxLifetimeMs: 300_000 });
  cleanups.push(async () => {
    await sim.close();
    await database.drop();
  });
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-workers-recovery-')));
  folders.push(root);
  const repo = createRepository(join(root, 'repo'));
  const submitter = workerMachine(root, 'submitter', database.url);
  const file = join(root, 'task.json');
  writeFileSync(file, JSON.stringify(task));
  const enqueued = await runCli(
    ['--config', submitter.config, 'agent', 'run', '--task', file, '--enqueue', '--base-url', sim.url],
    { cwd: repo, env: submitter.env },
  );
  expect(enqueued.status, enqueued.stderr).toBe(0);
  const runId = enqueued.stdout.trim();
  const show = async (): Promise<RunView> => {
    const result = await runCli(['agent', 'show', runId, '--json'], submitter);
    return JSON.parse(result.stdout) as RunView;
  };
  const worker = (name: string, args: string[] = []): Promise<WorkerProcess> => {
    const m = workerMachine(root, name, database.url);
    return startWorker(['--config', m.config, 'worker', ...args], { cwd: m.cwd, env: m.env, children });
  };
  return { sim, repo, runId, show, worker, submitter, database };
}

/** Turn 1 writes part1.txt; turn 2's answer comes after a minute (the long agent step); a resumed attempt writes part2.txt. */
const interruptedScenario: Scenario = {
  rules: [
    {
      name: 'resume',
      match: { text: 'interrupted' },
      times: 1,
      reply: { tool: { name: 'Write', input: { file_path: 'part2.txt', content: 'two\n' } } },
    },
    {
      name: 'first',
      match: { turn: 1 },
      times: 1,
      reply: { tool: { name: 'Write', input: { file_path: 'part1.txt', content: 'one\n' } } },
    },
    { name: 'slow', match: { turn: 2 }, times: 1, reply: { text: 'late', delayMs: 120_000 } },
  ],
  fallback: { text: 'done' },
};
const interruptedTask = {
  id: 'survive',
  title: 'Survive',
  verify: 'test -f part1.txt && test -f part2.txt',
};

function mergedOnce(repo: string, subject: string): void {
  const subjects = git(repo, 'log', '--format=%s', 'main').split('\n');
  expect(subjects.filter((line) => line === subject)).toHaveLength(1);
  expect(readFileSync(join(repo, 'part1.txt'), 'utf8')).toBe('one\n');
  expect(readFileSync(join(repo, 'part2.txt'), 'utf8')).toBe('two\n');
}

describe.skipIf(POSTGRES_SKIP !== undefined)('a worker that dies or stops mid-run', () => {
  it('kill -9 of the worker in a long agent step: the other worker resumes the run within the bound', async () => {
    const f = await slowRun(interruptedScenario, interruptedTask);
    const workers = await Promise.all([f.worker('a'), f.worker('b')]);
    await waitFor(() => f.sim.requests.some((entry) => entry.rule === 'slow'), {
      withinMs: 60_000,
      what: 'the slow agent step',
    });
    const holderPid = (await f.show()).runnerPid;
    const holder = workers.find((worker) => worker.pid === holderPid);
    const other = workers.find((worker) => worker.pid !== holderPid);
    expect(holder, `the run's runner ${holderPid} is one of the workers`).toBeDefined();
    const killedAt = Date.now();
    holder!.child.kill('SIGKILL');
    await holder!.exited;

    // heartbeat 10 s + supervise 1 s + polling 0.5 s, and Claude Code's start: well within 30 s.
    await waitFor(() => f.sim.requests.some((entry) => entry.rule === 'resume'), {
      withinMs: 30_000,
      what: 'the other worker to resume the run',
    });
    const pickupMs = Date.now() - killedAt;
    await waitFor(() => other!.jobLines().length > 0, { withinMs: 60_000, what: 'the job to end' });
    expect(other!.jobLines()).toEqual([
      expect.stringMatching(new RegExp(`^job switchboard\\.agents ${f.runId} succeeded `)),
    ]);
    expect(await f.show()).toMatchObject({ status: 'succeeded', phase: 'done', runnerPid: other!.pid });
    mergedOnce(f.repo, 'feat(survive): Survive');
    // The pickup spent one of the job's retries; the second attempt completed it.
    await waitForJobs(f.database.url, (jobs) => jobs.length === 1 && jobs[0]?.state === 'completed');
    expect((await waitForJobs(f.database.url, () => true))[0]?.retryCount).toBe(1);
    console.log(`kill -9 of a worker -> its run resumed by another after ${pickupMs} ms (heartbeat 10 s)`);
    other!.child.kill('SIGTERM');
    expect((await other!.exited).code).toBe(0);
  }, 180_000);

  it("taking over a run from another machine's worker leaves this machine's process with the recorded child pid alone", async () => {
    const f = await slowRun(
      {
        rules: [
          {
            match: { turn: 1 },
            reply: { tool: { name: 'Write', input: { file_path: 'done.txt', content: 'ok\n' } } },
          },
        ],
        fallback: { text: 'done' },
      },
      { id: 'elsewhere', title: 'Elsewhere', verify: 'test -f done.txt' },
    );
    // As if a worker on another machine (pid 999999 there) had started the run and died, its agent's
    // pid being, on this machine, an unrelated process.
    const bystander = spawn('sleep', ['120'], { stdio: 'ignore', detached: true });
    children.add(bystander);
    await adminQuery(
      `UPDATE agent_runs SET runner_pid = 999999, child_pid = ${bystander.pid}, phase = 'worktree' WHERE id = '${f.runId}'`,
      f.database.url,
    );
    const worker = await f.worker('a');
    await waitFor(() => worker.jobLines().length > 0, { withinMs: 60_000, what: 'the job to end' });
    expect(worker.jobLines()).toEqual([expect.stringMatching(/ succeeded /)]);
    expect(bystander.exitCode).toBeNull();
    expect(bystander.signalCode).toBeNull();
    bystander.kill('SIGKILL');
    worker.child.kill('SIGTERM');
    expect((await worker.exited).code).toBe(0);
  }, 120_000);

  it('SIGTERM lets a running job finish, answers 503 on /healthz meanwhile, then exits 0', async () => {
    const f = await slowRun(
      {
        rules: [
          {
            name: 'write',
            match: { turn: 1 },
            reply: { tool: { name: 'Write', input: { file_path: 'done.txt', content: 'ok\n' } } },
          },
          { name: 'slow', match: { turn: 2 }, reply: { text: 'finished', delayMs: 4_000 } },
        ],
        fallback: { text: 'done' },
      },
      { id: 'drain', title: 'Drain', verify: 'test -f done.txt' },
    );
    const worker = await f.worker('a', ['--port', '0', '--grace', '120']);
    await waitFor(() => f.sim.requests.some((entry) => entry.rule === 'slow'), {
      withinMs: 60_000,
      what: 'the slow agent step',
    });
    worker.child.kill('SIGTERM');
    let draining: Response | undefined;
    const deadline = Date.now() + 10_000;
    while (draining?.status !== 503 && Date.now() < deadline) draining = await fetch(`${worker.url}/healthz`);
    expect(draining?.status).toBe(503);
    expect(await draining?.json()).toMatchObject({ ok: false, state: 'draining', active: 1 });
    expect((await worker.exited).code).toBe(0);
    expect(worker.jobLines()).toEqual([expect.stringMatching(/ succeeded /)]);
    expect(await f.show()).toMatchObject({ status: 'succeeded', phase: 'done' });
    expect(git(f.repo, 'log', '--format=%s', 'main').split('\n')).toContain('feat(drain): Drain');
    // Finished during the drain, the job was completed, not handed back.
    expect(await waitForJobs(f.database.url, () => true)).toMatchObject([
      { state: 'completed', retryCount: 0 },
    ]);
  }, 120_000);

  it('a second SIGTERM releases the running job at once, whatever the grace', async () => {
    const f = await slowRun(interruptedScenario, interruptedTask);
    const worker = await f.worker('a', ['--grace', '600']);
    await waitFor(() => f.sim.requests.some((entry) => entry.rule === 'slow'), {
      withinMs: 60_000,
      what: 'the slow agent step',
    });
    worker.child.kill('SIGTERM');
    await waitFor(() => /draining/.test(worker.stderr()), { what: 'the worker to start draining' });
    worker.child.kill('SIGTERM');
    expect((await worker.exited).code).toBe(0);
    expect(worker.jobLines()).toEqual([expect.stringMatching(/ released /)]);
    expect(await f.show()).toMatchObject({ status: 'running', phase: 'agent' });
    // Handed back at once: the job is ready for the next worker.
    expect(await waitForJobs(f.database.url, (jobs) => jobs[0]?.state === 'retry')).toMatchObject([
      { state: 'retry', retryCount: 0 },
    ]);
  }, 120_000);

  it('SIGTERM past the grace deadline releases the run; another worker finishes it', async () => {
    const f = await slowRun(interruptedScenario, interruptedTask);
    const first = await f.worker('a', ['--grace', '1']);
    await waitFor(() => f.sim.requests.some((entry) => entry.rule === 'slow'), {
      withinMs: 60_000,
      what: 'the slow agent step',
    });
    first.child.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);
    expect(first.jobLines()).toEqual([
      expect.stringMatching(new RegExp(`^job switchboard\\.agents ${f.runId} released `)),
    ]);
    // Released, not ended: the run waits in its phase for the next worker.
    expect(await f.show()).toMatchObject({ status: 'running', phase: 'agent' });

    const second = await f.worker('b');
    await waitFor(() => second.jobLines().length > 0, {
      withinMs: 60_000,
      what: 'the second worker to finish',
    });
    expect(second.jobLines()).toEqual([expect.stringMatching(/ succeeded /)]);
    mergedOnce(f.repo, 'feat(survive): Survive');
    // The released attempt was redone, not spent: the run succeeded in its first attempt.
    const events = (await runCli(['agent', 'logs', f.runId], f.submitter)).stdout;
    expect(events).toMatch(/release +released in phase agent/);
    expect(events).not.toContain('attempt 2');
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
  }, 180_000);
});
