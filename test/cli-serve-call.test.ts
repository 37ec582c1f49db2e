import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { openLedger } from '../src/store/ledger.js';
import { claudeProcessIds, waitForNoNewClaudeProcesses } from './helpers/claude.js';
import { runCli, type CliRun } from './helpers/run-cli.js';
import { killServers, serve as startServe, type Served } from './helpers/serve-process.js';
import { waitFor } from './helpers/wait-for.js';

// `switchboard serve`'s POST /call and the `--server` client of `call` and `route`, as a user runs them:
// the built CLI on both sides over loopback HTTP, the real Claude Code binary in the server's warm pool,
// `switchboard sim` as every provider, real SQLite ledgers.

const secret = 'sk-ant-api03-serve-call-secret-key';
const token = 'serve-call-test-token-0123456789';
const skills = join(import.meta.dirname, 'fixtures/skills');
const children = new Set<ChildProcess>();
const directories: string[] = [];
let sim: Simulator;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  sim = await startSimulator({
    maxLifetimeMs: 300_000,
    scenario: {
      rules: [
        { match: { text: 'auth' }, fault: { status: 401, message: 'bad key', echoKey: true } },
        { match: { provider: 'openai', text: 'chain' }, fault: { kind: 'overload' } },
        { match: { text: 'slow' }, reply: { text: 'slow done', delayMs: 2_500 } },
        { match: { text: 'repeat' }, reply: { echo: true } },
        { match: {}, reply: { text: 'pong', usage: { input: 50, output: 2 } } },
      ],
    },
  });
  env = {
    ...process.env,
    ANTHROPIC_API_KEY: secret,
    ANTHROPIC_BASE_URL: sim.url,
    OPENAI_API_KEY: 'sk-openai-serve-call-key',
    // The server calls only configured endpoints: the chain below names this one inline.
    OPENAI_BASE_URL: sim.openAiBaseUrl,
    CLAUDE_CONFIG_DIR: temporaryDirectory(),
    SWITCHBOARD_SERVER: '',
    SWITCHBOARD_SERVER_TOKEN: '',
  };
});

afterAll(async () => {
  killServers(children);
  await sim.close();
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

function temporaryDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'switchboard-serve-call-'));
  directories.push(directory);
  return directory;
}

function run(args: string[], cwd: string, extra: NodeJS.ProcessEnv = {}, input = ''): Promise<CliRun> {
  return runCli(args, { cwd, env: { ...env, ...extra }, input });
}

/** Each running server's `Authorization` header, by the URL it printed: /call wants the token. */
const auth = new Map<string, { authorization: string }>();

async function serve(args: string[], options: Parameters<typeof startServe>[1]): Promise<Served> {
  const server = await startServe(args, options);
  auth.set(server.url, server.auth);
  return server;
}

