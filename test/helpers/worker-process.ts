import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { WorkflowRunResult } from '../../src/workflows/api-types.js';
import { waitFor } from './wait-for.js';

const cli = join(import.meta.dirname, '../../dist/cli/main.js');

/** A `switchboard worker` of the built CLI, running as its own process (one "machine"). */
export interface WorkerProcess {
  child: ChildProcess;
  pid: number;
  /** The /healthz and /metrics address when started with `--port`. */
  url?: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout: () => string;
  stderr: () => string;
  /** The `job <queue> <run id> <outcome> <seconds>s` lines so far. */
  jobLines: () => string[];
}

/**
 * Starts `switchboard worker` and resolves once it says it is ready (or rejects with its stderr when it
 * exits first). The child joins `children`, for the caller's cleanup.
 */
export async function startWorker(
  args: readonly string[],
  { cwd, env, children }: { cwd: string; env: NodeJS.ProcessEnv; children: Set<ChildProcess> },
): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [cli, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      resolve(exit);
    }),
  );
  await waitFor(() => exit !== undefined || /worker ready/.test(stdout), {
    withinMs: 30_000,
    what: 'the worker to say it is ready',
  });
  if (exit !== undefined) throw new Error(`worker exited ${exit.code}: ${stderr}`);
  const worker: WorkerProcess = {
    child,
    pid: child.pid as number,
    exited,
    stdout: () => stdout,
    stderr: () => stderr,
    jobLines: () => stderr.split('\n').filter((line) => line.startsWith('job ')),
  };
  const url = /worker listening on (http:\/\/\S+)/.exec(stdout)?.[1];
  if (url !== undefined) worker.url = url;
  return worker;
}

