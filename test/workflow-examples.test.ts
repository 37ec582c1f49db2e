import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { call } from '../src/invoke/call.js';
import { ProviderRegistry } from '../src/providers/registry.js';
import { loadScenario } from '../src/sim/scenario.js';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { outputJsonSchema, validateOutput } from '../src/workflows/output-schema.js';
import { renderTemplate } from '../src/workflows/template.js';
import { executeScriptStep } from '../src/workflows/steps/script.js';
import { simpleStepContext } from './helpers/step-context.js';
import type { OutputField, ScriptStep, ValueType } from '../src/workflows/model.js';
import type { TemplateScope } from '../src/workflows/step-executor.js';

// The example workflows ship with simulator scenarios so they run offline. These tests follow each
// example's path step by step: every LLM step's prompt is rendered with the real template engine
// against the outputs the earlier steps got from the scenario, and sent through call() with the step's
// output schema to the simulator over the real SDK clients. The scenario must answer each with a
// value that passes the provider's schema check and the step's output: contract; an answer from the
// scenario's fallback (no rule matched) fails. The engine's own runs of these files are the CLI's tests.

const folder = join(import.meta.dirname, '../examples/workflows');

interface RawStep {
  name: string;
  command?: string;
  args?: string[];
  stdin?: string;
  provider?: string;
  model?: string;
  prompt?: string;
  system_prompt?: string;
  output?: Record<string, RawField>;
}
interface RawField {
  type: ValueType;
  items?: RawField;
  properties?: Record<string, RawField>;
  [constraint: string]: unknown;
}
interface RawFile {
  workflow: { runtime?: { provider?: string; default_model?: string } };
  agents: RawStep[];
  for_each?: { agent: RawStep }[];
}

function readExample(name: string): RawFile {
  return parseYaml(readFileSync(join(folder, name), 'utf8')) as RawFile;
}

function findStep(file: RawFile, name: string): RawStep {
  const step = [...file.agents, ...(file.for_each ?? []).map((group) => group.agent)].find(
    (candidate) => candidate.name === name,
  );
  if (step === undefined) throw new Error(`no step ${name}`);
  return step;
}

/** A YAML `output:` field with the defaults the format applies. */
function outputField(raw: RawField): OutputField {
  const { items, properties, required, nullable, ...rest } = raw;
  const field: OutputField = {
    ...(rest as Omit<OutputField, 'required' | 'nullable'>),
    required: required !== false,
    nullable: nullable === true,
  };
  if (items !== undefined) field.items = outputField(items);
  if (properties !== undefined) field.properties = outputFields(properties);
  return field;
}

function outputFields(raw: Record<string, RawField>): Record<string, OutputField> {
  return Object.fromEntries(Object.entries(raw).map(([name, field]) => [name, outputField(field)]));
}

let sim: Simulator;
let providers: ProviderRegistry;

beforeAll(async () => {
  sim = await startSimulator({ maxLifetimeMs: 120_000 });
  providers = new ProviderRegistry({
    anthropic: { baseUrl: sim.url, apiKey: 'sk-ant-example-test' },
    gemini: { baseUrl: sim.url, apiKeys: ['gemini-example-test'] },
    openai: { baseUrl: sim.openAiBaseUrl, apiKey: 'sk-example-test' },
  });
});

afterAll(async () => {
  await providers.close();
  await sim.close();
});

/** Renders the step's prompt, calls `spec` with its output schema, checks the answer, returns it. */
async function ask(spec: string, step: RawStep, scope: TemplateScope): Promise<Record<string, unknown>> {
  const where = { step: step.name, field: 'prompt' };
  const prompt = renderTemplate(step.prompt ?? '', scope, where);
  const system =
    step.system_prompt === undefined
      ? {}
      : { system: renderTemplate(step.system_prompt, scope, { ...where, field: 'system_prompt' }) };
  const fields = outputFields(step.output ?? {});
  const before = sim.requests.length;
  const result = await call(
    spec,
    { prompt, ...system, schema: outputJsonSchema(fields) },
    { providers, ledger: false, schemaRetries: 0, retry: { maxAttempts: 1 } },
  );
  const answered = sim.requests.slice(before).map((entry) => entry.rule);
  expect(answered, `${step.name}: a scenario rule answers, not the fallback`).not.toContain(null);
  expect(validateOutput(fields, result.structured), `${step.name}: output matches`).toBeUndefined();
  return result.structured as Record<string, unknown>;
}

