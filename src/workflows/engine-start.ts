import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { SwitchboardError } from '../core/errors.js';
import { withSpan } from '../observe/tracing.js';
import type {
  RecordedWorkflowRun,
  ResumeWorkflowOptions,
  RunWorkflowOptions,
  WorkflowRunResult,
} from './api-types.js';
import { renderTemplate, resolveInputs } from './engine-deps.js';
import { loadDefinition } from './engine-load.js';
import { callsModels, driveRun } from './engine-session.js';
import { openStores, type StoreSession } from './stores.js';
import type { AgentStep, WorkflowDefinition } from './model.js';
import { workflowGraph } from './graph.js';

/** A run id: sortable by start time, unique across processes. */
export function newRunId(now = Date.now()): string {
  return `wf-${now.toString(36)}-${randomBytes(4).toString('hex')}`;
}

/**
 * Starts a run of an already loaded workflow (the internal entry point `runWorkflow` uses after loading
 * the file; tests hand it definitions they build). A `run_key` that names an existing run resumes it.
 */
export async function startWorkflowRun(
  workflow: WorkflowDefinition,
  options: Omit<RunWorkflowOptions, 'file'>,
): Promise<WorkflowRunResult> {
  const inputs = resolveInputs(workflow, options.inputs ?? {});
  if (options.dryRun === true) return dryRun(workflow, inputs);
  const session = await openStores(options);
  try {
    const { runId, created } = await createRunRecord(session, workflow, inputs, options);
    return await driveRun({ session, workflow, runId, options, ...(created ? { eventsAfter: 0 } : {}) });
  } finally {
    await session.close();
  }
}

/**
 * Checks the inputs and records a new run at its entry step (status `running`, no owner) without
 * advancing it, or finds the run its `run_key` names. `workflow run --enqueue` records this way, then
 * sends the job that makes a worker advance it.
 */
export async function recordWorkflowRun(
  workflow: WorkflowDefinition,
  options: Omit<RunWorkflowOptions, 'file' | 'dryRun'>,
): Promise<RecordedWorkflowRun> {
  const inputs = resolveInputs(workflow, options.inputs ?? {});
  const session = await openStores(options);
  try {
    // Traced, the worker that takes the run continues the trace of the process that queued it.
    const { runId, created } = await withSpan(
      `workflow ${workflow.name} enqueue`,
      { 'switchboard.workflow.name': workflow.name },
      async (span) => {
        const recorded = await createRunRecord(session, workflow, inputs, options, span.traceparent());
        span.set({ 'switchboard.run.id': recorded.runId });
        return recorded;
      },
    );
    const run = await session.store.getRun(runId);
    return { runId, created, status: run?.status ?? 'running' };
  } finally {
    await session.close();
  }
}

/** The longest workflow file the run-start event keeps the text of (characters). */
const SOURCE_LIMIT = 256_000;

/** The file's text as loaded (its hash checked: not a version edited since), when small enough to keep. */
function sourceOf(workflow: WorkflowDefinition): { source?: string } {
  try {
    const bytes = readFileSync(workflow.file);
    if (createHash('sha256').update(bytes).digest('hex') !== workflow.hash) return {};
    const text = bytes.toString('utf8');
    return text.length > SOURCE_LIMIT ? {} : { source: text };
  } catch {
    return {};
  }
}

/**
 * Each LLM step's spec as the run will resolve it (the same resolveStepSpec its steps call), for the
 * graph the dashboard draws before they run; undefined for a step it cannot resolve yet.
 */
async function specResolver(
  workflow: WorkflowDefinition,
  options: Omit<RunWorkflowOptions, 'file'>,
): Promise<((step: AgentStep) => string | undefined) | undefined> {
  if (!callsModels(workflow)) return undefined;
  const { resolveStepSpec } = await import('./providers.js');
  return (step) => {
    try {
      return resolveStepSpec({
        provider: step.provider,
        model: step.model,
        runtime: workflow.runtime,
        step: step.name,
        file: workflow.file,
        ...(options.providerMap === undefined ? {} : { providerMap: options.providerMap }),
        ...(options.roles === undefined ? {} : { roles: options.roles }),
        ...(options.provider === undefined ? {} : { override: options.provider }),
      });
    } catch {
      return undefined;
    }
  };
}

