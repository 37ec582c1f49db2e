import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Sqlite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/core/errors.js';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { runCli } from './helpers/run-cli.js';
import { waitFor } from './helpers/wait-for.js';

// `switchboard workflow run` with an LLM step on an API provider that has tools: the built CLI, the
// Anthropic SDK against the simulator, a real SQLite ledger.

let sim: Simulator;
const temporary: string[] = [];
beforeAll(async () => {
  sim = await startSimulator({ maxLifetimeMs: 120_000 });
});
afterAll(async () => {
  await sim.close();
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

function folder(files: Record<string, string>): string {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-wf-tools-')));
  temporary.push(cwd);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(cwd, name), text);
  return cwd;
}

const FLOW = `workflow:
  name: reader
  entry_point: reader
  runtime:
    provider: claude
    default_model: claude-haiku-4.5
agents:
  - name: reader
    prompt: What does notes.txt say?
    max_agent_iterations: 3
    routes:
      - to: $end
`;

describe('a tool loop that never answers', () => {
  it('stops at max_agent_iterations: MAX_TURNS (exit 31) in one line, and the ledger has one row per turn with its cost', async () => {
    sim.setScenario({
      rules: [
        {
          match: { provider: 'anthropic' },
          reply: {
            tool: { name: 'read_file', input: { path: 'notes.txt' } },
            usage: { input: 1000, output: 50 },
          },
        },
      ],
    });
    sim.clearLog();
    const cwd = folder({ 'flow.yaml': FLOW, 'notes.txt': 'nothing new\n' });
    const env = { ...process.env, ANTHROPIC_API_KEY: 'sk-ant-tool-loop-cli', ANTHROPIC_BASE_URL: sim.url };
    const result = await runCli(['workflow', 'run', 'flow.yaml', '--run-id', 'looping'], { cwd, env });
    expect(result.status, result.stderr).toBe(EXIT_CODES.MAX_TURNS);
    const last = result.stderr.trimEnd().split('\n').at(-1) ?? '';
    expect(last).toMatch(
      /^switchboard: .*step "reader" took 3 model turns without answering \(max_agent_iterations: 3\); raise max_agent_iterations on the step, or narrow its prompt/,
    );
    expect(result.stderr, 'no stack trace').not.toMatch(/\n\s+at /);
    expect(sim.requests.filter((request) => request.outcome === 'reply')).toHaveLength(3);

    const ledger = new Sqlite(join(cwd, '.switchboard', 'ledger.db'), { readonly: true });
    const rows = ledger
      .prepare('SELECT success, input_tokens, cost_usd, tags FROM call_attempts ORDER BY created_at')
      .all() as { success: number; input_tokens: number; cost_usd: number; tags: string }[];
    const step = ledger
      .prepare("SELECT status, error_code, cost_usd FROM workflow_steps WHERE key = 'looping/reader/0'")
      .get() as { status: string; error_code: string; cost_usd: number };
    ledger.close();
    expect(rows).toHaveLength(3);
    for (const row of rows) {
      expect(row).toMatchObject({ success: 1, input_tokens: 1000 });
      expect(row.cost_usd).toBeGreaterThan(0);
      expect(JSON.parse(row.tags)).toMatchObject({
        workflow_run: 'looping',
        workflow_step: 'looping/reader/0',
      });
    }
    expect(step).toMatchObject({ status: 'failed', error_code: 'MAX_TURNS' });
    expect(step.cost_usd).toBeCloseTo(
      rows.reduce((sum, row) => sum + row.cost_usd, 0),
      12,
    );

    // The run's log shows each turn and each tool call, as for a step on Claude Code.
    const logs = await runCli(['workflow', 'logs', 'looping', '--json'], { cwd, env });
    const events = logs.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; data?: Record<string, unknown> });
    expect(events.filter((event) => event.type === 'model-turn')).toHaveLength(3);
    expect(events.filter((event) => event.type === 'tool-call')).toHaveLength(3);
    expect(events.find((event) => event.type === 'tool-result')?.data).toMatchObject({
      tool: 'read_file',
      error: false,
      result: 'nothing new',
    });
  });
});

