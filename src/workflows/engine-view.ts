import type {
  StoredWorkflowEvent,
  WorkflowRunRow,
  WorkflowStepRow,
  WorkflowStore,
} from '../store/workflow-records.js';
import type { PendingGate, StepTokens, StepView, WorkflowRunResult } from './api-types.js';
import { runOwner } from './run-lock.js';
import { END, everyStep, type StepType, type WorkflowDefinition } from './model.js';

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
  if (row.output !== undefined) view.output = row.output;
  if (row.error !== undefined)
    view.error = row.errorCode === undefined ? row.error : `${row.errorCode}: ${row.error}`;
  return view;
}

function pendingGate(rows: readonly WorkflowStepRow[], run: WorkflowRunRow): PendingGate | undefined {
  if (run.status === 'running') return timedGate(rows);
  if (run.status !== 'waiting') return undefined;
  const row = [...rows].reverse().find((candidate) => candidate.status === 'waiting');
  const output = row?.output as
    | {
        step?: string;
        prompt?: string;
        options?: PendingGate['options'];
        questions?: PendingGate['questions'];
      }
    | undefined;
  if (row === undefined || output === undefined) return undefined;
  // A sub-workflow parked at its own gate names that gate.
  return {
    step: output.step ?? row.step,
    prompt: output.prompt ?? '',
    options: output.options ?? [],
    ...(output.questions === undefined ? {} : { questions: output.questions }),
  };
}

/** A gate with a `timeout` that its run's process is waiting at (its notes hold what to show). */
function timedGate(rows: readonly WorkflowStepRow[]): PendingGate | undefined {
  const row = rows.find((candidate) => candidate.status === 'running' && candidate.type === 'human_gate');
  const gate = row?.progress?.['gate'] as
    { prompt?: string; options?: PendingGate['options']; timesOutAt?: string } | undefined;
  if (row === undefined || gate === undefined) return undefined;
  return {
    step: row.step,
    prompt: gate.prompt ?? '',
    options: gate.options ?? [],
    ...(gate.timesOutAt === undefined ? {} : { timesOutAt: gate.timesOutAt }),
  };
}

/**
 * The terminate step that decided how the run ended, when one did: the run completed, or failed by a
 * `status: failed` terminate, with that step's row its last. Such an end is the workflow's own verdict,
 * so it is final: a resume reports it again rather than carrying the run on to its `output:` (there is
 * no step left to run). A run whose `output:` failed to render after a `status: success` terminate is
 * not ended by it: it stays resumable, to render once the template is fixed.
 */
export function terminatedBy(run: WorkflowRunRow, rows: readonly WorkflowStepRow[]): string | undefined {
  if (run.currentStep !== END || (run.status !== 'completed' && run.status !== 'failed')) return undefined;
  const last = rows.filter((row) => row.groupKey === undefined).at(-1);
  if (last?.status !== 'terminated') return undefined;
  if (run.status === 'completed') return last.step;
  return (last.output as { status?: unknown } | undefined)?.status === 'failed' ? last.step : undefined;
}

/** How many of the run's latest events a result carries. */
export const RECENT_EVENTS = 20;

/** Per step execution: tokens summed over its `model-turn` events, and its latest event. */
function stepActivity(
  events: readonly StoredWorkflowEvent[],
): Map<string, { tokens?: StepTokens; last: { type: string; at: string } }> {
  const activity = new Map<string, { tokens?: StepTokens; last: { type: string; at: string } }>();
  for (const event of events) {
    if (event.key === undefined) continue;
    const entry = activity.get(event.key) ?? { last: { type: event.type, at: '' } };
    entry.last = { type: event.type, at: new Date(event.at).toISOString() };
    if (event.type === 'model-turn' && event.data !== undefined) {
      const count = (name: string): number => {
        const value = event.data?.[name];
        return typeof value === 'number' && Number.isFinite(value) ? value : 0;
      };
      const tokens = entry.tokens ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
      tokens.input += count('inputTokens');
      tokens.output += count('outputTokens');
      tokens.cacheRead += count('cacheReadTokens');
      tokens.cacheWrite += count('cacheWriteTokens');
      entry.tokens = tokens;
    }
    activity.set(event.key, entry);
  }
  return activity;
}

/** What `run`, `resume`, `gate` and `status` report, read back from the ledger. */
export async function runView(
  store: WorkflowStore,
  run: WorkflowRunRow,
  warnings?: readonly string[],
): Promise<WorkflowRunResult> {
  const rows = await store.steps(run.id);
  const events = await store.events(run.id);
  const activity = stepActivity(events);
  const result: WorkflowRunResult = {
    id: run.id,
    workflow: run.workflow,
    status: run.status,
    costUsd: run.costUsd,
    // A dead owner (kill -9) leaves its fields behind: only a live one makes a `running` step running.
    steps: rows.map((row) => {
      const view = stepView(row, run.owner !== undefined && runOwner(run) !== undefined);
      const seen = activity.get(row.key);
      if (seen?.tokens !== undefined) view.tokens = seen.tokens;
      if (seen?.last !== undefined) view.lastEvent = seen.last;
      return view;
    }),
    events: events.slice(-RECENT_EVENTS).map((event) => ({ ...event, at: new Date(event.at).toISOString() })),
  };
  const step =
    run.currentStep === END ? rows.filter((row) => row.groupKey === undefined).at(-1)?.step : run.currentStep;
  if (step !== undefined) result.step = step;
  if (run.output !== undefined) result.output = run.output;
  const gate = pendingGate(rows, run);
  if (gate !== undefined) result.gate = gate;
  if (run.errorCode !== undefined) result.errorCode = run.errorCode;
  if (run.error !== undefined) result.error = run.error;
  const terminate = terminatedBy(run, rows);
  if (terminate !== undefined) result.terminatedBy = terminate;
  if (warnings !== undefined && warnings.length > 0) result.warnings = [...warnings];
  return result;
}

/**
 * The file's warnings plus one naming the MCP servers that stay off: workflow subprocesses get none
 * unless `--allow-mcp` (allowMcp) or a step opts in with `mcp:`.
 */
export function runWarnings(workflow: WorkflowDefinition, allowMcp: boolean | undefined): string[] {
  const warnings = [...workflow.warnings];
  const declared = Object.keys(workflow.runtime.mcpServers);
  if (declared.length === 0 || allowMcp === true) return warnings;
  const optedIn = new Set<string>();
  for (const step of everyStep(workflow)) {
    if (step.type !== 'agent' || step.mcp === undefined || step.mcp === false) continue;
    for (const name of step.mcp === true ? declared : step.mcp) optedIn.add(name);
  }
  const off = declared.filter((name) => !optedIn.has(name));
  if (off.length > 0)
    warnings.push(
      `MCP servers ${off.join(', ')} are off in workflow steps: pass --allow-mcp, or opt a step in with mcp: [${off[0] ?? ''}]`,
    );
  return warnings;
}
