import { isSwitchboardError, SwitchboardError } from '../core/errors.js';
import { chooseRoute, takenRoute } from './engine-routes.js';
import { completeRun, errorInfo, failRun, parkRun, refreshRun, type RunStop } from './engine-end.js';
import { budgetLimit, iterationLimit, timeoutError, visitCap } from './engine-limits.js';
import { executeStep, stepKey, type StepRun } from './engine-step.js';
import type { RunExecution } from './engine-types.js';
import { runGroup } from './groups.js';
import { END, type StepDefinition } from './model.js';
import { buildScope, recordFinished } from './scope.js';
import type { StepOutcome, TemplateScope } from './step-executor.js';
import type { StepEnd } from '../store/workflow-records.js';
import { eventOutput } from './graph.js';

/**
 * The interpreter: from the run's recorded pointer, runs one step (or group) at a time, each one's end
 * and next target recorded in one transaction, until the run ends, parks at a gate, hits a limit or is
 * cancelled. Finished steps are never run again: their outputs come from the ledger (`replayState`).
 */
export async function advanceRun(exec: RunExecution): Promise<RunStop> {
  // on_cap redirects in a row without a step running: more than there are steps means a cycle of caps.
  let redirects = 0;
  for (;;) {
    const stopped = await stopBeforeStep(exec);
    if (stopped !== undefined) return stopped;
    const target = exec.run.currentStep ?? exec.workflow.entryPoint;
    if (target === END) return completeRun(exec);
    const step = exec.workflow.steps.get(target);
    const group = exec.workflow.groups.get(target);
    const definition = group ?? step;
    if (definition === undefined) {
      return failRun(exec, {
        code: 'WORKFLOW_INVALID',
        message: `${exec.workflow.file}: a route leads to "${target}", which is neither a step nor a group`,
      });
    }
    const cap = visitCap(exec, target, definition.maxVisits, definition.onCap);
    if (cap !== undefined && 'error' in cap) return failRun(exec, errorInfo(cap.error));
    if (cap !== undefined && ++redirects > exec.workflow.steps.size + exec.workflow.groups.size) {
      return failRun(exec, {
        code: 'WORKFLOW_LIMIT',
        message: `${exec.workflow.file}: every on_cap target from "${target}" has reached its max_visits`,
      });
    }
    if (cap !== undefined) {
      await exec.store.updateRun(
        exec.run.id,
        exec.lock.token,
        { currentStep: cap.redirect },
        {
          type: 'step-capped',
          step: target,
          data: { maxVisits: definition.maxVisits, to: cap.redirect },
        },
      );
      await refreshRun(exec);
      continue;
    }
    // A group's members are counted when it knows them (runGroup): a for_each's items come from its source.
    const limit =
      (group === undefined ? iterationLimit(exec, target, 1) : undefined) ?? (await budgetLimit(exec));
    if (limit !== undefined) return failRun(exec, errorInfo(limit));
    redirects = 0;
    const outcome = await guardAbort(exec, () =>
      group === undefined ? runTopStep(exec, step as StepDefinition) : runGroup(exec, group),
    );
    if (outcome !== undefined) return outcome;
  }
}

/** Cancel, timeout, a lost lock or the caller's abort, noticed at a step boundary. */
async function stopBeforeStep(exec: RunExecution): Promise<RunStop | undefined> {
  if (exec.deadline !== undefined && exec.now() >= exec.deadline)
    return failRun(exec, errorInfo(timeoutError(exec)));
  if (!exec.signal.aborted) return undefined;
  return stopForAbort(exec, exec.signal.reason);
}

async function stopForAbort(exec: RunExecution, reason: unknown): Promise<RunStop> {
  const code = isSwitchboardError(reason) ? reason.code : 'ABORTED';
  if (code === 'WORKFLOW_LOST') throw reason;
  if (code === 'WORKFLOW_CANCELLED') return { kind: 'cancelled' };
  return failRun(
    exec,
    errorInfo(isSwitchboardError(reason) ? reason : new SwitchboardError('ABORTED', 'the run was aborted')),
  );
}

/**
 * Runs one step or group; an abort while it ran (cancel, timeout, lost lock) ends the interrupted row
 * as failed with the reason (except a lost lock: nothing is written) and stops the run.
 */
async function guardAbort(
  exec: RunExecution,
  action: () => Promise<RunStop | undefined>,
): Promise<RunStop | undefined> {
  try {
    return await action();
  } catch (error) {
    if (!exec.signal.aborted || error !== exec.signal.reason) throw error;
    const code = isSwitchboardError(error) ? error.code : 'ABORTED';
    if (code === 'WORKFLOW_LOST') throw error;
    await failRunningRows(exec, errorInfo(error));
    return await stopForAbort(exec, error);
  }
}