/** POST /call, with the server's token when `url` is the address it printed. */
async function postCall(
  url: string,
  body: unknown,
  headers: Record<string, string> | undefined = auth.get(url),
): Promise<{ status: number; text: string }> {
  const response = await fetch(`${url}/call`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

/** A loopback port nothing listens on (taken, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** This machine's first non-loopback IPv4 address, if it has one. */
function externalAddress(): string | undefined {
  return Object.values(networkInterfaces())
    .flat()
    .find((entry) => entry !== undefined && entry.family === 'IPv4' && !entry.internal)?.address;
}

describe('switchboard serve: POST /call', () => {
  it('answers claude: calls from its warm pool, prints what the in-process call prints, and records them', async () => {
    const cwd = temporaryDirectory();
    const server = await serve(['--port', '0', '--pool', '1'], { cwd, env, children });
    const viaServer = await run(['call', '--server', server.url, 'claude:haiku', 'ping', '--json'], cwd);
    expect(viaServer.status).toBe(0);
    const result = JSON.parse(viaServer.stdout) as { text: string; provider: string; warm?: boolean };
    // The pooled process answered, not a cold one started for this call; a shell user sees no warning.
    expect(result).toMatchObject({ success: true, text: 'pong', provider: 'claude:haiku', warm: true });
    expect(viaServer.stderr).toBe('');

    // SWITCHBOARD_SERVER does what --server does; the output is the in-process call's, byte for byte.
    const api = ['call', 'anthropic:claude-haiku-4-5', 'ping', '--tag', 'caller=shell'];
    const fromEnv = await run(api, cwd, { SWITCHBOARD_SERVER: server.url });
    const inProcess = await run(api, temporaryDirectory());
    expect(fromEnv).toEqual({ status: 0, stdout: 'pong\n', stderr: '' });
    expect(fromEnv).toEqual(inProcess);
    expect(await run([...api, '--print', 'text'], cwd, { SWITCHBOARD_SERVER: server.url })).toEqual(
      inProcess,
    );

    // A fallback chain: the OpenAI-compatible server answers overloaded, Claude Code (the pool) answers.
    const chained = await run(
      [
        'call',
        '--server',
        server.url,
        `openai@${sim.openAiBaseUrl}:gpt-4.1-mini,claude:haiku`,
        'chain me',
        '--json',
      ],
      cwd,
    );
    expect(chained.status).toBe(0);
    expect(JSON.parse(chained.stdout)).toMatchObject({ provider: 'claude:haiku', text: 'pong' });

    server.child.kill('SIGTERM');
    expect(await server.exited).toEqual({ code: 0, signal: null });
    const ledger = openLedger({ stateDir: join(cwd, '.switchboard') });
    const stats = await ledger.callStats();
    await ledger.close();
    expect(stats.calls).toBe(4);
    expect(stats.successfulCalls).toBe(4);
    expect(stats.fallbackRate).toBeCloseTo(1 / 4);
  });

  it('maps errors to the in-process exit codes and lines, and never answers with a secret', async () => {
    const cwd = temporaryDirectory();
    const server = await serve(['--port', '0', '--pool', '0'], { cwd, env, children });
    const cases = [
      ['call', 'anthropic:claude-haiku-4-5', 'auth please', '--ignore-cooldown'],
      ['call', 'nonsense', 'hi'],
      ['call', 'gpt:4', 'hi', '--json'],
      ['call', 'anthropic:claude-haiku-4-5', '   '],
    ];
    for (const args of cases) {
      const inProcess = await run(args, temporaryDirectory());
      const viaServer = await run([...args, '--server', server.url], cwd);
      expect(inProcess.status).not.toBe(0);
      expect(viaServer).toEqual(inProcess);
    }
    expect((await run(cases[0] as string[], cwd, { SWITCHBOARD_SERVER: server.url })).status).toBe(22);

    // The raw answers: the provider echoed the key in its error, the model repeated it in its text.
    const failed = await postCall(server.url, {
      spec: 'anthropic:claude-haiku-4-5',
      prompt: 'auth again',
      ignoreCooldown: true,
    });
    expect(failed.status).toBe(502);
    expect(JSON.parse(failed.text)).toMatchObject({ error: { code: 'AUTH' } });
    // The fault fired on a request that carried the key, so the simulator's error quoted it.
    expect(sim.requests.at(-1)).toMatchObject({ outcome: 'fault:status', key: expect.any(String) });
    const repeated = await postCall(server.url, {
      spec: 'anthropic:claude-haiku-4-5',
      prompt: `repeat ${secret}`,
      ignoreCooldown: true,
    });
    expect(repeated.status).toBe(200);
    for (const answer of [failed.text, repeated.text]) expect(answer).not.toContain(secret);
    // The model did repeat it: the answer carries the redaction mark where the key was.
    expect(JSON.parse(repeated.text)).toMatchObject({ text: 'repeat [redacted]' });

    // Bad bodies: 400 naming the field, 413 past the size limit.
    for (const [body, message] of [
      ['nope', /not valid JSON/],
      [{ prompt: 'hi' }, /"spec"/],
      [{ spec: 'claude:haiku', prompt: 'hi', timeoutMs: -1 }, /"timeoutMs" to be a positive number/],
      [{ spec: 'claude:haiku', prompt: 'hi', colour: 'red' }, /unknown field "colour"/],
    ] as const) {
      const answer = await postCall(server.url, body);
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.text)).toMatchObject({ error: { code: 'INVALID_INPUT', message } });
    }
    const huge = await postCall(server.url, { spec: 'claude:haiku', prompt: 'x'.repeat(1_100_000) });
    expect(huge.status).toBe(413);
    expect(JSON.parse(huge.text)).toMatchObject({ error: { message: /larger than 1048576 bytes/ } });
    const hugeCli = await run(
      ['call', '--server', server.url, 'claude:haiku', '-'],
      cwd,
      {},
      'y'.repeat(1_100_000),
    );
    expect(hugeCli.status).toBe(2);
    expect(hugeCli.stderr).toMatch(/^switchboard: the body is larger than 1048576 bytes/);

    // The server caps a request's deadline: a 2.5 s answer against --max-timeout 1.
    server.child.kill('SIGTERM');
    await server.exited;
    const fresh = temporaryDirectory();
    const capped = await serve(['--port', '0', '--pool', '0', '--max-timeout', '1'], {
      cwd: fresh,
      env,
      children,
    });
    const slow = await run(
      ['call', '--server', capped.url, 'anthropic:claude-haiku-4-5', 'slow', '--timeout', '60'],
      fresh,
    );
    expect(slow.status).toBe(23);
    capped.child.kill('SIGTERM');
    await capped.exited;
  });

  it('falls back to running in process, with one warning line, when no server answers', async () => {
    const cwd = temporaryDirectory();
    const dead = `http://127.0.0.1:${await closedPort()}`;
    const called = await run(['call', 'anthropic:claude-haiku-4-5', 'ping'], cwd, {
      SWITCHBOARD_SERVER: dead,
    });
    expect(called).toEqual({
      status: 0,
      stdout: 'pong\n',
      stderr: `switchboard: server ${dead} did not answer (connection refused); running in process\n`,
    });
    const routed = await run(
      ['route', '--server', dead, '--skills', skills, '--print', 'skill', 'the app crashes whenever I save'],
      cwd,
    );
    expect(routed).toEqual({
      status: 0,
      stdout: 'fix-bug\n',
      stderr: `switchboard: server ${dead} did not answer (connection refused); running in process\n`,
    });
    const bad = await run(['call', '--server', 'ftp://example', 'claude:haiku', 'hi'], cwd);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--server is not an http\(s\) URL/);
  });
});

