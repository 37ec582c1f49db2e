import { SwitchboardError } from '../core/errors.js';
import type { WorkflowStepRow } from '../store/workflow-records.js';
import type { StepDefinition, WorkflowDefinition } from './model.js';
import type { TemplateScope } from './step-executor.js';

/**
 * What the finished steps of a run left behind, rebuilt from the ledger on every resume: outputs by step
 * or group name (latest visit wins), the order they ran in, and how often each ran.
 */
export interface RunState {
  inputs: Record<string, unknown>;
  /** Step name → its output; group name → `{outputs, errors}`. */
  outputs: Map<string, unknown>;
  groups: Set<string>;
  /** Names of finished steps and groups, in order (`context.history`). */
  history: string[];
  /** Finished executions per top-level step or group name (the next execution's `visit`). */
  visits: Map<string, number>;
}

/** Rebuilds a run's state from its step rows (ordered by `seq`): completed top-level rows only. */
export function replayState(inputs: Record<string, unknown>, rows: readonly WorkflowStepRow[]): RunState {
  const state: RunState = { inputs, outputs: new Map(), groups: new Set(), history: [], visits: new Map() };
  for (const row of rows) {
    if (row.groupKey !== undefined) continue;
    if (row.status !== 'completed' && row.status !== 'terminated') continue;
    recordFinished(state, row.step, row.output, row.type === 'parallel' || row.type === 'for_each');
  }
  return state;
}

/** Adds one finished top-level execution to the state. */
export function recordFinished(state: RunState, name: string, output: unknown, isGroup: boolean): void {
  state.outputs.set(name, output);
  if (isGroup) state.groups.add(name);
  state.history.push(name);
  state.visits.set(name, (state.visits.get(name) ?? 0) + 1);
}

/** Step types that render their own fields from `workflow.input` in Conductor even in explicit mode. */
const LOCAL_RENDER_TYPES = new Set(['script', 'set', 'wait', 'workflow']);

function entry(state: RunState, name: string): unknown {
  const output = state.outputs.get(name);
  return state.groups.has(name) ? output : { output };
}

/**
 * The template scope of one step execution, after Conductor: `workflow`, `context`, and the finished
 * steps' outputs per the workflow's context mode (`accumulate`: all; `last_only`: the latest;
 * `explicit`: only what the step's `input:` names, `?` marking optional references).
 */
export function buildScope(
  workflow: WorkflowDefinition,
  state: RunState,
  step?: StepDefinition,
): TemplateScope {
  const explicit = workflow.contextMode === 'explicit' && step !== undefined;
  const scope: TemplateScope = {
    workflow: {
      input: explicit && !LOCAL_RENDER_TYPES.has(step.type) ? {} : { ...state.inputs },
      name: workflow.name,
      ...(workflow.description === undefined ? {} : { description: workflow.description }),
      dir: workflow.dir,
      file: workflow.file,
    },
    context: { iteration: state.history.length, history: [...state.history] },
  };
  if (explicit) {
    for (const reference of step.input) addExplicitInput(scope, state, reference, step.name);
  } else if (workflow.contextMode === 'last_only') {
    const last = state.history.at(-1);
    if (last !== undefined) scope[last] = entry(state, last);
  } else {
    for (const name of state.outputs.keys()) scope[name] = entry(state, name);
  }
  return scope;
}

function missing(stepName: string, reference: string, what: string): SwitchboardError {
  return new SwitchboardError('WORKFLOW_TEMPLATE', `step "${stepName}" input "${reference}": ${what}`, {
    hint: `run the step it names first, or mark the reference optional with a trailing "?"`,
  });
}

/** One `input:` reference of an explicit-mode step: a workflow input, a whole output, or a field of one. */
function addExplicitInput(scope: TemplateScope, state: RunState, reference: string, stepName: string): void {
  const optional = reference.endsWith('?');
  const parts = reference.replace(/\?$/, '').split('.');
  const [head, ...rest] = parts;
  if (head === undefined || rest.length === 0) {
    if (!optional) throw missing(stepName, reference, 'expected `name.output` or `workflow.input.name`');
    return;
  }
  if (head === 'workflow') {
    const name = rest[1];
    if (rest[0] !== 'input' || name === undefined) return;
    const inputs = (scope['workflow'] as { input: Record<string, unknown> }).input;
    if (name in state.inputs) inputs[name] = state.inputs[name];
    else if (optional) inputs[name] = null;
    else throw missing(stepName, reference, `there is no workflow input "${name}"`);
    return;
  }
  if (!state.outputs.has(head)) {
    if (!optional) throw missing(stepName, reference, `"${head}" has not run yet`);
    return;
  }
  if (state.groups.has(head)) {
    scope[head] = state.outputs.get(head);
    return;
  }
  const output = state.outputs.get(head);
  const path = rest[0] === 'output' ? rest.slice(1) : rest;
  if (path.length === 0) {
    scope[head] = { output };
    return;
  }
  let value: unknown = output;
  for (const key of path) {
    if (value === null || typeof value !== 'object' || !(key in value)) {
      if (optional) return;
      throw missing(stepName, reference, `the output of "${head}" has no field "${path.join('.')}"`);
    }
    value = (value as Record<string, unknown>)[key];
  }
  const target = (scope[head] as { output?: Record<string, unknown> } | undefined)?.output ?? {};
  let cursor: Record<string, unknown> = target;
  for (const key of path.slice(0, -1)) {
    if (cursor[key] === null || typeof cursor[key] !== 'object') cursor[key] = {};
    cursor = cursor[key] as Record<string, unknown>;
  }
  cursor[path.at(-1) as string] = value;
  scope[head] = { output: target };
}
