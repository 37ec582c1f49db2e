import type { CallOptions } from '../invoke/call.js';
import type { Ledger } from '../store/ledger.js';
import type { ProviderRegistry } from '../providers/registry.js';
import type { StepExecutor, WorkflowEvent } from './step-executor.js';
import type { StepType, WorkflowDefinition, WorkflowLimits } from './model.js';
import type { PutQuestion } from './questions.js';

/** Status of a workflow run. `waiting`: parked at a gate with no answer. */
export const WORKFLOW_STATUSES = ['running', 'waiting', 'completed', 'failed', 'cancelled'] as const;
export type WorkflowStatus = (typeof WORKFLOW_STATUSES)[number];

/** Settings shared by `runWorkflow`, `resumeWorkflow` and `answerGate`. */
export interface WorkflowEngineOptions {
  /** Folder of the ledger, worktrees and transcripts. @default `.switchboard` in the current directory */
  stateDir?: string;
  /** An open ledger to use (the engine opens one under `stateDir` otherwise). */
  ledger?: Ledger;
  providers?: ProviderRegistry;
  /** Conductor provider name → Switchboard spec or chain (`copilot` → `claude:sonnet`); config `workflows.provider_map`. */
  providerMap?: Record<string, string>;
  /** Roles of switchboard.yaml (`drafter: claude:sonnet,anthropic:claude-sonnet-4-5`): a step's `model:` may name one. */
  roles?: Record<string, string>;
  /** `--provider`: a spec or chain every LLM step uses unless the map names its provider. */
  provider?: string;
  /** Take each gate's first option instead of parking. @default false */
  skipGates?: boolean;
  /** Let steps use the workflow's MCP servers (`--allow-mcp`). @default false */
  allowMcp?: boolean;
  /**
   * Hears every workflow file a run loads (its own, each sub-workflow's, a resumed or continued run's)
   * before any step of it runs; throwing refuses it. `serve`'s `/mcp` refuses command-running
   * workflows with it.
   */
  checkWorkflow?: (workflow: WorkflowDefinition) => void;
  /**
   * Hears the repository (a folder, or a URL) a git agent step is about to work in and merge into,
   * before it makes a worktree; rejecting refuses it. `serve`'s `/mcp` keeps such steps under its roots.
   */
  checkRepository?: (repo: string) => Promise<void>;
  /**
   * A run owned by a process on another host is taken over once that owner's heartbeat is this old
   * (milliseconds); on this host a dead owner's pid frees the run at once. @default 60_000
   */
  staleAfterMs?: number;
  /**
   * When this process last saw its database come back after an outage (epoch ms): another host's owner
   * is taken for dead only after `staleAfterMs` of silence while the database answered. A worker passes
   * what its database watch saw.
   */
  databaseBackAt?: () => number | undefined;
  /**
   * What every step's calls start from: `call:` and `budgets:` of switchboard.yaml (retries, cooldown,
   * budget rules and prices, the per-call cost cap). A step's own `retry` goes over it, and the run's
   * `budget_usd` is added to the budget rules.
   */
  callDefaults?: Omit<CallOptions, 'providers' | 'ledger'>;
  /** Hears every event as it is appended to the run's log. */
  onEvent?: (event: WorkflowEventRecord) => void;
  abortSignal?: AbortSignal;
  /**
   * Where `for_each` items and `parallel` members go as jobs of their own (set by `switchboard worker`):
   * the engine then waits for their rows instead of running them itself. Unset, it runs them in process.
   */
  memberJobs?: WorkflowMemberJobs;
  /** Test seams. */
  _internal?: {
    executors?: Partial<Record<StepType, StepExecutor>>;
    now?: () => number;
    /** Called at named boundaries (`step-start`, `step-effect`, `step-complete`) so tests can kill there. */
    onBoundary?: (boundary: string, key: string) => void;
    /**
     * Awaited once an execution's row is written and before its executor starts, with the execution's
     * signal (a group member's includes its group's fail_fast stop), so tests can hold a member there.
     */
    beforeExecutor?: (key: string, signal: AbortSignal) => Promise<void>;
    /** Loads a workflow file (the format's `loadWorkflow` otherwise). */
    load?: (file: string) => WorkflowDefinition | Promise<WorkflowDefinition>;
    /** How often the owner stamps its heartbeat and looks for a cancel (ms). @default 1000 */
    pollMs?: number;
  };
}

export interface RunWorkflowOptions extends WorkflowEngineOptions {
  /** The workflow file (Conductor format). */
  file: string;
  /** `-i name=value` pairs (strings are coerced to the declared input types) or typed values. */
  inputs?: Record<string, unknown>;
  /** Run id to use instead of a generated one. */
  runId?: string;
  /** Parse, validate and render the entry step without running anything. */
  dryRun?: boolean;
}

export interface ResumeWorkflowOptions extends WorkflowEngineOptions {
  runId: string;
  /** Resume under an edited workflow file (its hash differs from the one the run started with). */
  migrate?: boolean;
  /** Limits raised (or lowered) for this run from now on, over the file's; kept for later resumes. */
  limits?: WorkflowLimitOverrides;
  /**
   * Leave a run that failed by the time this call holds it as it is, instead of resuming it: for a
   * gate answer or a queued job, which continue a run that another process may have ended meanwhile.
   */
  unlessEnded?: boolean;
  /** Hears that the run had ended by the time this call held it, so it was left as it was. */
  onLeftEnded?: () => void;
}

