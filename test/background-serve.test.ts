import { execFile, spawn } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { serverStateFolders, type TokenRecord } from '../src/confinement/server-tokens.js';
import { startSimulator } from '../src/sim/server.js';
import { runCli } from './helpers/run-cli.js';
import { waitFor } from './helpers/wait-for.js';

// The background server: a plain `route` (and the prompt hook) with no server named starts one
// `serve` per state folder and settings for the next client, runs in process this time, and asks it
// from then on. Real processes throughout: the built CLI, the server it starts, `kill -9`. Every
// server a test started is found by its command line in /proc and killed by pid at the end.

const skills = join(import.meta.dirname, 'fixtures/skills');
const cli = join(import.meta.dirname, '../dist/cli/main.js');
const directories: string[] = [];
let env: NodeJS.ProcessEnv;
let home: string;

beforeAll(() => {
  home = temporaryDirectory();
  env = {
    ...process.env,
    HOME: home,
    SWITCHBOARD_BACKGROUND_SERVE: '1',
    // Bounds what a failed test could leave running.
    SWITCHBOARD_BACKGROUND_IDLE_EXIT: '120',
    SWITCHBOARD_DEBUG: '1',
    SWITCHBOARD_SERVER: '',
    SWITCHBOARD_SERVER_TOKEN: '',
    SWITCHBOARD_STATE_DIR: '',
  };
});

afterEach(async () => {
  for (const directory of directories) {
    for (const pid of serversOf(directory)) kill(pid);
    await waitFor(() => serversOf(directory).length === 0, { what: `no server left in ${directory}` });
  }
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function temporaryDirectory(): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-background-')));
  directories.push(directory);
  return directory;
}

function kill(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone already
  }
}

/** The pids of the `serve` processes started with a state folder under `directory`. */
function serversOf(directory: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let words: string[];
    try {
      words = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    const at = words.indexOf('--state-dir');
    if (at !== -1 && words[at + 1]?.startsWith(directory) === true && words.includes('serve'))
      pids.push(Number(name));
  }
  return pids;
}

