import { dirname } from 'node:path';
import {
  END,
  type ForEachGroup,
  type GroupDefinition,
  type McpServerDefinition,
  type ParallelGroup,
  type StepDefinition,
  type WorkflowDefinition,
} from '../model.js';
import { buildRoute, buildStep, type StepPlace } from './build-step.js';
import { dotted } from './env-vars.js';
import { workflowInvalid } from './problem.js';
import type { RawForEach, RawParallel, RawWorkflowFile } from './schema.js';
import { PROVIDER_SETTING_HINT, UNSUPPORTED_WORKFLOW_KEYS } from './unsupported.js';

/** What `build` needs besides the parsed file. */
export interface BuildContext {
  file: string;
  hash: string;
  /** The file as written (after `!file` and `${VAR}`), to tell which keys the user wrote. */
  written: Record<string, unknown>;
  positionOf(path: ReadonlyArray<string | number>): string | undefined;
}

/** The parsed file → the model the engine runs, checking every reference on the way. */
export function buildWorkflow(raw: RawWorkflowFile, context: BuildContext): WorkflowDefinition {
  const warnings: string[] = [];
  const section = raw.workflow;
  workflowWarnings(context, warnings);
  const steps = new Map<string, StepDefinition>();
  raw.agents.forEach((step, index) => {
    const place = stepPlace(context, ['agents', index], `agents[${index}] "${step.name}"`);
    if (steps.has(step.name))
      fail(place, 'name', `step name "${step.name}" is used twice`, 'give every step its own name');
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
    if (server.type === 'stdio' && (server.command == null || server.command === '')) {
      throw workflowInvalid(
        { file: context.file, step: 'workflow', field: `runtime.mcp_servers.${name}.command` },
        `the stdio MCP server "${name}" needs "command"`,
        'add command: (the program that serves MCP over stdio), or give type: http with url:',
      );
    }
    if (server.type !== 'stdio' && (server.url == null || server.url === '')) {
      throw workflowInvalid(
        { file: context.file, step: 'workflow', field: `runtime.mcp_servers.${name}.url` },
        `the ${server.type} MCP server "${name}" needs "url"`,
        'add url: http://…',
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
    return `map the provider instead: --provider-map ${name}=openai@${url.replace(/\/+$/, '')} (the key comes from OPENAI_API_KEY)`;
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
      fail(
        place,
        field,
        `"${member}" is not a step in agents:`,
        `use one of: ${[...steps.keys()].join(', ')}`,
      );
    if (!['agent', 'set', 'route'].includes(step.type)) {
      fail(
        place,
        field,
        `a ${step.type} step cannot run in a parallel group`,
        'put agent (or set) steps in parallel groups; run the others before or after it',
      );
    }
    if (step.routes.length > 0)
      fail(
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
    fail(
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
    fail(
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
      return typeof value === 'object' && value !== null && !Array.isArray(value);
  }
}

/** entry_point, route targets, gate option routes, on_cap, mcp opt-ins and tool names must exist. */
function checkReferences(definition: WorkflowDefinition, raw: RawWorkflowFile, context: BuildContext): void {
  const targets = [...definition.steps.keys(), ...definition.groups.keys()];
  const known = (target: string): boolean =>
    target === END || definition.steps.has(target) || definition.groups.has(target);
  const hint = `route to one of: ${[...targets, END].join(', ')}`;
  if (!definition.steps.has(definition.entryPoint) && !definition.groups.has(definition.entryPoint)) {
    throw workflowInvalid(
      {
        file: context.file,
        step: 'workflow',
        field: 'entry_point',
        ...position(context, ['workflow', 'entry_point']),
      },
      `entry_point "${definition.entryPoint}" is not a step or group`,
      `start at one of: ${targets.join(', ')}`,
    );
  }
  const check = (place: StepPlace, field: string, target: string | undefined): void => {
    if (target !== undefined && !known(target))
      fail(place, field, `"${target}" is not a step, a group or ${END}`, hint);
  };
  const workflowTools = new Set(raw.tools);
  [...definition.steps.values()].forEach((step, index) => {
    const place = stepPlace(context, ['agents', index], `agents[${index}] "${step.name}"`);
    checkStepReferences(step, place, check, definition, workflowTools);
  });
  raw.parallel.forEach((group, index) => {
    const place = stepPlace(context, ['parallel', index], `parallel[${index}] "${group.name}"`);
    const built = definition.groups.get(group.name) as ParallelGroup;
    built.routes.forEach((route, routeIndex) => check(place, `routes[${routeIndex}].to`, route.to));
    check(place, 'on_cap', built.onCap);
  });
  raw.for_each.forEach((group, index) => {
    const place = stepPlace(context, ['for_each', index], `for_each[${index}] "${group.name}"`);
    const built = definition.groups.get(group.name) as ForEachGroup;
    built.routes.forEach((route, routeIndex) => check(place, `routes[${routeIndex}].to`, route.to));
    check(place, 'on_cap', built.onCap);
    const agentPlace = stepPlace(
      context,
      ['for_each', index, 'agent'],
      `${place.label} agent "${built.agent.name}"`,
    );
    checkStepReferences(built.agent, agentPlace, check, definition, workflowTools);
  });
}

function checkStepReferences(
  step: StepDefinition,
  place: StepPlace,
  check: (place: StepPlace, field: string, target: string | undefined) => void,
  definition: WorkflowDefinition,
  workflowTools: Set<string>,
): void {
  step.routes.forEach((route, index) => check(place, `routes[${index}].to`, route.to));
  check(place, 'on_cap', step.onCap);
  step.input.forEach((reference, index) =>
    checkInputReference(reference, `input[${index}]`, place, definition),
  );
  if (step.type === 'human_gate')
    step.options.forEach((option, index) => check(place, `options[${index}].route`, option.route));
  if (step.type !== 'agent') return;
  if (Array.isArray(step.mcp)) {
    const servers = Object.keys(definition.runtime.mcpServers);
    step.mcp.forEach((name, index) => {
      if (!servers.includes(name)) {
        fail(
          place,
          `mcp[${index}]`,
          `"${name}" is not in runtime.mcp_servers`,
          servers.length === 0
            ? 'declare it under workflow.runtime.mcp_servers'
            : `use one of: ${servers.join(', ')}`,
        );
      }
    });
  }
  // Conductor checks an LLM step's tools against the workflow's `tools:`; a Claude Code agent's tools
  // (effects: git) are Claude Code's own (Read, Bash(npm test:*)) and are not listed there.
  if (step.git === undefined && step.tools !== undefined) {
    step.tools.forEach((tool, index) => {
      if (!workflowTools.has(tool)) {
        fail(
          place,
          `tools[${index}]`,
          `tool "${tool}" is not in the workflow's tools:`,
          workflowTools.size === 0
            ? 'list it under the top-level tools:'
            : `use one of: ${[...workflowTools].join(', ')}, or add it to tools:`,
        );
      }
    });
  }
}

const REFERENCE_PART = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Conductor's `input:` references: `step.output[.field]`, `group.outputs`, `workflow.input.name`, `?` for optional. */
function checkInputReference(
  reference: string,
  field: string,
  place: StepPlace,
  definition: WorkflowDefinition,
): void {
  const optional = reference.endsWith('?');
  const parts = (optional ? reference.slice(0, -1) : reference).split('.');
  if (parts.length < 2 || !parts.every((part) => REFERENCE_PART.test(part))) {
    fail(
      place,
      field,
      `"${reference}" is not an input reference`,
      'write step.output[.field], group.outputs, or workflow.input.name (end with ? when optional)',
    );
  }
  if (optional) return;
  const [head, second, name] = parts as [string, string, string | undefined];
  if (head === 'workflow') {
    if (second !== 'input' || name === undefined || definition.input[name] === undefined) {
      const declared = Object.keys(definition.input);
      fail(
        place,
        field,
        `"${reference}" is not a declared workflow input`,
        declared.length === 0
          ? 'declare it under workflow.input'
          : `use one of: ${declared.map((input) => `workflow.input.${input}`).join(', ')}`,
      );
    }
    return;
  }
  if (!definition.steps.has(head) && !definition.groups.has(head)) {
    fail(
      place,
      field,
      `"${head}" is not a step or group`,
      `name one of: ${[...definition.steps.keys(), ...definition.groups.keys()].join(', ')} (or end the reference with ? when optional)`,
    );
  }
}

function stepPlace(context: BuildContext, path: Array<string | number>, label: string): StepPlace {
  return {
    file: context.file,
    label,
    positionOf: (field) => context.positionOf([...path, ...fieldPath(field)]),
  };
}

/** `routes[1].to` → `['routes', 1, 'to']`. */
function fieldPath(field: string): Array<string | number> {
  return field
    .split(/\.|(?=\[)/)
    .filter((part) => part !== '')
    .map((part) => (/^\[\d+\]$/.test(part) ? Number(part.slice(1, -1)) : part));
}

function position(context: BuildContext, path: Array<string | number>): { position?: string } {
  const found = context.positionOf(path);
  return found === undefined ? {} : { position: found };
}

function fail(place: StepPlace, field: string, what: string, hint: string): never {
  const found = place.positionOf(field);
  throw workflowInvalid(
    { file: place.file, step: place.label, field, ...(found === undefined ? {} : { position: found }) },
    what,
    hint,
  );
}

/** The written mapping at `path`, or `{}`. */
export function writtenAt(data: unknown, path: ReadonlyArray<string | number>): Record<string, unknown> {
  let node: unknown = data;
  for (const part of path) {
    if (typeof node !== 'object' || node === null) return {};
    node = (node as Record<string | number, unknown>)[part];
  }
  return typeof node === 'object' && node !== null && !Array.isArray(node)
    ? (node as Record<string, unknown>)
    : {};
}

export { dotted };
