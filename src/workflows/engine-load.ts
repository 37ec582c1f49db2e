import { resolve } from 'node:path';
import type { WorkflowEngineOptions } from './api-types.js';
import { loadWorkflow } from './engine-deps.js';
import type { WorkflowDefinition } from './model.js';

/** Loads and validates a workflow file (through the test seam when one is given). */
export async function loadDefinition(
  file: string,
  options: WorkflowEngineOptions,
): Promise<WorkflowDefinition> {
  const path = resolve(file);
  const load = options._internal?.load;
  return load === undefined ? loadWorkflow(path) : load(path);
}
