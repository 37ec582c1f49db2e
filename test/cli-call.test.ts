import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { claudeProcessIds, waitForNoNewClaudeProcesses } from './helpers/claude.js';
import { runCli, type CliRun } from './helpers/run-cli.js';

// `switchboard call`, `stats` and `sim` as a user runs them: the built CLI, the real Claude Code binary,
// `switchboard sim` on loopback.

const root = join(import.meta.dirname, '..');
const cli = join(root, 'dist/cli/main.js');
const secret = 'sk-ant-api03-very-secret-key';
let sim: Simulator;
let cwd: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  sim = await startSimulator({
    maxLifetimeMs: 300_000,
    scenario: {
      rules: [
        {
          match: { text: 'weather' },
          reply: { tool: { name: 'StructuredOutput', input: { city: 'Lisbon' } } },
        },
        { match: { text: 'auth' }, fault: { status: 401 } },
        { match: { text: 'hang' }, fault: { kind: 'stall' } },
        { match: {}, reply: { text: 'pong', usage: { input: 50, output: 2 } } },
      ],
    },
  });
  cwd = mkdtempSync(join(tmpdir(), 'switchboard-call-cli-'));
  env = {
    ...process.env,
    ANTHROPIC_API_KEY: secret,
    CLAUDE_CONFIG_DIR: mkdtempSync(join(tmpdir(), 'switchboard-claude-config-')),
  };
});
afterAll(async () => {
  await sim.close();
});

type Run = CliRun;

function run(args: string[], input = '', directory = cwd): Promise<Run> {
  return runCli(args, { cwd: directory, env, input });
}

describe('switchboard call', () => {
  it('prints the answer, or the whole CallResult with --json', async () => {
    const plain = await run(['call', 'claude:haiku', 'ping', '--base-url', sim.url]);
    expect(plain).toMatchObject({ status: 0, stdout: 'pong\n', stderr: '' });
    const streamed = await run(['call', 'claude:haiku', 'ping', '--base-url', sim.url, '--stream']);
    expect(streamed).toMatchObject({ status: 0, stdout: 'pong\n' });
    const piped = await run(
      ['call', 'claude:claude-haiku-4-5', '-', '--base-url', sim.url, '--json'],
      'ping from stdin',
    );
    const result = JSON.parse(piped.stdout) as Record<string, unknown>;
    expect(result).toMatchObject({
      success: true,
      text: 'pong',
      provider: 'claude:claude-haiku-4-5',
      modelRequested: 'claude-haiku-4-5',
    });
    expect(result['sessionId']).toBeDefined();
    expect(result['attempts']).toHaveLength(1);
  });

  it('prints structured output for --schema', async () => {
    const schemaFile = join(cwd, 'weather.json');
    writeFileSync(
      schemaFile,
      JSON.stringify({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
    );
    const result = await run([
      'call',
      'claude:haiku',
      'weather please',
      '--schema',
      schemaFile,
      '--base-url',
      sim.url,
    ]);
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ city: 'Lisbon' });
  });

  it('fails with one line and a distinct exit code for each problem', async () => {
    const oneLine = (result: Run, status: number, pattern: RegExp) => {
      expect(result.status).toBe(status);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toMatch(pattern);
    };
    oneLine(
      await run(['call', 'claude:haiku', 'auth now', '--base-url', sim.url]),
      22,
      /could not authenticate/,
    );
    oneLine(await run(['call', 'claude:haiku', 'hi', '--claude-path', '/no/such/claude']), 28, /npm install/);
    oneLine(await run(['call', 'gpt:4', 'hi']), 2, /unknown provider "gpt"/);
    oneLine(await run(['call', 'nonsense', 'hi']), 2, /neither a provider spec nor a role/);
    writeFileSync(join(cwd, 'bad.json'), '{ not json');
    oneLine(await run(['call', 'claude:haiku', 'hi', '--schema', 'bad.json']), 2, /not a JSON object/);
    oneLine(
      await run(['call', 'claude:sonnet', 'hang', '--base-url', sim.url, '--idle-timeout', '1.5']),
      24,
      /sent nothing for 1500 ms/,
    );
  });

  it('--timeout limits the whole call: a stalled chain is not retried past it', async () => {
    const before = sim.requests.length;
    const result = await runCli(
      [
        'call',
        `anthropic:claude-haiku-4-5,openai@${sim.openAiBaseUrl}:gpt-4.1-mini`,
        'hang on',
        '--timeout',
        '1.5',
      ],
      { cwd, env: { ...env, ANTHROPIC_BASE_URL: sim.url, OPENAI_API_KEY: 'sk-openai-timeout' }, input: '' },
    );
    expect(result.status).toBe(23);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/did not finish within its 1\.5 s limit.*raise --timeout/);
    // One stalled request used the whole 1.5 s; before, each provider got 1.5 s three times over. On a
    // loaded machine the CLI's start-up can take the 1.5 s before the first request is sent: then none is.
    const sent = sim.requests.slice(before).map((request) => request.provider);
    expect(['anthropic'].slice(0, sent.length)).toEqual(sent);
  });

  it('breakers are shared by separate processes, count their requests, are kept per endpoint, and say how to skip them', async () => {
    const dead = await startSimulator({
      maxLifetimeMs: 120_000,
      scenario: { rules: [{ fault: { status: 500 } }] },
    });
    try {
      // Its own state folder: one ledger file shared by the processes below, and by no other test.
      // Two failed requests open the breaker here (20 by default).
      const shared = mkdtempSync(join(tmpdir(), 'switchboard-cooldown-cli-'));
      writeFileSync(join(shared, 'switchboard.yaml'), 'call:\n  breaker:\n    minimum_requests: 2\n');
      const inShared = (args: string[]) => runCli(args, { cwd: shared, env, input: '' });
      const first = await inShared(['call', 'claude:haiku', 'ping', '--base-url', dead.url]);
      expect(first.status).toBe(29);
      // Three attempts (two retries) of one request: one failed request, under the minimum.
      expect(dead.requests.length).toBeGreaterThanOrEqual(3);
      const second = await inShared(['call', 'claude:haiku', 'ping', '--base-url', dead.url]);
      expect(second.status).toBe(29);
      const sent = dead.requests.length;
      // The two processes' failed requests opened it: a third skips the dead endpoint without sending
      // anything, and says how to get past it.
      const third = await inShared(['call', 'claude:haiku', 'ping', '--base-url', dead.url]);
      expect(third.status).toBe(28);
      expect(third.stderr).toMatch(
        /claude:haiku \(at .+\): its circuit breaker is open after repeated failures, half-open in \d+ s.*--ignore-cooldown/,
      );
      expect(dead.requests.length).toBe(sent);
      // The same spec at another base URL is not blocked by the dead one.
      const elsewhere = await inShared(['call', 'claude:haiku', 'ping', '--base-url', sim.url]);
      expect(elsewhere).toMatchObject({ status: 0, stdout: 'pong\n' });
      const forced = await inShared([
        'call',
        'claude:haiku',
        'ping',
        '--base-url',
        dead.url,
        '--ignore-cooldown',
      ]);
      expect(forced.status).toBe(29);
      expect(dead.requests.length).toBeGreaterThan(sent);
    } finally {
      await dead.close();
    }
  });

  it('never writes the API key to output or the ledger', async () => {
    const result = await run(['call', 'claude:haiku', 'auth again', '--base-url', sim.url, '--json']);
    expect(result.stdout + result.stderr).not.toContain(secret);
    const ledger = readFileSync(join(cwd, '.switchboard/ledger.db'));
    expect(ledger.includes(Buffer.from(secret))).toBe(false);
    expect(ledger.includes(Buffer.from('auth again'))).toBe(false);
    expect(JSON.stringify(sim.requests)).not.toContain(secret);
  });

  it('leaves no claude process behind when the caller is killed', async () => {
    const before = claudeProcessIds();
    const child = spawn(
      process.execPath,
      [cli, 'call', 'claude:opus', 'hang forever', '--base-url', sim.url],
      { cwd, env, stdio: 'ignore' },
    );
    const deadline = Date.now() + 10_000;
    while (claudeProcessIds().filter((pid) => !before.includes(pid)).length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(claudeProcessIds().filter((pid) => !before.includes(pid)).length).toBeGreaterThan(0);
    child.kill('SIGKILL');
    expect(await waitForNoNewClaudeProcesses(before, 10_000)).toEqual([]);
  });
});

