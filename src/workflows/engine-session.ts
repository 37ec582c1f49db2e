import { SwitchboardError } from '../core/errors.js';
import type { NewWorkflowEvent } from '../store/workflow-records.js';
import type { WorkflowEngineOptions, WorkflowLimitOverrides, WorkflowRunResult } from './api-types.js';
import { tracingEnabled, withSpan } from '../observe/tracing.js';
import { advanceRun } from './engine.js';
import type { RunStop } from './engine-end.js';
import { markRunning } from './engine-end.js';
import { effectiveLimits, timeoutError } from './engine-limits.js';
import type { RunExecution } from './engine-types.js';
import { runView, runWarnings, terminatedBy } from './engine-view.js';
import { everyStep, type WorkflowDefinition } from './model.js';
import { acquireRunLock, type RunLock } from './run-lock.js';
import { replayState } from './scope.js';
import { STEP_EXECUTORS } from './steps/index.js';
import type { StoreSession } from './stores.js';

export interface DriveOptions {
  session: StoreSession;
  workflow: WorkflowDefinition;
  runId: string;
  options: WorkflowEngineOptions;
  depth?: number;
  limits?: WorkflowLimitOverrides;
  /** Accept a workflow file whose hash differs from the run's (recorded as the run's new hash). */
  migrate?: boolean;
  /** Events after this sequence number go to `onEvent`; 0 (all) marks a run this call created. */
  eventsAfter?: number;
  /** A failed run is left failed (see ResumeWorkflowOptions.unlessEnded). */
  unlessEnded?: boolean;
  /** Hears that the run had ended by the time this call held its lock (see ResumeWorkflowOptions). */
  onLeftEnded?: () => void;
}

/**
 * Takes the run's lock, replays its finished steps from the ledger and advances it until it ends, parks
 * or stops; always lets the lock go. Returns the run as the ledger then records it.
 */
export async function driveRun(drive: DriveOptions): Promise<WorkflowRunResult> {
  const { session, workflow, runId, options } = drive;
  const { store } = session;
  const lock = await acquireRunLock(store, runId, {
    ...(options.staleAfterMs === undefined ? {} : { staleAfterMs: options.staleAfterMs }),
    ...(options.databaseBackAt === undefined ? {} : { databaseBackAt: options.databaseBackAt }),
    ...(options._internal?.pollMs === undefined ? {} : { pollMs: options._internal.pollMs }),
  });
  const controller = new AbortController();
  const abort = (signal: AbortSignal) => controller.abort(signal.reason);
  const sources = [lock.signal, ...(options.abortSignal === undefined ? [] : [options.abortSignal])];
  for (const source of sources) {
    if (source.aborted) abort(source);
    else source.addEventListener('abort', () => abort(source), { once: true });
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    const run = await store.getRun(runId);
    if (run === undefined) throw new SwitchboardError('RUN_NOT_FOUND', `there is no workflow run ${runId}`);
    // Read under the lock: a run that ended since the caller looked is left as it ended, and so is one
    // a terminate step failed (resuming it would go on to the run's end, and render its `output:`).
    const ended =
      run.status === 'completed' ||
      run.status === 'cancelled' ||
      (run.status === 'failed' && terminatedBy(run, await store.steps(runId)) !== undefined);
    if (!ended && !(run.status === 'failed' && drive.unlessEnded === true)) {
      const exec = await execution(drive, lock, controller.signal);
      if (callsModels(workflow)) exec.resolveStepSpec = (await import('./providers.js')).resolveStepSpec;
      await prepareRun(exec, drive);
      if (exec.limits.timeoutSeconds !== undefined) {
        exec.deadline = exec.now() + exec.limits.timeoutSeconds * 1000;
        timer = setTimeout(() => controller.abort(timeoutError(exec)), exec.limits.timeoutSeconds * 1000);
      }
      await markRunning(exec, drive.eventsAfter === 0);
      await tracedAdvance(exec);
    } else {
      drive.onLeftEnded?.();
    }
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    await lock.release();
  }
  // Read back once let go: another process may have changed the run meanwhile (a cancel).
  const run = await store.getRun(runId);
  if (run === undefined) throw new SwitchboardError('RUN_NOT_FOUND', `there is no workflow run ${runId}`);
  return await runView(store, run, [
    ...runWarnings(workflow, options.allowMcp),
    ...(await providerNotices(workflow, options)),
  ]);
}

/**
 * Advances the run inside its span: the first process to trace the run records the span's context on
 * the run's row, and every later one (a `workflow resume`, a worker on another machine) parents its
 * span under that context, so the run is one trace wherever it went.
 */
