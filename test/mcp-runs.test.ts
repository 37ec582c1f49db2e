import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import type { Scenario } from '../src/sim/scenario.js';
import { claudeProcessIds, waitForNoNewClaudeProcesses } from './helpers/claude.js';
import { slowScenario, writeFilesScenario } from './helpers/agent-scenarios.js';
import { createRepository, git } from './helpers/git-repo.js';
import { connectStdio, type McpSession } from './helpers/mcp-client.js';
import { runCli } from './helpers/run-cli.js';
import { waitFor } from './helpers/wait-for.js';

// The long tools of `switchboard mcp`: agent runs (the real Claude Code binary against `switchboard
// sim`, real git) and workflow runs, started over stdio with the official MCP SDK client, reported by
// progress notifications, answered with a run id past wait_seconds, and seen by the CLI in the same
// state folder.

const temporary: string[] = [];
const sessions: McpSession[] = [];
let sim: Simulator | undefined;
const claudeBefore = claudeProcessIds();

afterEach(async () => {
  for (const session of sessions.splice(0)) await session.close();
  await sim?.close();
  sim = undefined;
});
afterAll(async () => {
  expect(await waitForNoNewClaudeProcesses(claudeBefore)).toEqual([]);
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

interface Workspace {
  root: string;
  env: NodeJS.ProcessEnv;
  session: McpSession;
}

async function workspace(scenario: Scenario): Promise<Workspace> {
  sim = await startSimulator({ scenario, maxLifetimeMs: 120_000 });
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-mcp-runs-')));
  temporary.push(root);
  mkdirSync(join(root, 'claude-config'));
  const env = {
    ...process.env,
    ANTHROPIC_API_KEY: 'sk-ant-mcp-runs-secret',
    ANTHROPIC_BASE_URL: sim.url,
    CLAUDE_CONFIG_DIR: join(root, 'claude-config'),
    SWITCHBOARD_STATE_DIR: join(root, 'state'),
  };
  const session = await connectStdio([], { cwd: root, env });
  sessions.push(session);
  return { root, env, session };
}

describe('switchboard mcp: agent runs', () => {
  it('agent_run answers with the run id while it runs, reports progress, and agent_status (and the CLI) see it end', async () => {
    const space = await workspace(writeFilesScenario({ files: [{ path: 'hello.txt', content: 'hi\n' }] }));
    const repo = createRepository(join(space.root, 'repo'));
    const progress: string[] = [];
    const started = await space.session.call(
      'agent_run',
      {
        task: { id: 'mcp-hello', title: 'Say hello', verify: 'test -f hello.txt' },
        repo,
        wait_seconds: 0,
      },
      { onProgress: ({ message }) => progress.push(message ?? '') },
    );
    expect(started.isError, JSON.stringify(started)).toBeFalsy();
    const runId = (started.structuredContent as { runId: string }).runId;
    expect(runId).toMatch(/^mcp-hello-[0-9a-f]{6}$/);
    expect(started.structuredContent).toMatchObject({ state: 'running' });
    expect(progress.length).toBeGreaterThan(0);

    const ended = await space.session.call('agent_status', { run_id: runId, wait_seconds: 60 });
    expect(ended.structuredContent).toMatchObject({ runId, state: 'succeeded', phase: 'done' });
    expect(readFileSync(join(repo, 'hello.txt'), 'utf8')).toBe('hi\n');
    expect(git(repo, 'log', '--format=%s', '-2')).toContain('Say hello');

    const shown = await runCli(['agent', 'show', runId, '--json'], { cwd: space.root, env: space.env });
    expect(shown.status, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: runId, status: 'succeeded' });
  });

  it('SIGTERM to the server (what a leaving client sends) stops its agent run cleanly: cancelled, no Claude Code left', async () => {
    const space = await workspace(slowScenario({ delayMs: 60_000 }));
    const repo = createRepository(join(space.root, 'repo'));
    const started = await space.session.call('agent_run', {
      task: { id: 'mcp-slow', title: 'Take your time' },
      repo,
      wait_seconds: 0,
    });
    const runId = (started.structuredContent as { runId: string }).runId;
    const pid = space.session.pid as number;
    process.kill(pid, 'SIGTERM');
    await waitFor(() => !processAlive(pid), { what: 'the mcp server to exit', withinMs: 20_000 });
    const shown = await runCli(['agent', 'show', runId, '--json'], { cwd: space.root, env: space.env });
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: runId, status: 'cancelled' });
  });

  it('a task that cannot start is a tool error with the code and hint, and no run is recorded', async () => {
    const space = await workspace({ rules: [], fallback: { text: 'done' } });
    const notARepo = join(space.root, 'plain');
    mkdirSync(notARepo);
    const result = await space.session.call('agent_run', {
      task: { id: 'nowhere', title: 'Nothing' },
      repo: notARepo,
    });
    expect(result.isError).toBe(true);
    const text = result.content[0]?.type === 'text' ? result.content[0].text : '';
    expect(text).toMatch(/^[A-Z_]+ \(exit \d+\): .*\nhint: /);
    const listed = await runCli(['agent', 'ls', '--json'], { cwd: space.root, env: space.env });
    expect(JSON.parse(listed.stdout)).toEqual([]);
  });
});

