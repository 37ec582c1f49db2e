import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/core/errors.js';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { runCli } from './helpers/run-cli.js';

// Conductor's `reasoning.effort` and `runtime.default_reasoning_effort` through the built CLI: each
// provider's request, as the official SDKs sent it to the simulator, carries the provider's own
// setting; on Anthropic the tool loop sends each turn's signed thinking back, as the API requires.

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
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-wf-reasoning-')));
  temporary.push(cwd);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(cwd, name), text);
  return cwd;
}

const env = () => ({
  ...process.env,
  ANTHROPIC_API_KEY: 'sk-ant-reasoning-test',
  ANTHROPIC_BASE_URL: sim.url,
  OPENAI_API_KEY: 'sk-openai-reasoning-test',
  OPENAI_BASE_URL: sim.openAiBaseUrl,
  GEMINI_API_KEY: 'gemini-reasoning-test',
  GEMINI_BASE_URL: sim.url,
});

const FLOW = `workflow:
  name: thinker
  entry_point: reader
  runtime:
    provider: claude
    default_model: claude-haiku-4.5
    default_reasoning_effort: medium
agents:
  - name: reader
    prompt: What does notes.txt say?
    reasoning:
      effort: high
    output:
      summary: { type: string }
    routes:
      - to: chat
  - name: chat
    provider: openai
    model: gpt-4.1-mini
    prompt: Say something about {{ reader.output.summary }}
    tools: []
    routes:
      - to: gem
  - name: gem
    provider: gemini
    model: gemini-2.5-flash
    prompt: And you?
    tools: []
    reasoning:
      effort: max
    routes:
      - to: $end
`;

type Body = Record<string, unknown>;
const bodies = (wire: string): Body[] =>
  sim.requests
    .filter((request) => request.wire === wire && request.outcome === 'reply')
    .map((request) => request.body as Body);

describe('reasoning.effort', () => {
  it('reaches each provider as its own setting, and a thinking tool loop on Anthropic completes', async () => {
    sim.setScenario({
      rules: [
        {
          match: { provider: 'anthropic', turn: 1 },
          reply: { tool: { name: 'read_file', input: { path: 'notes.txt' } } },
        },
        { reply: { conform: true, text: 'fine' } },
      ],
    });
    sim.clearLog();
    const cwd = folder({ 'flow.yaml': FLOW, 'notes.txt': 'the word is heliotrope\n' });
    const run = await runCli(['workflow', 'run', 'flow.yaml', '--run-id', 'thinks', '--json'], {
      cwd,
      env: env(),
    });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).not.toMatch(/reasoning/);

    const anthropic = bodies('anthropic');
    expect(anthropic.length).toBe(2);
    for (const body of anthropic) {
      // high: 16,384 tokens of thinking, max_tokens raised to leave 4,096 for the answer; no forced tool.
      expect(body['thinking']).toEqual({ type: 'enabled', budget_tokens: 16_384 });
      expect(body['max_tokens']).toBe(16_384 + 4_096);
      expect((body['tool_choice'] as Body | undefined)?.['type'] ?? 'auto').toBe('auto');
    }
    // The second turn sends the first turn's signed thinking back before its tool call (the simulator
    // answers 400 otherwise, as the API does, and the run would have failed).
    const messages = anthropic[1]!['messages'] as { role: string; content: Body[] | string }[];
    const assistant = messages.find((message) => message.role === 'assistant');
    expect((assistant?.content as Body[]).map((block) => block['type'])).toEqual(['thinking', 'tool_use']);

    // openai inherits the runtime's default; gemini's `max` is capped at Flash's largest budget.
    expect(bodies('chat')[0]?.['reasoning_effort']).toBe('medium');
    const gemini = bodies('gemini')[0] as { generationConfig?: { thinkingConfig?: unknown } };
    expect(gemini.generationConfig?.thinkingConfig).toEqual({ thinkingBudget: 24_576 });
  });

  it('rejects an effort no provider knows at validate, naming the levels', async () => {
    const cwd = folder({ 'flow.yaml': FLOW.replace('effort: high', 'effort: huge') });
    const result = await runCli(['workflow', 'validate', 'flow.yaml'], { cwd, env: env() });
    expect(result.status).not.toBe(0);
    expect(result.stdout).toMatch(/"reader": field "reasoning\.effort": "huge" is not valid/);
    expect(result.stdout).toMatch(/low, medium, high, xhigh, max/);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});

describe('switchboard call --reasoning', () => {
  it("reaches the real Claude Code as its effort setting, and Anthropic's API as a thinking budget", async () => {
    sim.setScenario({ rules: [{ reply: { text: 'thought about it' } }] });
    sim.clearLog();
    const cwd = folder({});
    const claude = await runCli(
      ['call', 'claude:haiku', '--base-url', sim.url, '--reasoning', 'high', '--no-ledger', 'hi'],
      { cwd, env: env() },
    );
    expect(claude.status, claude.stderr).toBe(0);
    expect(claude.stdout).toContain('thought about it');
    const fromClaudeCode = bodies('anthropic').find((body) => body['output_config'] !== undefined);
    expect(fromClaudeCode?.['output_config']).toMatchObject({ effort: 'high' });

    sim.clearLog();
    const api = await runCli(
      ['call', 'anthropic:claude-haiku-4-5', '--reasoning', 'low', '--no-ledger', 'hi'],
      { cwd, env: env() },
    );
    expect(api.status, api.stderr).toBe(0);
    expect(bodies('anthropic')[0]?.['thinking']).toEqual({ type: 'enabled', budget_tokens: 2_048 });
  });

  it('refuses a level it does not know as a usage error naming the levels', async () => {
    const result = await runCli(['call', 'anthropic:claude-haiku-4-5', '--reasoning', 'huge', 'hi'], {
      cwd: folder({}),
      env: env(),
    });
    expect(result.status).toBe(EXIT_CODES.INVALID_INPUT);
    expect(result.stderr).toMatch(/--reasoning.*low, medium, high, xhigh, max/);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});
