import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { slowScenario } from './helpers/agent-scenarios.js';
import { agentCliSuite, waitUntil, type Fixture } from './helpers/agent-cli.js';
import { oldNodeDirectory, PROVISIONED_NODE } from './helpers/old-node.js';
import { createTestDatabase, POSTGRES_SKIP } from './helpers/postgres.js';
import { runCli } from './helpers/run-cli.js';

// `kill -9 <pid>` of a command started with bin/switchboard, as an orchestrator's timeout sends it,
// with Debian's Node 20 first on PATH (the launcher then runs the CLI on the provisioned Node 22): the
// pid the user holds must be the CLI itself, so nothing of the command outlives the kill. Each command
// runs in a folder of its own, and every process whose arguments, environment or working directory
// name that folder counts as the command's.

const launcher = join(import.meta.dirname, '../bin/switchboard');
const oldNode = oldNodeDirectory();
const { children, fixture, simLog, simUrl } = agentCliSuite();
/** Processes of the current test found alive after the kill, ended so they do not outlive the file. */
let leftovers: number[] = [];

afterEach(() => {
  for (const pid of leftovers.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
});

/** Live processes (not zombies, not this one) that mention `folder`. */
function processesOf(folder: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const status = readFileSync(`/proc/${entry}/status`, 'latin1');
      if (/^State:\s+Z/m.test(status)) continue;
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'latin1');
      const environ = readFileSync(`/proc/${entry}/environ`, 'latin1');
      const cwd = readlinkSync(`/proc/${entry}/cwd`);
      if (cmdline.includes(folder) || environ.includes(folder) || cwd.startsWith(folder))
        found.push(Number(entry));
    } catch {
      // Gone while we looked, or not ours to read.
    }
  }
  return found;
}

/** Starts `bin/switchboard args…` the way a user on a Node 20 machine does. */
function launch(f: Fixture, args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  const child = spawn(launcher, args, {
    cwd: f.repo,
    env: { ...f.env, ...env, PATH: `${oldNode}:/usr/bin:/bin`, TMPDIR: f.root },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child.pid ?? 0);
  return child;
}

/** SIGKILLs the pid the user started; resolves with the command's processes still alive after a while. */
async function killAndWait(child: ChildProcess, folder: string): Promise<number[]> {
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.once('exit', (_code, signal) => resolve(signal)),
  );
  child.kill('SIGKILL');
  expect(await exited).toBe('SIGKILL');
  // The parent watches notice a dead parent within about a second; allow a loaded machine far more.
  const deadline = Date.now() + 20_000;
  let alive = processesOf(folder);
  while (alive.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    alive = processesOf(folder);
  }
  leftovers = alive;
  return alive;
}

function output(child: ChildProcess): () => string {
  let text = '';
  child.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  return () => text;
}

describe.skipIf(oldNode === undefined || !existsSync(PROVISIONED_NODE))(
  'kill -9 of a bin/switchboard command under a Node 20 PATH',
  () => {
    it('call: nothing is left waiting for the answer', async () => {
      const f = await fixture(slowScenario({ delayMs: 120_000 }));
      const call = launch(f, ['call', 'claude:haiku', 'ping', '--base-url', simUrl()]);
      await waitUntil(() => simLog().length > 0);
      expect(await killAndWait(call, f.root)).toEqual([]);
    });

    it('workflow run: the script step dies with it and `workflow resume` takes the run over', async () => {
      const f = await fixture(slowScenario({ delayMs: 0 }));
      const file = join(f.root, 'slow.yaml');
      writeFileSync(
        file,
        `workflow:
  name: slow
  entry_point: wait
agents:
  - name: wait
    type: script
    command: sh
    args: ["-c", "if [ -f '{{ workflow.dir }}/go' ]; then echo done; else : > '{{ workflow.dir }}/started'; exec tail -f '{{ workflow.dir }}/started'; fi"]
    routes:
      - to: $end
`,
      );
      const run = launch(f, ['workflow', 'run', file, '--run-id', 'killed-run']);
      await waitUntil(() => existsSync(join(f.root, 'started')));
      expect(await killAndWait(run, f.root)).toEqual([]);
      writeFileSync(join(f.root, 'go'), '');
      const resumed = await runCli(['workflow', 'resume', 'killed-run'], { cwd: f.repo, env: f.env });
      expect(resumed.stderr).not.toMatch(/being advanced/);
      expect(resumed.status).toBe(0);
    });

    it('agent run: Claude Code dies with it', async () => {
      const f = await fixture(slowScenario({ delayMs: 120_000 }));
      const task = f.task('task', { id: 'killed', title: 'Take your time' });
      const runner = launch(f, ['agent', 'run', '--task', task, '--base-url', simUrl()]);
      await waitUntil(() => simLog().length > 0);
      expect(await killAndWait(runner, f.root)).toEqual([]);
    });

    it.skipIf(POSTGRES_SKIP !== undefined)('worker: nothing is left serving the queues', async () => {
      const f = await fixture(slowScenario({ delayMs: 0 }));
      const database = await createTestDatabase();
      try {
        const worker = launch(f, ['worker', '--queues', 'agents,workflows'], {
          SWITCHBOARD_DATABASE_URL: database.url,
        });
        const said = output(worker);
        await waitUntil(() => /worker ready/.test(said()) || worker.exitCode !== null);
        expect(said()).toMatch(/worker ready/);
        expect(await killAndWait(worker, f.root)).toEqual([]);
      } finally {
        await database.drop();
      }
    });
  },
);
