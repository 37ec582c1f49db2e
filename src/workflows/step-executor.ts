import type { BudgetRule } from '../invoke/budget.js';
import type { CallOptions } from '../invoke/call.js';
import type { CallRequest, CallResult } from '../core/call-types.js';
import type { Ledger } from '../store/ledger.js';
import type { StepDefinition, WorkflowDefinition } from './model.js';

/**
 * The contract between the engine and one step type (`steps/<type>.ts`). The engine owns ordering,
 * checkpoints, limits and fencing; an executor only does its step's work and says what came of it.
 */

/** What templates render against: `workflow`, `context`, every finished step (`<name>.output`), groups (`<name>.outputs`), loop variables. */
export type TemplateScope = Record<string, unknown>;

/** A workflow event; appended to the run's event log in order. */
export interface WorkflowEvent {
  type: string;
  step?: string;
  key?: string;
  data?: Record<string, unknown>;
}

/** One execution of one step, as the engine hands it to the executor. */
export interface StepContext {
  workflow: WorkflowDefinition;
  step: StepDefinition;
  runId: string;
  /** `<run>/<step>/<iteration>[/<item>]`: unique per execution, stable across resumes. */
  key: string;
  /** How many times this step has run before in this run (0 the first time). */
  visit: number;
  /** Attempt number of this execution, 1 the first time; a resumed interrupted step gets the next. */
  attempt: number;
  /** The scope templates render against (loop variables already in for `for_each` items). */
  scope: TemplateScope;
  /** Renders a template against `scope` (plus `extra`); throws WORKFLOW_TEMPLATE naming step and field. */
  render(template: string, field: string, extra?: TemplateScope): string;
  /** Folder for state (`.switchboard`): ledger, worktrees, transcripts. */
  stateDir: string;
  ledger: Ledger;
  /**
   * `call()` bound to this run: budgets (the run's `budget_usd` through the ledger's reservations),
   * tags `{workflow_run, workflow_step}` and the step's deadline are filled in. `spec` is the provider
   * spec or chain the step resolved with `resolveSpec`.
   */
  call(spec: string, request: CallRequest, options?: CallOptions): Promise<CallResult>;
  /**
   * What a Claude Code agent of this step spends under: the budget rules of switchboard.yaml and the
   * run's `budget_usd`, and the run's start (spending before it is not the run's). @default none
   */
  agentBudget?: { rules: readonly BudgetRule[]; since: number };
  /** Resolves a Conductor provider + model to a Switchboard spec or chain (`anthropic:claude-haiku-4-5`). */
  resolveSpec(provider: string | undefined, model: string | undefined): string;
  /** MCP servers this step may use (already filtered by `--allow-mcp` / the step's opt-in). */
  mcpServers: Record<string, Record<string, unknown>>;
  /** The engine's `checkRepository`: a git agent step calls it before it touches a repository. */
  checkRepository?: (repo: string) => Promise<void>;
  /** Aborted on cancel, on the run's timeout and when another process takes the run. */
  signal: AbortSignal;
  /** Wall-clock time (ms since epoch) by which the step must end, from `limits.timeout_seconds`. */
  deadline?: number;
  /**
   * Durable notes of an interrupted earlier attempt of this same key (`recordProgress` wrote them):
   * how an executor with outside effects (git) reconciles on resume.
   */
  previous?: Record<string, unknown>;
  /** Persists notes for this execution before an outside effect (fenced: rejects when the run was lost). */
  recordProgress(notes: Record<string, unknown>): Promise<void>;
  /** Appends an event to the run's log (fenced, like `recordProgress`) and hands it to `onEvent`. */
  emit(event: WorkflowEvent): Promise<void>;
  /**
   * The run's recorded events of one type, oldest first: what earlier executions left for this one
   * (the Claude Code session of a `session_key`). @default none recorded
   */
  runEvents?(type: string): Promise<WorkflowEvent[]>;
  /** Runs a sub-workflow to its end under this run (used by `type: workflow`). */
  runChild(file: string, inputs: Record<string, unknown>): Promise<StepOutcome>;
  /**
   * The gate answer recorded for this step's execution, if any (taking it binds it); used by `human_gate`.
   * With `fallback` (the gate's timeout expired), records that as the answer unless one was recorded
   * first, and returns whichever is the gate's answer: the first recorded wins.
   */
  gateAnswer(fallback?: GateAnswer): Promise<GateAnswer | undefined>;
  /**
   * Guidance people sent the run (`workflow guide`) for this step's model turn `turn` (1 = its first
   * request), oldest first: taking it marks it delivered here and writes a `guidance-delivered` event.
   * A step that calls a model asks before each request. @default none (a program's own context)
   */
  takeGuidance?(turn: number): Promise<StepGuidance[]>;
}

/** Guidance a model turn reads. */
export interface StepGuidance {
  text: string;
  sentBy: string;
  /** ISO time. */
  sentAt: string;
}

/** Guidance as the user message the model reads. */
export function guidanceMessage(guidance: readonly StepGuidance[]): string {
  return guidance.map((one) => `Guidance from ${one.sentBy} at ${one.sentAt}: ${one.text}`).join('\n\n');
}

export interface GateAnswer {
  choice: string;
  text?: string;
  answeredBy: string;
  answeredAt: string;
}

/** What an executor reports. */
export interface StepOutcome {
  /**
   * `completed`: output stored, routes evaluated (unless `next` is set).
   * `failed`: the step failed (error set); groups apply their failure mode, otherwise the run fails.
   * `waiting`: a gate with no answer yet; the run parks (status `waiting`).
   * `terminated`: a terminate step; the run ends with `terminateStatus`.
   */
  status: 'completed' | 'failed' | 'waiting' | 'terminated';
  /** The step's output as templates see it (`<name>.output`). */
  output?: unknown;
  /** Dollars this execution spent (calls and agent runs). */
  costUsd: number;
  /** A step that picks its successor itself (a gate option's `route`). */
  next?: string;
  error?: { code: string; message: string };
  /** For `terminated`. */
  terminateStatus?: 'success' | 'failed';
  /** For `terminated`: the rendered `output_template`, replacing the workflow's `output:`. */
  finalOutput?: Record<string, unknown>;
}

export type StepExecutor = (context: StepContext) => Promise<StepOutcome>;
