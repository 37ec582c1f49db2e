import { dirname } from 'node:path';
import type {
  ForEachGroup,
  GroupDefinition,
  McpServerDefinition,
  ParallelGroup,
  StepDefinition,
  WorkflowDefinition,
} from '../model.js';
import { buildRoute, buildStep, type StepPlace } from './build-step.js';
import { failAt, position, stepPlace, writtenAt, type BuildContext } from './build-context.js';
import { workflowInvalid } from './problem.js';
import { checkReferences } from './references.js';
import type { RawForEach, RawParallel, RawWorkflowFile } from './schema.js';
import { PROVIDER_SETTING_HINT, UNSUPPORTED_WORKFLOW_KEYS } from './unsupported.js';
import { isPlainObject } from '../../core/plain-object.js';
import { mcpServerProblem } from '../../agents/mcp-servers.js';

/** The parsed file → the model the engine runs, checking every reference on the way. */
export function buildWorkflow(raw: RawWorkflowFile, context: BuildContext): WorkflowDefinition {
  const warnings: string[] = [];
  const section = raw.workflow;
  workflowWarnings(context, warnings);
  const steps = new Map<string, StepDefinition>();
  raw.agents.forEach((step, index) => {
    const place = stepPlace(context, ['agents', index], `agents[${index}] "${step.name}"`);
    if (steps.has(step.name))
      failAt(place, 'name', `step name "${step.name}" is used twice`, 'give every step its own name');
    steps.set(step.name, buildStep(step, writtenAt(context.written, ['agents', index]), place, warnings));
  });
  const groups = new Map<string, GroupDefinition>();
  raw.parallel.forEach((group, index) => {
    const place = stepPlace(context, ['parallel', index], `parallel[${index}] "${group.name}"`);
    checkNewName(group.name, steps, groups, place);
    groups.set(group.name, buildParallel(group, steps, place));
  });
  raw.for_each.forEach((group, index) => {
    const place = stepPlace(context, ['for_each', index], `for_each[${index}] "${group.name}"`);
    checkNewName(group.name, steps, groups, place);
    groups.set(group.name, buildForEach(group, index, context, place, warnings));
  });
  const definition: WorkflowDefinition = {
    file: context.file,
    dir: dirname(context.file),
    hash: context.hash,
    name: section.name,
    ...(section.description == null ? {} : { description: section.description }),
    ...(section.version == null ? {} : { version: section.version }),
    entryPoint: section.entry_point,
    input: Object.fromEntries(
      Object.entries(section.input).map(([name, input]) => [
        name,
        {
          type: input.type,
          required: input.required,
          ...(input.default === undefined || input.default === null ? {} : { default: input.default }),
          ...(input.description == null ? {} : { description: input.description }),
        },
      ]),
    ),
    limits: {
      maxIterations: section.limits.max_iterations,
      ...(section.limits.timeout_seconds == null ? {} : { timeoutSeconds: section.limits.timeout_seconds }),
      ...(section.limits.budget_usd == null ? {} : { budgetUsd: section.limits.budget_usd }),
      budgetMode: section.limits.budget_mode,
    },
    runtime: buildRuntime(raw, context, warnings),
    metadata: section.metadata,
    contextMode: section.context.mode,
    ...(section.run_key == null ? {} : { runKey: section.run_key }),
    output: raw.output,
    steps,
    groups,
    warnings,
  };
  checkInputDefaults(definition, context);
  checkReferences(definition, raw, context);
  return definition;
}

function buildRuntime(
  raw: RawWorkflowFile,
  context: BuildContext,
  warnings: string[],
): WorkflowDefinition['runtime'] {
  const runtime = raw.workflow.runtime;
  const provider = runtime.provider;
  if (provider != null) {
    const settings = provider as Record<string, unknown>;
    const keys = Object.keys(settings).filter((key) => key !== 'name' && settings[key] != null);
    if (keys.length > 0) {
      const listed =
        keys.length === 1 ? `runtime.provider.${keys[0]} is` : `runtime.provider.{${keys.join(', ')}} are`;
      warnings.push(
        `workflow: ${listed} not supported by Switchboard; ignored (${providerSettingHint(provider.name, settings)})`,
      );
    }
  }
  const mcpServers: Record<string, McpServerDefinition> = {};
  for (const [name, server] of Object.entries(runtime.mcp_servers)) {
    if (server.timeout != null)
      warnings.push(`workflow: runtime.mcp_servers.${name}.timeout is not supported by Switchboard; ignored`);
    const problem = mcpServerProblem(name, server);
    if (problem !== undefined) {
      const field = problem.field === '' ? '' : `.${problem.field}`;
      throw workflowInvalid(
        { file: context.file, step: 'workflow', field: `runtime.mcp_servers.${name}${field}` },
        problem.message,
        problem.hint,
      );
    }
    mcpServers[name] = {
      type: server.type,
      ...(server.command == null ? {} : { command: server.command }),
      args: server.args,
      env: server.env,
      ...(server.url == null ? {} : { url: server.url }),
      headers: server.headers,
      tools: server.tools,
    };
  }
  return {
    ...(provider?.name == null ? {} : { provider: provider.name }),
    ...(runtime.default_model == null ? {} : { defaultModel: runtime.default_model }),
    ...(runtime.temperature == null ? {} : { temperature: runtime.temperature }),
    ...(runtime.max_tokens == null ? {} : { maxTokens: runtime.max_tokens }),
    ...(runtime.working_dir == null ? {} : { workingDir: runtime.working_dir }),
    ...(runtime.max_agent_iterations == null ? {} : { maxAgentIterations: runtime.max_agent_iterations }),
    ...(runtime.default_reasoning_effort == null
      ? {}
      : { defaultReasoningEffort: runtime.default_reasoning_effort }),
    mcpServers,
  };
}

