import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderRegistry } from '../../providers/registry.js';
import { startSimulator, type Simulator } from '../../sim/server.js';
import type { AgentStep, OutputField } from '../model.js';
import { testStepContext } from '../../../test/helpers/step-context.js';
import { executeAgentStep } from './agent.js';

// The LLM form of `type: agent`: the official SDKs and the real Claude Code binary against `switchboard
// sim` on loopback, through the real call().

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
  const directory = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-llm-step-')));
  temporary.push(directory);
  return directory;
}

function registry(): ProviderRegistry {
  const providers = new ProviderRegistry({
    anthropic: { apiKey: 'sk-ant-llm-step', baseUrl: sim.url },
    openai: { apiKey: 'sk-openai-llm-step', baseUrl: sim.openAiBaseUrl },
    gemini: { apiKeys: ['gemini-llm-step'], baseUrl: sim.url },
    claude: { apiKey: 'sk-ant-llm-step', baseUrl: sim.url, configDir: folder() },
  });
  registries.push(providers);
  return providers;
}

const field = (type: OutputField['type'], extra: Partial<OutputField> = {}): OutputField => ({
  type,
  required: true,
  nullable: false,
  ...extra,
});

const verdictOutput: Record<string, OutputField> = {
  verdict: field('string', { enum: ['approve', 'revise'] }),
  findings: field('array', { items: field('string') }),
};

function agentStep(fields: Partial<AgentStep> = {}): AgentStep {
  return {
    type: 'agent',
    name: 'reviewer',
    routes: [],
    input: [],
    prompt: 'Review this draft: {{ workflow.input.draft }}',
    ...fields,
  };
}

function run(step: AgentStep, providers = registry()) {
  const dir = folder();
  const context = testStepContext({
    step,
    dir,
    stateDir: join(dir, '.switchboard'),
    registry: providers,
    scope: { workflow: { input: { draft: 'The sky is green.' } } },
  });
  return { context, outcome: executeAgentStep(context) };
}

const structuredReply = (provider: string, value: Record<string, unknown>) =>
  provider === 'anthropic' ? { tool: { name: 'emit_output', input: value } } : { json: value };

