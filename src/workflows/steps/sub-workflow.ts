import { coerceJson } from '../engine-deps.js';
import type { StepExecutor } from '../step-executor.js';
import type { SubWorkflowStep } from '../model.js';

/**
 * `type: workflow`: runs another workflow file as a child run (its own rows, with this run as parent)
 * to its end. The child is resumed with the parent: a parent resumed mid-child continues the same child
 * run, whose finished steps are not run again.
 */
export const executeWorkflowStep: StepExecutor = async (context) => {
  const step = context.step as SubWorkflowStep;
  const inputs: Record<string, unknown> = {};
  for (const [name, template] of Object.entries(step.inputMapping ?? {})) {
    inputs[name] = coerceJson(context.render(template, `input_mapping.${name}`));
  }
  return context.runChild(step.workflow, inputs);
};