/** Kills every worker still running (SIGKILL), even when a test failed before stopping it. */
export function killWorkers(children: Set<ChildProcess>): void {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/** One "machine": a folder of its own and its own state, the shared database, a config file. */
export interface WorkerMachine {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** switchboard.yaml with the test timings of `workers:` (pass it with `--config`). */
  config: string;
}

/**
 * A machine under `root` using `databaseUrl`, with `workers:` timings that make a dead worker's job
 * come back within about 12 s: heartbeat 10 s, supervise and monitor every second, polling 0.5 s.
 */
export function workerMachine(root: string, name: string, databaseUrl: string): WorkerMachine {
  const cwd = join(root, name);
  mkdirSync(cwd, { recursive: true });
  const config = join(root, 'switchboard.yaml');
  writeFileSync(
    config,
    [
      'workers:',
      '  heartbeat_seconds: 10',
      '  supervise_interval_seconds: 1',
      '  monitor_interval_seconds: 1',
      '  polling_interval_seconds: 0.5',
      '',
    ].join('\n'),
  );
  const claudeConfig = join(root, `claude-${name}`);
  mkdirSync(claudeConfig, { recursive: true });
  return {
    cwd,
    config,
    env: {
      ...process.env,
      ANTHROPIC_API_KEY: 'sk-ant-workers-test',
      CLAUDE_CONFIG_DIR: claudeConfig,
      SWITCHBOARD_STATE_DIR: join(cwd, '.switchboard'),
      SWITCHBOARD_DATABASE_URL: databaseUrl,
    },
  };
}

/** The jobs of a queue in the shared database, oldest first: their state and how often they were retried. */
export async function queueJobs(
  databaseUrl: string,
  queue = 'switchboard.agents',
): Promise<{ state: string; retryCount: number; runId: string }[]> {
  const { adminQuery } = await import('./postgres.js');
  const result = await adminQuery(
    `SELECT state, retry_count, data->>'runId' AS run_id FROM pgboss.job WHERE name = '${queue}' ORDER BY created_on`,
    databaseUrl,
  );
  return (result.rows as { state: string; retry_count: number; run_id: string }[]).map((row) => ({
    state: row.state,
    retryCount: row.retry_count,
    runId: row.run_id,
  }));
}

/** Polls until `condition` holds for the queue's jobs; returns them. */
export async function waitForJobs(
  databaseUrl: string,
  condition: (jobs: Awaited<ReturnType<typeof queueJobs>>) => boolean,
  withinMs = 30_000,
): Promise<Awaited<ReturnType<typeof queueJobs>>> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const jobs = await queueJobs(databaseUrl);
    if (condition(jobs)) return jobs;
    if (Date.now() > deadline) throw new Error(`timed out waiting for the jobs: ${JSON.stringify(jobs)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Waits until the workflow run's status satisfies `done`, then returns what `workflow status --json`
 * shows on machine `m`. The waiting reads the shared database, one query per poll: a CLI process per
 * poll (a Node start, a connection, a schema check) cost these tests more CPU than the workers they
 * watch. The CLI still gives the answer the test checks. Throws, with the run as shown, once
 * `deadline` (epoch ms) passes.
 */
export async function untilWorkflowStatus(
  m: WorkerMachine,
  runId: string,
  done: (status: string) => boolean,
  deadline: number,
): Promise<WorkflowRunResult> {
  const { runCli } = await import('./run-cli.js');
  const { adminQuery } = await import('./postgres.js');
  const shown = async (): Promise<WorkflowRunResult> => {
    const result = await runCli(['--config', m.config, 'workflow', 'status', runId, '--json'], m);
    if (result.status !== 0) throw new Error(`workflow status ${runId}: ${result.stderr}`);
    return JSON.parse(result.stdout) as WorkflowRunResult;
  };
  for (;;) {
    const rows = await adminQuery(
      `SELECT status FROM workflow_runs WHERE id = '${runId.replaceAll("'", "''")}'`,
      m.env.SWITCHBOARD_DATABASE_URL,
    );
    const status = (rows.rows[0] as { status: string } | undefined)?.status;
    if (status !== undefined && done(status)) {
      const run = await shown();
      if (done(run.status)) return run;
    }
    if (Date.now() > deadline)
      throw new Error(`workflow run ${runId} is still ${JSON.stringify(await shown())}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Waits (see `untilWorkflowStatus`) until each run is no longer `running`; returns them in the order given. */
export async function untilWorkflowsSettle(
  m: WorkerMachine,
  runIds: readonly string[],
  deadline: number,
): Promise<WorkflowRunResult[]> {
  const settled: WorkflowRunResult[] = [];
  for (const runId of runIds)
    settled.push(await untilWorkflowStatus(m, runId, (status) => status !== 'running', deadline));
  return settled;
}

/** What `enqueueAgentTasks` submits: one task file per id, `Add <id>`, verified by a command. */
export interface AgentTaskBatch {
  /** Folder the task files are written to. */
  root: string;
  ids: readonly string[];
  /** The simulator's URL, passed as `--base-url`. */
  baseUrl: string;
  /** `--repo` (a remote URL or bare repository); without it the submitter's cwd is the repository. */
  repo?: string;
  /** The task's verify command. @default `test -f <id>.txt` */
  verify?: (id: string) => string;
}

/**
 * Writes a task file per id and submits them all with `agent run-all --enqueue` from machine `m`
 * (in folder `cwd`, default the machine's own); returns the queued run ids, one per task, in order.
 */
export async function enqueueAgentTasks(
  m: WorkerMachine,
  { root, ids, baseUrl, repo, verify = (id) => `test -f ${id}.txt` }: AgentTaskBatch,
  cwd = m.cwd,
): Promise<string[]> {
  const { runCli } = await import('./run-cli.js');
  const files = ids.map((id) => {
    const file = join(root, `${id}.json`);
    writeFileSync(file, JSON.stringify({ id, title: `Add ${id}`, verify: verify(id) }));
    return file;
  });
  const args = ['--config', m.config, 'agent', 'run-all', ...files];
  if (repo !== undefined) args.push('--repo', repo);
  const enqueued = await runCli([...args, '--enqueue', '--base-url', baseUrl], { cwd, env: m.env });
  if (enqueued.status !== 0) throw new Error(`agent run-all --enqueue: ${enqueued.stderr}`);
  return enqueued.stdout.trim().split('\n');
}
