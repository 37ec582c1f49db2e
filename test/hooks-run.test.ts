import { execFile, type ChildProcess } from 'node:child_process';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliRun } from './helpers/run-cli.js';
import { killServers, serve } from './helpers/serve-process.js';

// `switchboard hooks run` as Claude Code runs it: the built CLI, Claude Code's hook JSON on standard
// input, a real `switchboard serve` or a server that never answers. The real Claude Code binary drives
// the installed hook in test/hooks-claude.test.ts.

const skills = join(import.meta.dirname, 'fixtures/skills');
const cli = join(import.meta.dirname, '../dist/cli/main.js');
const children = new Set<ChildProcess>();
const directories: string[] = [];
/** Accepts connections and never answers: a server that stalls. */
let stalling: Server;
const held: IncomingMessage[] = [];
let stallingUrl: string;
/** Generous: these tests are about what the hook says, not how fast (see bench/hook-latency.ts). */
const ROOMY = '20000';

beforeAll(async () => {
  stalling = createServer((request) => held.push(request));
  await new Promise<void>((resolve) => stalling.listen(0, '127.0.0.1', resolve));
  stallingUrl = `http://127.0.0.1:${(stalling.address() as AddressInfo).port}`;
});

afterAll(async () => {
  killServers(children);
  stalling.closeAllConnections();
  await new Promise((resolve) => stalling.close(resolve));
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

function workspace(): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-hook-run-')));
  directories.push(directory);
  return directory;
}

const CRASH = { prompt: 'the app crashes when I click save', session_id: 'session-1', cwd: '/x' };

function hook(args: string[], input: unknown, cwd = workspace()): Promise<CliRun> {
  return runCli(['hooks', 'run', ...args], {
    cwd,
    env: { ...process.env, SWITCHBOARD_SERVER: '' },
    input: typeof input === 'string' ? input : JSON.stringify(input),
  });
}

interface HookOutput {
  hookSpecificOutput: { hookEventName: string; additionalContext: string };
}

describe('hooks run', () => {
  it('routes in process and prints the UserPromptSubmit output naming the skill, its description and file', async () => {
    const result = await hook(['--skills', skills, '--no-server', '--deadline', ROOMY], CRASH);
    expect(result.status).toBe(0);
    expect(result.stderr).toBe('');
    const output = JSON.parse(result.stdout) as HookOutput;
    expect(output.hookSpecificOutput.hookEventName).toBe('UserPromptSubmit');
    const context = output.hookSpecificOutput.additionalContext;
    expect(context).toMatch(
      /^Switchboard routed this request to the skill "fix-bug" \(confidence 0\.\d\d, via /,
    );
    expect(context).toContain('fix-bug: Find and fix a defect');
    expect(context).toContain(join(skills, 'fix-bug/SKILL.md'));
  });

  it('adds nothing when the router is not sure enough, for slash commands, and for input that is not hook JSON', async () => {
    const unsure = await hook(
      ['--skills', skills, '--no-server', '--deadline', ROOMY, '--min-confidence', '1'],
      CRASH,
    );
    const slash = await hook(['--skills', skills, '--no-server', '--deadline', ROOMY], { prompt: '/clear' });
    const garbage = await hook(['--skills', skills, '--no-server', '--deadline', ROOMY], 'not json {');
    for (const result of [unsure, slash, garbage])
      expect(result).toEqual({ status: 0, stdout: '', stderr: '' });
  });

  it('never exits with anything but 0, never prints: unknown flags, bad values, missing skills, a broken config', async () => {
    const broken = workspace();
    writeFileSync(join(broken, 'switchboard.yaml'), 'route: [unclosed\n');
    const results = await Promise.all([
      hook(['--skills', skills, '--no-server', '--deadline', ROOMY, '--from-a-newer-version', 'x'], CRASH),
      hook(['--skills', skills, '--no-server', '--deadline', 'soon', '--min-confidence', 'high', 'extra'], {
        prompt: '/help',
      }),
      hook(['--skills', '/no/such/skills', '--no-server', '--deadline', ROOMY], CRASH),
      hook(['--no-server', '--deadline', ROOMY], CRASH, broken),
      hook(['--no-server'], ''),
    ]);
    // The first is a usage error anywhere else; here the unknown flag is ignored and the prompt routed.
    expect(results[0]?.status).toBe(0);
    expect(JSON.parse(results[0]?.stdout ?? '')).toHaveProperty('hookSpecificOutput');
    for (const result of results.slice(1)) expect(result).toEqual({ status: 0, stdout: '', stderr: '' });
  });

  it('with SWITCHBOARD_DEBUG=1 says on stderr why it stayed silent', async () => {
    const result = await runCli(
      ['hooks', 'run', '--skills', skills, '--no-server', '--min-confidence', '1'],
      {
        cwd: workspace(),
        env: { ...process.env, SWITCHBOARD_DEBUG: '1', SWITCHBOARD_SERVER: '' },
        input: JSON.stringify(CRASH),
      },
    );
    expect(result.status).toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^switchboard hook: silent: /);
  });

  it('asks a running serve: its decision, with the description from the hook’s own skills folder', async () => {
    const cwd = workspace();
    const server = await serve(['--pool', '0', '--port', '0', '--skills', skills], {
      cwd,
      env: process.env,
      children,
    });
    // Without skills of its own the hook can only have asked the server.
    const bare = await hook(['--server', server.url, '--deadline', ROOMY], CRASH);
    expect(bare.status).toBe(0);
    const context = (JSON.parse(bare.stdout) as HookOutput).hookSpecificOutput.additionalContext;
    expect(context).toContain('to the skill "fix-bug"');
    expect(context).toContain('Use the fix-bug skill');
    const described = await hook(['--server', server.url, '--skills', skills, '--deadline', ROOMY], CRASH);
    expect((JSON.parse(described.stdout) as HookOutput).hookSpecificOutput.additionalContext).toContain(
      'fix-bug: Find and fix a defect',
    );
    // What the hook asks its background server for (that one has the hook's own skills folder).
    const ask = (body: unknown) =>
      fetch(`${server.url}/route`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...server.auth },
        body: JSON.stringify(body),
      });
    const plain = (await (await ask({ text: CRASH.prompt })).json()) as Record<string, unknown>;
    expect(plain).not.toHaveProperty('skillDescription');
    expect(await (await ask({ text: CRASH.prompt, describe: true })).json()).toMatchObject({
      skill: 'fix-bug',
      skillDescription: expect.stringContaining('Find and fix a defect'),
      skillFile: join(skills, 'fix-bug/SKILL.md'),
    });
    const refused = await ask({ text: CRASH.prompt, describe: 'yes' });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({
      error: { code: 'INVALID_INPUT', message: 'Expected "describe" to be true or false' },
    });
    server.child.kill('SIGTERM');
    await server.exited;
    // The server gone: the hook routes in process with its skills, or stays silent without them.
    const fallback = await hook(['--server', server.url, '--skills', skills, '--deadline', ROOMY], CRASH);
    expect(JSON.parse(fallback.stdout)).toHaveProperty('hookSpecificOutput');
    const down = await hook(['--server', server.url, '--deadline', ROOMY], CRASH);
    expect(down).toEqual({ status: 0, stdout: '', stderr: '' });
  });

  it('with a server answering, the hook loads no command tree, config, router, ledger, provider SDK, MCP SDK or Octokit', async () => {
    const cwd = workspace();
    const server = await serve(['--pool', '0', '--port', '0', '--skills', skills], {
      cwd,
      env: process.env,
      children,
    });
    const record = join(cwd, 'resolved.txt');
    writeFileSync(record, '');
    const output = await new Promise<string>((resolve) => {
      const child = execFile(
        process.execPath,
        [
          '--import',
          join(import.meta.dirname, 'fixtures/lazy/record-resolved.mjs'),
          cli,
          'hooks',
          'run',
          // What it loads is the point here, not the deadline: a busy machine must not cut the answer off.
          '--deadline',
          ROOMY,
        ],
        { cwd, env: { ...process.env, SWITCHBOARD_TEST_RESOLVED: record, SWITCHBOARD_SERVER: server.url } },
        (_error, stdout) => resolve(stdout),
      );
      child.stdin?.end(JSON.stringify(CRASH));
    });
    server.child.kill('SIGTERM');
    expect(output).toContain('hookSpecificOutput');
    const loaded = readFileSync(record, 'utf8').split('\n');
    const heavy =
      /better-sqlite3|@anthropic-ai|node_modules\/(openai|zod|ajv|commander|yaml)\/|@google\/genai|@modelcontextprotocol|@octokit|dist\/(route|providers|invoke)\/|dist\/store\/(?!atomic-file)|dist\/core\/config\.js|dist\/cli\/(program|hooks|shared)\.js/;
    expect(loaded.filter((url) => heavy.test(url))).toEqual([]);
  });

  it('a server that stalls: the deadline ends the hook with exit 0 and no output', async () => {
    const started = Date.now();
    // The deadline counts from the process's start: 3 s leaves a loaded machine time to start the hook
    // and connect, so the stall is what the deadline ends (held), not the start-up.
    const result = await hook(['--server', stallingUrl, '--deadline', '3000'], CRASH);
    expect(result).toEqual({ status: 0, stdout: '', stderr: '' });
    expect(held.length).toBeGreaterThan(0);
    // The server never answers: without the deadline this would wait for the test's own timeout.
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it('a deadline shorter than the routing: exit 0, no output', async () => {
    const result = await hook(['--skills', skills, '--no-server', '--deadline', '1'], CRASH);
    expect(result).toEqual({ status: 0, stdout: '', stderr: '' });
  });

  it('a state folder it cannot use (a file there): exit 0, no output', async () => {
    const cwd = workspace();
    writeFileSync(join(cwd, 'state'), '');
    const result = await runCli(
      [
        '--state-dir',
        join(cwd, 'state'),
        'hooks',
        'run',
        '--skills',
        skills,
        '--no-server',
        '--deadline',
        ROOMY,
      ],
      { cwd, env: { ...process.env, SWITCHBOARD_SERVER: '' }, input: JSON.stringify(CRASH) },
    );
    expect(result).toEqual({ status: 0, stdout: '', stderr: '' });
  });
});
