import { SwitchboardError } from '../core/errors.js';
import { coerceJson, evaluateCondition, renderTemplate } from './engine-deps.js';
import { END, type RouteDefinition } from './model.js';
import type { TemplateScope } from './step-executor.js';
import { isPlainObject } from '../core/plain-object.js';

export interface RouteChoice {
  /** A step or group name, or `$end`. */
  target: string;
  /** The step's output with the taken route's `output:` fields merged in. */
  output: unknown;
  /** Index of the route taken; undefined when the step has no routes and the run ends. */
  index?: number;
}

/** The route a choice took, as events show it: its index and its `when` as written. */
export function takenRoute(
  routes: readonly RouteDefinition[],
  choice: RouteChoice,
): { index: number; when?: string } | undefined {
  if (choice.index === undefined) return undefined;
  const when = routes[choice.index]?.when;
  return when === undefined ? { index: choice.index } : { index: choice.index, when };
}

/**
 * Picks a step's successor, as Conductor does: routes in order, the first whose `when` holds (or that has
 * none) wins; no routes ends the run; routes of which none matches fail it (Conductor's router raises
 * there: the file lacks a catch-all). `when` sees the scope plus the step's own output
 * as `output`, when it is an object its fields bare (`exit_code == 0`), and under the step's own name
 * as later steps will see it (`reviewer.output.verdict`): Conductor stores a step's output before it
 * reads the step's routes, so its files route on their own step by name.
 */
export function chooseRoute(
  routes: readonly RouteDefinition[],
  output: unknown,
  scope: TemplateScope,
  { group, ...where }: { file: string; step: string; group?: boolean },
): RouteChoice {
  // A step is `{output}` in the scope, a group its `{outputs, errors}` itself (see scope.ts).
  const self = group === true ? output : { output };
  const conditionScope: TemplateScope = {
    ...scope,
    [where.step]: self,
    ...(isPlainObject(output) ? output : {}),
    output,
  };
  for (const [index, route] of routes.entries()) {
    if (route.when !== undefined) {
      const field = `routes[${index}].when`;
      if (!evaluateCondition(route.when, conditionScope, { ...where, field })) continue;
    }
    return { target: route.to, output: withRouteOutput(route, output, conditionScope, where, index), index };
  }
  if (routes.length === 0) return { target: END, output };
  throw new SwitchboardError(
    'WORKFLOW_FAILED',
    `${where.file}: step "${where.step}": none of its ${routes.length} routes matched its output`,
    {
      hint: 'add a last route without `when:` (for instance `- to: $end`), then `switchboard workflow resume RUN --migrate`',
      details: { file: where.file, step: where.step },
    },
  );
}

/** Conductor's route `output:` mapping: rendered templates merged into the step's output. */
function withRouteOutput(
  route: RouteDefinition,
  output: unknown,
  scope: TemplateScope,
  where: { file: string; step: string },
  index: number,
): unknown {
  if (route.output === undefined || Object.keys(route.output).length === 0) return output;
  const merged: Record<string, unknown> = isPlainObject(output) ? { ...output } : { value: output };
  for (const [name, template] of Object.entries(route.output)) {
    merged[name] = coerceJson(
      renderTemplate(template, scope, { ...where, field: `routes[${index}].output.${name}` }),
    );
  }
  return merged;
}
