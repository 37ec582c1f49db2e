import type { Ledger } from '../store/ledger.js';
import type { NewWorkflowEvent, WorkflowRunRow, WorkflowStore } from '../store/workflow-records.js';
import type { WorkflowEngineOptions } from './api-types.js';
import type { StepType, WorkflowDefinition, WorkflowLimits } from './model.js';
import type { RunLock } from './run-lock.js';
import type { resolveStepSpec } from './providers.js';
import type { RunState } from './scope.js';
import type { StepExecutor } from './step-executor.js';

/** Everything one process needs while it advances one run (it holds the run's lock). */
export interface RunExecution {
  workflow: WorkflowDefinition;
  run: WorkflowRunRow;
  store: WorkflowStore;
  ledger: Ledger;
  stateDir: string;
  lock: RunLock;
  state: RunState;
  /** The file's limits with the run's overrides applied. */
  limits: WorkflowLimits;
  options: WorkflowEngineOptions;
  executors: Partial<Record<StepType, StepExecutor>>;
  /** Aborted on cancel, on a lost lock, at the run's timeout and by the caller's abortSignal. */
  signal: AbortSignal;
  /** Epoch ms by which the run must end (`limits.timeout_seconds` from when this process took it). */
  deadline?: number;
  /** Provider resolution, loaded when the workflow has steps that call a model. */
  resolveStepSpec?: typeof resolveStepSpec;
  /** Who runs this execution (`pid N on host`): a member job's worker, recorded on the member's row. */
  runner?: string;
  /** Sub-workflow nesting (0 at the top). */
  depth: number;
  now: () => number;
  /** Appends an event (fenced) and hands new events to `onEvent`. */
  emit(event: NewWorkflowEvent): Promise<void>;
  /** Hands events appended since the last call to `onEvent`. */
  deliverEvents(): Promise<void>;
  /** A named point of a step execution (`step-start`, `step-effect`, `step-complete`): the tests' kill points. */
  boundary(name: string, key: string): void;
}
