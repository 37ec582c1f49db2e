import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runVerify } from '../src/agents/verify.js';
import { EXIT_CODES } from '../src/core/errors.js';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { IN_CI } from './helpers/ci.js';
import { runCli } from './helpers/run-cli.js';
import { killServers, serve, type Served } from './helpers/serve-process.js';

// Issue 35: nothing that acts answers without the token, loopback included. The built `serve` against
// raw HTTP from this machine, the built CLI finding the token file by itself, the file's life (0600,
// gone after SIGTERM), and a sandboxed command that cannot read it.

const skills = join(import.meta.dirname, 'fixtures/skills');
const children = new Set<ChildProcess>();
const directories: string[] = [];
let sim: Simulator;
let env: NodeJS.ProcessEnv;
let home: string;

const hasBwrap = (process.env['PATH'] ?? '').split(':').some((folder) => existsSync(join(folder, 'bwrap')));
const sandboxed = hasBwrap || IN_CI ? it : it.skip;

beforeAll(async () => {
  sim = await startSimulator({ maxLifetimeMs: 300_000, scenario: { fallback: { text: 'pong' } } });
  home = temporaryDirectory();
  env = {
    ...process.env,
    HOME: home,
    ANTHROPIC_API_KEY: 'sk-ant-api03-serve-token-test-key',
    ANTHROPIC_BASE_URL: sim.url,
    SWITCHBOARD_SERVER: '',
    SWITCHBOARD_SERVER_TOKEN: '',
    SWITCHBOARD_STATE_DIR: '',
  };
});

afterAll(async () => {
  killServers(children);
  await sim.close();
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

function temporaryDirectory(parent = tmpdir()): string {
  const directory = realpathSync(mkdtempSync(join(parent, 'switchboard-token-')));
  directories.push(directory);
  return directory;
}

function start(args: string[], cwd: string, extra: NodeJS.ProcessEnv = {}): Promise<Served> {
  return serve(['--port', '0', '--pool', '0', ...args], { cwd, env: { ...env, ...extra }, children });
}

const call = { spec: 'anthropic:claude-haiku-4-5', prompt: 'hi' };
const mcpCall = {
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name: 'route', arguments: { text: 'the app crashes whenever I save' } },
};

describe('serve: every route that acts or reveals wants the token, loopback included', () => {
  it('answers 401 to a caller on this machine without it (route, call, mcp, metrics, the UI API), and serves it with it', async () => {
    const cwd = temporaryDirectory();
    const server = await start(['--skills', skills, '--metrics', '--ui'], cwd);
    const asked = sim.requests.length;
    const requests: Array<[string, RequestInit]> = [
      ['/route', { method: 'POST', body: JSON.stringify({ text: 'the app crashes whenever I save' }) }],
      ['/call', { method: 'POST', body: JSON.stringify(call) }],
      ['/mcp', { method: 'POST', body: JSON.stringify(mcpCall) }],
      ['/metrics', { method: 'GET' }],
      ['/ui/api/runs', { method: 'GET' }],
    ];
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    for (const [path, init] of requests) {
      const refused = await fetch(`${server.url}${path}`, { ...init, headers });
      expect(refused.status, path).toBe(401);
    }
    // Nothing reached a provider, and the server's own 401 names the fix.
    expect(sim.requests.length).toBe(asked);
    const route = await fetch(`${server.url}/route`, { ...requests[0]?.[1], headers });
    expect(await route.json()).toMatchObject({
      error: { code: 'SERVER_AUTH', hint: expect.stringMatching(/serve-<port>\.token/) },
    });
    // Health says only that the server is up.
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);

    for (const [path, init] of requests) {
      const served = await fetch(`${server.url}${path}`, {
        ...init,
        headers: { ...headers, ...server.auth },
      });
      expect(served.status, path).toBe(200);
    }
    expect(sim.requests.length).toBeGreaterThan(asked);
  });
});

