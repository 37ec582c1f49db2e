import { SwitchboardError } from '../core/errors.js';
import { formatUsd } from '../core/format-usd.js';
import type { WorkflowLimitOverrides } from './api-types.js';
import type { RunExecution } from './engine-types.js';
import type { WorkflowLimits } from './model.js';

/** The file's limits with the run's recorded overrides (raised on resume) applied. */
export function effectiveLimits(file: WorkflowLimits, overrides: WorkflowLimitOverrides): WorkflowLimits {
  const limits: WorkflowLimits = { ...file };
  if (overrides.maxIterations !== undefined) limits.maxIterations = overrides.maxIterations;
  if (overrides.timeoutSeconds !== undefined) limits.timeoutSeconds = overrides.timeoutSeconds;
  if (overrides.budgetUsd !== undefined) limits.budgetUsd = overrides.budgetUsd;
  return limits;
}

/**
 * The iteration check before `needed` step executions (1 for a step; a group's members still to run,
 * each parallel member and for_each item one): the run may not go past `max_iterations`, so a group
 * that needs more than is left does not start (Conductor checks a parallel group so; its for_each
 * counts items only after running them all).
 */
export function iterationLimit(
  exec: RunExecution,
  name: string,
  needed: number,
): SwitchboardError | undefined {
  const { iterations } = exec.run;
  const max = exec.limits.maxIterations;
  if (iterations + needed <= max) return undefined;
  const left = Math.max(0, max - iterations);
  return new SwitchboardError(
    'WORKFLOW_LIMIT',
    needed > 1
      ? `workflow run ${exec.run.id}: "${name}" has ${needed} members to run and max_iterations (${max}) leaves ${left}; none of them started`
      : `workflow run ${exec.run.id} reached max_iterations (${max}) before "${name}"`,
    {
      hint: `resume with more iterations: \`switchboard workflow resume ${exec.run.id} --max-iterations ${iterations + needed + 10}\``,
      retryable: false,
      details: { limit: 'max_iterations', iterations, max, needed },
    },
  );
}

/** The run's spending so far: its finished steps' costs, or its tagged calls when those are more (a step in flight). */
export async function runSpending(exec: RunExecution): Promise<number> {
  const tagged = await exec.ledger.spendSince(exec.run.createdAt, { tag: `workflow_run=${exec.run.id}` });
  return Math.max(exec.run.costUsd, tagged);
}

/** `budget_usd`: no step starts once the run has spent it (calls within a step are held by the reservation). */
export async function budgetLimit(exec: RunExecution): Promise<SwitchboardError | undefined> {
  const budget = exec.limits.budgetUsd;
  if (budget === undefined) return undefined;
  const spent = await runSpending(exec);
  if (spent < budget) return undefined;
  return new SwitchboardError(
    'BUDGET_EXCEEDED',
    `workflow run ${exec.run.id} spent ${formatUsd(spent)} of its budget_usd of $${budget}`,
    {
      hint: `resume with a higher budget: \`switchboard workflow resume ${exec.run.id} --budget ${Math.ceil(budget * 2 * 100) / 100}\``,
      retryable: false,
      details: { limit: 'budget_usd', spent, budget },
    },
  );
}

/** The error `timeout_seconds` ends a run with. */
export function timeoutError(exec: RunExecution): SwitchboardError {
  const seconds = exec.limits.timeoutSeconds ?? 0;
  return new SwitchboardError(
    'WORKFLOW_LIMIT',
    `workflow run ${exec.run.id} reached timeout_seconds (${seconds})`,
    {
      hint: `resume it (the timeout counts afresh), or raise it: \`switchboard workflow resume ${exec.run.id} --timeout ${seconds * 2}\``,
      retryable: false,
      details: { limit: 'timeout_seconds', seconds },
    },
  );
}

/** `max_visits`: where the run goes instead of `name` once it has run that often, or the error ending it. */
export function visitCap(
  exec: RunExecution,
  name: string,
  maxVisits: number | undefined,
  onCap: string | undefined,
): { redirect: string } | { error: SwitchboardError } | undefined {
  if (maxVisits === undefined) return undefined;
  const visits = exec.state.visits.get(name) ?? 0;
  if (visits < maxVisits) return undefined;
  if (onCap !== undefined) return { redirect: onCap };
  return {
    error: new SwitchboardError(
      'WORKFLOW_LIMIT',
      `step "${name}" reached max_visits (${maxVisits}) and has no on_cap`,
      {
        hint: `add \`on_cap: <step>\` to "${name}" to say where the run goes after ${maxVisits} visits`,
        retryable: false,
        details: { limit: 'max_visits', step: name, maxVisits },
      },
    ),
  };
}