describe('switchboard serve: safety', () => {
  it('refuses to listen beyond loopback without a token; with one, other machines must send it', async () => {
    const cwd = temporaryDirectory();
    const refused = await run(['serve', '--host', '0.0.0.0', '--port', '0'], cwd);
    expect(refused.status).toBe(2);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toMatch(
      /refusing to listen on 0\.0\.0\.0 without a token.*SWITCHBOARD_SERVER_TOKEN/,
    );
    const weak = await run(['serve', '--host', '0.0.0.0', '--port', '0'], cwd, {
      SWITCHBOARD_SERVER_TOKEN: 'short',
    });
    expect(weak.status).toBe(2);
    expect(weak.stderr).toMatch(/shorter than 16 characters/);
    // 127.0.0.2 is loopback too: no token needed to listen there.
    const second = await serve(['--host', '127.0.0.2', '--port', '0', '--pool', '0'], { cwd, env, children });
    expect((await fetch(`${second.url}/healthz`)).status).toBe(200);
    second.child.kill('SIGTERM');
    await second.exited;
  });

  // A caller on another machine is simulated by this machine's own non-loopback address: the server
  // then sees that address, not 127.0.0.1, as the peer, exactly as for a remote caller.
  it.skipIf(externalAddress() === undefined)(
    'refuses a non-loopback caller without the bearer token and serves it with the token',
    async () => {
      const cwd = temporaryDirectory();
      const withToken = { ...env, SWITCHBOARD_SERVER_TOKEN: token };
      const server = await serve(['--host', '0.0.0.0', '--port', '0', '--pool', '0'], {
        cwd,
        env: withToken,
        children,
      });
      const port = new URL(server.url).port;
      const remote = `http://${externalAddress() as string}:${port}`;
      const body = { spec: 'anthropic:claude-haiku-4-5', prompt: 'ping' };
      // Without the token the name it is called by is checked first (as for a rebinding page): 403,
      // whose hint names the token.
      const denied = await postCall(remote, body);
      expect(denied.status).toBe(403);
      expect(JSON.parse(denied.text)).toMatchObject({
        error: { code: 'FORBIDDEN', hint: expect.stringContaining('Authorization: Bearer <token>') },
      });
      const wrong = await postCall(remote, body, { authorization: 'Bearer not-the-token-at-all' });
      expect(wrong.status).toBe(403);
      // Loopback is no pass either (issue 35): the token, from anywhere.
      expect((await postCall(`http://127.0.0.1:${port}`, body, {})).status).toBe(401);
      expect((await postCall(`http://127.0.0.1:${port}`, body, server.auth)).status).toBe(200);
      expect((await postCall(remote, body, server.auth)).status).toBe(200);

      // The server's token file is in this cwd, but it is never sent to an address beyond loopback.
      const api = ['call', '--server', remote, 'anthropic:claude-haiku-4-5', 'ping'];
      const noToken = await run(api, cwd);
      expect(noToken.status).toBe(64);
      expect(noToken.stderr).toMatch(/send "Authorization: Bearer <token>"/);
      expect(await run(api, cwd, { SWITCHBOARD_SERVER_TOKEN: token })).toEqual({
        status: 0,
        stdout: 'pong\n',
        stderr: '',
      });
      server.child.kill('SIGTERM');
      expect(await server.exited).toEqual({ code: 0, signal: null });
    },
  );

  it('drains on SIGTERM: a call in flight completes, new connections are refused, the pool stops', async () => {
    const cwd = temporaryDirectory();
    const before = claudeProcessIds();
    const server = await serve(['--port', '0', '--pool', '1'], { cwd, env, children });
    await waitFor(() => claudeProcessIds().some((pid) => !before.includes(pid)), {
      what: 'the warm process',
    });
    const asked = sim.requests.length;
    let settled = false;
    const pending = run(['call', '--server', server.url, 'claude:haiku', 'slow please'], cwd).finally(() => {
      settled = true;
    });
    await waitFor(() => sim.requests.slice(asked).some((entry) => entry.text?.includes('slow') === true), {
      what: 'the call to reach the simulator',
    });
    server.child.kill('SIGTERM');
    let refused = false;
    while (!refused && !settled) {
      refused = await fetch(`${server.url}/healthz`).then(
        () => false,
        (error: { cause?: { code?: string } }) => error.cause?.code === 'ECONNREFUSED',
      );
    }
    expect({ refused, settled }).toEqual({ refused: true, settled: false });
    expect(await pending).toMatchObject({ status: 0, stdout: 'slow done\n' });
    expect(await server.exited).toEqual({ code: 0, signal: null });
    expect(await waitForNoNewClaudeProcesses(before)).toEqual([]);
  });
});

