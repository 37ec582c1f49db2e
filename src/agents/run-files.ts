import { join } from 'node:path';
import type { ErrorCode } from '../core/errors.js';
import type { AgentRunResult } from './runner.js';
import type { AgentPhase, AgentRunRecord } from './run-store.js';

// Where a run's files live and how a recorded run reads as a result: what listing, showing and the
// public API need without loading the runner (which brings git, the merge queue and Claude Code).

/** Phases in which a run has ended. */
export const FINAL_PHASES: ReadonlySet<AgentPhase> = new Set(['done', 'failed', 'conflict']);

/** The folder holding a run's transcripts and verify logs. */
export function runDirectory(stateDir: string, runId: string): string {
  return join(stateDir, 'agents', 'runs', runId);
}

/** Where a run's worktree is made under a state folder. */
export function worktreePath(stateDir: string, runId: string): string {
  return join(stateDir, 'agents', 'worktrees', runId);
}

export function transcriptPath(stateDir: string, runId: string, attempt: number): string {
  return join(runDirectory(stateDir, runId), `attempt-${attempt}.jsonl`);
}

/** The result of a run as read from the ledger. */
export function toResult(run: AgentRunRecord): AgentRunResult {
  const result: AgentRunResult = {
    id: run.id,
    taskId: run.taskId,
    ok: run.status === 'succeeded',
    status: run.status,
    phase: run.phase,
    attempts: run.attempt,
    costUsd: run.costUsd,
    turns: run.turns,
    durationMs: Date.parse(run.endedAt ?? run.updatedAt) - Date.parse(run.createdAt),
    branch: run.branch,
    worktree: run.worktree,
    baseBranch: run.baseBranch,
  };
  if (run.status !== 'succeeded' && run.errorCode !== undefined)
    result.errorCode = run.errorCode as ErrorCode;
  if (run.status !== 'succeeded' && run.error !== undefined) result.error = run.error;
  if (run.commitSha !== undefined) result.commit = run.commitSha;
  if (run.mergedCommit !== undefined) result.mergedCommit = run.mergedCommit;
  if (run.sessionId !== undefined) result.sessionId = run.sessionId;
  if (run.detail !== undefined) result.detail = run.detail;
  return result;
}
