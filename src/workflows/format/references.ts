import {
  END,
  type ForEachGroup,
  type ParallelGroup,
  type StepDefinition,
  type WorkflowDefinition,
} from '../model.js';
import type { StepPlace } from './build-step.js';
import { failAt, position, stepPlace, type BuildContext } from './build-context.js';
import { workflowInvalid } from './problem.js';
import { unknownToolProblem } from '../../agents/task.js';
import {
  changesFiles,
  FILE_TOOL_NAMES,
  fileToolFor,
  llmToolProblem,
  type DeclaredTools,
} from '../tool-names.js';
import type { RawWorkflowFile } from './schema.js';

/** entry_point, route targets, gate option routes, on_cap, mcp opt-ins and tool names must exist. */
export function checkReferences(
  definition: WorkflowDefinition,
  raw: RawWorkflowFile,
  context: BuildContext,
): void {
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
      failAt(place, field, `"${target}" is not a step, a group or ${END}`, hint);
  };
  const declared: DeclaredTools = {
    workflowTools: new Set(raw.tools),
    mcpServers: definition.runtime.mcpServers,
  };
  [...definition.steps.values()].forEach((step, index) => {
    const place = stepPlace(context, ['agents', index], `agents[${index}] "${step.name}"`);
    checkStepReferences(step, place, check, definition, declared);
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
    checkStepReferences(built.agent, agentPlace, check, definition, declared);
  });
}

function checkStepReferences(
  step: StepDefinition,
  place: StepPlace,
  check: (place: StepPlace, field: string, target: string | undefined) => void,
  definition: WorkflowDefinition,
  declared: DeclaredTools,
): void {
  step.routes.forEach((route, index) => check(place, `routes[${index}].to`, route.to));
  check(place, 'on_cap', step.onCap);
  step.input.forEach((reference, index) =>
    checkInputReference(reference, `input[${index}]`, place, definition),
  );
  if (step.type === 'human_gate')
    step.options.forEach((option, index) => check(place, `options[${index}].route`, option.route));
  if (step.type === 'questions') check(place, 'abort_route', step.abortRoute);
  if (step.type !== 'agent') return;
  if (Array.isArray(step.mcp)) {
    const servers = Object.keys(definition.runtime.mcpServers);
    step.mcp.forEach((name, index) => {
      if (!servers.includes(name)) {
        failAt(
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
  // A git step's tools become its agent task's, where an MCP tool is refused: it belongs to its server.
  step.tools?.forEach((tool, index) => {
    if (step.git !== undefined && tool.startsWith('mcp__')) {
      failAt(
        place,
        `tools[${index}]`,
        `"${tool}" is an MCP tool`,
        "list it by its own name in its server's tools: under runtime.mcp_servers, and opt the step in with mcp:",
      );
    }
  });
  // Conductor checks an LLM step's tools against the workflow's `tools:`; a step may also name Claude
  // Code's own tools (Read, Bash(npm test:*)), which a git step's agent and a step on Claude Code get,
  // the file tools steps on the API providers get, and the tools of the workflow's MCP servers.
  if (step.git === undefined && step.tools !== undefined) {
    step.tools.forEach((tool, index) => {
      const problem = llmToolProblem(tool, declared);
      if (problem !== undefined) {
        failAt(
          place,
          `tools[${index}]`,
          `${problem}, nor in the workflow's tools:`,
          declared.workflowTools.size === 0
            ? `name a Claude Code tool (Read, Glob, Grep, …), a file tool (${FILE_TOOL_NAMES.join(', ')}), an MCP tool as server__tool, or list it under the top-level tools:`
            : `name a Claude Code tool, a file tool, an MCP tool as server__tool, or one of: ${[...declared.workflowTools].join(', ')}`,
        );
      }
      if (writesFiles(tool) && step.writesFiles !== true) {
        failAt(
          place,
          `tools[${index}]`,
          `"${tool}" writes files, and the step's tools are read-only unless it says otherwise`,
          'add effects: files to let it write in its working directory in place, or effects: git to work in a git worktree and commit once',
        );
      }
    });
  }
}

/**
 * The tools that change files: Claude Code's that write, and Bash, which can run anything; the file
 * tools that do their job on the API providers (`write_file`, `edit_file`, `run_command`).
 */
function writesFiles(tool: string): boolean {
  if (
    unknownToolProblem(tool) === undefined &&
    /^(Write|Edit|MultiEdit|NotebookEdit|Bash)\b/.test(tool.trim())
  )
    return true;
  const file = fileToolFor(tool);
  return file !== undefined && changesFiles(file);
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
    failAt(
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
      failAt(
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
    failAt(
      place,
      field,
      `"${head}" is not a step or group`,
      `name one of: ${[...definition.steps.keys(), ...definition.groups.keys()].join(', ')} (or end the reference with ? when optional)`,
    );
  }
}
