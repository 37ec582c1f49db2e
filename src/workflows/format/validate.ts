import type { WorkflowDefinition } from '../model.js';
/** One finding of `switchboard workflow validate`. */
export interface Problem {
  step?: string;
  field?: string;
  message: string;
}
export interface ValidationReport {
  errors: Problem[];
  warnings: Problem[];
}
export function validateWorkflow(definition: WorkflowDefinition): ValidationReport {
  return { errors: [], warnings: definition.warnings.map((message) => ({ message })) };
}
