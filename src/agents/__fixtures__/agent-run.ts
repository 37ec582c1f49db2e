import type { AgentRunRecord } from '../run-store.js';
import type { AgentTask } from '../task.js';

/** The task every fixture run carries (only the store reads it, so its fields are the few it keeps). */
export const FIXTURE_TASK = { id: 'fix-bug', title: 'Fix the bug', prompt: 'fix it' } as unknown as AgentTask;

/** A queued agent run record for the store tests, on branch `agent/<id>`; `overrides` set the rest. */
export function agentRunRecord(id: string, overrides: Partial<AgentRunRecord> = {}): AgentRunRecord {
  return {
    id,
    taskId: 'fix-bug',
    title: 'Fix the bug',
    repo: '/repos/app',
    baseBranch: 'main',
    baseCommit: 'abc123',
    branch: `agent/${id}`,
    worktree: `/tmp/wt/${id}`,
    phase: 'queued',
    status: 'running',
    attempt: 0,
    costUsd: 0,
    turns: 0,
    task: FIXTURE_TASK,
    options: { merge: 'branch', retryDelayMs: 0 },
    createdAt: '',
    updatedAt: '',
    ...overrides,
  };
}
