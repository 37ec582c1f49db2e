import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import Sqlite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { runCli, type CliRun } from './helpers/run-cli.js';
import { waitFor } from './helpers/wait-for.js';

// A paid answer is not lost to a ledger that cannot be written: the built CLI and `serve`, their state
// folder on a small tmpfs that the test fills while the provider (`switchboard sim`) is still answering,
// or on a read-only bind mount. Each runs in a mount namespace of its own (`unshare`, held by a sleeping
// process; every CLI process joins it with `nsenter`), so no mount outlives the test and root's disregard
// for file permissions does not matter: a full tmpfs and a read-only mount refuse root too.

const cli = join(import.meta.dirname, '../dist/cli/main.js');
const require = createRequire(import.meta.url);
const directories: string[] = [];
const holders = new Set<ChildProcess>();
let sim: Simulator;
let env: NodeJS.ProcessEnv;

/** Why these tests cannot run here (stated in their title), or undefined. */
function missingTool(): string | undefined {
  if (process.platform !== 'linux') return 'mount namespaces are Linux only';
  if (process.getuid?.() !== 0) return 'needs root to mount a tmpfs in a mount namespace';
  for (const tool of ['unshare', 'nsenter', 'mount']) {
    if (spawnSync(tool, ['--version'], { stdio: 'ignore' }).error !== undefined)
      return `${tool} (util-linux) is not installed`;
  }
  return undefined;
}
const missing = missingTool();

// gpt-4.1-mini at $0.40 / $1.60 per million tokens: each call below is estimated at about $0.00164
// (1,024 output tokens assumed) and costs $0.001924 (10 in, 1,200 out). A daily cap of $0.003 lets one
// call through and refuses a second, whether the first counts at its estimate or at its cost.
const CAP =
  'call: { retries_per_provider: 0 }\nbudgets:\n  rules:\n    - { provider: openai, daily_usd: 0.003 }\n';
const ESTIMATE = 0.00164;
const COST = 0.001924;

beforeAll(async () => {
  sim = await startSimulator({
    maxLifetimeMs: 300_000,
    scenario: {
      rules: [
        // Slow enough for the test to fill the disk after the reservation and before the answer.
        {
          match: { text: 'slow' },
          reply: { text: 'slow answer', usage: { input: 10, output: 1_200 }, delayMs: 2_000 },
        },
        { match: {}, reply: { text: 'quick answer', usage: { input: 10, output: 1_200 } } },
      ],
    },
  });
  env = {
    ...process.env,
    OPENAI_API_KEY: 'sk-proj-ledger-unwritable-0001',
    OPENAI_BASE_URL: sim.openAiBaseUrl,
    SWITCHBOARD_SERVER: '',
    SWITCHBOARD_DEBUG: '',
  };
});