function records(stateDir: string): TokenRecord[] {
  if (!existsSync(stateDir)) return [];
  return readdirSync(stateDir)
    .filter((name) => /^serve-\d+\.token$/.test(name))
    .map((name) => JSON.parse(readFileSync(join(stateDir, name), 'utf8')) as TokenRecord);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const route = (stateDir: string, cwd: string, text: string) =>
  runCli(['--state-dir', stateDir, 'route', '--skills', skills, '--json', text], { cwd, env });

/** Waits for the one background server of `stateDir` to be listening, and gives its record. */
async function listening(stateDir: string): Promise<TokenRecord> {
  await waitFor(() => records(stateDir).length > 0 && !existsSync(join(stateDir, 'serve-background.lock')), {
    withinMs: 60_000,
    what: `a background server's token file in ${stateDir}`,
  });
  return records(stateDir)[0] as TokenRecord;
}

describe('a plain route with no server named starts one background server and uses it from then on', () => {
  it('two racing routes in a fresh state folder start exactly one; the next route is answered by it', async () => {
    const cwd = temporaryDirectory();
    const stateDir = join(cwd, 'state');
    const [first, second] = await Promise.all([
      route(stateDir, cwd, 'the app crashes whenever I save'),
      route(stateDir, cwd, 'the app crashes whenever I open a file'),
    ]);
    for (const run of [first, second]) {
      expect(run.status, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ skill: 'fix-bug' });
      expect(run.stderr).toMatch(/background server for .*: (started|starting); routing in process/);
    }
    expect([first, second].filter((run) => run.stderr.includes(': started;'))).toHaveLength(1);

    const record = await listening(stateDir);
    expect(records(stateDir)).toHaveLength(1);
    expect(serversOf(cwd)).toEqual([record.pid]);
    // Its token is the user's alone, in a folder agents' sandboxes hide while it runs.
    expect(statSync(join(stateDir, `serve-${new URL(record.url).port}.token`)).mode & 0o777).toBe(0o600);
    expect(serverStateFolders(home)).toContain(stateDir);

    const third = await route(stateDir, cwd, 'the app crashes whenever I print');
    expect(third.status, third.stderr).toBe(0);
    expect(JSON.parse(third.stdout)).toMatchObject({ skill: 'fix-bug' });
    expect(third.stderr).toContain(`routed by the background server ${record.url} (pid ${record.pid})`);
  });

  it('other skills do not use it: they start a server of their own', async () => {
    const cwd = temporaryDirectory();
    const stateDir = join(cwd, 'state');
    await route(stateDir, cwd, 'the app crashes whenever I save');
    const record = await listening(stateDir);
    const other = await runCli(
      ['--state-dir', stateDir, 'route', '--skills', skills, '--mode', 'rules-only', 'the app crashes'],
      { cwd, env },
    );
    expect(other.stderr).not.toContain('routed by the background server');
    expect(other.stderr).toContain(': started; routing in process');
    await waitFor(() => records(stateDir).length === 2, { withinMs: 60_000, what: 'a second server' });
    expect(records(stateDir).map((entry) => entry.pid)).toContain(record.pid);
  });

  it('after kill -9 of it the next route answers in process and starts a new one', async () => {
    const cwd = temporaryDirectory();
    const stateDir = join(cwd, 'state');
    await route(stateDir, cwd, 'the app crashes whenever I save');
    const killed = await listening(stateDir);
    process.kill(killed.pid, 'SIGKILL');
    await waitFor(() => !alive(killed.pid), { what: 'the killed server gone' });

    const next = await route(stateDir, cwd, 'the app crashes whenever I quit');
    expect(next.status, next.stderr).toBe(0);
    expect(JSON.parse(next.stdout)).toMatchObject({ skill: 'fix-bug' });
    expect(next.stderr).not.toContain('did not answer');
    expect(next.stderr).toContain(': started; routing in process');

    const replacement = await listening(stateDir);
    expect(replacement.pid).not.toBe(killed.pid);
    expect(records(stateDir)).toHaveLength(1);
    const after = await route(stateDir, cwd, 'the app crashes whenever I undo');
    expect(after.stderr).toContain(`(pid ${replacement.pid})`);
  });

  it('a server that fails to start holds no lock: the next route starts one at once', async () => {
    const cwd = temporaryDirectory();
    const stateDir = join(cwd, 'state');
    // serve refuses a token this short; routing in process has no use for it.
    const failing = await runCli(['--state-dir', stateDir, 'route', '--skills', skills, 'the app crashes'], {
      cwd,
      env: { ...env, SWITCHBOARD_SERVER_TOKEN: 'too-short' },
    });
    expect(failing.status, failing.stderr).toBe(0);
    expect(failing.stderr).toContain(': started; routing in process');
    const log = join(stateDir, 'serve-background.log');
    await waitFor(
      () => serversOf(cwd).length === 0 && readFileSync(log, 'utf8').includes('shorter than 16 characters'),
      { withinMs: 60_000, what: 'the failed server gone, its reason in the log' },
    );

    const next = await route(stateDir, cwd, 'the app crashes whenever I save');
    expect(next.status, next.stderr).toBe(0);
    expect(next.stderr).toContain(': started; routing in process');
    const record = await listening(stateDir);
    const after = await route(stateDir, cwd, 'the app crashes whenever I quit');
    expect(after.stderr).toContain(`routed by the background server ${record.url} (pid ${record.pid})`);
  });

  it('is never started with SWITCHBOARD_BACKGROUND_SERVE=0, nor under CI unless asked for', async () => {
    const cwd = temporaryDirectory();
    const stateDir = join(cwd, 'state');
    for (const extra of [
      { SWITCHBOARD_BACKGROUND_SERVE: '0' },
      { SWITCHBOARD_BACKGROUND_SERVE: '', CI: 'true' },
    ]) {
      const run = await runCli(['--state-dir', stateDir, 'route', '--skills', skills, 'the app crashes'], {
        cwd,
        env: { ...env, ...extra },
      });
      expect(run.status, run.stderr).toBe(0);
      expect(run.stderr).not.toContain('background server');
    }
    expect(existsSync(join(stateDir, 'serve-background.lock'))).toBe(false);
    expect(serversOf(cwd)).toEqual([]);
  });
});