/** An LLM step, a two-second wait, a human gate, and an output from both. */
const GATED = `workflow:
  name: gated
  entry_point: ask
  runtime:
    provider: copilot
agents:
  - name: ask
    prompt: Name a colour.
    output:
      colour: { type: string }
    routes:
      - to: pause
  - name: pause
    type: wait
    duration: 2s
    routes:
      - to: approve
  - name: approve
    type: human_gate
    prompt: Paint it?
    options:
      - { label: Paint, value: paint, route: $end }
      - { label: Not yet, value: hold, route: $end }
output:
  colour: "{{ ask.output.colour }}"
  choice: "{{ approve.output.selected }}"
`;

describe('switchboard mcp: workflow runs', () => {
  it('workflow_run goes on past wait_seconds, parks at the gate, and workflow_gate finishes it', async () => {
    const space = await workspace({ rules: [], fallback: { text: '{"colour": "teal"}' } });
    writeFileSync(join(space.root, 'gated.yaml'), GATED);
    const progress: string[] = [];
    const started = await space.session.call(
      'workflow_run',
      { file: 'gated.yaml', provider: 'anthropic:claude-haiku-4-5', wait_seconds: 0.5 },
      { onProgress: ({ message }) => progress.push(message ?? '') },
    );
    expect(started.isError, JSON.stringify(started)).toBeFalsy();
    expect(started.structuredContent).toMatchObject({ state: 'running', workflow: 'gated' });
    expect(progress.some((line) => line.includes('ask'))).toBe(true);
    const runId = (started.structuredContent as { runId: string }).runId;

    const parked = await space.session.call('workflow_status', { run_id: runId, wait_seconds: 30 });
    expect(parked.structuredContent).toMatchObject({
      runId,
      state: 'waiting',
      gate: { step: 'approve', prompt: 'Paint it?' },
    });
    const fromCli = await runCli(['workflow', 'status', runId, '--json'], {
      cwd: space.root,
      env: space.env,
    });
    expect(JSON.parse(fromCli.stdout)).toMatchObject({ id: runId, status: 'waiting' });

    // Guidance for the parked run is recorded, for the next step that calls a model.
    const guided = await space.session.call('workflow_guide', {
      run_id: runId,
      text: 'a darker teal',
      by: 'mcp-user',
    });
    expect(guided.isError, JSON.stringify(guided)).toBeFalsy();
    expect(guided.structuredContent).toMatchObject({ runId, text: 'a darker teal', sentBy: 'mcp-user' });

    const answered = await space.session.call('workflow_gate', { run_id: runId, choose: 'paint' });
    expect(answered.structuredContent).toMatchObject({
      runId,
      state: 'completed',
      output: { colour: 'teal', choice: 'paint' },
    });
    // A second answer, after the run completed, is the tool's error: who answered what, and when.
    const again = await space.session.call('workflow_gate', {
      run_id: runId,
      step: 'approve',
      choose: 'hold',
    });
    const late = await space.session.call('workflow_guide', { run_id: runId, text: 'too late' });
    expect(late.isError).toBe(true);
    expect(late.content[0]).toMatchObject({
      text: expect.stringMatching(/^RUN_ENDED \(exit 71\): workflow run \S+ has completed/) as string,
    });
    expect(again.isError).toBe(true);
    expect(again.content[0]).toMatchObject({
      text: expect.stringMatching(
        /^GATE_TAKEN \(exit 62\): gate "approve" of workflow run \S+ was already answered "paint" by \S+ at \d{4}-.+Z; "hold" was not recorded/,
      ) as string,
    });
  });

  it('a gate answer that is not an option is a tool error naming the options', async () => {
    const space = await workspace({ rules: [], fallback: { text: '{"colour": "red"}' } });
    writeFileSync(join(space.root, 'gated.yaml'), GATED);
    const parked = await space.session.call('workflow_run', {
      file: 'gated.yaml',
      provider: 'anthropic:claude-haiku-4-5',
    });
    expect(parked.structuredContent).toMatchObject({ state: 'waiting' });
    const runId = (parked.structuredContent as { runId: string }).runId;
    const wrong = await space.session.call('workflow_gate', { run_id: runId, choose: 'maybe' });
    expect(wrong.isError).toBe(true);
    expect(wrong.content[0]).toMatchObject({
      text: expect.stringMatching(
        /^INVALID_INPUT \(exit 2\): gate "approve" has no option "maybe"\nhint: choose one of: paint, hold/,
      ),
    });
  });
});