afterAll(async () => {
  for (const holder of holders) holder.kill('SIGKILL');
  await sim?.close();
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

/** A working folder with the cap's switchboard.yaml and an empty `.switchboard` to mount over. */
function workspace(): string {
  const cwd = mkdtempSync(join(tmpdir(), 'switchboard-unwritable-'));
  directories.push(cwd);
  writeFileSync(join(cwd, 'switchboard.yaml'), CAP);
  mkdirSync(join(cwd, '.switchboard'));
  return cwd;
}

/** A mount namespace in which `.switchboard` of `cwd` is what `setup` (a shell script, `$1` the folder) made it. */
interface Namespace {
  /** `path` as processes in the namespace see it, reachable from the test's own namespace. */
  inside(path: string): string;
  /** Runs the built CLI in the namespace, in `cwd`. */
  run(args: readonly string[]): Promise<CliRun>;
  /** Starts the built CLI in the namespace without waiting for it. */
  start(args: readonly string[]): ChildProcess;
  /**
   * Opens the SQLite file at `file` in a process in the namespace and keeps it open until that process is
   * killed (SQLite resolves /proc/<pid>/root, so the test cannot open it from outside).
   */
  holdOpen(file: string): Promise<ChildProcess>;
}

async function namespace(cwd: string, setup: string): Promise<Namespace> {
  const folder = join(cwd, '.switchboard');
  const holder = spawn(
    'unshare',
    [
      '--mount',
      '--propagation',
      'private',
      'sh',
      '-c',
      `${setup} && echo ready && exec sleep 600`,
      'sh',
      folder,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  holders.add(holder);
  let output = '';
  holder.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  holder.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await waitFor(() => output.includes('ready') || holder.exitCode !== null, { what: 'the mount namespace' });
  if (!output.includes('ready')) throw new Error(`cannot set up the mount namespace: ${output}`);
  const pid = String(holder.pid);
  const command = (args: readonly string[]) => [
    '--target',
    pid,
    '--mount',
    `--wd=${cwd}`,
    '--',
    process.execPath,
    cli,
    ...args,
  ];
  return {
    inside: (path) => `/proc/${pid}/root${path}`,
    run: (args) =>
      new Promise((resolve) => {
        const child = execFile(
          'nsenter',
          command(args),
          { env, encoding: 'utf8', timeout: 60_000 },
          (error, stdout, stderr) => {
            const status = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
            resolve({ status, stdout, stderr });
          },
        );
        child.stdin?.end();
      }),
    start: (args) => {
      const child = spawn('nsenter', command(args), { env, stdio: ['ignore', 'pipe', 'pipe'] });
      holders.add(child);
      return child;
    },
    holdOpen: async (file) => {
      const script =
        'const db = new (require(process.argv[1]))(process.argv[2]);' +
        "db.prepare('SELECT count(*) FROM call_attempts').get(); console.log('open'); setInterval(() => {}, 60000);";
      const child = spawn(
        'nsenter',
        [
          '--target',
          pid,
          '--mount',
          '--',
          process.execPath,
          '-e',
          script,
          require.resolve('better-sqlite3'),
          file,
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      holders.add(child);
      let said = '';
      child.stdout.on('data', (chunk: Buffer) => (said += chunk.toString()));
      await waitFor(() => said.includes('open') || child.exitCode !== null, {
        what: 'the ledger to be open',
      });
      if (!said.includes('open')) throw new Error(`cannot hold ${file} open`);
      return child;
    },
  };
}

const tmpfs = (bytes: number) => `mount -t tmpfs -o size=${bytes} switchboard-test "$1"`;
const readOnly = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1"';

/** Fills the file system holding `folder` (as the test sees it) to the last byte; returns the filler. */
function fill(folder: string, name = 'filler'): string {
  const file = join(folder, name);
  const descriptor = openSync(file, 'w');
  try {
    for (const size of [1 << 20, 1 << 16, 1 << 12, 512, 1]) {
      const block = Buffer.alloc(size, 1);
      try {
        for (;;) writeSync(descriptor, block);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
      }
    }
  } finally {
    closeSync(descriptor);
  }
  return file;
}

const completions = () => sim.requests.filter((entry) => entry.path.endsWith('/chat/completions')).length;

interface Budget {
  spent: number;
  reserved: number;
  cap: number;
}

async function budgetOf(space: Namespace): Promise<Budget> {
  const stats = await space.run(['stats', '--json']);
  expect(stats.status, stats.stderr).toBe(0);
  return (JSON.parse(stats.stdout) as { budgets: Budget[] }).budgets[0] as Budget;
}

/** The one line on stderr: the ledger's warning, naming the fault and the fix, and no stack trace. */
function expectOneWarning(stderr: string, fault: RegExp, fix: RegExp): void {
  const lines = stderr.trimEnd().split('\n');
  expect(lines, stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^switchboard: warning: the ledger did not record this call \(/);
  expect(lines[0]).toMatch(fault);
  expect(lines[0]).toMatch(fix);
  expect(stderr).not.toMatch(/\n\s+at /);
}

describe.skipIf(missing !== undefined)(
  `a ledger that cannot be written${missing === undefined ? '' : ` (skipped: ${missing})`}`,
  () => {
    it('call: the disk fills between the reservation and the record: exit 0, the answer, one warning; the spend stays for the next process', async () => {
      const cwd = workspace();
      const space = await namespace(cwd, tmpfs(8 << 20));
      const before = completions();
      const child = space.start(['call', 'openai:gpt-4.1-mini', 'a slow question']);
      let stdout = '';
      let stderr = '';
      child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      // The request reached the provider: its reservation is in the ledger. Now the disk fills.
      await waitFor(() => completions() > before, { what: 'the call to reach the simulator' });
      const filler = fill(space.inside(join(cwd, '.switchboard')));

      expect(await exited, stderr).toBe(0);
      expect(stdout).toBe('slow answer\n');
      expectOneWarning(stderr, /database or disk is full/, /counts as spent.*free disk space on \//);

      // Space again. A new process finds the spend, held at the estimate, and the cap counts it.
      unlinkSync(filler);
      const budget = await budgetOf(space);
      expect(budget.spent).toBe(0);
      expect(budget.reserved).toBeCloseTo(ESTIMATE, 5);
      const refused = await space.run(['call', 'openai:gpt-4.1-mini', 'another question']);
      expect(refused.status, refused.stderr).toBe(27);
      expect(refused.stderr).toMatch(/daily budget of \$0\.003 for openai/);
      expect(completions() - before).toBe(1);
    });

    it('serve: /call answers 200 with the answer and the warning when the disk fills; the real cost is recorded once there is room', async () => {
      const cwd = workspace();
      const space = await namespace(cwd, tmpfs(8 << 20));
      const server = space.start(['serve', '--port', '0', '--pool', '0']);
      let output = '';
      server.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      server.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      await waitFor(() => /listening on http:\/\/\S+/.test(output), {
        what: 'serve to listen',
        withinMs: 30_000,
      });
      const url = /listening on (http:\/\/\S+)/.exec(output)?.[1] as string;
      const port = new URL(url).port;
      const folder = space.inside(join(cwd, '.switchboard'));
      const { token } = JSON.parse(readFileSync(join(folder, `serve-${port}.token`), 'utf8')) as {
        token: string;
      };
      const post = (prompt: string) =>
        fetch(`${url}/call`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ spec: 'openai:gpt-4.1-mini', prompt }),
        });

      const before = completions();
      const answering = post('a slow question');
      await waitFor(() => completions() > before, { what: 'the call to reach the simulator' });
      const filler = fill(folder);
      const response = await answering;
      const body = (await response.json()) as { text: string; warnings: string[] };
      expect(response.status).toBe(200);
      expect(body.text).toBe('slow answer');
      expect(body.warnings).toHaveLength(1);
      expect(body.warnings[0]).toMatch(/^the ledger did not record this call \(.*database or disk is full/);
      expect(response.headers.get('x-switchboard-warning')).toMatch(/^the ledger did not record this call/);

      // Space again: the server, still running, writes the real record and lets the reservation go,
      // so the cap holds the call's cost, not its estimate, and not for the reservation's lifetime.
      unlinkSync(filler);
      let budget: Budget | undefined;
      for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
        budget = await budgetOf(space);
        if (budget.reserved === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      expect(budget?.reserved).toBe(0);
      expect(budget?.spent).toBeCloseTo(COST, 9);
      const refused = await post('another question');
      const error = (await refused.json()) as { error: { code: string; message: string } };
      expect(error.error.code).toBe('BUDGET_EXCEEDED');
      expect(error.error.message).toMatch(/\$0\.00192 spent/);
      expect(completions() - before).toBe(1);
      expect(output).not.toMatch(/\n\s+at /);
    });

    it('call: a disk already full refuses the call before it is sent: one line, exit 75', async () => {
      const cwd = workspace();
      const space = await namespace(cwd, tmpfs(8 << 20));
      const folder = space.inside(join(cwd, '.switchboard'));
      // The ledger exists, and another process has it open (its -shm file stays); then the disk fills.
      expect((await space.run(['stats'])).status).toBe(0);
      const reader = await space.holdOpen(join(cwd, '.switchboard', 'ledger.db'));
      fill(folder);
      const before = completions();
      try {
        const refused = await space.run(['call', 'openai:gpt-4.1-mini', 'a question']);
        expect(refused.status, refused.stderr).toBe(75);
        expect(refused.stderr.trimEnd().split('\n')).toHaveLength(1);
        expect(refused.stderr).toMatch(
          /^switchboard: cannot reserve budget in \S+ledger\.db: database or disk is full; nothing was sent \(free disk space on \S+, then retry\)$/m,
        );
      } finally {
        reader.kill('SIGKILL');
        await new Promise((resolve) => reader.once('exit', resolve));
      }
      // With no process holding it open (and its -shm file gone with the last one), the ledger cannot even
      // be opened: a new -shm file needs room.
      unlinkSync(join(folder, 'ledger.db-shm'));
      fill(folder, 'filler-2');
      const unopened = await space.run(['call', 'openai:gpt-4.1-mini', 'a question']);
      expect(unopened.status, unopened.stderr).toBe(75);
      expect(unopened.stderr).toMatch(
        /^switchboard: cannot open the ledger \S+ledger\.db: the disk is full \(no room for its -shm file\) \(free disk space on \S+\)\n$/,
      );
      expect(completions()).toBe(before);
    });

    it('call: a read-only state folder refuses a capped call before it is sent (exit 75) and keeps an answer without a cap (exit 0, one warning)', async () => {
      const cwd = workspace();
      // The ledger is made while the folder is writable, and kept open by this test, as another process
      // using it would (its -wal and -shm files stay, so a read-only opener can still read it).
      expect((await runCli(['stats'], { cwd, env })).status).toBe(0);
      const reader = new Sqlite(join(cwd, '.switchboard', 'ledger.db'));
      reader.prepare('SELECT count(*) FROM call_attempts').get();
      try {
        const space = await namespace(cwd, readOnly);
        const before = completions();
        const refused = await space.run(['call', 'openai:gpt-4.1-mini', 'a question']);
        expect(refused.status, refused.stderr).toBe(75);
        expect(refused.stderr.trimEnd().split('\n')).toHaveLength(1);
        expect(refused.stderr).toMatch(
          /^switchboard: cannot reserve budget in \S+: attempt to write a readonly database; nothing was sent \(make \S+ writable, or choose another state folder with --state-dir, then retry\)$/m,
        );
        expect(completions()).toBe(before);

        writeFileSync(join(cwd, 'switchboard.yaml'), 'call: { retries_per_provider: 0 }\n');
        const answered = await space.run(['call', 'openai:gpt-4.1-mini', 'a question']);
        expect(answered.status, answered.stderr).toBe(0);
        expect(answered.stdout).toBe('quick answer\n');
        expectOneWarning(answered.stderr, /readonly database/, /cost is missing.*make \S+ writable/);
        expect(completions() - before).toBe(1);
      } finally {
        reader.close();
      }
    });

    it('call: a read-only state folder with no ledger open is refused before anything is sent: exit 75', async () => {
      const cwd = workspace();
      expect((await runCli(['stats'], { cwd, env })).status).toBe(0);
      const space = await namespace(cwd, readOnly);
      const before = completions();
      const refused = await space.run(['call', 'openai:gpt-4.1-mini', 'a question']);
      expect(refused.status, refused.stderr).toBe(75);
      expect(refused.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(refused.stderr).toMatch(/^switchboard: cannot open the ledger \S+: .* \(make \S+ writable/m);
      expect(completions()).toBe(before);
    });
  },
);
