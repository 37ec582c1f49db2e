import { resolve } from 'node:path';
import { errorInfo } from './engine-end.js';
import { loadDefinition } from './engine-load.js';
import { driveRun } from './engine-session.js';
import type { ExecutionSlot } from './engine-step.js';
import type { RunExecution } from './engine-types.js';
import { resolveInputs } from './engine-deps.js';
import type { StepOutcome } from './step-executor.js';
import { workflowGraph } from './graph.js';

/** Sub-workflows nested deeper than this fail (a workflow that calls itself). @default 5 */
export const DEFAULT_MAX_DEPTH = 5;

/**
 * Runs a sub-workflow to its end as a child run of this step's execution: created the first time,
 * resumed (finished steps replayed) when the parent step runs again after an interruption.
 */
export async function runChildWorkflow(
  exec: RunExecution,
  slot: ExecutionSlot,
  file: string,
  inputs: Record<string, unknown>,
): Promise<StepOutcome> {
  const maxDepth = (slot.step.type === 'workflow' ? slot.step.maxDepth : undefined) ?? DEFAULT_MAX_DEPTH;
  if (exec.depth + 1 > maxDepth) {
    return {
      status: 'failed',
      costUsd: 0,
      error: {
        code: 'WORKFLOW_LIMIT',
        message: `sub-workflow ${file} would nest deeper than max_depth ${maxDepth}`,
      },
    };
  }
  try {
    const workflow = await loadDefinition(resolve(exec.workflow.dir, file), exec.options);
    const session = { ledger: exec.ledger, store: exec.store, stateDir: exec.stateDir, async close() {} };
    let child = await exec.store.findChildRun(exec.run.id, slot.key);
    let eventsAfter: number | undefined;
    if (child === undefined) {
      const created = await exec.store.createRun({
        id: `${exec.run.id}.${slot.key.slice(exec.run.id.length + 1).replaceAll('/', '.')}`,
        workflow: workflow.name,
        file: workflow.file,
        fileHash: workflow.hash,
        inputs: resolveInputs(workflow, inputs),
        currentStep: workflow.entryPoint,
        parentRunId: exec.run.id,
        parentKey: slot.key,
        graph: workflowGraph(workflow),
      });
      child = created.run;
      eventsAfter = 0;
    }
    await exec.emit({ type: 'child-run', step: slot.step.name, key: slot.key, data: { runId: child.id } });
    const { onEvent: _onEvent, ...options } = exec.options;
    const result = await driveRun({
      session,
      workflow,
      runId: child.id,
      options: { ...options, abortSignal: slot.signal },
      depth: exec.depth + 1,
      migrate: true,
      ...(eventsAfter === undefined ? {} : { eventsAfter }),
    });
    if (result.status === 'completed')
      return { status: 'completed', costUsd: result.costUsd, output: result.output ?? {} };
    if (result.status === 'waiting') {
      return { status: 'waiting', costUsd: result.costUsd, output: { ...result.gate, runId: child.id } };
    }
    return {
      status: 'failed',
      costUsd: result.costUsd,
      error: {
        code: result.errorCode ?? 'WORKFLOW_FAILED',
        message: `sub-workflow ${child.id}: ${result.error ?? result.status}`,
      },
    };
  } catch (error) {
    if (slot.signal.aborted) throw error;
    return { status: 'failed', costUsd: 0, error: errorInfo(error) };
  }
}