/** Marks the rows an abort interrupted as failed, so status shows why they stopped. */
async function failRunningRows(exec: RunExecution, error: { code: string; message: string }): Promise<void> {
  for (const row of await exec.store.steps(exec.run.id)) {
    if (row.status !== 'running') continue;
    await exec.store.endStep(
      exec.run.id,
      exec.lock.token,
      {
        key: row.key,
        status: 'failed',
        costUsd: row.costUsd,
        errorCode: error.code,
        error: error.message,
        countsIteration: false,
      },
      { type: 'step-end', step: row.step, key: row.key, data: { status: 'failed', errorCode: error.code } },
    );
  }
}

async function runTopStep(exec: RunExecution, step: StepDefinition): Promise<RunStop | undefined> {
  const visit = exec.state.visits.get(step.name) ?? 0;
  const key = stepKey(exec.run.id, step.name, visit);
  const scope = buildScope(exec.workflow, exec.state, step);
  const run = await executeStep(exec, { step, type: step.type, key, visit, scope, signal: exec.signal });
  return finishTopStep(exec, step, key, scope, run);
}

/** Where a finished step goes: its outcome's own `next` (a gate), else its first matching route. */
function routeStep(
  exec: RunExecution,
  step: StepDefinition,
  scope: TemplateScope,
  outcome: StepOutcome,
):
  | { next: string; output: unknown; route?: { index: number; when?: string } }
  | { failure: { code: string; message: string }; output: unknown } {
  if (outcome.status === 'failed') {
    const failure = outcome.error ?? { code: 'WORKFLOW_FAILED', message: `step "${step.name}" failed` };
    return { failure, output: outcome.output };
  }
  if (outcome.status === 'terminated') return { next: END, output: outcome.output };
  if (outcome.next !== undefined) return { next: outcome.next, output: outcome.output };
  try {
    const route = chooseRoute(step.routes, outcome.output, scope, {
      file: exec.workflow.file,
      step: step.name,
    });
    const taken = takenRoute(step.routes, route);
    return { next: route.target, output: route.output, ...(taken === undefined ? {} : { route: taken }) };
  } catch (error) {
    return { failure: errorInfo(error), output: outcome.output };
  }
}

/** Records a top-level step's end and its route in one transaction, then says whether the run goes on. */
async function finishTopStep(
  exec: RunExecution,
  step: StepDefinition,
  key: string,
  scope: TemplateScope,
  { outcome, costUsd }: StepRun,
): Promise<RunStop | undefined> {
  const end = (fields: Omit<StepEnd, 'key' | 'costUsd'>, data: Record<string, unknown>) =>
    exec.store.endStep(
      exec.run.id,
      exec.lock.token,
      { key, costUsd, ...fields },
      {
        type: 'step-end',
        step: step.name,
        key,
        data: { ...data, costUsd },
      },
    );
  if (outcome.status === 'waiting') {
    await end(
      { status: 'waiting', output: outcome.output, currentStep: step.name, countsIteration: false },
      { status: 'waiting' },
    );
    return parkRun(exec, step.name);
  }
  const route = routeStep(exec, step, scope, outcome);
  if ('failure' in route) {
    const { failure, output } = route;
    await end(
      {
        status: 'failed',
        output,
        errorCode: failure.code,
        error: failure.message,
        currentStep: step.name,
        countsIteration: true,
      },
      { status: 'failed', errorCode: failure.code, error: failure.message, ...eventOutput(output) },
    );
    return failRun(exec, failure);
  }
  const terminated = outcome.status === 'terminated';
  await end(
    {
      status: terminated ? 'terminated' : 'completed',
      output: route.output,
      next: route.next,
      currentStep: route.next,
      countsIteration: true,
    },
    {
      status: outcome.status,
      next: route.next,
      ...(route.route === undefined ? {} : { route: route.route }),
      ...eventOutput(route.output),
    },
  );
  recordFinished(exec.state, step.name, route.output, false);
  await refreshRun(exec);
  await exec.deliverEvents();
  exec.boundary('step-complete', key);
  if (!terminated) return undefined;
  if (outcome.terminateStatus === 'failed') {
    // The file's `reason:` is what tells a user why the run ended; it belongs in the run's error.
    const reason = (outcome.output as { reason?: unknown } | undefined)?.reason;
    const why = typeof reason === 'string' && reason.trim() !== '' ? `: ${reason.trim()}` : ' as failed';
    const message = outcome.error?.message ?? `step "${step.name}" terminated the run${why}`;
    return failRun(exec, { code: outcome.error?.code ?? 'WORKFLOW_FAILED', message }, outcome.finalOutput);
  }
  return completeRun(exec, outcome.finalOutput);
}
