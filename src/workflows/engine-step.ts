import type { CallOptions } from '../invoke/call.js';
import type { BudgetRule } from '../invoke/budget.js';
import type { CallRequest, CallResult } from '../core/call-types.js';
import { isSwitchboardError, SwitchboardError } from '../core/errors.js';
import { tracingEnabled, withSpan } from '../observe/tracing.js';
import type { WorkflowStepRow } from '../store/workflow-records.js';
import { renderTemplate } from './engine-deps.js';
import type { RunExecution } from './engine-types.js';
import type { StepDefinition } from './model.js';
import type { GateAnswer, StepContext, StepGuidance, StepOutcome, TemplateScope } from './step-executor.js';
import { runChildWorkflow } from './engine-child.js';

/** One execution of one step: where it sits in the run and what it sees. */
export interface ExecutionSlot {
  step: StepDefinition;
  /** Recorded as the row's `step` (a for_each item records its group's inline step). */
  type: string;
  key: string;
  visit: number;
  scope: TemplateScope;
  signal: AbortSignal;
  groupKey?: string;
  itemIndex?: number;
  itemKey?: string;
}

export interface StepRun {
  outcome: StepOutcome;
  /** The execution's tagged call attempts (killed earlier attempts of the key included) plus other spending. */
  costUsd: number;
  row: WorkflowStepRow;
}

/** Step key: `<run>/<step>/<visit>[/<item>]`, unique per execution and stable across resumes. */
export function stepKey(runId: string, name: string, visit: number, item?: string): string {
  return `${runId}/${name}/${visit}${item === undefined ? '' : `/${item}`}`;
}

/**
 * Starts the execution's row (attempt 1, or the next attempt of an interrupted one), runs the step's
 * executor and measures what it spent. Recording its end (and route) is the caller's, so that a group
 * member and a top-level step end in one transaction each with what belongs to them.
 */
export function executeStep(exec: RunExecution, slot: ExecutionSlot): Promise<StepRun> {
  if (!tracingEnabled()) return executeUntraced(exec, slot);
  return withSpan(
    `step ${slot.step.name}`,
    {
      'switchboard.run.id': exec.run.id,
      'switchboard.step.name': slot.step.name,
      'switchboard.step.type': slot.step.type,
      'switchboard.step.key': slot.key,
      'switchboard.step.visit': slot.visit,
      'switchboard.step.group': slot.groupKey,
      'switchboard.step.item': slot.itemKey,
    },
    async (span) => {
      const run = await executeUntraced(exec, slot);
      span.set({ 'switchboard.step.status': run.outcome.status, 'switchboard.cost_usd': run.costUsd });
      if (run.outcome.error !== undefined) span.fail(run.outcome.error);
      return run;
    },
    // A group member run as a job on another worker continues the run's trace.
    { parent: exec.run.traceContext },
  );
}