function tracedAdvance(exec: RunExecution): Promise<RunStop> {
  if (!tracingEnabled()) return advanceRun(exec);
  const { run, workflow } = exec;
  return withSpan(
    `workflow ${workflow.name}`,
    {
      'switchboard.workflow.name': workflow.name,
      'switchboard.run.id': run.id,
      'switchboard.run.continued': run.traceContext !== undefined,
      'switchboard.run.parent_id': run.parentRunId,
    },
    async (span) => {
      const traceparent = span.traceparent();
      if (run.traceContext === undefined && traceparent !== undefined) {
        await exec.store.setTraceContext(run.id, traceparent);
        run.traceContext = traceparent;
      }
      const stop = await advanceRun(exec);
      const ended = await exec.store.getRun(run.id);
      span.set({ 'switchboard.run.status': ended?.status, 'switchboard.cost_usd': ended?.costUsd });
      if (ended?.status === 'failed') span.fail({ code: ended.errorCode, message: ended.error });
      return stop;
    },
    { parent: run.traceContext },
  );
}

/**
 * What the run says of its LLM steps: those that run on Claude Code for want of a provider mapping, and
 * those whose tools will not run (see `stepProviderNotices`).
 */
async function providerNotices(
  workflow: WorkflowDefinition,
  options: WorkflowEngineOptions,
): Promise<string[]> {
  if (!callsModels(workflow)) return [];
  const { stepProviderNotices } = await import('./providers.js');
  return stepProviderNotices(
    everyStep(workflow),
    {
      runtime: workflow.runtime,
      providerMap: options.providerMap,
      override: options.provider,
      roles: options.roles,
    },
    workflow.runtime.mcpServers,
  );
}

async function execution(drive: DriveOptions, lock: RunLock, signal: AbortSignal): Promise<RunExecution> {
  const { session, workflow, runId, options } = drive;
  const run = await session.store.getRun(runId);
  if (run === undefined) throw new SwitchboardError('RUN_NOT_FOUND', `there is no workflow run ${runId}`);
  let delivered = drive.eventsAfter ?? (await session.store.lastEventSeq(runId));
  const steps = await session.store.steps(runId);
  const exec: RunExecution = {
    workflow,
    run,
    store: session.store,
    ledger: session.ledger,
    stateDir: session.stateDir,
    lock,
    state: replayState(run.inputs, steps),
    limits: effectiveLimits(workflow.limits, run.limits),
    options,
    executors: { ...STEP_EXECUTORS, ...options._internal?.executors },
    signal,
    depth: drive.depth ?? 0,
    now: options._internal?.now ?? Date.now,
    async emit(event: NewWorkflowEvent) {
      await session.store.updateRun(runId, lock.token, {}, event);
      await exec.deliverEvents();
    },
    boundary: boundaryHook(options),
    async deliverEvents() {
      const listener = options.onEvent;
      if (listener === undefined) return;
      for (const event of await session.store.events(runId, delivered)) {
        // Group members deliver concurrently: an event another call already handed over is skipped.
        if (event.seq <= delivered) continue;
        delivered = event.seq;
        listener({ ...event, at: new Date(event.at).toISOString() });
      }
    },
  };
  return exec;
}

/** Whether any step may resolve a provider (LLM and route steps, for_each items among them). */
export function callsModels(workflow: WorkflowDefinition): boolean {
  return everyStep(workflow).some((step) => step.type === 'agent' || step.type === 'route');
}

/**
 * The boundary hook: the test seam's, and `SWITCHBOARD_TEST_KILL_AT=<boundary>:<key suffix>` (read only
 * when set), which SIGKILLs this process there, so tests of the CLI can kill a run at an exact point.
 */
export function boundaryHook(options: WorkflowEngineOptions): (name: string, key: string) => void {
  const seam = options._internal?.onBoundary;
  const killAt = process.env['SWITCHBOARD_TEST_KILL_AT'];
  if (killAt === undefined || killAt === '') return seam ?? (() => {});
  const split = killAt.indexOf(':');
  const [where, suffix] = [killAt.slice(0, split), killAt.slice(split + 1)];
  return (name, key) => {
    seam?.(name, key);
    if (name === where && key.endsWith(suffix)) process.kill(process.pid, 'SIGKILL');
  };
}

/** Records what this resume changes about the run (raised limits, a migrated file) before it advances. */
async function prepareRun(exec: RunExecution, drive: DriveOptions): Promise<void> {
  const patch: { limits?: Record<string, number>; fileHash?: string } = {};
  const overrides = Object.entries(drive.limits ?? {}).filter(([, value]) => value !== undefined);
  if (overrides.length > 0) patch.limits = { ...exec.run.limits, ...Object.fromEntries(overrides) };
  if (drive.migrate === true && exec.run.fileHash !== exec.workflow.hash) patch.fileHash = exec.workflow.hash;
  if (patch.limits === undefined && patch.fileHash === undefined) return;
  await exec.store.updateRun(exec.run.id, exec.lock.token, patch, {
    type: 'run-changed',
    data: { ...patch },
  });
  const run = await exec.store.getRun(exec.run.id);
  if (run !== undefined) exec.run = run;
  exec.limits = effectiveLimits(exec.workflow.limits, exec.run.limits);
}