/** `resume --max-iterations / --timeout / --budget`. */
export type WorkflowLimitOverrides = Partial<
  Pick<WorkflowLimits, 'maxIterations' | 'timeoutSeconds' | 'budgetUsd'>
>;

export interface AnswerGateOptions extends WorkflowEngineOptions {
  runId: string;
  /** The gate's step name; @default the gate the run is parked at. */
  step?: string;
  /** An option's `value`; for a `questions` step `answer` (with `answers`), `skip_all` or `abort`. */
  choice: string;
  /** Text for the option's `prompt_for` field. */
  text?: string;
  /** A `questions` step's answers by question id (`choice` is then `answer`). */
  answers?: Record<string, string>;
  /** Who answered. @default the OS user name */
  answeredBy?: string;
  /** Continue the run in this process after recording. @default true */
  continue?: boolean;
}

export interface GuideWorkflowOptions extends WorkflowEngineOptions {
  runId: string;
  /** The words for the model, as a user message at its next turn. */
  text: string;
  /** Only this step's model turns take it. @default the run's next model turn, whichever step takes it */
  step?: string;
  /** Who sent it, as the model and the ledger see it. @default the OS user name */
  sentBy?: string;
}

/** Guidance as recorded, and where it landed once a model turn took it. */
export interface WorkflowGuidance {
  id: number;
  runId: string;
  step?: string;
  text: string;
  sentBy: string;
  /** ISO time. */
  sentAt: string;
  /** The model turn that read it: the step, its execution key and visit, the turn (1 = the first request). */
  delivered?: { step: string; key: string; visit: number; turn: number; at: string };
}

/** One row of a run's step table. */
export interface StepView {
  key: string;
  step: string;
  type: StepType | 'parallel' | 'for_each';
  status: 'running' | 'completed' | 'failed' | 'waiting' | 'interrupted';
  attempts: number;
  durationMs?: number;
  costUsd: number;
  error?: string;
  /** Tokens of the execution's model turns (its `model-turn` events), when it had any. */
  tokens?: StepTokens;
  /** The execution's output as stored (a parked gate's: what it shows). */
  output?: unknown;
  /** The execution's latest event: its type and when (ISO time). */
  lastEvent?: { type: string; at: string };
}

/** Token counts summed over model turns. */
export interface StepTokens {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

export interface PendingGate {
  step: string;
  prompt: string;
  options: Array<{ label: string; value: string; promptFor?: string }>;
  /** A gate with a `timeout` that its process waits at: when it takes its default (ISO time). */
  timesOutAt?: string;
  /** A `questions` step's questions (its `options` are empty): answer them all at once. */
  questions?: PutQuestion[];
}

/** What `run`, `resume`, `gate` and `status` report (`--json` prints exactly this). */
export interface WorkflowRunResult {
  id: string;
  workflow: string;
  status: WorkflowStatus;
  /** The current (or last) step. */
  step?: string;
  /** The workflow's `output:` once it has ended, or a terminate step's `output_template`. */
  output?: Record<string, unknown>;
  costUsd: number;
  steps: StepView[];
  gate?: PendingGate;
  errorCode?: string;
  error?: string;
  /**
   * The `type: terminate` step that ended the run (completed, or failed by its `status: failed`): an end
   * the workflow chose, which a resume reports again as it is.
   */
  terminatedBy?: string;
  /** Keys of the file Switchboard does not act on. */
  warnings?: string[];
  /** The run's latest events, oldest first (at most `RECENT_EVENTS`). */
  events?: WorkflowEventRecord[];
  /**
   * Set by `answerGate` when another process advancing the run (waiting at the gate with a timeout)
   * took the answer: the run as that process left it, not advanced by this call.
   */
  takenByOtherProcess?: true;
}

/** A run recorded but not advanced: what a queue's worker will advance. */
export interface RecordedWorkflowRun {
  runId: string;
  /** False when the workflow's `run_key` named a run that was already there (that run is returned). */
  created: boolean;
  status: WorkflowRunResult['status'];
}

/** An event as stored in the run's append-only log. */
export interface WorkflowEventRecord extends WorkflowEvent {
  runId: string;
  seq: number;
  at: string;
}

/** One group member for a job to run: which run, group execution and member. */
export interface WorkflowMemberJob {
  runId: string;
  /** The group's name in the file. */
  group: string;
  /** The group execution's step key (`<run>/<group>/<visit>`). */
  groupKey: string;
  visit: number;
  /** The member's name: a parallel group's step, or the for_each item's key (or index). */
  member: string;
}

/** A job queue for group members (pg-boss on workers). */
export interface WorkflowMemberJobs {
  /** Sends the job for one member under the id `claim`, which the member's row already carries. */
  send(job: WorkflowMemberJob, claim: string): Promise<void>;
  /** The job's state (`created`, `retry`, `active`, `completed`, `cancelled`, `failed`), undefined when there is none. */
  state(claim: string): Promise<string | undefined>;
  /** How often the engine looks at its members' rows (ms). @default 250 */
  pollMs?: number;
}