async function executeUntraced(exec: RunExecution, slot: ExecutionSlot): Promise<StepRun> {
  const { row, before } = await exec.store.startStep(
    exec.run.id,
    exec.lock.token,
    {
      key: slot.key,
      step: slot.step.name,
      type: slot.type,
      visit: slot.visit,
      ...(slot.groupKey === undefined ? {} : { groupKey: slot.groupKey }),
      ...(slot.itemIndex === undefined ? {} : { itemIndex: slot.itemIndex }),
      ...(slot.itemKey === undefined ? {} : { itemKey: slot.itemKey }),
      ...(exec.runner === undefined ? {} : { runner: exec.runner }),
    },
    {
      type: 'step-start',
      step: slot.step.name,
      key: slot.key,
      data: {
        type: slot.step.type,
        ...(slot.groupKey === undefined ? {} : { group: slot.groupKey }),
        ...(slot.itemIndex === undefined ? {} : { item: slot.itemIndex }),
        ...(slot.itemKey === undefined ? {} : { itemKey: slot.itemKey }),
      },
    },
  );
  await exec.deliverEvents();
  exec.boundary('step-start', slot.key);
  const spending = { calls: 0 };
  const context = stepContext(exec, slot, row, before, spending);
  await exec.options._internal?.beforeExecutor?.(slot.key, slot.signal);
  const executor = exec.executors[slot.step.type];
  let outcome: StepOutcome;
  if (slot.signal.aborted) {
    // Stopped while its row was being written (fail_fast in its group, a cancel): an executor started
    // now would wait for an abort that has already happened, so it never starts.
    if (exec.signal.aborted) throw exec.signal.reason;
    outcome = { status: 'failed', costUsd: 0, error: stoppedBy(slot.signal.reason) };
  } else if (executor === undefined) {
    outcome = {
      status: 'failed',
      costUsd: 0,
      error: {
        code: 'WORKFLOW_INVALID',
        message: `steps of type "${slot.step.type}" cannot run in this build`,
      },
    };
  } else {
    try {
      outcome = await executor(context);
    } catch (error) {
      if (exec.signal.aborted) throw exec.signal.reason;
      outcome = {
        status: 'failed',
        costUsd: 0,
        error: {
          code: isSwitchboardError(error) ? error.code : 'INTERNAL',
          message: error instanceof Error ? error.message : String(error),
        },
      };
    }
  }
  if (exec.signal.aborted) throw exec.signal.reason;
  // Reading the spending also writes this process's pending call attempts, before anything can kill it.
  const tagged = await exec.ledger.spendSince(exec.run.createdAt, { tag: `workflow_step=${slot.key}` });
  exec.boundary('step-effect', slot.key);
  const other = Math.max(0, (outcome.costUsd ?? 0) - spending.calls);
  return { outcome, costUsd: tagged + other, row };
}

/** The error a stopped execution ends with: the stop's own reason (`ABORTED: "x" failed in group …`). */
function stoppedBy(reason: unknown): { code: string; message: string } {
  if (isSwitchboardError(reason)) return { code: reason.code, message: reason.message };
  return { code: 'ABORTED', message: reason instanceof Error ? reason.message : 'stopped' };
}

function stepContext(
  exec: RunExecution,
  slot: ExecutionSlot,
  row: WorkflowStepRow,
  before: WorkflowStepRow | undefined,
  spending: { calls: number },
): StepContext {
  const { workflow, run } = exec;
  const where = { file: workflow.file, step: slot.step.name };
  const context: StepContext = {
    workflow,
    step: slot.step,
    runId: run.id,
    key: slot.key,
    visit: slot.visit,
    attempt: row.attempt,
    scope: slot.scope,
    render: (template, field, extra) =>
      renderTemplate(template, extra === undefined ? slot.scope : { ...slot.scope, ...extra }, {
        ...where,
        field,
      }),
    stateDir: exec.stateDir,
    ledger: exec.ledger,
    call: (spec, request, options) => boundCall(exec, slot, spec, request, options, spending),
    agentBudget: { rules: budgetRules(exec, []), since: exec.run.createdAt },
    resolveSpec: (provider, model) => resolveSpec(exec, provider, model, slot.step.name),
    mcpServers: mcpServersFor(exec, slot.step),
    signal: slot.signal,
    recordProgress: (notes) => exec.store.recordProgress(run.id, exec.lock.token, slot.key, notes),
    emit: (event) => exec.emit({ ...event, step: event.step ?? slot.step.name, key: event.key ?? slot.key }),
    runEvents: (type) => exec.store.eventsOfType(run.id, type),
    runChild: (file, inputs) => runChildWorkflow(exec, slot, file, inputs),
    gateAnswer: (fallback) => gateAnswer(exec, slot, fallback),
    takeGuidance: (turn) => takeGuidance(exec, slot, turn),
  };
  if (exec.deadline !== undefined) context.deadline = exec.deadline;
  if (exec.options.checkRepository !== undefined) context.checkRepository = exec.options.checkRepository;
  // An earlier attempt of this key that was killed, aborted or failed leaves notes to reconcile with.
  if (before !== undefined && before.status !== 'waiting' && before.progress !== undefined) {
    context.previous = before.progress;
  }
  return context;
}