describe('the prompt hook and the background server', () => {
  it('the first prompt starts it and routes in process; the next ones are routed by it', async () => {
    const cwd = temporaryDirectory();
    const stateDir = join(cwd, 'state');
    const hook = (prompt: string) =>
      runCli(['--state-dir', stateDir, 'hooks', 'run', '--skills', skills, '--deadline', '20000'], {
        cwd,
        env,
        input: JSON.stringify({ prompt, session_id: 'background', cwd }),
      });
    const first = await hook('the app crashes whenever I save');
    expect(first.stdout).toContain('the skill \\"fix-bug\\"');
    expect(first.stderr).toContain('background server: started');
    const record = await listening(stateDir);
    const second = await hook('the app crashes whenever I open a file');
    expect(second.stdout).toContain('the skill \\"fix-bug\\"');
    expect(second.stderr).toContain(`routed by the server ${record.url}`);
  });

  it('answered by it, the hook loads neither commander nor the config nor the router nor the skills', async () => {
    const cwd = temporaryDirectory();
    const stateDir = join(cwd, 'state');
    const resolved = join(cwd, 'resolved.txt');
    writeFileSync(resolved, '');
    // Set for every run: the variable is one of the settings the server is found by.
    const hookEnv = { ...env, SWITCHBOARD_TEST_RESOLVED: resolved };
    const args = ['--state-dir', stateDir, 'hooks', 'run', '--skills', skills, '--deadline', '20000'];
    const input = (prompt: string) => JSON.stringify({ prompt, session_id: 'background', cwd });
    const first = await runCli(args, { cwd, env: hookEnv, input: input('the app crashes whenever I save') });
    expect(first.stderr).toContain('background server: started');
    const record = await listening(stateDir);

    const answered = await new Promise<{ stdout: string; stderr: string }>((resolve) => {
      const child = execFile(
        process.execPath,
        ['--import', join(import.meta.dirname, 'fixtures/lazy/record-resolved.mjs'), cli, ...args],
        { cwd, env: hookEnv },
        (_error, stdout, stderr) => resolve({ stdout, stderr }),
      );
      child.stdin?.end(input('the app crashes whenever I open a file'));
    });
    expect(answered.stdout).toContain('fix-bug: Find and fix a defect');
    expect(answered.stderr).toContain(`routed by the server ${record.url}`);
    const loaded = readFileSync(resolved, 'utf8').split('\n');
    expect(loaded.filter((url) => url.includes('/dist/cli/main.js'))).toHaveLength(1);
    const heavy =
      /node_modules\/(commander|yaml|zod)\/|better-sqlite3|dist\/cli\/(program|hooks|shared)\.js|dist\/core\/config\.js|dist\/route\//;
    expect(loaded.filter((url) => heavy.test(url))).toEqual([]);
  });
});

describe('a plain call and the background server', () => {
  it('the first call starts it and runs in process; the next one goes through it', async () => {
    const sim = await startSimulator({ maxLifetimeMs: 120_000, scenario: { fallback: { text: 'pong' } } });
    try {
      const cwd = temporaryDirectory();
      const stateDir = join(cwd, 'state');
      const callEnv = {
        ...env,
        ANTHROPIC_API_KEY: 'sk-ant-api03-background-test',
        ANTHROPIC_BASE_URL: sim.url,
      };
      const call = () =>
        runCli(['--state-dir', stateDir, 'call', 'anthropic:claude-haiku-4-5', 'hi'], { cwd, env: callEnv });
      const first = await call();
      expect(first.status, first.stderr).toBe(0);
      expect(first.stdout.trim()).toBe('pong');
      expect(first.stderr).toContain(': started; calling in process');
      const record = await listening(stateDir);
      const second = await call();
      expect(second.status, second.stderr).toBe(0);
      expect(second.stdout.trim()).toBe('pong');
      expect(second.stderr).toContain(`called through the background server ${record.url}`);
    } finally {
      await sim.close();
    }
  });
});

describe('serve --idle-exit', () => {
  it('stops by itself after that long without a request, removing its token file', async () => {
    const cwd = temporaryDirectory();
    const stateDir = join(cwd, 'state');
    const child = spawn(
      process.execPath,
      [
        cli,
        '--state-dir',
        stateDir,
        'serve',
        '--port',
        '0',
        '--pool',
        '0',
        '--idle-exit',
        '1',
        '--skills',
        skills,
      ],
      { cwd, env: { ...env, SWITCHBOARD_BACKGROUND_SERVE: '0' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await waitFor(() => records(stateDir).length === 1, { withinMs: 60_000, what: 'its token file' });
    const started = Date.now();
    expect(await exited).toBe(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(500);
    expect(output).toContain('no request for 1 s; stopping');
    expect(records(stateDir)).toEqual([]);
  });
});