describe('a step killed in the middle of its tool loop', () => {
  it('runs again from its start on resume; the killed turn stays in the ledger once and counts toward the step', async () => {
    const cwd = folder({
      'flow.yaml': FLOW.replace('    max_agent_iterations: 3\n', ''),
      'notes.txt': 'the secret word is heliotrope\n',
    });
    const env = { ...process.env, ANTHROPIC_API_KEY: 'sk-ant-tool-loop-kill', ANTHROPIC_BASE_URL: sim.url };
    const usage = { input: 1000, output: 50 };
    // The first attempt reads the file, then waits for a model that never answers.
    sim.setScenario({
      rules: [
        { match: { turn: 1 }, reply: { tool: { name: 'read_file', input: { path: 'notes.txt' } }, usage } },
        { match: { turn: 2 }, fault: { kind: 'stall' } },
      ],
    });
    sim.clearLog();
    const cli = join(import.meta.dirname, '..', 'dist/cli/main.js');
    const child = spawn(process.execPath, [cli, 'workflow', 'run', 'flow.yaml', '--run-id', 'killed'], {
      cwd,
      env,
      stdio: 'ignore',
    });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    const ledgerFile = join(cwd, '.switchboard', 'ledger.db');
    const rows = () => {
      if (!existsSync(ledgerFile)) return [];
      const ledger = new Sqlite(ledgerFile, { readonly: true });
      try {
        return ledger.prepare('SELECT cost_usd FROM call_attempts ORDER BY created_at').all() as {
          cost_usd: number;
        }[];
      } catch {
        return [];
      } finally {
        ledger.close();
      }
    };
    await waitFor(() => rows().length === 1 && sim.requests.length === 2, {
      what: 'the first turn recorded and the second sent',
    });
    child.kill('SIGKILL');
    await exited;

    sim.setScenario({
      rules: [
        { match: { turn: 1 }, reply: { tool: { name: 'read_file', input: { path: 'notes.txt' } }, usage } },
        { match: { text: 'heliotrope' }, reply: { text: 'It says heliotrope.', usage } },
      ],
    });
    sim.clearLog();
    const resumed = await runCli(['workflow', 'resume', 'killed', '--json'], { cwd, env });
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({
      status: 'completed',
      steps: [{ key: 'killed/reader/0', status: 'completed', attempts: 2 }],
    });
    // From its start: the prompt alone, then the file's content.
    expect(sim.requests.map((request) => request.turn)).toEqual([1, 2]);
    const all = rows();
    expect(all).toHaveLength(3);
    const ledger = new Sqlite(ledgerFile, { readonly: true });
    const step = ledger
      .prepare("SELECT status, attempt, output, cost_usd FROM workflow_steps WHERE key = 'killed/reader/0'")
      .get() as { status: string; attempt: number; output: string; cost_usd: number };
    ledger.close();
    expect(step).toMatchObject({ status: 'completed', attempt: 2 });
    expect(JSON.parse(step.output)).toEqual({ result: 'It says heliotrope.' });
    expect(step.cost_usd).toBeCloseTo(
      all.reduce((sum, row) => sum + row.cost_usd, 0),
      12,
    );
  });
});

describe('validate: the tool names of a step on an API provider', () => {
  it('a misspelt file tool or MCP tool is a problem naming the closest name; WebFetch on an API step is a warning', async () => {
    const flow = (tools: string) => `workflow:
  name: reader
  entry_point: reader
  runtime:
    provider: openai
    default_model: gpt-4.1-mini
    mcp_servers:
      toolbox: { command: toolbox-server, tools: [lookup] }
agents:
  - name: reader
    prompt: What does notes.txt say?
    tools: ${tools}
    routes:
      - to: $end
`;
    const cwd = folder({ 'flow.yaml': flow('[reed_file]') });
    const misspelt = await runCli(['workflow', 'validate', 'flow.yaml'], { cwd, env: process.env });
    expect(misspelt.status).toBe(EXIT_CODES.WORKFLOW_INVALID);
    expect(misspelt.stdout).toMatch(
      /tools\[0\].*"reed_file" is not a Claude Code tool, a file tool .*\(did you mean read_file\?\)/,
    );
    writeFileSync(join(cwd, 'flow.yaml'), flow('[read_file, toolbox__lokup]'));
    const mcp = await runCli(['workflow', 'validate', 'flow.yaml'], { cwd, env: process.env });
    expect(mcp.status).toBe(EXIT_CODES.WORKFLOW_INVALID);
    expect(mcp.stdout).toMatch(
      /tools\[1\].*"lokup" is not among the tools runtime\.mcp_servers\.toolbox\.tools allows \(did you mean toolbox__lookup\?\)/,
    );

    writeFileSync(join(cwd, 'flow.yaml'), flow('[read_file, Grep, toolbox__lookup, lookup, WebFetch]'));
    const valid = await runCli(['workflow', 'validate', 'flow.yaml'], { cwd, env: process.env });
    expect(valid.status, valid.stdout).toBe(0);
    expect(valid.stdout).toMatch(
      /step "reader" runs on openai:gpt-4\.1-mini, which has no WebFetch: left out of its tools/,
    );
  });
});