function resolveSpec(
  exec: RunExecution,
  provider: string | undefined,
  model: string | undefined,
  step?: string,
): string {
  if (exec.resolveStepSpec === undefined) {
    throw new SwitchboardError(
      'INTERNAL',
      `step "${step ?? '?'}" resolved a provider in a workflow without model steps`,
    );
  }
  return exec.resolveStepSpec({
    provider,
    model,
    file: exec.workflow.file,
    ...(step === undefined ? {} : { step }),
    runtime: exec.workflow.runtime,
    ...(exec.options.providerMap === undefined ? {} : { providerMap: exec.options.providerMap }),
    ...(exec.options.roles === undefined ? {} : { roles: exec.options.roles }),
    ...(exec.options.provider === undefined ? {} : { override: exec.options.provider }),
  });
}

/** The budget rules of the run's calls and agents: switchboard.yaml's, the call's own, the run's `budget_usd`. */
function budgetRules(exec: RunExecution, extra: readonly BudgetRule[]): BudgetRule[] {
  const rules: BudgetRule[] = [...(exec.options.callDefaults?.budget?.rules ?? []), ...extra];
  if (exec.limits.budgetUsd !== undefined)
    rules.push({ tag: `workflow_run=${exec.run.id}`, totalUsd: exec.limits.budgetUsd });
  return rules;
}

/**
 * `call()` for a step: the spec the step resolved, tagged with the run and step (so the ledger
 * knows what each step spent and the run's budget counts it), under the run's budget, deadline and signal.
 */
async function boundCall(
  exec: RunExecution,
  slot: ExecutionSlot,
  spec: string,
  request: CallRequest,
  options: CallOptions = {},
  spending: { calls: number },
): Promise<CallResult> {
  const defaults = exec.options.callDefaults ?? {};
  const rules = budgetRules(exec, options.budget?.rules ?? []);
  const left = exec.deadline === undefined ? undefined : Math.max(1, exec.deadline - exec.now());
  const timeoutMs =
    left === undefined ? request.timeoutMs : Math.min(left, request.timeoutMs ?? Number.POSITIVE_INFINITY);
  const signals = [slot.signal, ...(request.abortSignal === undefined ? [] : [request.abortSignal])];
  // Loaded on a step's first call: the providers behind it cost half a second to import.
  const { call } = await import('../invoke/call.js');
  try {
    const result = await call(
      spec,
      {
        ...request,
        tags: { ...request.tags, workflow_run: exec.run.id, workflow_step: slot.key },
        abortSignal: AbortSignal.any(signals),
        ...(timeoutMs === undefined ? {} : { timeoutMs }),
      },
      {
        ...defaults,
        ledger: exec.ledger,
        ...(exec.options.providers === undefined ? {} : { providers: exec.options.providers }),
        ...options,
        retry: { ...defaults.retry, ...options.retry },
        budget: { ...defaults.budget, ...options.budget, rules },
      },
    );
    spending.calls += result.costUsd ?? 0;
    await callEvents(exec, slot, result);
    return result;
  } catch (error) {
    const spent = isSwitchboardError(error) ? error.details?.['spentUsd'] : undefined;
    if (typeof spent === 'number') spending.calls += spent;
    throw error;
  }
}

/**
 * A call's events: an API provider's answer is one model turn (`model-turn`: provider, model, tokens,
 * cost, duration, and the failed attempts before it); a Claude Code session writes its own turns as
 * they come (see `sessionEvents`). Answers that failed the schema and were asked again are a
 * `parse-recovery` event.
 */
