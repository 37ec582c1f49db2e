import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/core/errors.js';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { claudeProcessIds, waitForNoNewClaudeProcesses } from './helpers/claude.js';
import { runCli, type CliRun } from './helpers/run-cli.js';
import { waitFor } from './helpers/wait-for.js';

// `switchboard workflow guide`: a second process records guidance in the run's ledger, and the running
// step's next model request carries it. The built CLI (`bin/switchboard` for the guide), the Anthropic
// SDK against the simulator, a real SQLite ledger, a real MCP server holding a step inside a tool call.

const root = join(import.meta.dirname, '..');
const WAITER = join(root, 'test/fixtures/mcp/wait-server.mjs');
let sim: Simulator;
const temporary: string[] = [];
const claudeBefore = claudeProcessIds();
beforeAll(async () => {
  sim = await startSimulator({ maxLifetimeMs: 120_000 });
});
afterAll(async () => {
  await sim.close();
  expect(await waitForNoNewClaudeProcesses(claudeBefore)).toEqual([]);
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

function folder(files: Record<string, string>): string {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-wf-guide-')));
  temporary.push(cwd);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(cwd, name), text);
  return cwd;
}

/** `bin/switchboard ARGS` in another process, as a person at another terminal would run it. */
function switchboard(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      join(root, 'bin/switchboard'),
      [...args],
      { cwd, env, encoding: 'utf8', timeout: 60_000 },
      (error, stdout, stderr) => {
        const status = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
        resolve({ status, stdout, stderr });
      },
    );
  });
}

type Event = { type: string; step?: string; key?: string; data?: Record<string, unknown> };
async function events(runId: string, cwd: string, env: NodeJS.ProcessEnv): Promise<Event[]> {
  const logs = await runCli(['workflow', 'logs', runId, '--json'], { cwd, env });
  expect(logs.status, logs.stderr).toBe(0);
  return logs.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Event);
}

/** The text of every message of a recorded Anthropic request, in order. */
function requestTexts(body: unknown): string[] {
  const messages = (body as { messages: { content: unknown }[] }).messages;
  return messages.flatMap((message) =>
    typeof message.content === 'string'
      ? [message.content]
      : (message.content as { type: string; text?: string }[])
          .filter((block) => block.type === 'text')
          .map((block) => block.text ?? ''),
  );
}

const GUIDANCE = /^Guidance from tester at \d{4}-\d\d-\d\dT[\d:.]+Z: use the blue widget, not the red one$/;

describe('guidance sent while an agent step runs its tool loop', () => {
  it('reaches the next model request as a user message, and the events say which step, visit and turn took it', async () => {
    const cwd = folder({
      'flow.yaml': `workflow:
  name: steered
  entry_point: worker
  runtime:
    provider: claude
    default_model: claude-haiku-4.5
    mcp_servers:
      waiter: { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(WAITER)}], tools: [wait_for] }
agents:
  - name: worker
    prompt: Build the widget.
    tools: [waiter__wait_for]
    mcp: [waiter]
    routes:
      - to: $end
`,
    });
    const go = join(cwd, 'go');
    sim.setScenario({
      rules: [
        { match: { turn: 1 }, reply: { tool: { name: 'waiter__wait_for', input: { file: go } } } },
        { match: { turn: 2 }, reply: { text: 'built it blue' } },
      ],
    });
    sim.clearLog();
    const env = {
      ...process.env,
      ANTHROPIC_API_KEY: 'sk-ant-guidance-loop',
      ANTHROPIC_BASE_URL: sim.url,
    };
    const cli = join(root, 'dist/cli/main.js');
    const child = spawn(process.execPath, [cli, 'workflow', 'run', 'flow.yaml', '--run-id', 'steer'], {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));

    // The step is inside its first tool call (the MCP tool waits for `go`): its first request went out.
    await waitFor(() => sim.requests.some((request) => request.turn === 1), {
      withinMs: 30_000,
      what: 'the first model turn',
    });
    const guided = await switchboard(
      ['workflow', 'guide', 'steer', 'use the blue widget, not the red one', '--by', 'tester'],
      cwd,
      env,
    );
    expect(guided.status, guided.stderr).toBe(0);
    expect(guided.stdout).toMatch(/^recorded guidance \d+ for steer; the next model turn reads it/);
    writeFileSync(go, '');

    expect(await exited, stderr).toBe(0);
    const turns = sim.requests.filter((request) => request.outcome === 'reply');
    expect(turns).toHaveLength(2);
    expect(requestTexts(turns[0]!.body).some((text) => text.includes('blue widget'))).toBe(false);
    // After the tool's result, in the same user turn: the guidance, as the model reads it.
    expect(requestTexts(turns[1]!.body).at(-1)).toMatch(GUIDANCE);

    const log = await events('steer', cwd, env);
    const sent = log.find((event) => event.type === 'guidance-sent');
    const delivered = log.find((event) => event.type === 'guidance-delivered');
    expect(sent?.data).toMatchObject({ text: 'use the blue widget, not the red one', sentBy: 'tester' });
    expect(delivered).toMatchObject({
      step: 'worker',
      key: 'steer/worker/0',
      data: { id: sent?.data?.['id'], visit: 0, turn: 2, sentBy: 'tester' },
    });
    // It landed between the tool's result and the second turn.
    const types = log.map((event) => event.type);
    expect(types.indexOf('guidance-delivered')).toBeGreaterThan(types.indexOf('tool-result'));
    expect(types.indexOf('guidance-delivered')).toBeLessThan(types.lastIndexOf('model-turn'));
  });
});

