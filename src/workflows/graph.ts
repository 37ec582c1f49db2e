import { edgesOf } from './format/graph.js';
import type { GroupDefinition, StepDefinition, WorkflowDefinition } from './model.js';

/**
 * A way out of a step as the graph shows it: its target and, when it has one, its condition as
 * written; a gate's option (`kind: 'option'`, its `label`), a questions step's `abort_route` and
 * `on_cap` too. No `kind`: a route.
 */
export interface GraphRoute {
  to: string;
  when?: string;
  kind?: 'option' | 'abort' | 'cap';
  label?: string;
}

/** A step of the graph: its name, type and routes; LLM steps also their provider and model as written. */
export interface GraphStep {
  name: string;
  type: string;
  provider?: string;
  model?: string;
  /**
   * What it runs on: the spec the file's provider and model resolve to when the run starts (provider
   * map, roles and `--provider` applied), e.g. `claude:sonnet` for Conductor's `copilot`.
   */
  spec?: string;
  /** `git` for a Claude Code run in a worktree, `files` when its tools may write in place. */
  effects?: 'git' | 'files';
  /** The step's tools, when it names them. */
  tools?: string[];
  routes: GraphRoute[];
}

/** A `parallel:` group (its members by name) or a `for_each:` group (its inline step and source). */
export interface GraphGroup {
  name: string;
  kind: 'parallel' | 'for_each';
  routes: GraphRoute[];
  /** `parallel`: the steps it runs. */
  agents?: string[];
  /** `for_each`: the step run per item, the items' source and the loop variable. */
  step?: GraphStep;
  source?: string;
  as?: string;
  maxConcurrent?: number;
}

/**
 * The workflow's shape, as the `run-start` event carries it: its entry point, every step and group
 * with their routes (`when` as written) and, for LLM steps, provider and model as the file names them
 * (the spec each resolves to is in that step's `step-prompt` event). Enough to draw the run's graph
 * before any step has run.
 */
export interface WorkflowGraph {
  entryPoint: string;
  steps: GraphStep[];
  groups: GraphGroup[];
}

/** `resolve`: a step's spec as the run will resolve it (undefined when it cannot say). */
export function workflowGraph(
  workflow: WorkflowDefinition,
  resolve?: (step: StepDefinition & { type: 'agent' }) => string | undefined,
): WorkflowGraph {
  const { runtime } = workflow;
  const graphStep = (step: StepDefinition): GraphStep => {
    const node: GraphStep = { name: step.name, type: step.type, routes: graphRoutes(step) };
    if (step.type !== 'agent') return node;
    const provider = step.provider ?? runtime.provider;
    const model = step.model ?? runtime.defaultModel;
    if (provider !== undefined) node.provider = provider;
    if (model !== undefined) node.model = model;
    const spec = resolve?.(step);
    if (spec !== undefined) node.spec = spec;
    if (step.git !== undefined) node.effects = 'git';
    else if (step.writesFiles === true) node.effects = 'files';
    if (step.tools !== undefined) node.tools = [...step.tools];
    return node;
  };
  return {
    entryPoint: workflow.entryPoint,
    steps: [...workflow.steps.values()].map(graphStep),
    groups: [...workflow.groups.values()].map((group) => graphGroup(group, graphStep)),
  };
}

function graphGroup(group: GroupDefinition, graphStep: (step: StepDefinition) => GraphStep): GraphGroup {
  const node: GraphGroup = { name: group.name, kind: group.kind, routes: graphRoutes(group) };
  if (group.kind === 'parallel') return { ...node, agents: [...group.agents] };
  return {
    ...node,
    step: graphStep(group.agent),
    source: group.source,
    as: group.as,
    maxConcurrent: group.maxConcurrent,
  };
}

function graphRoutes(node: StepDefinition | GroupDefinition): GraphRoute[] {
  return edgesOf(node).map(({ to, kind, when, label }): GraphRoute => ({
    to,
    ...(kind === 'route' ? {} : { kind }),
    ...(when === undefined ? {} : { when }),
    ...(label === undefined ? {} : { label }),
  }));
}

/** How much of a step's output its `step-end` event keeps (characters of its JSON). */
const OUTPUT_LIMIT = 8_000;

/** A step's output for its `step-end` event: `output` itself, or when long `outputPreview` (the start of its JSON) and `outputTruncated`. */
export function eventOutput(output: unknown): Record<string, unknown> {
  if (output === undefined) return {};
  const text = JSON.stringify(output);
  if (text === undefined) return {};
  if (text.length <= OUTPUT_LIMIT) return { output };
  return { outputPreview: text.slice(0, OUTPUT_LIMIT), outputTruncated: true };
}
