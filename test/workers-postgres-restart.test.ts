import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { adminQuery, POSTGRES_SKIP } from './helpers/postgres.js';
import { runCli } from './helpers/run-cli.js';
import {
  killWorkers,
  queueJobs,
  startWorker,
  untilWorkflowStatus,
  workerMachine,
  type WorkerMachine,
  type WorkerProcess,
} from './helpers/worker-process.js';
import { havePostgresBinaries, startPrivatePostgres, type PostgresServer } from './postgres-server.js';

// PostgreSQL restarted, or every connection killed, under `switchboard worker` processes advancing
// workflow runs: a pause, not a failure. A 20 s restart once left a run `running` for good (its step
// finished while the database was away, the job's retry waited for the worker itself and ended `locked`,
// the job `completed`), ran a finished script a second time once the worker stopped, and ended one of
// three workers on an unhandled `error` event (57P01). These stop the tests' own server (the run's
// shared one serves other files) on the same data folder and port, as an operator's restart does.

const WORKFLOW_QUEUE = 'switchboard.workflows';
/** How long the database stays away: longer than a job's heartbeat (10 s here), as in the report. */
const OUTAGE_MS = 15_000;
/** Only bounds a hang: a run that survives the outage ends seconds after the database is back. */
const SETTLE_MS = 150_000;

/** A script step that logs its start and end to `<dir>/ran-<name>.log` around a few seconds' sleep, then a set step. */
const SLOW = `workflow:
  name: slow
  entry_point: slow
  input:
    name: { type: string }
agents:
  - name: slow
    type: script
    command: sh
    args: ["-c", "echo started >> '{{ workflow.dir }}/ran-{{ workflow.input.name }}.log'; sleep 5; echo ran >> '{{ workflow.dir }}/ran-{{ workflow.input.name }}.log'; echo '{\\"n\\": 1}'"]
    routes:
      - to: after
  - name: after
    type: set
    value: "{{ slow.output.n + 1 }}"
    routes:
      - to: $end
output:
  n: "{{ after.output }}"
`;

const folders: string[] = [];
const children = new Set<ChildProcess>();

