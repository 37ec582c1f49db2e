import type { WorkflowRunRow, WorkflowStepRow, WorkflowStore } from '../store/workflow-records.js';
import type { PendingGate, StepView, WorkflowRunResult } from './api-types.js';
import { END, type StepType } from './model.js';

function stepView(row: WorkflowStepRow, runIsOwned: boolean): StepView {
  const status: StepView['status'] =
    row.status === 'terminated'
      ? 'completed'
      : row.status === 'running' && !runIsOwned
        ? 'interrupted'
        : row.status;
  const view: StepView = {
    key: row.key,
    step: row.step,
    type: row.type as StepView['type'] & StepType,
    status,
    attempts: row.attempt,
    costUsd: row.costUsd,
  };
  if (row.endedAt !== undefined) view.durationMs = row.endedAt - row.startedAt;
  if (row.error !== undefined)
    view.error = row.errorCode === undefined ? row.error : `${row.errorCode}: ${row.error}`;
  return view;
}

function pendingGate(rows: readonly WorkflowStepRow[], run: WorkflowRunRow): PendingGate | undefined {
  if (run.status !== 'waiting') return undefined;
  const row = [...rows].reverse().find((candidate) => candidate.status === 'waiting');
  const output = row?.output as
    { step?: string; prompt?: string; options?: PendingGate['options'] } | undefined;
  if (row === undefined || output === undefined) return undefined;
  // A sub-workflow parked at its own gate names that gate.
  return { step: output.step ?? row.step, prompt: output.prompt ?? '', options: output.options ?? [] };
}

/** What `run`, `resume`, `gate` and `status` report, read back from the ledger. */
export function runView(
  store: WorkflowStore,
  run: WorkflowRunRow,
  warnings?: readonly string[],
): WorkflowRunResult {
  const rows = store.steps(run.id);
  const result: WorkflowRunResult = {
    id: run.id,
    workflow: run.workflow,
    status: run.status,
    costUsd: run.costUsd,
    steps: rows.map((row) => stepView(row, run.owner !== undefined)),
  };
  const step =
    run.currentStep === END ? rows.filter((row) => row.groupKey === undefined).at(-1)?.step : run.currentStep;
  if (step !== undefined) result.step = step;
  if (run.output !== undefined) result.output = run.output;
  const gate = pendingGate(rows, run);
  if (gate !== undefined) result.gate = gate;
  if (run.errorCode !== undefined) result.errorCode = run.errorCode;
  if (run.error !== undefined) result.error = run.error;
  if (warnings !== undefined && warnings.length > 0) result.warnings = [...warnings];
  return result;
}