describe('switchboard stats', () => {
  it('reports calls, success rate, latency, tokens, cost and error codes from the ledger', async () => {
    // A folder of its own, so the figures are these calls alone, whatever ran before.
    const own = mkdtempSync(join(tmpdir(), 'switchboard-call-stats-'));
    const inOwn = (args: string[]) => run(args, '', own);
    expect((await inOwn(['call', 'claude:haiku', 'ping', '--base-url', sim.url])).status).toBe(0);
    expect((await inOwn(['call', 'claude:haiku', 'auth now', '--base-url', sim.url])).status).toBe(22);
    expect((await inOwn(['call', 'claude:haiku', 'hi', '--claude-path', '/no/such/claude'])).status).toBe(28);
    const idle = ['call', 'claude:sonnet', 'hang', '--base-url', sim.url, '--idle-timeout', '1.5'];
    expect((await inOwn(idle)).status).toBe(24);
    const result = await inOwn(['stats', '--json']);
    expect(result.status).toBe(0);
    const { calls } = JSON.parse(result.stdout) as {
      calls: {
        calls: number;
        successfulCalls: number;
        errorCodes: Record<string, number>;
        byProviderModel: { provider: string; outputTokens: number; costUsd: number }[];
      };
    };
    expect(calls.calls).toBe(4);
    expect(calls.successfulCalls).toBe(1);
    // An idle timeout is retried twice before the call gives up.
    expect(calls.errorCodes).toEqual({ AUTH: 1, PROVIDER_UNAVAILABLE: 1, IDLE_TIMEOUT: 3 });
    const claude = calls.byProviderModel.filter((group) => group.provider === 'claude');
    expect(claude.reduce((total, group) => total + group.outputTokens, 0)).toBeGreaterThan(0);
    expect(claude.reduce((total, group) => total + group.costUsd, 0)).toBeGreaterThan(0);
    expect((await inOwn(['stats'])).stdout).toMatch(/calls 4 \(6 attempts\), success/);
  });
});

describe('switchboard sim', () => {
  it('prints the port it chose and stops by itself', async () => {
    const child = spawn(process.execPath, [cli, 'sim', '--port', '0', '--max-lifetime', '2', '--json'], {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const line = await new Promise<string>((resolve) =>
      child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString())),
    );
    const { url, port } = JSON.parse(line) as { url: string; port: number };
    expect(url).toBe(`http://127.0.0.1:${port}`);
    const response = await fetch(`${url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'claude-haiku-4-5',
        max_tokens: 10,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });
    expect(((await response.json()) as { content: { text: string }[] }).content[0]?.text).toBe('ok');
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(0);
  });
});
