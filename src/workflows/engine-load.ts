import { resolve } from 'node:path';
import type { WorkflowEngineOptions } from './api-types.js';
import type { WorkflowDefinition } from './model.js';

/** Loads and validates a workflow file (through the test seam when one is given). */
export async function loadDefinition(
  file: string,
  options: WorkflowEngineOptions,
): Promise<WorkflowDefinition> {
  const path = resolve(file);
  const workflow = await loadFile(path, options);
  options.checkWorkflow?.(workflow);
  return workflow;
}

async function loadFile(path: string, options: WorkflowEngineOptions): Promise<WorkflowDefinition> {
  const load = options._internal?.load;
  if (load !== undefined) return load(path);
  // Imported here, not at the top: the format brings zod and YAML, which importing the library to
  // route or to read a run's status does not need.
  const { loadWorkflow } = await import('./format/index.js');
  return loadWorkflow(path);
}