describe('type: agent without effects: git', () => {
  for (const [provider, conductorName, model] of [
    ['anthropic', 'claude', 'claude-haiku-4.5'],
    ['gemini', 'gemini', 'gemini-2.5-flash'],
    ['openai', 'openai', 'gpt-4.1-mini'],
  ] as const) {
    it(`${provider}: asks for the output: fields as structured output and returns the validated value`, async () => {
      const value = { verdict: 'revise', findings: ['the sky is blue'] };
      sim.setScenario({ rules: [{ match: { provider }, reply: structuredReply(provider, value) }] });
      const before = sim.requests.length;
      const { outcome } = run(agentStep({ provider: conductorName, model, output: verdictOutput }));
      expect(await outcome).toMatchObject({ status: 'completed', output: value });
      const requests = sim.requests.slice(before);
      expect(requests).toHaveLength(1);
      expect(requests[0]?.text).toContain('The sky is green.');
      // With no tools: the default set, the file tools, and the answer as a tool of its own (a model that
      // writes the JSON as text instead, as this simulator's gemini and openai replies do, is read too).
      expect(requests[0]?.tools).toEqual([
        'read_file',
        'list_files',
        'search_files',
        'write_file',
        'edit_file',
        'run_command',
        'emit_output',
      ]);
    });
  }

  it('re-asks with a diagnosis when the answer breaks a constraint, as often as max_parse_recovery_attempts allows', async () => {
    sim.setScenario({
      rules: [
        {
          match: { provider: 'gemini', turn: 1 },
          times: 1,
          reply: { json: { verdict: 'maybe', findings: [] } },
        },
        { match: { provider: 'gemini' }, reply: { json: { verdict: 'approve', findings: [] } } },
      ],
    });
    const before = sim.requests.length;
    const retry = {
      maxAttempts: 1,
      backoff: 'fixed',
      delaySeconds: 0,
      retryOn: [],
      maxParseRecoveryAttempts: 1,
    } as const;
    const step = agentStep({
      provider: 'gemini',
      model: 'gemini-2.5-flash',
      output: verdictOutput,
      retry: { ...retry, retryOn: [] },
    });
    expect(await run(step).outcome).toMatchObject({ status: 'completed', output: { verdict: 'approve' } });
    const requests = sim.requests.slice(before);
    expect(requests).toHaveLength(2);
    expect(requests[1]?.text).toMatch(/could not be used/);

    // With no recovery attempt the step fails on the first bad answer, naming the schema problem.
    sim.setScenario({
      rules: [{ match: { provider: 'gemini' }, reply: { json: { verdict: 'maybe', findings: [] } } }],
    });
    const strict = agentStep({ ...step, retry: { ...retry, retryOn: [], maxParseRecoveryAttempts: 0 } });
    const failed = await run(strict).outcome;
    expect(failed.status).toBe('failed');
    expect(failed.error?.code).toBe('SCHEMA');
  });

  it('without output: (or with output_mode: raw) stores the answer as {result: text}', async () => {
    sim.setScenario({
      rules: [{ match: { provider: 'openai' }, reply: { text: '# Report\n\n```json\n{"a": 1}\n```' } }],
    });
    for (const outputMode of [undefined, 'raw'] as const) {
      const step = agentStep({
        provider: 'openai',
        model: 'gpt-4.1-mini',
        ...(outputMode === undefined ? {} : { outputMode }),
      });
      expect(await run(step).outcome).toMatchObject({
        status: 'completed',
        output: { result: '# Report\n\n```json\n{"a": 1}\n```' },
      });
    }
  });

  it("follows the step's retry: block: max_attempts 2 rides out a server error, max_attempts 1 fails with it", async () => {
    const scenario = {
      rules: [
        { match: { provider: 'anthropic' as const }, times: 1, fault: { status: 500 } },
        { match: { provider: 'anthropic' as const }, reply: { text: 'fine' } },
      ],
    };
    const retry = (maxAttempts: number) =>
      ({ maxAttempts, backoff: 'fixed', delaySeconds: 0.01, retryOn: ['provider_error'] }) as const;
    sim.setScenario(scenario);
    expect(
      await run(agentStep({ provider: 'claude', retry: { ...retry(2), retryOn: ['provider_error'] } }))
        .outcome,
    ).toMatchObject({
      status: 'completed',
      output: { result: 'fine' },
    });
    sim.setScenario(scenario);
    const failed = await run(
      agentStep({ provider: 'claude', retry: { ...retry(1), retryOn: ['provider_error'] } }),
    ).outcome;
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'PROVIDER_ERROR' } });
  });

  it('claude-agent-sdk: Claude Code runs in working_dir with the step tools', async () => {
    const workDir = folder();
    writeFileSync(join(workDir, 'notes.txt'), 'the secret word is heliotrope\n');
    sim.setScenario({
      rules: [
        {
          match: { provider: 'anthropic', turn: 1, tools: 'Read' },
          reply: { tool: { name: 'Read', input: { file_path: 'notes.txt' } } },
        },
        { match: { provider: 'anthropic', turn: 2 }, reply: { text: 'It says heliotrope.' } },
      ],
      fallback: { text: 'title' },
    });
    const before = sim.requests.length;
    const step = agentStep({
      provider: 'claude-agent-sdk',
      model: 'claude-haiku-4.5',
      tools: ['Read'],
      workingDir: workDir,
    });
    expect(await run(step).outcome).toMatchObject({
      status: 'completed',
      output: { result: 'It says heliotrope.' },
    });
    const turn2 = sim.requests.slice(before).find((request) => request.turn === 2);
    expect(turn2?.text).toContain('heliotrope');
  });

  it('claude-agent-sdk: the MCP servers the engine allows reach Claude Code, and no other', async () => {
    const server = join(import.meta.dirname, '../../../test/fixtures/mcp/shout-server.mjs');
    sim.setScenario({
      rules: [
        {
          match: { provider: 'anthropic', turn: 1, tools: 'mcp__loud__shout' },
          reply: { tool: { name: 'mcp__loud__shout', input: { text: 'quiet please' } } },
        },
        { match: { provider: 'anthropic', turn: 2 }, reply: { text: 'shouted' } },
      ],
      fallback: { text: 'no tools offered' },
    });
    const before = sim.requests.length;
    const dir = folder();
    const context = testStepContext({
      step: agentStep({ provider: 'claude-agent-sdk', model: 'claude-haiku-4.5' }),
      dir,
      stateDir: join(dir, '.switchboard'),
      registry: registry(),
      scope: { workflow: { input: { draft: 'x' } } },
      mcpServers: { loud: { type: 'stdio', command: process.execPath, args: [server], env: {}, tools: [] } },
    });
    expect(await executeAgentStep(context)).toMatchObject({
      status: 'completed',
      output: { result: 'shouted' },
    });
    const requests = sim.requests.slice(before);
    // The step names no tools: Claude Code's whole set, plus the server's, and no other server's.
    expect(requests.find((request) => request.turn === 1)?.tools?.sort()).toEqual([
      'Bash',
      'Edit',
      'Glob',
      'Grep',
      'Read',
      'Write',
      'mcp__loud__shout',
    ]);
    expect(requests.find((request) => request.turn === 2)?.text).toContain('QUIET PLEASE');
  });

  it("claude-agent-sdk: tools: restricts the MCP server's tools too: [Read] offers none of them, [Read, loud__shout] that one", async () => {
    const server = join(import.meta.dirname, '../../../test/fixtures/mcp/shout-server.mjs');
    sim.setScenario({ rules: [], fallback: { text: 'done' } });
    const offered = async (tools: string[]) => {
      const before = sim.requests.length;
      const dir = folder();
      const context = testStepContext({
        step: agentStep({ provider: 'claude-agent-sdk', model: 'claude-haiku-4.5', tools }),
        dir,
        stateDir: join(dir, '.switchboard'),
        registry: registry(),
        scope: { workflow: { input: { draft: 'x' } } },
        mcpServers: {
          loud: { type: 'stdio', command: process.execPath, args: [server], env: {}, tools: [] },
        },
      });
      expect(await executeAgentStep(context)).toMatchObject({ status: 'completed' });
      return sim.requests
        .slice(before)
        .find((request) => request.turn === 1)
        ?.tools?.sort();
    };
    expect(await offered(['Read'])).toEqual(['Read']);
    expect(await offered(['Read', 'loud__shout'])).toEqual(['Read', 'mcp__loud__shout']);
  });

  it("claude-agent-sdk: the file tools' names that write stand for Claude Code's: write_file and edit_file are Write and Edit, and its Write lands in the working directory", async () => {
    const dir = folder();
    sim.setScenario({
      rules: [
        {
          match: { tools: '^Write$', turn: 1 },
          reply: {
            tool: {
              name: 'Write',
              input: { file_path: join(dir, 'made.md'), content: 'made by Claude Code\n' },
            },
          },
        },
      ],
      fallback: { text: 'done' },
    });
    const before = sim.requests.length;
    const context = testStepContext({
      step: agentStep({
        provider: 'claude-agent-sdk',
        model: 'claude-haiku-4.5',
        tools: ['write_file', 'edit_file'],
      }),
      dir,
      stateDir: join(dir, '.switchboard'),
      registry: registry(),
      scope: { workflow: { input: { draft: 'x' } } },
    });
    expect(await executeAgentStep(context)).toMatchObject({ status: 'completed' });
    const first = sim.requests.slice(before).find((request) => request.turn === 1);
    expect(first?.tools?.sort()).toEqual(['Edit', 'Write']);
    expect(readFileSync(join(dir, 'made.md'), 'utf8')).toBe('made by Claude Code\n');
  });
});