describe('example workflows and their scenarios', () => {
  it('draft-review: the draft, both review rounds, the revision and the polish are answered in shape', async () => {
    sim.setScenario(loadScenario(join(folder, 'draft-review.scenario.json')));
    const file = readExample('draft-review.yaml');
    const input = { topic: 'idempotency keys', audience: 'backend engineers' };
    const scope: TemplateScope = { workflow: { input, name: 'draft-review' }, context: { iteration: 1 } };
    scope['draft'] = { output: await ask('anthropic:claude-sonnet-4-6', findStep(file, 'draft'), scope) };
    const first = await ask('gemini:gemini-2.5-pro', findStep(file, 'review'), scope);
    expect(first['verdict']).toBe('revise');
    scope['review'] = { output: first };
    scope['revise'] = { output: await ask('anthropic:claude-sonnet-4-6', findStep(file, 'revise'), scope) };
    const second = await ask('gemini:gemini-2.5-pro', findStep(file, 'review'), scope);
    expect(second['verdict']).toBe('approve');
    scope['review'] = { output: second };
    scope['decide'] = { output: { selected: 'polish', additional_input: { notes: 'Shorter, please.' } } };
    await ask('anthropic:claude-sonnet-4-6', findStep(file, 'polish'), scope);
  });

  it('issue-to-merge: the plan is answered in shape and each task prompt meets its agent rule', async () => {
    const scenario = loadScenario(join(folder, 'issue-to-merge.scenario.json'));
    sim.setScenario(scenario);
    const file = readExample('issue-to-merge.yaml');
    const input = { issue: 42, request: 'Add a greeting file and a farewell file for new users' };
    const brief = readFileSync(join(folder, 'skills/add-feature/SKILL.md'), 'utf8');
    const scope: TemplateScope = {
      workflow: { input, name: 'issue-to-merge', dir: folder },
      pick_brief: { output: { skill: 'add-feature', confidence: 0.95, method: 'rules', reasoning: '' } },
      read_brief: { output: { stdout: brief, stderr: '', exit_code: 0 } },
    };
    const plan = await ask('anthropic:claude-sonnet-4-6', findStep(file, 'plan'), scope);
    scope['plan'] = { output: plan };
    // The agents run in Claude Code; its first request carries the task prompt, which a rule must match.
    const agent = findStep(file, 'implement_task');
    const tasks = plan['tasks'] as { id: string }[];
    expect(tasks.length).toBeGreaterThan(1);
    for (const [index, task] of tasks.entries()) {
      const prompt = renderTemplate(
        agent.prompt ?? '',
        { ...scope, task, _index: index, _key: task.id },
        { step: agent.name, field: 'prompt' },
      );
      const rule = scenario.rules.find(
        (candidate) =>
          candidate.match.turn === 1 && new RegExp(candidate.match.text ?? '^$', 'i').test(prompt),
      );
      expect(rule?.reply?.tool?.name, `task ${task.id}`).toBe('Write');
    }
  });

  it('feature-tour: the parallel members, every for_each item and the sub-workflow step are answered in shape', async () => {
    sim.setScenario(loadScenario(join(folder, 'feature-tour.scenario.json')));
    const file = readExample('feature-tour.yaml');
    const summary = readExample('feature-tour-summary.yaml');
    // The provider map the example's header gives: copilot=anthropic, with the step's model appended.
    const copilot = 'anthropic:claude-haiku-4-5';
    const topics = ['caching', 'retries', 'queues'].map((name, index) => ({ name, rank: index + 1 }));
    const scope: TemplateScope = {
      workflow: { input: { topics: topics.map((topic) => topic.name) }, name: 'feature-tour' },
      prepare: { output: { topics, audience: 'new engineers', count: topics.length } },
    };
    const outline = await ask(copilot, findStep(file, 'outline'), scope);
    await ask('anthropic:claude-haiku-4-5', findStep(file, 'risks'), scope);
    scope['angles'] = { outputs: { outline }, errors: {} };
    const explained: Record<string, unknown> = {};
    for (const [index, topic] of topics.entries()) {
      const item = { ...scope, topic, _index: index, _key: topic.name };
      const answer = await ask(copilot, findStep(file, 'explain'), item);
      expect(answer['name']).toBe(topic.name);
      explained[topic.name] = answer;
    }
    const names = Object.keys(explained).join(', ');
    await ask('openai:gpt-4.1-mini', findStep(summary, 'headline'), {
      workflow: { input: { names, count: topics.length }, name: 'feature-tour-summary' },
    });
  });

  it('feature-tour: the inventory script reads its stdin and prints what its output: declares', async () => {
    const raw = findStep(readExample('feature-tour.yaml'), 'inventory');
    const step: ScriptStep = {
      name: raw.name,
      type: 'script',
      command: raw.command ?? '',
      args: raw.args ?? [],
      env: {},
      routes: [],
      input: [],
      output: outputFields(raw.output ?? {}),
      ...(raw.stdin === undefined ? {} : { stdin: raw.stdin }),
    };
    const topics = [{ name: 'caching', rank: 1 }];
    const { context } = simpleStepContext(step, { scope: { prepare: { output: { topics } } } });
    const outcome = await executeScriptStep(context);
    expect(outcome.status, outcome.error?.message).toBe('completed');
    expect(outcome.output).toMatchObject({ received: topics, checked: true, exit_code: 0 });
  });
});
