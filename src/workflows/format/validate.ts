import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  END,
  everyStep,
  type GroupDefinition,
  type StepDefinition,
  type WorkflowDefinition,
} from '../model.js';
import {
  templateNames,
  templateReferences,
  templateSyntaxProblem,
  type Known,
  type TemplateReference,
} from '../template.js';
import { graphOf, stronglyConnected, type WorkflowGraph } from './graph.js';

/** One finding of `switchboard workflow validate`. */
export interface Problem {
  /** The step or group it is about. */
  step?: string;
  /** The field inside it (`routes[0].to`, `prompt`). */
  field?: string;
  message: string;
}

export interface ValidationReport {
  errors: Problem[];
  warnings: Problem[];
}

/** Names every template may read besides steps and groups. */
const SCOPE_NAMES = new Set(['workflow', 'context']);
/** Jinja operators that `templateNames` (as of this writing) may report as names; never variables. */
const JINJA_WORDS = new Set(['and', 'or', 'not', 'in', 'is', 'if', 'else']);

/**
 * The checks `switchboard workflow validate` adds to loading: route targets that do not exist, steps
 * nothing reaches, templates that read a step which cannot have run before them, and loops with no
 * `max_visits` (which end only at `limits.max_iterations`). The loader's warnings (unsupported keys)
 * come first among the warnings.
 */
export function validateWorkflow(definition: WorkflowDefinition): ValidationReport {
  const errors: Problem[] = [];
  const warnings: Problem[] = definition.warnings.map((message) => ({ message }));
  const graph = graphOf(definition);
  for (const [node, edges] of graph.edges) {
    for (const edge of edges) {
      if (edge.to !== END && !graph.nodes.has(edge.to)) {
        errors.push({
          step: node,
          field: edge.field,
          message: `"${edge.to}" is not a step, a group or ${END}`,
        });
      }
    }
  }
  if (!graph.nodes.has(definition.entryPoint)) {
    errors.push({
      field: 'entry_point',
      message: `entry_point "${definition.entryPoint}" is not a step or group`,
    });
    return { errors, warnings };
  }
  const reachable = graph.reachableFrom(definition.entryPoint);
  for (const node of graph.nodes) {
    if (!reachable.has(node) && !graph.memberOf.has(node)) {
      warnings.push({ step: node, message: `no route leads to "${node}"; it never runs` });
    }
  }
  checkTemplates(definition, graph, reachable, errors, warnings);
  checkOutputTemplates(definition, graph, reachable, errors, warnings);
  checkSteps(definition, errors, warnings);
  checkSessionKeys(definition, errors, warnings);
  checkLoops(definition, graph, warnings);
  return { errors, warnings };
}

/** Sub-workflow files that are not there; LLM steps whose task prompt is empty. */
function checkSteps(definition: WorkflowDefinition, errors: Problem[], warnings: Problem[]): void {
  for (const step of everyStep(definition)) {
    if (
      step.type === 'workflow' &&
      !step.workflow.includes('{{') &&
      !existsSync(resolve(definition.dir, step.workflow))
    ) {
      errors.push({
        step: step.name,
        field: 'workflow',
        message: `the sub-workflow ${step.workflow} does not exist (relative to ${definition.dir})`,
      });
    }
    if (step.type === 'agent' && step.systemPrompt !== undefined && step.prompt.trim() === '') {
      warnings.push({
        step: step.name,
        field: 'prompt',
        message:
          'system_prompt is set but prompt is empty; put the task (and its input references) in prompt',
      });
    }
  }
}

/**
 * `session_key` is a label written as it is (a template would give every for_each item one session or
 * none), and no two executions that run at once share one: both would append to one transcript.
 */
