import { isSwitchboardError } from '../core/errors.js';
import { coerceJson, renderTemplate } from './engine-deps.js';
import type { RunExecution } from './engine-types.js';
import { END } from './model.js';
import { buildScope } from './scope.js';

/** How a run stopped advancing in this process. */
export type RunStop =
  | { kind: 'completed'; output?: Record<string, unknown> }
  | { kind: 'failed'; error: { code: string; message: string } }
  | { kind: 'waiting' }
  | { kind: 'cancelled' };

export function errorInfo(error: unknown): { code: string; message: string } {
  if (isSwitchboardError(error)) return { code: error.code, message: error.message };
  return { code: 'INTERNAL', message: error instanceof Error ? error.message : String(error) };
}

/** Rereads the run row (iterations, cost, pointer) after a write. */
export async function refreshRun(exec: RunExecution): Promise<void> {
  const run = await exec.store.getRun(exec.run.id);
  if (run !== undefined) exec.run = run;
}

/** The workflow's `output:` templates rendered against everything the run produced (Conductor's JSON coercion). */
export function workflowOutput(exec: RunExecution): Record<string, unknown> {
  const workflow = { ...exec.workflow, contextMode: 'accumulate' as const };
  const scope = buildScope(workflow, exec.state);
  const output: Record<string, unknown> = {};
  for (const [name, template] of Object.entries(exec.workflow.output)) {
    output[name] = coerceJson(
      renderTemplate(template, scope, { file: exec.workflow.file, field: `output.${name}` }),
    );
  }
  return output;
}

/** Ends the run successfully: its output, status `completed`, one event. */
export async function completeRun(
  exec: RunExecution,
  finalOutput?: Record<string, unknown>,
): Promise<RunStop> {
  let output: Record<string, unknown>;
  try {
    output = finalOutput ?? workflowOutput(exec);
  } catch (error) {
    return await failRun(exec, errorInfo(error));
  }
  await exec.store.updateRun(
    exec.run.id,
    exec.lock.token,
    { status: 'completed', currentStep: END, output, errorCode: null, error: null, ended: true },
    { type: 'run-end', data: { status: 'completed' } },
  );
  await refreshRun(exec);
  await exec.deliverEvents();
  return { kind: 'completed', output };
}

/** Ends the run as failed (resumable: the pointer stays at the step that could not run). */
export async function failRun(
  exec: RunExecution,
  error: { code: string; message: string },
  output?: Record<string, unknown>,
): Promise<RunStop> {
  await exec.store.updateRun(
    exec.run.id,
    exec.lock.token,
    {
      status: 'failed',
      errorCode: error.code,
      error: error.message,
      ended: true,
      ...(output === undefined ? {} : { output }),
    },
    { type: 'run-end', data: { status: 'failed', errorCode: error.code, error: error.message } },
  );
  await refreshRun(exec);
  await exec.deliverEvents();
  return { kind: 'failed', error };
}

/** Parks the run at a gate with no answer yet. */
export async function parkRun(exec: RunExecution, step: string): Promise<RunStop> {
  await exec.store.updateRun(
    exec.run.id,
    exec.lock.token,
    { status: 'waiting', currentStep: step },
    { type: 'run-waiting', step },
  );
  await refreshRun(exec);
  await exec.deliverEvents();
  return { kind: 'waiting' };
}

/**
 * Marks the run `running` in this process's hands; a run taken up again (interrupted, parked, failed)
 * gets a `run-resume` event saying what it was.
 */
export async function markRunning(exec: RunExecution, fresh: boolean): Promise<void> {
  if (fresh) return;
  await exec.store.updateRun(
    exec.run.id,
    exec.lock.token,
    { status: 'running', errorCode: null, error: null, ended: false },
    { type: 'run-resume', data: { from: exec.run.status } },
  );
  await refreshRun(exec);
}
