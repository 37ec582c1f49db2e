import { coerceJson } from '../template.js';
import type { TerminateStep } from '../model.js';
import type { StepExecutor, StepOutcome } from '../step-executor.js';

/**
 * `type: terminate`: ends the run at once with `status` (`success` or `failed`) and a rendered
 * `reason`, as Conductor does; no routes follow. Its own output is `{status, reason, terminated_by}`.
 * With `output_template:`, each value is rendered and JSON-coerced (`"true"` → true, `"42"` → 42) and
 * the result replaces the workflow's `output:`; without it the engine renders `output:` as on any end.
 */
export const executeTerminateStep: StepExecutor = (context) => {
  const step = context.step as TerminateStep;
  const reason = context.render(step.reason ?? '', 'reason');
  const outcome: StepOutcome = {
    status: 'terminated',
    terminateStatus: step.status,
    output: { status: step.status, reason, terminated_by: step.name },
    costUsd: 0,
  };
  if (step.outputTemplate !== undefined) {
    // The step's own output is in scope, as Conductor stores it before building the final output.
    const own = { [step.name]: { output: outcome.output } };
    const finalOutput: Record<string, unknown> = {};
    for (const [key, template] of Object.entries(step.outputTemplate)) {
      finalOutput[key] = coerceJson(context.render(template, `output_template.${key}`, own));
    }
    outcome.finalOutput = finalOutput;
  }
  return Promise.resolve(outcome);
};