describe('the clients find the token themselves', () => {
  let cwd: string;
  let server: Served;

  beforeAll(async () => {
    cwd = temporaryDirectory();
    server = await start(['--skills', skills], cwd);
  });

  it('call and route --server find the token file themselves; a wrong token is one line and exit 67', async () => {
    const clientEnv = { ...env, SWITCHBOARD_SERVER: server.url };
    // In the folder serve was started in: its state folder's file.
    const here = await runCli(['call', call.spec, 'hi'], { cwd, env: clientEnv });
    expect(here, here.stderr).toMatchObject({ status: 0, stdout: 'pong\n' });
    // Elsewhere, with the same HOME: the per-user registry's file.
    const elsewhere = temporaryDirectory();
    const routed = await runCli(['route', '--json', 'the app crashes whenever I save'], {
      cwd: elsewhere,
      env: clientEnv,
    });
    expect(routed.status, routed.stderr).toBe(0);
    expect(JSON.parse(routed.stdout)).toMatchObject({ skill: 'fix-bug' });

    const wrong = await runCli(['call', call.spec, 'hi'], {
      cwd,
      env: { ...clientEnv, SWITCHBOARD_SERVER_TOKEN: 'not-the-token-of-this-server' },
    });
    expect(wrong.status).toBe(67);
    expect(EXIT_CODES.SERVER_AUTH).toBe(67);
    expect(wrong.stdout).toBe('');
    expect(wrong.stderr.trimEnd()).toBe(
      `switchboard: server ${server.url} refused the token from SWITCHBOARD_SERVER_TOKEN (set SWITCHBOARD_SERVER_TOKEN to the token ${server.url} was started with, or unset it to use the server's token file)`,
    );
    // Another HOME and another folder: no token to be found, and the line says where it would be.
    const stranger = temporaryDirectory();
    const none = await runCli(['call', call.spec, 'hi'], {
      cwd: stranger,
      env: { ...clientEnv, HOME: stranger },
    });
    expect(none.status).toBe(EXIT_CODES.SERVER_AUTH);
    expect(none.stderr.trimEnd()).toMatch(
      /^switchboard: server http:\/\/127\.0\.0\.1:\d+ wants its token and none was found \(set SWITCHBOARD_SERVER_TOKEN, or run from the folder serve was started in .*\)$/,
    );
    expect(server.stdout() + server.stderr()).not.toContain(server.token);
  });

  it('never sends a token file to a server on another machine', async () => {
    // 127.0.0.1 has the file; the same port on a name that is not loopback gets no token from it.
    const { findServerToken } = await import('../src/confinement/server-tokens.js');
    const port = new URL(server.url).port;
    const local = findServerToken(new URL(server.url), { environment: {}, home });
    expect(local?.token).toBe(server.token);
    expect(findServerToken(new URL(`http://localhost:${port}`), { environment: {}, home })?.token).toBe(
      server.token,
    );
    expect(findServerToken(new URL(`http://example.com:${port}`), { environment: {}, home })).toBeUndefined();
    // Another loopback address with the same port is another listener (any program may bind 127.0.0.5).
    expect(findServerToken(new URL(`http://127.0.0.5:${port}`), { environment: {}, home })).toBeUndefined();
  });
});

describe('the token file', () => {
  it('is 0600 in the state folder and in the per-user registry, and gone after SIGTERM', async () => {
    const cwd = temporaryDirectory();
    const server = await start([], cwd);
    const port = new URL(server.url).port;
    const files = [
      join(cwd, '.switchboard', `serve-${port}.token`),
      join(home, '.switchboard', 'servers', `${port}.token`),
    ];
    for (const file of files) {
      expect(statSync(file).mode & 0o777, file).toBe(0o600);
      expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ url: server.url, token: server.token });
    }
    expect(server.token.length).toBeGreaterThanOrEqual(32);
    server.child.kill('SIGTERM');
    expect(await server.exited).toMatchObject({ code: 0 });
    for (const file of files) expect(existsSync(file), file).toBe(false);
  });

  sandboxed(
    "cannot be read by a sandboxed setup or verify command, wherever serve's state folder lies",
    async () => {
      // A state folder outside HOME and /tmp (both hidden anyway): found through the registry and hidden.
      const parent = existsSync('/var/tmp') ? '/var/tmp' : process.cwd();
      const stateDir = temporaryDirectory(parent);
      const cwd = temporaryDirectory();
      // The runner (this process) and serve share HOME, as a user's do: the registry is how it finds serve.
      const server = await start(['--state-dir', stateDir], cwd, { HOME: homedir() });
      const port = new URL(server.url).port;
      const file = join(stateDir, `serve-${port}.token`);
      expect(readFileSync(file, 'utf8')).toContain(server.token);
      const worktree = temporaryDirectory();
      mkdirSync(join(worktree, 'sub'));
      const command = `cat ${file} ${join(homedir(), '.switchboard', 'servers', `${port}.token`)}; ls ${stateDir}`;
      const confined = await runVerify({
        command,
        cwd: worktree,
        timeoutMs: 30_000,
        env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: homedir() },
        confine: {},
      });
      expect(confined.sandbox).toEqual({ enabled: true });
      expect(confined.outputTail).not.toContain(server.token);
      expect(confined.outputTail).toMatch(/No such file/);
      // Unconfined, the same command reads it: the check above is not vacuous.
      const open = await runVerify({
        command,
        cwd: worktree,
        timeoutMs: 30_000,
        env: { PATH: process.env['PATH'] ?? '' },
      });
      expect(open.outputTail).toContain(server.token);
    },
  );
});
