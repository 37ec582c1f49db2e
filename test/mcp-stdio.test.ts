import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { connectStdio, textOf, type McpSession } from './helpers/mcp-client.js';
import { runCli } from './helpers/run-cli.js';

// `switchboard mcp` as an MCP client starts it: the built CLI on stdio, the official MCP SDK client,
// provider calls answered by `switchboard sim` over loopback, a real SQLite ledger.

const skills = join(import.meta.dirname, 'fixtures/skills');
const directories: string[] = [];
let sim: Simulator;
let env: NodeJS.ProcessEnv;
let cwd: string;
let session: McpSession;

beforeAll(async () => {
  sim = await startSimulator({
    maxLifetimeMs: 300_000,
    scenario: {
      rules: [
        {
          match: { provider: 'anthropic', text: 'slowly' },
          reply: { text: 'after a while', delayMs: 1_500 },
        },
        { match: { provider: 'anthropic', text: 'echo back' }, reply: { echo: true } },
        { match: { provider: 'anthropic', text: 'capital' }, reply: { json: { city: 'Paris' } } },
        {
          match: { provider: 'anthropic' },
          reply: { text: 'hello from the simulator', usage: { input: 40, output: 8 } },
        },
      ],
    },
  });
  cwd = mkdtempSync(join(tmpdir(), 'switchboard-mcp-'));
  directories.push(cwd);
  env = { ...process.env, ANTHROPIC_API_KEY: 'sk-ant-mcp-secret-0001', ANTHROPIC_BASE_URL: sim.url };
  session = await connectStdio(['--skills', skills], { cwd, env });
});

afterAll(async () => {
  await session?.close();
  await sim.close();
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

describe('switchboard mcp over stdio', () => {
  it('lists its tools, each with an input and an output schema', async () => {
    const { tools } = await session.client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([
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
    ]);
    for (const tool of tools) {
      expect(tool.inputSchema.type).toBe('object');
      expect(tool.outputSchema?.type).toBe('object');
    }
    const route = tools.find((tool) => tool.name === 'route');
    expect(route?.inputSchema.required).toEqual(['text']);
  });

  it('route answers with the RouteDecision as structured content', async () => {
    const result = await session.call('route', { text: 'the app crashes whenever I save' });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ skill: 'fix-bug', method: 'local' });
    expect(JSON.parse(textOf(result))).toMatchObject({ skill: 'fix-bug' });
  });

  it('call answers with the CallResult, and a schema gives the structured value', async () => {
    const plain = await session.call('call', { spec: 'anthropic:claude-haiku-4-5', prompt: 'say hello' });
    expect(plain.isError).toBeFalsy();
    expect(plain.structuredContent).toMatchObject({
      state: 'completed',
      success: true,
      text: 'hello from the simulator',
      provider: 'anthropic:claude-haiku-4-5',
    });
    const typed = await session.call('call', {
      spec: 'anthropic:claude-haiku-4-5',
      prompt: 'the capital of France?',
      schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    });
    expect(typed.structuredContent).toMatchObject({ state: 'completed', structured: { city: 'Paris' } });
  });

  it('a call past wait_seconds answers with its id and state running; call_status has the result later', async () => {
    const progress: string[] = [];
    const started = await session.call(
      'call',
      { spec: 'anthropic:claude-haiku-4-5', prompt: 'answer slowly', wait_seconds: 0.2 },
      { onProgress: ({ message }) => progress.push(message ?? '') },
    );
    expect(started.structuredContent).toMatchObject({ state: 'running' });
    expect(progress).toContain('calling anthropic:claude-haiku-4-5');
    const callId = (started.structuredContent as { callId: string }).callId;
    const finished = await session.call('call_status', { call_id: callId, wait_seconds: 30 });
    expect(finished.structuredContent).toMatchObject({ callId, state: 'completed', text: 'after a while' });
  });

  it('malformed arguments and bad input are tool errors with the code and hint; the server keeps serving', async () => {
    const wrongType = await session.call('route', { text: 42 });
    expect(wrongType.isError).toBe(true);
    expect(textOf(wrongType)).toMatch(
      /^INVALID_INPUT \(exit 2\): route: .*expected string.* at text\nhint: /,
    );
    const unknownKey = await session.call('route', { text: 'hi', txet: 'typo' });
    expect(unknownKey.isError).toBe(true);
    expect(textOf(unknownKey)).toMatch(/^INVALID_INPUT \(exit 2\): route: .*"txet"/);
    const noTool = await session.call('reroute', { text: 'hi' });
    expect(noTool.isError).toBe(true);
    expect(textOf(noTool)).toMatch(/^INVALID_INPUT \(exit 2\): this server has no tool reroute\nhint: /);

    const badSpec = await session.call('call', { spec: 'nosuch:model', prompt: 'hi' });
    expect(badSpec.isError).toBe(true);
    expect(textOf(badSpec)).toMatch(/^INVALID_INPUT \(exit 2\): .*nosuch/);
    expect(textOf(badSpec)).toMatch(/\nhint: /);

    const unknownRun = await session.call('agent_status', { run_id: 'no-such-run' });
    expect(unknownRun.isError).toBe(true);
    expect(textOf(unknownRun)).toMatch(/^RUN_NOT_FOUND \(exit 47\): /);

    const still = await session.call('route', { text: 'please add a dark mode setting' });
    expect(still.isError).toBeFalsy();
    expect(still.structuredContent).toMatchObject({ skill: 'add-feature' });
  });

  it('stats reports the calls in the ledger, as `switchboard stats --json` does', async () => {
    await session.call('call', { spec: 'anthropic:claude-haiku-4-5', prompt: 'say hello for stats' });
    const result = await session.call('stats', {});
    expect(result.isError).toBeFalsy();
    const stats = result.structuredContent as {
      calls: { calls: number; costUsd: number };
      routeDecisions: number;
    };
    expect(stats.calls.calls).toBeGreaterThanOrEqual(1);
    expect(stats.calls.costUsd).toBeGreaterThan(0);
    const cli = await runCli(['stats', '--json'], { cwd, env });
    expect(cli.status).toBe(0);
    const fromCli = JSON.parse(cli.stdout) as { calls: { calls: number } };
    expect(fromCli.calls.calls).toBeGreaterThanOrEqual(stats.calls.calls);
  });

  it('a model that echoes the API key does not leak it: the result is redacted, as serve redacts', async () => {
    const result = await session.call('call', {
      spec: 'anthropic:claude-haiku-4-5',
      prompt: 'echo back sk-ant-mcp-secret-0001',
    });
    expect(result.isError).toBeFalsy();
    expect((result.structuredContent as { text: string }).text).toContain('[redacted]');
    expect(JSON.stringify(result)).not.toContain('sk-ant-mcp-secret-0001');
    expect(session.stderr()).not.toContain('sk-ant-mcp-secret-0001');
  });
});
