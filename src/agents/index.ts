/**
 * `switchboard agent` as a library: run Claude Code on a task in its own git worktree, verify the
 * change, commit and merge it; list, resume, cancel and clean runs.
 */
export { loadTask, parseTask, DEFAULT_AGENT_TOOLS, DEFAULT_LIMITS, MERGE_MODES } from './task.js';
export type { AgentTask, AgentLimits, MergeMode, TaskFile } from './task.js';
export { runAgentTask, resumeAgentRun, toResult, transcriptPath, FINAL_PHASES } from './runner.js';
export type {
  AgentConnection,
  AgentFunction,
  AgentRunProgress,
  AgentRunResult,
  AgentRunnerOptions,
  ResumeAgentRunOptions,
  RunAgentTaskOptions,
} from './runner.js';
export { runAgentTasks } from './run-all.js';
export type { AgentTaskOutcome, RunAgentTasksOptions } from './run-all.js';
export { agentRunFiles, cancelAgentRun, cleanAgentRuns, listAgentRuns, showAgentRun } from './lifecycle.js';
export type { AgentRunView, CancelResult, CleanOptions, CleanResult, LifecycleOptions } from './lifecycle.js';
export { AGENT_PHASES, AGENT_RUN_STATUSES } from './run-store.js';
export type { AgentPhase, AgentRunEvent, AgentRunRecord, AgentRunStatus } from './run-store.js';
export { DEFAULT_CONTEXT_TEMPLATE, CONTEXT_JSON_FILE, CONTEXT_MARKDOWN_FILE } from './context.js';
export { MergeQueue } from './merge.js';
