import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { WorkflowRunResult } from '../src/workflows/api-types.js';
import { adminQuery, createTestDatabase, POSTGRES_SKIP, type TestDatabase } from './helpers/postgres.js';
import { runCli, type CliRun } from './helpers/run-cli.js';
import {
  killWorkers,
  queueJobs,
  startWorker,
  untilWorkflowStatus,
  workerMachine,
  type WorkerMachine,
  type WorkerProcess,
} from './helpers/worker-process.js';

// `workflow run --enqueue`, `workflow gate --enqueue` and `switchboard worker --queues workflows` as
// users run them on several machines sharing one PostgreSQL database: the built CLI, real worker
// processes, real PostgreSQL. Each "machine" has its own working directory and state folder; the
// workflow files sit in a folder every machine sees at the same path.

const WORKFLOW_QUEUE = 'switchboard.workflows';
const folders: string[] = [];
const children = new Set<ChildProcess>();

afterAll(() => {
  killWorkers(children);
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

function workspace(): string {
  const folder = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-wf-workers-')));
  folders.push(folder);
  return folder;
}

function expectOneLine(result: CliRun): void {
  expect(result.stderr, 'no stack trace').not.toMatch(/\n\s+at /);
  expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
}

/** A set step, then a script step that counts its executions in `<dir>/ran-<name>.log`. */
const HELLO = `workflow:
  name: hello
  entry_point: greet
  input:
    name: { type: string }
agents:
  - name: greet
    type: set
    value: "Hello, {{ workflow.input.name }}"
    routes:
      - to: shout
  - name: shout
    type: script
    command: sh
    args: ["-c", "echo ran >> '{{ workflow.dir }}/ran-{{ workflow.input.name }}.log'; printf '{\\"loud\\": \\"%s\\"}' \\"$(echo '{{ greet.output }}' | tr a-z A-Z)\\""]
    routes:
      - to: $end
output:
  loud: "{{ shout.output.loud }}"
`;

/** A for_each over three items, then a sum. */
const EACH = `workflow:
  name: each
  entry_point: find
agents:
  - name: find
    type: set
    values:
      items: "[1, 2, 3]"
    routes:
      - to: double_all
  - name: sum
    type: set
    value: "{{ double_all.outputs | sum }}"
    routes:
      - to: $end
for_each:
  - name: double_all
    type: for_each
    source: find.output.items
    as: n
    max_concurrent: 2
    agent:
      name: double
      type: set
      value: "{{ n * 2 }}"
    routes:
      - to: sum
output:
  total: "{{ sum.output }}"
`;

/** A script step, a gate, then a set step that reads the answer. */
const GATED = `workflow:
  name: gated
  entry_point: prepare
agents:
  - name: prepare
    type: script
    command: sh
    args: ["-c", "echo ran >> '{{ workflow.dir }}/prepare.log'"]
    routes:
      - to: approve
  - name: approve
    type: human_gate
    prompt: Ship the release?
    options:
      - { label: Ship it, value: ship, route: done }
      - { label: Not yet, value: hold, route: $end }
  - name: done
    type: set
    value: "shipped-{{ approve.output.selected }}"
    routes:
      - to: $end
output:
  decision: "{{ done.output }}"
`;

/**
 * Three steps; the middle one is a script that records it started, then sleeps until released by a
 * file (so a test can kill the worker while it runs, and a resumed attempt finishes at once).
 */
const LONG = `workflow:
  name: long
  entry_point: first
agents:
  - name: first
    type: script
    command: sh
    args: ["-c", "echo ran >> '{{ workflow.dir }}/first.log'"]
    routes:
      - to: slow
  - name: slow
    type: script
    command: sh
    args: ["-c", "echo $$ >> '{{ workflow.dir }}/slow.log'; while [ ! -f '{{ workflow.dir }}/go' ]; do sleep 0.1; done"]
    routes:
      - to: last
  - name: last
    type: script
    command: sh
    args: ["-c", "echo ran >> '{{ workflow.dir }}/last.log'"]
    routes:
      - to: $end
`;

function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

function lines(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

describe('workflow --enqueue needs PostgreSQL', () => {
  it('`workflow run --enqueue` without a database URL is one line, exit 2, and records nothing', async () => {
    const root = workspace();
    writeFileSync(join(root, 'hello.yaml'), HELLO);
    const stateDir = join(root, 'state');
    const result = await runCli(['workflow', 'run', 'hello.yaml', '-i', 'name=ada', '--enqueue'], {
      cwd: root,
      env: { ...process.env, SWITCHBOARD_DATABASE_URL: '', SWITCHBOARD_STATE_DIR: stateDir },
    });
    expect(result.status, result.stderr).toBe(2);
    expectOneLine(result);
    expect(result.stderr).toContain('set SWITCHBOARD_DATABASE_URL');
    const listed = await runCli(['workflow', 'ls', '--json'], {
      cwd: root,
      env: { ...process.env, SWITCHBOARD_DATABASE_URL: '', SWITCHBOARD_STATE_DIR: stateDir },
    });
    expect(JSON.parse(listed.stdout)).toEqual([]);
  });
  it('`workflow run --enqueue` and `gate --enqueue` on a database that does not answer are exit 8, without the password', async () => {
    const root = workspace();
    writeFileSync(join(root, 'hello.yaml'), HELLO);
    const url = `postgres://switchboard:hunter2-hunter2@127.0.0.1:${await closedPort()}/switchboard`;
    const env = { ...process.env, SWITCHBOARD_DATABASE_URL: url, SWITCHBOARD_STATE_DIR: join(root, 'state') };
    for (const args of [
      ['workflow', 'run', 'hello.yaml', '-i', 'name=ada', '--enqueue'],
      ['workflow', 'gate', 'wf-x', '--choose', 'ship', '--enqueue'],
    ]) {
      const result = await runCli(args, { cwd: root, env });
      expect(result.status, result.stderr).toBe(8);
      expectOneLine(result);
      expect(result.stderr + result.stdout).not.toContain('hunter2-hunter2');
    }
  });
});

describe.skipIf(POSTGRES_SKIP !== undefined)('workflows on workers sharing PostgreSQL', () => {
  let database: TestDatabase;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    return async () => {
      killWorkers(children);
      await database.drop();
    };
  });

  afterEach(async () => {
    for (const worker of workers.splice(0)) {
      if (worker.child.exitCode === null && worker.child.signalCode === null) {
        worker.child.kill('SIGTERM');
        await worker.exited;
      }
    }
  });

  const machine = (root: string, name: string): WorkerMachine => workerMachine(root, name, database.url);

  async function worker(root: string, name: string, args: string[] = []): Promise<WorkerProcess> {
    const m = machine(root, name);
    const started = await startWorker(['--config', m.config, 'worker', '--queues', 'workflows', ...args], {
      cwd: m.cwd,
      env: m.env,
      children,
    });
    workers.push(started);
    return started;
  }

  async function status(m: WorkerMachine, runId: string): Promise<WorkflowRunResult> {
    const result = await runCli(['--config', m.config, 'workflow', 'status', runId, '--json'], m);
    expect(result.status, result.stderr).toBe(0);
    return JSON.parse(result.stdout) as WorkflowRunResult;
  }

  function untilStatus(
    m: WorkerMachine,
    runId: string,
    wanted: WorkflowRunResult['status'],
    withinMs = 60_000,
  ): Promise<WorkflowRunResult> {
    return untilWorkflowStatus(m, runId, (status) => status === wanted, Date.now() + withinMs);
  }

  async function enqueue(m: WorkerMachine, args: string[]): Promise<string> {
    const result = await runCli(['--config', m.config, 'workflow', 'run', ...args, '--enqueue'], m);
    expect(result.status, result.stderr).toBe(0);
    return result.stdout.trim();
  }

  async function stepRows(runId: string): Promise<{ key: string; status: string; attempt: number }[]> {
    const result = await adminQuery(
      `SELECT key, status, attempt::int AS attempt FROM workflow_steps WHERE run_id = '${runId}' ORDER BY seq, key`,
      database.url,
    );
    return result.rows as { key: string; status: string; attempt: number }[];
  }

  /** Polls the run's jobs in the workflow queue until their states satisfy `condition`. */
  async function waitForJob(runId: string, condition: (states: string[]) => boolean): Promise<void> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const states = (await queueJobs(database.url, WORKFLOW_QUEUE))
        .filter((job) => job.runId === runId)
        .map((job) => job.state);
      if (condition(states)) return;
      if (Date.now() > deadline) throw new Error(`jobs of ${runId}: ${JSON.stringify(states)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  it('two workers advance five enqueued workflows (one with a for_each); each step runs once; a third machine sees them', async () => {
    const root = workspace();
    writeFileSync(join(root, 'hello.yaml'), HELLO);
    writeFileSync(join(root, 'each.yaml'), EACH);
    const submitter = machine(root, 'submitter');
    const names = ['ada', 'bob', 'cy', 'dee'];
    const runIds: string[] = [];
    for (const name of names)
      runIds.push(await enqueue(submitter, [join(root, 'hello.yaml'), '-i', `name=${name}`]));
    runIds.push(await enqueue(submitter, [join(root, 'each.yaml')]));
    expect(new Set(runIds).size).toBe(5);

    // Recorded at once, before any worker exists: running at the entry step, nobody advancing it.
    const observer = machine(root, 'observer');
    const queued = await status(observer, runIds[0] as string);
    expect(queued).toMatchObject({ status: 'running', step: 'greet', steps: [] });

    await Promise.all([worker(root, 'w1'), worker(root, 'w2')]);
    for (const [index, name] of names.entries()) {
      const done = await untilStatus(observer, runIds[index] as string, 'completed');
      expect(done.output).toEqual({ loud: `HELLO, ${name.toUpperCase()}` });
      expect(lines(join(root, `ran-${name}.log`))).toEqual(['ran']);
    }
    const each = await untilStatus(observer, runIds[4] as string, 'completed');
    expect(each.output).toEqual({ total: 12 });

    for (const runId of runIds) {
      const rows = await stepRows(runId);
      expect(rows.length).toBeGreaterThan(0);
      for (const row of rows) expect(row, runId).toMatchObject({ status: 'completed', attempt: 1 });
    }
    expect((await stepRows(runIds[4] as string)).length).toBe(6); // find, the group, 3 items, sum
    const jobs = (await queueJobs(database.url, WORKFLOW_QUEUE)).filter((job) => runIds.includes(job.runId));
    expect(jobs.map((job) => job.state)).toEqual(Array(5).fill('completed'));

    const listed = await runCli(['--config', observer.config, 'workflow', 'ls', '--json'], observer);
    const ids = (JSON.parse(listed.stdout) as WorkflowRunResult[]).map((run) => run.id);
    expect(ids).toEqual(expect.arrayContaining(runIds));
  });

  it('a bare `switchboard worker` takes what `workflow run --enqueue` queued; `--json` names the run `id`, as `run --json` does', async () => {
    const root = workspace();
    writeFileSync(join(root, 'hello.yaml'), HELLO);
    const submitter = machine(root, 'submitter');
    const queued = await runCli(
      [
        '--config',
        submitter.config,
        'workflow',
        'run',
        join(root, 'hello.yaml'),
        '-i',
        'name=eve',
        '--enqueue',
        '--json',
      ],
      submitter,
    );
    expect(queued.status, queued.stderr).toBe(0);
    const printed = JSON.parse(queued.stdout) as Record<string, unknown>;
    expect(Object.keys(printed).sort()).toEqual(['created', 'id', 'jobId', 'status']);
    const runId = printed['id'] as string;

    // What a user tries first: no --queues.
    const m = machine(root, 'bare');
    const bare = await startWorker(['--config', m.config, 'worker'], { cwd: m.cwd, env: m.env, children });
    workers.push(bare);
    const done = await untilStatus(submitter, runId, 'completed');
    expect(done.output).toEqual({ loud: 'HELLO, EVE' });
    expect(bare.stdout()).toMatch(
      /queues switchboard\.agents,switchboard\.workflows,switchboard\.members,switchboard\.merges,/,
    );

    const direct = await runCli(
      ['--config', submitter.config, 'workflow', 'run', join(root, 'hello.yaml'), '-i', 'name=fay', '--json'],
      submitter,
    );
    expect(Object.keys(JSON.parse(direct.stdout) as object)).toContain('id');
  }, 120_000);

  it('a bad workflow file or input is refused as `workflow run` refuses it (exit 50), recording and queueing nothing', async () => {
    const root = workspace();
    writeFileSync(join(root, 'broken.yaml'), HELLO.replace('entry_point: greet', 'entry_point: nowhere'));
    writeFileSync(join(root, 'hello.yaml'), HELLO);
    const submitter = machine(root, 'submitter');
    const jobsBefore = (await queueJobs(database.url, WORKFLOW_QUEUE)).length;
    const runsBefore = (await adminQuery('SELECT id FROM workflow_runs', database.url)).rows.length;
    const cases = [
      [join(root, 'broken.yaml'), '-i', 'name=x'],
      [join(root, 'hello.yaml')], // the required input is missing
      [join(root, 'missing.yaml')],
    ];
    for (const args of cases) {
      const direct = await runCli(
        ['--config', submitter.config, 'workflow', 'run', '--dry-run', ...args],
        submitter,
      );
      const queued = await runCli(
        ['--config', submitter.config, 'workflow', 'run', ...args, '--enqueue'],
        submitter,
      );
      expect(queued.status, queued.stderr).toBe(direct.status);
      expect(queued.status, queued.stderr).toBe(50);
      expectOneLine(queued);
      expect(queued.stdout).toBe('');
    }
    expect((await queueJobs(database.url, WORKFLOW_QUEUE)).length).toBe(jobsBefore);
    expect((await adminQuery('SELECT id FROM workflow_runs', database.url)).rows.length).toBe(runsBefore);
  });

  it('a second enqueue with the same run_key returns the queued run and sends no second job', async () => {
    const root = workspace();
    const keyed = HELLO.replace(
      '  entry_point: greet',
      '  entry_point: greet\n  run_key: "hello-{{ workflow.input.name }}"',
    );
    writeFileSync(join(root, 'keyed.yaml'), keyed);
    const submitter = machine(root, 'submitter');
    const first = await enqueue(submitter, [join(root, 'keyed.yaml'), '-i', 'name=kay']);
    const second = await enqueue(submitter, [join(root, 'keyed.yaml'), '-i', 'name=kay']);
    expect(second).toBe(first);
    expect((await queueJobs(database.url, WORKFLOW_QUEUE)).filter((job) => job.runId === first)).toHaveLength(
      1,
    );
    await worker(root, 'w1');
    await untilStatus(machine(root, 'observer'), first, 'completed');
    expect(lines(join(root, 'ran-kay.log'))).toEqual(['ran']);
  });

  it('a gate answered with --enqueue on another machine is continued by a worker', async () => {
    const root = workspace();
    writeFileSync(join(root, 'gated.yaml'), GATED);
    const submitter = machine(root, 'submitter');
    const runId = await enqueue(submitter, [join(root, 'gated.yaml')]);
    const w1 = await worker(root, 'w1');
    const answerer = machine(root, 'answerer');
    const parked = await untilStatus(answerer, runId, 'waiting');
    expect(parked.gate?.step).toBe('approve');
    // The parked run ended its job: no worker holds it while it waits for a person.
    await waitForJob(runId, (states) => states.length === 1 && states[0] === 'completed');
    expect(w1.jobLines().join('\n')).toContain(`job ${WORKFLOW_QUEUE} ${runId} waiting`);

    const answered = await runCli(
      ['--config', answerer.config, 'workflow', 'gate', runId, '--choose', 'ship', '--enqueue'],
      answerer,
    );
    expect(answered.status, answered.stderr).toBe(0);
    expect(answered.stdout.trim()).toBe(runId);
    const done = await untilStatus(answerer, runId, 'completed');
    expect(done.output).toEqual({ decision: 'shipped-ship' });
    expect(lines(join(root, 'prepare.log'))).toEqual(['ran']);
    for (const row of await stepRows(runId)) expect(row).toMatchObject({ status: 'completed', attempt: 1 });
    await waitForJob(
      runId,
      (states) => states.length === 2 && states.every((state) => state === 'completed'),
    );
  });

  /** Enqueues LONG and starts two workers; resolves once one of them runs the slow step. */
  async function longRunOnTwoWorkers(root: string, args: string[] = []) {
    writeFileSync(join(root, 'long.yaml'), LONG);
    const submitter = machine(root, 'submitter');
    const runId = await enqueue(submitter, [join(root, 'long.yaml')]);
    const started = await Promise.all([worker(root, 'w1', args), worker(root, 'w2', args)]);
    const deadline = Date.now() + 30_000;
    while (lines(join(root, 'slow.log')).length === 0) {
      if (Date.now() > deadline) throw new Error('the slow step never started');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const owner = await adminQuery(`SELECT owner_pid FROM workflow_runs WHERE id = '${runId}'`, database.url);
    const ownerPid = Number((owner.rows[0] as { owner_pid: number | string }).owner_pid);
    const advancing = started.find((w) => w.pid === ownerPid);
    const other = started.find((w) => w.pid !== ownerPid);
    if (advancing === undefined || other === undefined) throw new Error(`owner ${ownerPid} is no worker`);
    return { runId, advancing, other, observer: machine(root, 'observer') };
  }

  /** Lets the slow step's second execution finish once it started (the first one may still be waiting). */
  async function releaseSecondSlowStep(root: string): Promise<void> {
    const deadline = Date.now() + 60_000;
    while (lines(join(root, 'slow.log')).length < 2) {
      if (Date.now() > deadline) throw new Error('no worker ran the slow step again');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    writeFileSync(join(root, 'go'), '');
  }

  function alive(pid: number): boolean {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }

  it('kill -9 of the worker in a long step: the other worker resumes the run, no completed step runs again', async () => {
    const root = workspace();
    const { runId, advancing, other, observer } = await longRunOnTwoWorkers(root);
    advancing.child.kill('SIGKILL');
    await advancing.exited;
    try {
      await releaseSecondSlowStep(root);
      const done = await untilStatus(observer, runId, 'completed');
      expect(done.status).toBe('completed');
    } finally {
      // The killed worker's script, if it outlived it, waits for the file: let it end.
      writeFileSync(join(root, 'go'), '');
    }
    expect(lines(join(root, 'first.log'))).toEqual(['ran']);
    expect(lines(join(root, 'slow.log'))).toHaveLength(2);
    expect(lines(join(root, 'last.log'))).toEqual(['ran']);
    const rows = await stepRows(runId);
    expect(rows.map((row) => [row.key.split('/')[1], row.status, row.attempt])).toEqual([
      ['first', 'completed', 1],
      ['slow', 'completed', 2],
      ['last', 'completed', 1],
    ]);
    await waitForJob(runId, (states) => states.length === 1 && states[0] === 'completed');
    expect(other.jobLines().join('\n')).toContain(`job ${WORKFLOW_QUEUE} ${runId} completed`);
  });

  it('SIGTERM drain: the running workflow job is released at the grace deadline and another worker finishes the run', async () => {
    const root = workspace();
    const { runId, advancing, other, observer } = await longRunOnTwoWorkers(root, ['--grace', '1']);
    const firstScript = Number(lines(join(root, 'slow.log'))[0]);
    advancing.child.kill('SIGTERM');
    const exit = await advancing.exited;
    expect(exit.code).toBe(0);
    expect(advancing.jobLines().join('\n')).toContain(`job ${WORKFLOW_QUEUE} ${runId} released`);
    // The released step's process tree is gone; the run was not marked failed.
    const gone = Date.now() + 10_000;
    while (alive(firstScript) && Date.now() < gone) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(alive(firstScript)).toBe(false);
    expect((await status(observer, runId)).status).toBe('running');
    await releaseSecondSlowStep(root);
    const done = await untilStatus(observer, runId, 'completed');
    expect(done.errorCode).toBeUndefined();
    expect(lines(join(root, 'first.log'))).toEqual(['ran']);
    expect(lines(join(root, 'last.log'))).toEqual(['ran']);
    const rows = await stepRows(runId);
    expect(rows.map((row) => [row.key.split('/')[1], row.status, row.attempt])).toEqual([
      ['first', 'completed', 1],
      ['slow', 'completed', 2],
      ['last', 'completed', 1],
    ]);
    expect(other.jobLines().join('\n')).toContain(`job ${WORKFLOW_QUEUE} ${runId} completed`);
  });

  it('a job for a run another live process advances waits for it (WORKFLOW_LOCKED) instead of failing or running it twice', async () => {
    const root = workspace();
    writeFileSync(join(root, 'long.yaml'), LONG);
    const submitter = machine(root, 'submitter');
    const runId = 'wf-held-by-a-terminal';
    // `workflow run` in a terminal advances the run itself.
    const inTerminal = runCli(
      ['--config', submitter.config, 'workflow', 'run', join(root, 'long.yaml'), '--run-id', runId],
      submitter,
    );
    const deadline = Date.now() + 30_000;
    while (lines(join(root, 'slow.log')).length === 0) {
      if (Date.now() > deadline) throw new Error('the slow step never started');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const other = machine(root, 'other');
    const queued = await runCli(['--config', other.config, 'workflow', 'resume', runId, '--enqueue'], other);
    expect(queued.status, queued.stderr).toBe(0);
    expect(queued.stdout.trim()).toBe(runId);
    const w1 = await worker(root, 'w1');
    await waitForJob(runId, (states) => states.length === 1 && states[0] === 'active');
    // The worker was refused the run lock (the terminal's process holds it) and waits rather than failing.
    const refused = Date.now() + 30_000;
    while (!/workflow run \S+ is being advanced by pid \d+ .*the job waits for it/.test(w1.stderr())) {
      if (Date.now() > refused) throw new Error(`the worker never met the lock: ${w1.stderr()}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    writeFileSync(join(root, 'go'), '');
    expect((await inTerminal).status).toBe(0);
    await waitForJob(runId, (states) => states.length === 1 && states[0] === 'completed');
    expect(
      (await queueJobs(database.url, WORKFLOW_QUEUE)).find((job) => job.runId === runId)?.retryCount,
    ).toBe(0);
    expect(lines(join(root, 'slow.log'))).toHaveLength(1);
    expect(lines(join(root, 'last.log'))).toEqual(['ran']);
    expect(w1.jobLines().join('\n')).toContain(`job ${WORKFLOW_QUEUE} ${runId} completed`);
  });
});