describe('guidance sent while the run is parked at a gate', () => {
  const GATED = `workflow:
  name: gated
  entry_point: approve
  runtime:
    provider: claude
    default_model: claude-haiku-4.5
agents:
  - name: approve
    type: human_gate
    prompt: Go ahead?
    options:
      - { label: Go, value: go, route: worker }
  - name: worker
    prompt: Build the widget.
    tools: []
    routes:
      - to: $end
`;

  it('reaches the next step that calls a model once the gate is answered; a wrong --step, an unknown run and an ended run are one-line errors', async () => {
    const cwd = folder({ 'flow.yaml': GATED });
    sim.setScenario({ rules: [], fallback: { text: 'built it blue' } });
    sim.clearLog();
    const env = {
      ...process.env,
      ANTHROPIC_API_KEY: 'sk-ant-guidance-gate',
      ANTHROPIC_BASE_URL: sim.url,
    };
    const parked = await runCli(['workflow', 'run', 'flow.yaml', '--run-id', 'parked'], { cwd, env });
    expect(parked.status, parked.stderr).toBe(EXIT_CODES.WORKFLOW_WAITING);

    const typo = await switchboard(['workflow', 'guide', 'parked', 'hello', '--step', 'wroker'], cwd, env);
    expect(typo.status).toBe(EXIT_CODES.INVALID_INPUT);
    expect(typo.stderr).toMatch(/^switchboard: .*has no step "wroker" \(did you mean worker\?\)/);
    const gate = await switchboard(['workflow', 'guide', 'parked', 'hello', '--step', 'approve'], cwd, env);
    expect(gate.status).toBe(EXIT_CODES.INVALID_INPUT);
    expect(gate.stderr).toMatch(/step "approve" .* does not call a model/);
    const unknown = await switchboard(['workflow', 'guide', 'no-such-run', 'hello'], cwd, env);
    expect(unknown.status).toBe(EXIT_CODES.RUN_NOT_FOUND);
    for (const refused of [typo, gate, unknown]) {
      expect(refused.stderr, 'no stack trace').not.toMatch(/\n\s+at /);
    }

    const guided = await switchboard(
      [
        'workflow',
        'guide',
        'parked',
        'use the blue widget, not the red one',
        '--step',
        'worker',
        '--by',
        'tester',
      ],
      cwd,
      env,
    );
    expect(guided.status, guided.stderr).toBe(0);
    expect(guided.stdout).toContain('the next model turn of "worker" reads it');
    expect(sim.requests).toHaveLength(0);

    const answered = await runCli(['workflow', 'gate', 'parked', '--choose', 'go'], { cwd, env });
    expect(answered.status, answered.stderr).toBe(0);
    const turns = sim.requests.filter((request) => request.outcome === 'reply');
    expect(turns).toHaveLength(1);
    const texts = requestTexts(turns[0]!.body);
    expect(texts[0]).toBe('Build the widget.');
    expect(texts.at(-1)).toMatch(GUIDANCE);
    const log = await events('parked', cwd, env);
    expect(log.find((event) => event.type === 'guidance-delivered')).toMatchObject({
      step: 'worker',
      key: 'parked/worker/0',
      data: { visit: 0, turn: 1, sentBy: 'tester' },
    });

    // The run completed: no model turn will read more, so it is refused and nothing is recorded.
    const late = await switchboard(['workflow', 'guide', 'parked', 'one more thing'], cwd, env);
    expect(late.status).toBe(EXIT_CODES.RUN_ENDED);
    expect(late.stderr.trimEnd().split('\n')[0]).toMatch(
      /^switchboard: .*workflow run parked has completed; no model turn will read guidance, so none was recorded/,
    );
    const after = await events('parked', cwd, env);
    expect(after.filter((event) => event.type === 'guidance-sent')).toHaveLength(1);
  });
});