function lines(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

function alive(worker: WorkerProcess): boolean {
  return worker.child.exitCode === null && worker.child.signalCode === null;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(POSTGRES_SKIP !== undefined || !havePostgresBinaries())(
  'workers while PostgreSQL restarts or kills their connections',
  () => {
    let server: PostgresServer;
    let databaseUrl: string;
    let database = 0;
    const workers: WorkerProcess[] = [];

    beforeAll(async () => {
      const started = await startPrivatePostgres();
      if (started === undefined) throw new Error('no PostgreSQL server binaries');
      server = started;
    });
    afterAll(async () => {
      killWorkers(children);
      await server?.close();
      for (const folder of folders) rmSync(folder, { recursive: true, force: true });
    });
    afterEach(async (context) => {
      // What the workers said is what tells a stranded run's story.
      if (context.task.result?.state === 'fail')
        for (const worker of workers) console.error(`worker ${worker.pid}:\n${worker.stderr()}`);
      for (const worker of workers.splice(0)) {
        if (alive(worker)) {
          worker.child.kill('SIGKILL');
          await worker.exited;
        }
      }
    });

    /** A fresh database on the private server and a folder with the workflow file; the machines' config. */
    async function setUp(): Promise<{ root: string; submitter: WorkerMachine }> {
      // The server may have just come back: the first statement retries until it answers.
      const name = `sb_restart_${++database}`;
      await adminQuery(`CREATE DATABASE ${name}`, server.url);
      const url = new URL(server.url);
      url.pathname = `/${name}`;
      databaseUrl = url.toString();
      const root = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-pg-restart-')));
      folders.push(root);
      writeFileSync(join(root, 'slow.yaml'), SLOW);
      return { root, submitter: workerMachine(root, 'submitter', databaseUrl) };
    }

    async function startWorkers(
      root: string,
      names: string[],
      args: string[] = [],
    ): Promise<WorkerProcess[]> {
      const started = await Promise.all(
        names.map((name) => {
          const m = workerMachine(root, name, databaseUrl);
          return startWorker(['--config', m.config, 'worker', '--queues', 'workflows', ...args], {
            cwd: m.cwd,
            env: m.env,
            children,
          });
        }),
      );
      workers.push(...started);
      return started;
    }

    async function enqueue(m: WorkerMachine, root: string, name: string): Promise<string> {
      const result = await runCli(
        ['--config', m.config, 'workflow', 'run', join(root, 'slow.yaml'), '-i', `name=${name}`, '--enqueue'],
        m,
      );
      expect(result.status, result.stderr).toBe(0);
      return result.stdout.trim();
    }

    async function untilStarted(root: string, names: string[]): Promise<void> {
      const deadline = Date.now() + 60_000;
      while (!names.every((name) => lines(join(root, `ran-${name}.log`)).includes('started'))) {
        if (Date.now() > deadline) throw new Error('the script steps never started');
        await sleep(50);
      }
    }

    /** Every run completed with its output, its script ran once, every step row completed at the first attempt. */
    async function expectCompletedOnce(
      m: WorkerMachine,
      root: string,
      runs: { runId: string; name: string }[],
    ): Promise<void> {
      const deadline = Date.now() + SETTLE_MS;
      for (const { runId, name } of runs) {
        const done = await untilWorkflowStatus(m, runId, (status) => status !== 'running', deadline);
        expect([runId, done.status, done.output, done.error]).toEqual([
          runId,
          'completed',
          { n: 2 },
          undefined,
        ]);
        expect(lines(join(root, `ran-${name}.log`)), name).toEqual(['started', 'ran']);
        const steps = await adminQuery(
          `SELECT key, status FROM workflow_steps WHERE run_id = '${runId}' ORDER BY seq, key`,
          databaseUrl,
        );
        expect(steps.rows.map((row: { status: string }) => row.status)).toEqual(['completed', 'completed']);
      }
      // No job was failed into the dead-letter queue or left behind: each run's job ended completed.
      const deadlineJobs = Date.now() + 30_000;
      for (;;) {
        const jobs = (await queueJobs(databaseUrl, WORKFLOW_QUEUE)).filter((job) =>
          runs.some((run) => run.runId === job.runId),
        );
        if (jobs.length === runs.length && jobs.every((job) => job.state === 'completed')) break;
        if (Date.now() > deadlineJobs) throw new Error(`the runs' jobs: ${JSON.stringify(jobs)}`);
        await sleep(200);
      }
    }

    /** Stops the server while the steps run, and starts it again `OUTAGE_MS` later. */
    async function restart(): Promise<void> {
      await server.stop();
      await sleep(OUTAGE_MS);
      await server.start();
    }

    it('one worker, one run: PostgreSQL stopped during a script step and started 15 s later; the run completes, the step ran once, the worker lives and says so', async () => {
      const { root, submitter } = await setUp();
      const runId = await enqueue(submitter, root, 'solo');
      const [worker] = await startWorkers(root, ['w1']);
      await untilStarted(root, ['solo']);
      await restart();
      await expectCompletedOnce(submitter, root, [{ runId, name: 'solo' }]);
      expect(alive(worker!), worker!.stderr()).toBe(true);
      const log = worker!.stderr();
      expect(log).toMatch(/switchboard: database \S+ unreachable/);
      expect(log).toMatch(/switchboard: database \S+ reachable again/);
    }, 240_000);

    it('three workers, six runs: PostgreSQL stopped during their script steps and started 15 s later; every run completes, every step ran once, no worker died', async () => {
      const { root, submitter } = await setUp();
      const names = ['a', 'b', 'c', 'd', 'e', 'f'];
      const runs: { runId: string; name: string }[] = [];
      for (const name of names) runs.push({ runId: await enqueue(submitter, root, name), name });
      // Queued first, so that all six are in their script step at once when the database goes.
      const started = await startWorkers(root, ['w1', 'w2', 'w3'], ['--concurrency', '2']);
      await untilStarted(root, names);
      await restart();
      await expectCompletedOnce(submitter, root, runs);
      for (const worker of started) expect(alive(worker), worker.stderr()).toBe(true);
    }, 240_000);

    it('every connection terminated (pg_terminate_backend) while the workers are idle and again while a run is mid-step: no worker dies, that run completes once, a run enqueued afterwards completes', async () => {
      const { root, submitter } = await setUp();
      const started = await startWorkers(root, ['w1', 'w2']);
      const terminateAll = async (): Promise<number> => {
        // CASE, so that the filter is applied before the call (a WHERE may be evaluated in any order).
        const killed = await adminQuery(
          `SELECT count(*) FILTER (WHERE killed)::int AS n FROM (
             SELECT CASE WHEN pid <> pg_backend_pid() AND backend_type = 'client backend'
                    THEN pg_terminate_backend(pid) ELSE false END AS killed
               FROM pg_stat_activity) AS ended`,
          server.url,
        );
        return (killed.rows[0] as { n: number }).n;
      };
      // Idle: the pools' connections, pg-boss's and its LISTEN connection are all open by now.
      await sleep(2_000);
      expect(await terminateAll()).toBeGreaterThan(0);
      await sleep(2_000);
      for (const worker of started) expect(alive(worker), worker.stderr()).toBe(true);

      const during = await enqueue(submitter, root, 'during');
      await untilStarted(root, ['during']);
      expect(await terminateAll()).toBeGreaterThan(0);
      await expectCompletedOnce(submitter, root, [{ runId: during, name: 'during' }]);

      await terminateAll();
      const after = await enqueue(submitter, root, 'after');
      await expectCompletedOnce(submitter, root, [
        { runId: during, name: 'during' },
        { runId: after, name: 'after' },
      ]);
      for (const worker of started) expect(alive(worker), worker.stderr()).toBe(true);
    }, 240_000);
  },
);