/** For an OpenAI-compatible endpoint the mapping can be spelled out: `copilot=openai@http://…/v1`. */
function providerSettingHint(name: string, settings: Record<string, unknown>): string {
  const url = settings['base_url'];
  if (
    (settings['type'] === 'openai' || name === 'openai') &&
    typeof url === 'string' &&
    /^https?:\/\/[^@\s]+$/.test(url)
  ) {
    return `map the provider instead: --provider-map ${name}=openai@${url.replace(/\/+$/, '')} (a key only if providers.openai.endpoints ties one to that URL)`;
  }
  return PROVIDER_SETTING_HINT;
}

function workflowWarnings(context: BuildContext, warnings: string[]): void {
  const section = writtenAt(context.written, ['workflow']);
  for (const [path, why] of Object.entries(UNSUPPORTED_WORKFLOW_KEYS)) {
    const parts = path.split('.');
    const parent = writtenAt(section, parts.slice(0, -1));
    const value = parent[parts[parts.length - 1] as string];
    if (value !== undefined && value !== null) {
      warnings.push(`workflow: ${path} is not supported by Switchboard; ignored (${why})`);
    }
  }
}

function buildParallel(
  group: RawParallel,
  steps: Map<string, StepDefinition>,
  place: StepPlace,
): ParallelGroup {
  group.agents.forEach((member, index) => {
    const step = steps.get(member);
    const field = `agents[${index}]`;
    if (step === undefined)
      failAt(
        place,
        field,
        `"${member}" is not a step in agents:`,
        `use one of: ${[...steps.keys()].join(', ')}`,
      );
    if (!['agent', 'set', 'route'].includes(step.type)) {
      failAt(
        place,
        field,
        `a ${step.type} step cannot run in a parallel group`,
        'put agent (or set) steps in parallel groups; run the others before or after it',
      );
    }
    if (step.routes.length > 0)
      failAt(
        place,
        field,
        `"${member}" has routes, but members of a parallel group do not route`,
        `move the routes to the group, or remove them from "${member}"`,
      );
  });
  return {
    kind: 'parallel',
    name: group.name,
    ...(group.description == null ? {} : { description: group.description }),
    agents: group.agents,
    failureMode: group.failure_mode,
    routes: group.routes.map(buildRoute),
    ...(group.max_visits == null ? {} : { maxVisits: group.max_visits }),
    ...(group.on_cap == null ? {} : { onCap: group.on_cap }),
  };
}

function buildForEach(
  group: RawForEach,
  index: number,
  context: BuildContext,
  place: StepPlace,
  warnings: string[],
): ForEachGroup {
  const agentPlace = stepPlace(
    context,
    ['for_each', index, 'agent'],
    `${place.label} agent "${group.agent.name}"`,
  );
  const agent = buildStep(
    group.agent,
    writtenAt(context.written, ['for_each', index, 'agent']),
    agentPlace,
    warnings,
  );
  if (['script', 'wait', 'terminate'].includes(agent.type)) {
    failAt(
      place,
      'agent.type',
      `a ${agent.type} step cannot be the inline agent of a for_each group`,
      "route to it from the group's routes instead",
    );
  }
  return {
    kind: 'for_each',
    name: group.name,
    ...(group.description == null ? {} : { description: group.description }),
    source: group.source,
    as: group.as,
    agent,
    maxConcurrent: group.max_concurrent,
    failureMode: group.failure_mode,
    ...(group.key_by == null ? {} : { keyBy: group.key_by }),
    routes: group.routes.map(buildRoute),
    ...(group.max_visits == null ? {} : { maxVisits: group.max_visits }),
    ...(group.on_cap == null ? {} : { onCap: group.on_cap }),
  };
}

function checkNewName(
  name: string,
  steps: Map<string, unknown>,
  groups: Map<string, unknown>,
  place: StepPlace,
): void {
  if (steps.has(name) || groups.has(name)) {
    failAt(
      place,
      'name',
      `the name "${name}" is already used by a ${steps.has(name) ? 'step' : 'group'}`,
      'give every step and group its own name',
    );
  }
}

/** Conductor's rule: a declared default must have the declared type. */
function checkInputDefaults(definition: WorkflowDefinition, context: BuildContext): void {
  for (const [name, input] of Object.entries(definition.input)) {
    if (input.default === undefined || hasType(input.default, input.type)) continue;
    throw workflowInvalid(
      {
        file: context.file,
        step: 'workflow',
        field: `input.${name}.default`,
        ...position(context, ['workflow', 'input', name, 'default']),
      },
      `the default of input "${name}" is not a ${input.type}`,
      `give a ${input.type} default, or change the input's type`,
    );
  }
}

export function hasType(value: unknown, type: string): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number';
    case 'boolean':
      return typeof value === 'boolean';
    case 'array':
      return Array.isArray(value);
    default:
      return isPlainObject(value);
  }
}

export type { BuildContext };
