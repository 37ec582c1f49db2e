/**
 * `switchboard agent` as a library: run Claude Code on a task in its own git worktree, verify the
 * change, commit and merge it; list, resume, cancel and clean runs.
 */
export { loadTask, parseTask, DEFAULT_AGENT_TOOLS, DEFAULT_LIMITS, MERGE_MODES } from './task.js';
export type { AgentTask, AgentLimits, MergeMode, TaskFile } from './task.js';
export type { McpServerEntry, McpServerType } from './mcp-servers.js';
import type { AgentRunResult, ResumeAgentRunOptions, RunAgentTaskOptions } from './runner.js';
import type { AgentTaskOutcome, RunAgentTasksOptions } from './run-all.js';

export { toResult, transcriptPath, FINAL_PHASES } from './run-files.js';
export type {
  AgentConnection,
  AgentFunction,
  AgentRunProgress,
  AgentRunResult,
  AgentRunnerOptions,
  ResumeAgentRunOptions,
  RunAgentTaskOptions,
} from './runner.js';
export type { AgentTaskOutcome, RunAgentTasksOptions } from './run-all.js';
export { agentRunFiles, cancelAgentRun, cleanAgentRuns, listAgentRuns, showAgentRun } from './lifecycle.js';
export type { AgentRunView, CancelResult, CleanOptions, CleanResult, LifecycleOptions } from './lifecycle.js';
export { AGENT_PHASES, AGENT_RUN_STATUSES } from './run-store.js';
export type { AgentPhase, AgentRunEvent, AgentRunRecord, AgentRunStatus } from './run-store.js';
export { DEFAULT_CONTEXT_TEMPLATE, CONTEXT_JSON_FILE, CONTEXT_MARKDOWN_FILE } from './context.js';
export { MergeQueue } from './merge.js';

// The runner (git, the merge queue, Claude Code) is imported by the calls that run agents: listing,
// showing and cancelling runs, and importing the library, do without it.

/**
 * Runs one task: a worktree on a new branch, Claude Code in it, the verify command, a commit and a
 * merge into the base branch. Every step is recorded before it happens, so an interrupted run can be
 * resumed (`resumeAgentRun`). Bad input throws before anything is recorded; once the run exists,
 * failures are returned in the result (`ok: false`, `errorCode`).
 */
export async function runAgentTask(options: RunAgentTaskOptions): Promise<AgentRunResult> {
  return (await import('./runner.js')).runAgentTask(options);
}

/**
 * Picks a run up where it stopped: after a crash of its runner (even `kill -9`), or after a merge
 * conflict (the merge is tried again). Refuses a run whose runner is still alive, or that has ended.
 */
export async function resumeAgentRun(options: ResumeAgentRunOptions): Promise<AgentRunResult> {
  return (await import('./runner.js')).resumeAgentRun(options);
}

/**
 * Runs several tasks, at most `parallel` at a time. Merges into the same branch go through one queue,
 * one after the other, each onto the branch as the previous merge left it, so no merge is lost.
 */
export async function runAgentTasks(options: RunAgentTasksOptions): Promise<AgentTaskOutcome[]> {
  return (await import('./run-all.js')).runAgentTasks(options);
}