async function callEvents(exec: RunExecution, slot: ExecutionSlot, result: CallResult): Promise<void> {
  const where = { step: slot.step.name, key: slot.key };
  const failed = result.attempts.filter((attempt) => attempt.errorCode !== undefined);
  const reasked = failed.filter((attempt) => attempt.errorCode === 'SCHEMA');
  if (reasked.length > 0) {
    await exec.emit({
      ...where,
      type: 'parse-recovery',
      data: {
        provider: result.provider,
        reasks: reasked.length,
        errors: reasked.map((attempt) => (attempt.errorMessage ?? '').slice(0, 300)),
      },
    });
  }
  if (result.provider.startsWith('claude:') || result.provider.startsWith('claude@')) return;
  await exec.emit({
    ...where,
    type: 'model-turn',
    data: {
      provider: result.provider,
      model: result.modelUsed,
      ...result.usage,
      ...(result.costUsd === null ? {} : { costUsd: result.costUsd }),
      durationMs: Math.round(result.durationMs),
      ...(failed.length === 0
        ? {}
        : { failedAttempts: failed.map((attempt) => `${attempt.provider}: ${attempt.errorCode ?? ''}`) }),
    },
  });
}

function mcpServersFor(exec: RunExecution, step: StepDefinition): Record<string, Record<string, unknown>> {
  const servers = exec.workflow.runtime.mcpServers;
  const optIn = step.type === 'agent' ? step.mcp : undefined;
  const names =
    exec.options.allowMcp === true || optIn === true
      ? Object.keys(servers)
      : Array.isArray(optIn)
        ? optIn.filter((name) => name in servers)
        : [];
  return Object.fromEntries(names.map((name) => [name, { ...servers[name] }]));
}

/** The run's undelivered guidance for this execution's model turn, marked delivered to it. */
async function takeGuidance(exec: RunExecution, slot: ExecutionSlot, turn: number): Promise<StepGuidance[]> {
  const landing = { step: slot.step.name, key: slot.key, visit: slot.visit, turn };
  const taken = await exec.store.takeGuidance(exec.run.id, landing);
  // A sub-workflow's model turns take guidance sent to the runs above it too (for the step that
  // started it, or for no step): the top run's id is the one its user knows.
  for (let run = exec.run; run.parentRunId !== undefined && run.parentKey !== undefined;) {
    const [started, parent] = await Promise.all([
      exec.store.getStep(run.parentKey),
      exec.store.getRun(run.parentRunId),
    ]);
    if (started === undefined || parent === undefined) break;
    taken.push(
      ...(await exec.store.takeGuidance(parent.id, landing, { step: started.step, runId: exec.run.id })),
    );
    run = parent;
  }
  if (taken.length > 0) await exec.deliverEvents();
  return taken.map((guidance) => ({
    text: guidance.text,
    sentBy: guidance.sentBy,
    sentAt: new Date(guidance.sentAt).toISOString(),
  }));
}

async function gateAnswer(
  exec: RunExecution,
  slot: ExecutionSlot,
  fallback?: GateAnswer,
): ReturnType<StepContext['gateAnswer']> {
  const step = slot.step;
  // `--skip-gates` skips a questions step's questions (their defaults apply): it never invents answers.
  if (exec.options.skipGates === true && step.type === 'questions') {
    return { choice: 'skip_all', answeredBy: 'skip-gates', answeredAt: new Date(exec.now()).toISOString() };
  }
  if (exec.options.skipGates === true && step.type === 'human_gate' && step.options[0] !== undefined) {
    return {
      choice: step.options[0].value,
      answeredBy: 'skip-gates',
      answeredAt: new Date(exec.now()).toISOString(),
    };
  }
  const stored = await exec.store.takeGateAnswer(
    exec.run.id,
    step.name,
    slot.visit,
    fallback === undefined
      ? undefined
      : {
          step: step.name,
          choice: fallback.choice,
          answeredBy: fallback.answeredBy,
          answeredAt: Date.parse(fallback.answeredAt),
        },
  );
  if (stored === undefined) return undefined;
  return {
    choice: stored.choice,
    ...(stored.text === undefined ? {} : { text: stored.text }),
    answeredBy: stored.answeredBy,
    answeredAt: new Date(stored.answeredAt).toISOString(),
  };
}