describe('guidance sent to a run whose step runs a sub-workflow', () => {
  it("reaches the sub-workflow's model turns: the top run's id is the one its user knows", async () => {
    const cwd = folder({
      'parent.yaml': `workflow:
  name: parent
  entry_point: approve
agents:
  - name: approve
    type: human_gate
    prompt: Go ahead?
    options:
      - { label: Go, value: go, route: build }
  - name: build
    type: workflow
    workflow: child.yaml
    routes:
      - to: $end
`,
      'child.yaml': `workflow:
  name: child
  entry_point: worker
  runtime:
    provider: claude
    default_model: claude-haiku-4.5
agents:
  - name: worker
    prompt: Build the widget.
    tools: []
    routes:
      - to: $end
`,
    });
    sim.setScenario({ rules: [], fallback: { text: 'built it blue' } });
    sim.clearLog();
    const env = { ...process.env, ANTHROPIC_API_KEY: 'sk-ant-guidance-child', ANTHROPIC_BASE_URL: sim.url };
    const parked = await runCli(['workflow', 'run', 'parent.yaml', '--run-id', 'top'], { cwd, env });
    expect(parked.status, parked.stderr).toBe(EXIT_CODES.WORKFLOW_WAITING);
    const guided = await switchboard(
      [
        'workflow',
        'guide',
        'top',
        'use the blue widget, not the red one',
        '--step',
        'build',
        '--by',
        'tester',
      ],
      cwd,
      env,
    );
    expect(guided.status, guided.stderr).toBe(0);
    const answered = await runCli(['workflow', 'gate', 'top', '--choose', 'go'], { cwd, env });
    expect(answered.status, answered.stderr).toBe(0);
    const turns = sim.requests.filter((request) => request.outcome === 'reply');
    expect(turns).toHaveLength(1);
    expect(requestTexts(turns[0]!.body).at(-1)).toMatch(GUIDANCE);
    expect(
      (await events('top', cwd, env)).find((event) => event.type === 'guidance-delivered'),
    ).toMatchObject({
      step: 'build',
      data: { runStep: 'worker', turn: 1, sentBy: 'tester', run: expect.stringMatching(/./) as string },
    });
  });
});

describe('guidance sent while a Claude Code step runs', () => {
  it('reaches the session through its streaming input: the real Claude Code binary puts it in its next model request', async () => {
    const cwd = folder({
      'flow.yaml': `workflow:
  name: steered-claude
  entry_point: worker
  runtime:
    provider: claude-agent-sdk
    default_model: claude-haiku-4.5
    mcp_servers:
      waiter: { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(WAITER)}], tools: [wait_for] }
agents:
  - name: worker
    prompt: Build the widget.
    tools: [waiter__wait_for]
    mcp: [waiter]
    routes:
      - to: $end
`,
    });
    const go = join(cwd, 'go');
    sim.setScenario({
      rules: [
        { match: { turn: 1 }, reply: { tool: { name: 'mcp__waiter__wait_for', input: { file: go } } } },
        { match: { turn: 2 }, reply: { text: 'built it blue' } },
      ],
      fallback: { text: 'built it blue' },
    });
    sim.clearLog();
    const env = { ...process.env, ANTHROPIC_API_KEY: 'sk-ant-guidance-claude', ANTHROPIC_BASE_URL: sim.url };
    const cli = join(root, 'dist/cli/main.js');
    const child = spawn(process.execPath, [cli, 'workflow', 'run', 'flow.yaml', '--run-id', 'steer-cc'], {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));

    // Claude Code is inside the MCP tool call, which waits for \`go\`.
    await waitFor(() => sim.requests.some((request) => request.turn === 1 && request.outcome === 'reply'), {
      withinMs: 60_000,
      what: "Claude Code's first model turn",
    });
    const guided = await switchboard(
      ['workflow', 'guide', 'steer-cc', 'use the blue widget, not the red one', '--by', 'tester'],
      cwd,
      env,
    );
    expect(guided.status, guided.stderr).toBe(0);
    // Once the step took it (and wrote it to Claude Code's input), the tool may answer; the tool
    // answers either way, so a step that never takes it ends instead of hanging the test.
    let log: Event[] = [];
    try {
      for (const until = Date.now() + 60_000; Date.now() < until;) {
        log = await events('steer-cc', cwd, env);
        if (log.some((event) => event.type === 'guidance-delivered')) break;
      }
    } finally {
      writeFileSync(go, '');
    }

    expect(await exited, stderr).toBe(0);
    const turns = sim.requests.filter((request) => request.outcome === 'reply' && request.turn !== null);
    expect(JSON.stringify(turns[0]?.body)).not.toContain('blue widget');
    const later = turns.slice(1).map((request) => JSON.stringify(request.body));
    expect(
      later.some((body) => /Guidance from tester at [^"]+Z: use the blue widget, not the red one/.test(body)),
    ).toBe(true);
    expect(log.find((event) => event.type === 'guidance-delivered')).toMatchObject({
      step: 'worker',
      key: 'steer-cc/worker/0',
      data: { visit: 0, turn: 2, sentBy: 'tester' },
    });
  });
});
