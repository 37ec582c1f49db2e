import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderRegistry } from '../../providers/registry.js';
import { startSimulator, type Simulator } from '../../sim/server.js';
import type { AgentStep } from '../model.js';
import { testStepContext } from '../../../test/helpers/step-context.js';
import { executeAgentStep } from './agent.js';

// `validator:` on an LLM step, one step at a time: the real Claude Code binary and the `openai` SDK
// against `switchboard sim`, through the real call(). The engine's runs are in
// test/workflows-validator.test.ts.

let sim: Simulator;
const temporary: string[] = [];
const registries: ProviderRegistry[] = [];

beforeAll(async () => {
  sim = await startSimulator({ maxLifetimeMs: 300_000 });
});
afterAll(async () => {
  // Claude Code writes into its config folder until its provider is closed: close before removing.
  await Promise.all(registries.map((providers) => providers.close()));
  await sim.close();
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

function folder(): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-validator-step-')));
  temporary.push(directory);
  return directory;
}

function run(step: AgentStep) {
  const providers = new ProviderRegistry({
    openai: { apiKey: 'sk-openai-validator-step', baseUrl: sim.openAiBaseUrl },
    claude: { apiKey: 'sk-ant-validator-step', baseUrl: sim.url, configDir: folder() },
  });
  registries.push(providers);
  const dir = folder();
  const context = testStepContext({ step, dir, stateDir: join(dir, '.switchboard'), registry: providers });
  return { context, outcome: executeAgentStep(context) };
}

const step = (fields: Partial<AgentStep>): AgentStep => ({
  type: 'agent',
  name: 'review',
  routes: [],
  input: [],
  prompt: 'Say what colour the sky is.',
  validator: { criteria: 'The answer names a colour.', maxRetries: 1 },
  ...fields,
});

const GRADER = { system: 'acceptance criteria' };

describe('validator: around one LLM step', () => {
  it('claude-agent-sdk: the grader is offered none of the step’s tools, only Claude Code’s structured answer', async () => {
    sim.setScenario({
      rules: [
        {
          name: 'grader',
          match: { ...GRADER, tools: 'StructuredOutput' },
          reply: { tool: { name: 'StructuredOutput', input: { passed: true, issues: [] } } },
        },
        { name: 'step', match: { tools: 'Read' }, reply: { text: 'Blue.' } },
      ],
      // Claude Code's turn after the structured answer.
      fallback: { text: 'done' },
    });
    const before = sim.requests.length;
    const { context, outcome } = run(step({ provider: 'claude-agent-sdk', model: 'claude-haiku-4.5' }));
    expect(await outcome).toMatchObject({ status: 'completed', output: { result: 'Blue.' } });
    const requests = sim.requests.slice(before).filter((request) => request.outcome === 'reply');
    // The step's own call has its tools (Claude Code's whole set); the grader's has no tool but the answer's.
    expect(requests.find((request) => request.rule === 'step')?.tools.sort()).toEqual([
      'Bash',
      'Edit',
      'Glob',
      'Grep',
      'Read',
      'Write',
    ]);
    const grader = requests.filter((request) => request.rule === 'grader');
    expect(grader.length).toBeGreaterThan(0);
    for (const request of grader) expect(request.tools).toEqual(['StructuredOutput']);
    expect(context.events.find((event) => event.type === 'validator-end')?.data).toMatchObject({
      passed: true,
    });
  });

  it('a re-run that fails keeps the first answer, reports the failure, and counts its cost', async () => {
    sim.setScenario({
      rules: [
        {
          match: GRADER,
          reply: { json: { passed: false, issues: ['Name a colour.'] }, usage: { input: 200, output: 20 } },
        },
        {
          match: { text: 'Name a colour' },
          fault: { kind: 'status', status: 400, message: 'context too long' },
        },
      ],
      fallback: { text: 'It is a lovely day.', usage: { input: 100, output: 1_000 } },
    });
    const { context, outcome } = run(step({ provider: 'openai', model: 'gpt-4.1-mini' }));
    const done = await outcome;
    expect(done).toMatchObject({ status: 'completed', output: { result: 'It is a lovely day.' } });
    expect(done.costUsd).toBeCloseTo((100 * 0.4 + 1_000 * 1.6 + 200 * 0.4 + 20 * 1.6) / 1_000_000, 12);
    expect(context.events.map((event) => event.type)).toEqual([
      'step-prompt',
      'validator-start',
      'validator-end',
      'validator-retry',
      'step-prompt',
      'validator-retry-failed',
    ]);
    // The re-run's prompt is the step's with the grader's issues after it.
    expect(String(context.events[4]?.data?.['prompt'])).toMatch(/Feedback on your previous answer/);
    expect(context.events[5]?.data).toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringContaining('context too long') as string,
    });
  });
});
