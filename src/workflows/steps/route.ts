import { isAbsolute, resolve } from 'node:path';
import { ROUTE_MODES, type RouteMode } from '../../core/route-types.js';
import { SwitchboardError } from '../../core/errors.js';
import { END } from '../model.js';
import type { StepExecutor } from '../step-executor.js';

/**
 * Switchboard's `type: route`: the router picks a skill from the step's skills folder (relative to the
 * workflow file) for the rendered `text`. Output `{skill, confidence, method, reasoning}` (`skill` is
 * `none` when the router abstains). What runs next: the step's `routes` when it has any (they see
 * `output.skill`); otherwise the step or group named like the chosen skill; otherwise the run ends.
 */
export const executeRouteStep: StepExecutor = async (context) => {
  const { step, workflow } = context;
  if (step.type !== 'route') {
    throw new SwitchboardError(
      'INTERNAL',
      `step "${step.name}" of type ${step.type} reached the route executor`,
    );
  }
  const text = context.render(step.text, 'text');
  const mode = routeMode(step.mode, workflow.file, step.name);
  const skills = isAbsolute(step.skills) ? step.skills : resolve(workflow.dir, step.skills);
  const { createRouter } = await import('../../route/router.js');
  const router = createRouter({
    skills,
    mode,
    // Trained models are kept in the state folder, so a route step trains once, not on every run.
    stateDir: context.stateDir,
    ledger: context.ledger,
    ...(mode === 'hybrid' || mode === 'llm-only'
      ? {
          llm: {
            provider: context.resolveSpec(workflow.runtime.provider, workflow.runtime.defaultModel),
            // The run's call(): its budget, tags and deadline cover the routing call as any step's.
            call: (spec, request, options) => context.call(spec, request, options),
          },
        }
      : {}),
  });
  try {
    const decision = await router.route(text, {
      abortSignal: context.signal,
      tags: { workflow_run: context.runId, workflow_step: context.key },
    });
    const output = {
      skill: decision.skill,
      confidence: decision.confidence,
      method: decision.method,
      reasoning: decision.reasoning,
    };
    const outcome = { status: 'completed' as const, output, costUsd: decision.costUsd };
    if (step.routes.length > 0) return outcome;
    const named = workflow.steps.has(decision.skill) || workflow.groups.has(decision.skill);
    return { ...outcome, next: named ? decision.skill : END };
  } finally {
    await router.close();
  }
};

function routeMode(mode: string | undefined, file: string, step: string): RouteMode {
  if (mode === undefined) return 'local';
  if ((ROUTE_MODES as readonly string[]).includes(mode)) return mode as RouteMode;
  throw new SwitchboardError(
    'WORKFLOW_INVALID',
    `${file}: step "${step}" field "mode": "${mode}" is not a route mode`,
    { hint: `use one of ${ROUTE_MODES.join(', ')}` },
  );
}
