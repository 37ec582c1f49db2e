import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkflowEngineOptions } from '../src/workflows/api-types.js';
import { coerceJson } from '../src/workflows/engine-deps.js';
import type {
  AgentStep,
  ForEachGroup,
  GroupDefinition,
  HumanGateStep,
  ParallelGroup,
  RouteDefinition,
  SetStep,
  StepDefinition,
  StepType,
  WorkflowDefinition,
} from '../src/workflows/model.js';
import type { StepExecutor } from '../src/workflows/step-executor.js';

/** A fresh state folder (ledger inside) under the test run's temporary root. */
export function stateDir(): string {
  return mkdtempSync(join(tmpdir(), 'switchboard-wf-'));
}

/** A validated workflow as `format/` would build it, from steps and groups given in code. */
export function workflow(
  steps: StepDefinition[],
  extra: Partial<Omit<WorkflowDefinition, 'steps' | 'groups'>> & { groups?: GroupDefinition[] } = {},
): WorkflowDefinition {
  const { groups = [], ...rest } = extra;
  const file = rest.file ?? '/virtual/test.yaml';
  const definition: WorkflowDefinition = {
    file,
    dir: '/virtual',
    hash: createHash('sha256').update(JSON.stringify({ steps, groups, rest })).digest('hex'),
    name: 'test',
    entryPoint: steps[0]?.name ?? groups[0]?.name ?? 'none',
    input: {},
    limits: { maxIterations: 10, budgetMode: 'enforce' },
    runtime: { mcpServers: {} },
    metadata: {},
    contextMode: 'accumulate',
    output: {},
    warnings: [],
    ...rest,
    steps: new Map(steps.map((step) => [step.name, step])),
    groups: new Map(groups.map((group) => [group.name, group])),
  };
  return definition;
}

const common = { routes: [] as RouteDefinition[], input: [] as string[] };

/** A `set` step: each value a template (as Conductor's `values:`). */
export function setStep(
  name: string,
  values: Record<string, string>,
  routes: RouteDefinition[] = [],
  extra: Partial<SetStep> = {},
): SetStep {
  return { ...common, type: 'set', name, values, outputType: 'auto', routes, ...extra };
}

/** An LLM step (the test executor below calls `context.call` with its prompt). */
export function llmStep(name: string, prompt: string, routes: RouteDefinition[] = []): AgentStep {
  return { ...common, type: 'agent', name, provider: 'openai', model: 'gpt-4.1-mini', prompt, routes };
}

export function gateStep(
  name: string,
  options: Array<{ value: string; route: string; promptFor?: string }>,
  extra: Partial<HumanGateStep> = {},
): HumanGateStep {
  return {
    ...common,
    type: 'human_gate',
    name,
    prompt: `Decide ${name}`,
    options: options.map((option) => ({ label: option.value, multiline: false, ...option })),
    ...extra,
  };
}

export function parallel(name: string, agents: string[], extra: Partial<ParallelGroup> = {}): ParallelGroup {
  return { kind: 'parallel', name, agents, failureMode: 'fail_fast', routes: [], ...extra };
}

export function forEach(
  name: string,
  source: string,
  agent: StepDefinition,
  extra: Partial<ForEachGroup> = {},
): ForEachGroup {
  return {
    kind: 'for_each',
    name,
    source,
    as: 'item',
    agent,
    maxConcurrent: 10,
    failureMode: 'fail_fast',
    routes: [],
    ...extra,
  };
}

/**
 * Test executors: `set` renders its values (a failing value `FAIL` fails the step), `agent` makes one
 * real `call()` through the engine's bound call. Stand-ins until the steps helpers' executors land.
 */
export const testSet: StepExecutor = async (context) => {
  const step = context.step as SetStep;
  const output: Record<string, unknown> = {};
  for (const [name, template] of Object.entries(step.values ?? {})) {
    output[name] = coerceJson(context.render(template, `values.${name}`));
  }
  if (output['fail'] !== undefined) {
    return {
      status: 'failed',
      costUsd: 0,
      error: { code: 'WORKFLOW_FAILED', message: String(output['fail']) },
    };
  }
  return { status: 'completed', output, costUsd: 0 };
};

export const testAgent: StepExecutor = async (context) => {
  const step = context.step as AgentStep;
  const spec = context.resolveSpec(step.provider, step.model);
  const result = await context.call(spec, { prompt: context.render(step.prompt, 'prompt') });
  return { status: 'completed', output: { text: result.text }, costUsd: result.costUsd ?? 0 };
};

export const TEST_EXECUTORS: Partial<Record<StepType, StepExecutor>> = { set: testSet, agent: testAgent };

/** Engine options for tests: a state folder, the test executors, the definition served for its file. */
export function engineOptions(
  dir: string,
  definition: WorkflowDefinition,
  extra: WorkflowEngineOptions = {},
): WorkflowEngineOptions {
  return {
    stateDir: dir,
    ...extra,
    _internal: {
      executors: TEST_EXECUTORS,
      load: () => definition,
      pollMs: 50,
      ...extra._internal,
    },
  };
}