/** Records the run (or finds the one its `run_key` names, refusing a changed file). */
async function createRunRecord(
  session: StoreSession,
  workflow: WorkflowDefinition,
  inputs: Record<string, unknown>,
  options: Omit<RunWorkflowOptions, 'file'>,
  traceContext?: string,
): Promise<{ runId: string; created: boolean }> {
  const runKey =
    workflow.runKey === undefined
      ? undefined
      : renderTemplate(
          workflow.runKey,
          { workflow: { input: inputs, name: workflow.name } },
          { file: workflow.file, field: 'run_key' },
        );
  const { run, created } = await session.store.createRun({
    id: options.runId ?? newRunId(),
    workflow: workflow.name,
    file: workflow.file,
    fileHash: workflow.hash,
    inputs,
    currentStep: workflow.entryPoint,
    ...(runKey === undefined ? {} : { runKey }),
    graph: workflowGraph(workflow, await specResolver(workflow, options)),
    ...(traceContext === undefined ? {} : { traceContext }),
    ...sourceOf(workflow),
  });
  if (!created) checkHash(workflow, run.fileHash, run.id, false);
  return { runId: run.id, created };
}

/** Continues a run under its workflow file (refused when the file changed, unless `migrate`). */
export async function resumeRun(options: ResumeWorkflowOptions): Promise<WorkflowRunResult> {
  const session = await openStores(options);
  try {
    return await resumeInSession(session, options);
  } finally {
    await session.close();
  }
}

export async function resumeInSession(
  session: StoreSession,
  options: ResumeWorkflowOptions,
): Promise<WorkflowRunResult> {
  const run = await session.store.findRun(options.runId);
  if (run === undefined) {
    throw new SwitchboardError(
      'RUN_NOT_FOUND',
      `there is no workflow run ${options.runId} in ${session.store.path}`,
      {
        hint: 'list runs with `switchboard workflow ls`',
      },
    );
  }
  const workflow = await loadDefinition(run.file, options);
  checkHash(workflow, run.fileHash, run.id, options.migrate === true);
  return driveRun({
    session,
    workflow,
    runId: run.id,
    options,
    migrate: options.migrate === true,
    ...(options.limits === undefined ? {} : { limits: options.limits }),
    ...(options.unlessEnded === true ? { unlessEnded: true } : {}),
    ...(options.onLeftEnded === undefined ? {} : { onLeftEnded: options.onLeftEnded }),
  });
}

function checkHash(workflow: WorkflowDefinition, recorded: string, runId: string, migrate: boolean): void {
  if (workflow.hash === recorded || migrate) return;
  throw new SwitchboardError(
    'WORKFLOW_CHANGED',
    `${workflow.file} changed since workflow run ${runId} started`,
    {
      hint: `resume with --migrate to continue under the edited file (finished steps are kept), or restore the file`,
      retryable: false,
    },
  );
}

/** `--dry-run`: the file parses, the inputs resolve and the entry step's main template renders; nothing runs. */
function dryRun(workflow: WorkflowDefinition, inputs: Record<string, unknown>): WorkflowRunResult {
  const scope = {
    workflow: { input: inputs, name: workflow.name, dir: workflow.dir, file: workflow.file },
    context: { iteration: 0, history: [] },
  };
  const entry = workflow.steps.get(workflow.entryPoint);
  const output: Record<string, unknown> = { entryPoint: workflow.entryPoint, inputs };
  if (entry !== undefined && 'prompt' in entry && typeof entry.prompt === 'string') {
    output['prompt'] = renderTemplate(entry.prompt, scope, {
      file: workflow.file,
      step: entry.name,
      field: 'prompt',
    });
  }
  return {
    id: 'dry-run',
    workflow: workflow.name,
    status: 'running',
    step: workflow.entryPoint,
    output,
    costUsd: 0,
    steps: [],
    ...(workflow.warnings.length > 0 ? { warnings: [...workflow.warnings] } : {}),
  };
}