describe('switchboard serve: past the grace', () => {
  it('aborts a call still running when --grace is over, and the client exits 130 (ABORTED)', async () => {
    const cwd = temporaryDirectory();
    const server = await serve(['--port', '0', '--pool', '0', '--grace', '0.5'], { cwd, env, children });
    const asked = sim.requests.length;
    const pending = run(['call', '--server', server.url, 'anthropic:claude-haiku-4-5', 'slow again'], cwd);
    await waitFor(
      () => sim.requests.slice(asked).some((entry) => entry.text?.includes('slow again') === true),
      {
        what: 'the call to reach the simulator',
      },
    );
    server.child.kill('SIGTERM');
    const cut = await pending;
    expect(cut.status).toBe(130);
    expect(cut.stderr.trim().split('\n')).toHaveLength(1);
    expect(cut.stderr).toMatch(/aborted/);
    expect(await server.exited).toEqual({ code: 0, signal: null });
  });
});

describe('--print', () => {
  it('prints one word for a shell, in process and through a server, with the same exit codes', async () => {
    const cwd = temporaryDirectory();
    const server = await serve(['--port', '0', '--pool', '0', '--skills', skills, '--no-cache'], {
      cwd,
      env,
      children,
    });
    const crash = 'the app crashes whenever I save';
    const pizza = 'order a large pepperoni pizza';
    for (const where of [[], ['--server', server.url]]) {
      const route = (...args: string[]) =>
        run(['route', '--skills', skills, '--no-cache', ...where, ...args], cwd);
      expect(await route('--print', 'skill', crash)).toEqual({ status: 0, stdout: 'fix-bug\n', stderr: '' });
      expect(await route('--print', 'method', crash)).toEqual({ status: 0, stdout: 'local\n', stderr: '' });
      expect((await route('--print', 'confidence', crash)).stdout).toMatch(/^(0|1)\.\d\d\n$/);
      expect(await route('--print', 'skill', pizza)).toEqual({ status: 10, stdout: 'none\n', stderr: '' });
    }
    const wrong = await run(['route', '--skills', skills, '--print', 'colour', crash], cwd);
    expect(wrong.status).toBe(2);
    expect(wrong.stderr).toMatch(/skill, confidence, method/);
    expect((await run(['route', '--skills', skills, '--print', 'skill', '--json', crash], cwd)).status).toBe(
      2,
    );
    expect((await run(['call', 'claude:haiku', 'hi', '--print', 'json'], cwd)).status).toBe(2);
    server.child.kill('SIGTERM');
    await server.exited;
  });
});
