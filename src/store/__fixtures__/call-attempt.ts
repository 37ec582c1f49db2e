import type { CallAttemptRecord } from '../call-records.js';

/** A successful call attempt of `openai:gpt-4.1-mini` now, costing `costUsd`, for the ledger tests. */
export function callAttempt(
  id: string,
  costUsd: number,
  overrides: Partial<CallAttemptRecord> = {},
): CallAttemptRecord {
  return {
    id,
    callId: `call-${id}`,
    attempt: 1,
    createdAt: Date.now(),
    provider: 'openai',
    spec: 'openai:gpt-4.1-mini',
    modelRequested: 'gpt-4.1-mini',
    success: true,
    durationMs: 1,
    costUsd,
    promptHash: 'h',
    ...overrides,
  };
}