function checkSessionKeys(definition: WorkflowDefinition, errors: Problem[], warnings: Problem[]): void {
  const keyed = (step: StepDefinition): string | undefined =>
    step.type === 'agent' ? step.sessionKey : undefined;
  for (const step of everyStep(definition)) {
    if (step.type !== 'agent' || step.sessionKey === undefined) continue;
    const problem = { step: step.name, field: 'session_key' };
    if (step.sessionKey === '')
      errors.push({ ...problem, message: 'session_key is empty; name the session' });
    else if (/{{|{%/.test(step.sessionKey)) {
      errors.push({
        ...problem,
        message:
          'session_key is a label, not a template; write the same literal key on the steps that share a session',
      });
    }
    if (step.git !== undefined) {
      warnings.push({
        ...problem,
        message:
          'session_key is not continued on an effects: git step (each is a fresh agent run in its own worktree); ignored',
      });
    }
  }
  for (const group of definition.groups.values()) {
    if (group.kind === 'for_each') {
      const key = keyed(group.agent);
      if (key !== undefined && group.maxConcurrent > 1) {
        errors.push({
          step: group.name,
          field: 'max_concurrent',
          message: `the items of "${group.name}" run ${group.maxConcurrent} at a time and share session_key "${key}"; set max_concurrent: 1, or drop the key`,
        });
      }
      continue;
    }
    const seen = new Map<string, string>();
    for (const member of group.agents) {
      const step = definition.steps.get(member);
      const key = step === undefined ? undefined : keyed(step);
      if (key === undefined) continue;
      const other = seen.get(key);
      if (other !== undefined) {
        errors.push({
          step: member,
          field: 'session_key',
          message: `"${member}" and "${other}" run side by side in "${group.name}" and share session_key "${key}"; give them distinct keys`,
        });
      }
      seen.set(key, member);
    }
  }
}

/** Each loop (a strongly connected set of steps) with no `max_visits` anywhere on it. */
function checkLoops(definition: WorkflowDefinition, graph: WorkflowGraph, warnings: Problem[]): void {
  for (const component of stronglyConnected(graph)) {
    const capped = component.some((name) => capOf(definition, name) !== undefined);
    if (capped) continue;
    const first = component[0] as string;
    warnings.push({
      step: first,
      message: `the loop ${[...component, first].join(' -> ')} has no max_visits; it only ends at limits.max_iterations ${definition.limits.maxIterations}`,
    });
  }
}

function capOf(definition: WorkflowDefinition, name: string): number | undefined {
  return (definition.steps.get(name) ?? definition.groups.get(name))?.maxVisits;
}

function checkTemplates(
  definition: WorkflowDefinition,
  graph: WorkflowGraph,
  reachable: Set<string>,
  errors: Problem[],
  warnings: Problem[],
): void {
  const stepNames = new Set([...definition.steps.keys(), ...definition.groups.keys()]);
  const visit = (owner: string, step: StepDefinition, extraNames: string[]): void => {
    const before = graph.canRunBefore(owner);
    for (const { field, source, own } of templatesOf(step)) {
      const syntax = syntaxError(step.name, field, source);
      if (syntax !== undefined) {
        errors.push(syntax);
        continue;
      }
      for (const reference of templateReferences(source)) {
        const { name } = reference;
        if (JINJA_WORDS.has(name)) continue;
        if (stepNames.has(name)) {
          if ((own && name === step.name) || !reachable.has(owner)) continue;
          const found = stepRead(graph, stepNames, owner, step.name, field, reference);
          if (found !== undefined) (found.error ? errors : warnings).push(found.problem);
        } else if (!own && !SCOPE_NAMES.has(name) && !extraNames.includes(name)) {
          warnings.push({
            step: step.name,
            field,
            message: `${field} reads "${name}", which is not a step, a group, workflow or context`,
          });
        }
      }
    }
    step.input.forEach((reference, index) => {
      const name = reference.split('.')[0] as string;
      if (reference.endsWith('?') || name === 'workflow' || !stepNames.has(name)) return;
      if (ranIn(graph, before, name)) return;
      errors.push({
        step: step.name,
        field: `input[${index}]`,
        message: `input "${reference}" names "${name}", which cannot have run before "${step.name}" (add ? to make it optional)`,
      });
    });
  };
  for (const step of definition.steps.values()) visit(graph.memberOf.get(step.name) ?? step.name, step, []);
  for (const group of definition.groups.values()) {
    if (group.kind === 'for_each') {
      visit(group.name, group.agent, [group.as, '_index', '_key']);
      const sourceStep = group.source.split('.')[0] as string;
      if (
        stepNames.has(sourceStep) &&
        !graph.canRunBefore(group.name).has(sourceStep) &&
        reachable.has(group.name)
      ) {
        errors.push({
          step: group.name,
          field: 'source',
          message: `source reads "${sourceStep}", which cannot have run before "${group.name}"`,
        });
      }
    }
    checkGroupRoutes(group, graph, stepNames, errors);
  }
}

/** A template that cannot run (a syntax error, a tag that loads a file), as the error naming its field. */
function syntaxError(step: string, field: string, source: string): Problem | undefined {
  const syntax = templateSyntaxProblem(source);
  return syntax === undefined
    ? undefined
    : { step, field, message: `${field} is not a template that can run: ${syntax}` };
}

/** Whether `name` is in a set of steps, a parallel member by its group. */
function ranIn(graph: WorkflowGraph, set: ReadonlySet<string>, name: string): boolean {
  const group = graph.memberOf.get(name);
  return set.has(name) || (group !== undefined && set.has(group));
}

/**
 * What a read of step `name` by a step's template (rendered at `owner`) is: an error when it cannot
 * have run (a warning when guarded: it always renders its fallback), a warning when a route can skip
 * it and nothing guards the read (undefined on those paths), else nothing.
 */
function stepRead(
  graph: WorkflowGraph,
  stepNames: Set<string>,
  owner: string,
  stepName: string,
  field: string,
  { name, guarded, underOthers }: TemplateReference,
): { error: boolean; problem: Problem } | undefined {
  if (!ranIn(graph, graph.canRunBefore(owner), name)) {
    const message = `${field} reads "${name}", which cannot have run before "${stepName}"`;
    return guarded
      ? {
          error: false,
          problem: {
            step: stepName,
            field,
            message: `${message} (guarded here, so it renders its fallback)`,
          },
        }
      : { error: true, problem: { step: stepName, field, message } };
  }
  if (guarded || ranIn(graph, graph.mustRunBefore(owner), name)) return undefined;
  if (underOthers.every((known) => ranWhereKnown(graph, stepNames, name, [owner], known, false)))
    return undefined;
  return {
    error: false,
    problem: {
      step: stepName,
      field,
      message: `${field} reads "${name}", which may not have run before "${stepName}" (a route can skip it): guard it with | default(…) or {% if ${name} is defined %}`,
    },
  };
}

/**
 * The workflow's `output:`, rendered once the run reaches `$end`: what it reads must have run on every
 * path that ends there (a route to `$end`, no routes, a `status: success` terminate without its own
 * `output_template`), else it is guarded, by the same rule as a step's templates.
 */
function checkOutputTemplates(
  definition: WorkflowDefinition,
  graph: WorkflowGraph,
  reachable: Set<string>,
  errors: Problem[],
  warnings: Problem[],
): void {
  const stepNames = new Set([...definition.steps.keys(), ...definition.groups.keys()]);
  let always: Set<string> | undefined;
  const exits: string[] = [];
  for (const node of reachable) {
    const step = definition.steps.get(node);
    const edges = graph.edges.get(node) ?? [];
    const ends =
      step?.type === 'terminate'
        ? step.status === 'success' && step.outputTemplate === undefined
        : edges.length === 0 || edges.some((edge) => edge.to === END);
    if (!ends || graph.memberOf.has(node)) continue;
    exits.push(node);
    const before = new Set([...graph.mustRunBefore(node), node]);
    always = always === undefined ? before : new Set([...always].filter((name) => before.has(name)));
  }
  if (always === undefined) return;
  for (const [key, source] of Object.entries(definition.output)) {
    const field = `output.${key}`;
    const syntax = syntaxError('workflow', field, source);
    if (syntax !== undefined) {
      errors.push(syntax);
      continue;
    }
    for (const { name, guarded, underOthers } of templateReferences(source)) {
      if (!stepNames.has(name) || guarded || ranIn(graph, always, name)) continue;
      if (underOthers.every((known) => ranWhereKnown(graph, stepNames, name, exits, known, true))) continue;
      const message = ranIn(graph, reachable, name)
        ? `${field} reads "${name}", which may not have run when the run ends (a route can skip it): guard it with | default(…) or {% if ${name} is defined %}`
        : `${field} reads "${name}", which never runs`;
      warnings.push({ step: 'workflow', field, message });
    }
  }
}

/**
 * Whether `name` has run at each of the nodes `at` (a step's template; or the run's ends, `atEnd`,
 * where each node itself has run) in a branch that knows `known` of other steps: a present step that
 * always runs after `name`, or an absent one whose every skipping path runs `name`.
 */
function ranWhereKnown(
  graph: WorkflowGraph,
  stepNames: Set<string>,
  name: string,
  at: readonly string[],
  known: Known,
  atEnd: boolean,
): boolean {
  const contains = (set: Set<string>): boolean => ranIn(graph, set, name);
  if ([...known.present].some((step) => stepNames.has(step) && contains(graph.mustRunBefore(step))))
    return true;
  return [...known.absent].some(
    (step) =>
      stepNames.has(step) &&
      at.every((node) => {
        const before = graph.mustRunBeforeWithout(node, step);
        return before === undefined || contains(atEnd ? new Set([...before, node]) : before);
      }),
  );
}

function checkGroupRoutes(
  group: GroupDefinition,
  graph: WorkflowGraph,
  stepNames: Set<string>,
  errors: Problem[],
): void {
  const before = graph.canRunBefore(group.name);
  group.routes.forEach((route, index) => {
    for (const name of route.when === undefined ? [] : templateNames(asTemplate(route.when))) {
      if (
        stepNames.has(name) &&
        name !== group.name &&
        !before.has(name) &&
        graph.memberOf.get(name) !== group.name
      ) {
        errors.push({
          step: group.name,
          field: `routes[${index}].when`,
          message: `routes[${index}].when reads "${name}", which cannot have run before "${group.name}"`,
        });
      }
    }
  });
}

interface TemplateField {
  field: string;
  source: string;
  /** Evaluated after the step ran: its own output (and its fields, bare) are in scope. */
  own: boolean;
}

/** Every field of a step that is rendered as a template, with where it is. */
function templatesOf(step: StepDefinition): TemplateField[] {
  const fields: TemplateField[] = [];
  const add = (field: string, source: string | number | undefined, own = false): void => {
    if (typeof source === 'string') fields.push({ field, source, own });
  };
  step.routes.forEach((route, index) => {
    if (route.when !== undefined) add(`routes[${index}].when`, asTemplate(route.when), true);
    for (const [key, value] of Object.entries(route.output ?? {}))
      add(`routes[${index}].output.${key}`, value, true);
  });
  switch (step.type) {
    case 'agent':
      add('prompt', step.prompt);
      add('system_prompt', step.systemPrompt);
      add('model', step.model);
      break;
    case 'human_gate':
      add('prompt', step.prompt);
      break;
    case 'questions':
      add('prompt', step.prompt);
      if (step.source !== undefined) add('source', `{{ ${step.source} }}`);
      step.questions?.forEach((question, index) => {
        add(`questions[${index}].text`, question.text);
        add(`questions[${index}].hint`, question.hint);
        question.choices.forEach((choice, at) => add(`questions[${index}].choices[${at}]`, choice));
      });
      break;
    case 'script':
      add('command', step.command);
      step.args.forEach((arg, index) => add(`args[${index}]`, arg));
      for (const [key, value] of Object.entries(step.env)) add(`env.${key}`, value);
      add('stdin', step.stdin);
      break;
    case 'set':
      add('value', step.value);
      for (const [key, value] of Object.entries(step.values ?? {})) add(`values.${key}`, value);
      break;
    case 'terminate':
      add('reason', step.reason);
      for (const [key, value] of Object.entries(step.outputTemplate ?? {}))
        add(`output_template.${key}`, value);
      break;
    case 'wait':
      add('duration', step.duration);
      add('reason', step.reason);
      break;
    case 'workflow':
      for (const [key, value] of Object.entries(step.inputMapping ?? {})) add(`input_mapping.${key}`, value);
      break;
    case 'route':
      add('text', step.text);
      break;
  }
  return fields;
}

/** A `when:` may be a bare expression (`exit_code == 0`); read it as `{{ … }}`. */
function asTemplate(when: string): string {
  return when.includes('{{') || when.includes('{%') ? when : `{{ ${when} }}`;
}
