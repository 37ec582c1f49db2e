import { execFile, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startSimulator, type SimLogEntry, type Simulator } from '../src/sim/server.js';
import { claudeProcessIds, waitForNoNewClaudeProcesses } from './helpers/claude.js';
import { toolSequenceScenario } from './helpers/agent-scenarios.js';
import { killServers, serve } from './helpers/serve-process.js';

// The real Claude Code binary with `switchboard mcp` as an MCP server, scripted by `switchboard sim`
// to call mcp__switchboard__route: the decision must reach the model in Claude Code's next request.

const root = join(import.meta.dirname, '..');
const claude = join(root, 'node_modules/@anthropic-ai/claude-agent-sdk-linux-x64/claude');
const skills = join(import.meta.dirname, 'fixtures/skills');
const temporary: string[] = [];
const servers = new Set<ChildProcess>();
let sim: Simulator | undefined;
const claudeBefore = claudeProcessIds();

afterEach(async () => {
  await sim?.close();
  sim = undefined;
});
afterAll(async () => {
  killServers(servers);
  expect(await waitForNoNewClaudeProcesses(claudeBefore)).toEqual([]);
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

function run(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      command,
      args,
      { ...options, encoding: 'utf8', timeout: 90_000 },
      (error, stdout, stderr) =>
        resolve({
          status: error === null ? 0 : typeof error.code === 'number' ? error.code : null,
          stdout,
          stderr,
        }),
    );
    child.stdin?.end();
  });
}

async function setUp(): Promise<{ cwd: string; env: NodeJS.ProcessEnv }> {
  sim = await startSimulator({
    maxLifetimeMs: 120_000,
    scenario: toolSequenceScenario({
      calls: [{ name: 'mcp__switchboard__route', input: { text: 'the app crashes whenever I save' } }],
      finalText: 'routed it',
    }),
  });
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-mcp-claude-')));
  temporary.push(cwd);
  mkdirSync(join(cwd, 'claude-config'));
  const env = {
    ...process.env,
    ANTHROPIC_API_KEY: 'sk-ant-mcp-claude-secret',
    ANTHROPIC_BASE_URL: sim.url,
    CLAUDE_CONFIG_DIR: join(cwd, 'claude-config'),
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    // `switchboard` on PATH, as an installed one is.
    PATH: `${join(root, 'bin')}:${process.env.PATH ?? ''}`,
  };
  return { cwd, env };
}

/** The logged request that carries the result of the route tool call, and the one that made the call. */
function routeExchange(log: readonly SimLogEntry[]): {
  call: SimLogEntry | undefined;
  result: string | undefined;
} {
  const call = log.find((entry) => entry.rule === 'call-1-mcp__switchboard__route');
  const next = log.find((entry) => entry.turn === 2);
  const messages = (next?.body as { messages?: Array<{ role: string; content: unknown }> } | undefined)
    ?.messages;
  const blocks = messages?.flatMap((message) => (Array.isArray(message.content) ? message.content : [])) as
    Array<{ type: string; content?: unknown }> | undefined;
  const result = blocks?.find((block) => block.type === 'tool_result');
  return { call, result: result === undefined ? undefined : JSON.stringify(result.content) };
}

const prompt = 'Which skill should handle this: the app crashes whenever I save';

describe('Claude Code with switchboard mcp', () => {
  it('--mcp-config with --strict-mcp-config: the model calls mcp__switchboard__route and gets the decision', async () => {
    const { cwd, env } = await setUp();
    // A server in the user's settings, which --strict-mcp-config must leave out.
    const other = await run(claude, ['mcp', 'add', '--scope', 'user', 'other', '--', 'switchboard', 'mcp'], {
      cwd,
      env,
    });
    expect(other.status, other.stderr).toBe(0);
    const config = join(cwd, 'mcp.json');
    writeFileSync(
      config,
      JSON.stringify({
        mcpServers: { switchboard: { command: 'switchboard', args: ['mcp', '--skills', skills] } },
      }),
    );
    const result = await run(
      claude,
      [
        '-p',
        prompt,
        '--mcp-config',
        config,
        '--strict-mcp-config',
        '--allowedTools',
        'mcp__switchboard__route',
        '--output-format',
        'json',
      ],
      // Claude Code defers MCP tools behind its ToolSearch tool by default; without it they are listed.
      { cwd, env: { ...env, ENABLE_TOOL_SEARCH: 'false' } },
    );
    expect(result.status, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ result: 'routed it' });
    const log = sim?.requests ?? [];
    // Claude Code listed the server's tools to the model, and only those of this server.
    const first = log.find((entry) => entry.turn === 1);
    expect(first?.tools).toContain('mcp__switchboard__route');
    expect(first?.tools.filter((tool) => tool.startsWith('mcp__')).sort()).toEqual(
      [
        'agent_run',
        'agent_status',
        'call',
        'call_status',
        'route',
        'stats',
        'workflow_gate',
        'workflow_guide',
        'workflow_run',
        'workflow_status',
      ].map((name) => `mcp__switchboard__${name}`),
    );
    const { call, result: toolResult } = routeExchange(log);
    expect(call).toBeDefined();
    expect(toolResult).toContain('\\"skill\\":\\"fix-bug\\"');
    expect(toolResult).toContain('\\"method\\":\\"local\\"');
  });

  it('as the docs say: `claude mcp add switchboard -- switchboard mcp --skills DIR`, then a prompt', async () => {
    const { cwd, env } = await setUp();
    const added = await run(
      claude,
      ['mcp', 'add', '--scope', 'user', 'switchboard', '--', 'switchboard', 'mcp', '--skills', skills],
      { cwd, env },
    );
    expect(added.status, added.stderr).toBe(0);
    const result = await run(
      claude,
      ['-p', prompt, '--allowedTools', 'mcp__switchboard__route', '--output-format', 'json'],
      {
        cwd,
        env,
      },
    );
    expect(result.status, result.stderr).toBe(0);
    const { result: toolResult } = routeExchange(sim?.requests ?? []);
    expect(toolResult).toContain('\\"skill\\":\\"fix-bug\\"');
  });

  it('over HTTP: `claude mcp add --transport http switchboard URL/mcp` against a running serve', async () => {
    const { cwd, env } = await setUp();
    const served = await serve(['--port', '0', '--pool', '0', '--skills', skills], {
      cwd,
      env,
      children: servers,
    });
    const added = await run(
      claude,
      [
        'mcp',
        'add',
        '--scope',
        'user',
        '--transport',
        'http',
        'switchboard',
        `${served.url}/mcp`,
        // Loopback is no pass: the client sends the server's token, as docs/mcp.md says.
        '--header',
        `Authorization: Bearer ${served.token}`,
      ],
      { cwd, env },
    );
    expect(added.status, added.stderr).toBe(0);
    const result = await run(
      claude,
      ['-p', prompt, '--allowedTools', 'mcp__switchboard__route', '--output-format', 'json'],
      {
        cwd,
        env,
      },
    );
    expect(result.status, result.stderr).toBe(0);
    const { result: toolResult } = routeExchange(sim?.requests ?? []);
    expect(toolResult).toContain('\\"skill\\":\\"fix-bug\\"');
    served.child.kill('SIGTERM');
    expect(await served.exited).toEqual({ code: 0, signal: null });
  });
});
