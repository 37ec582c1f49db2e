// Child process for the ledger test: records call attempts and route decisions through the real `openLedger` and exits
// without closing the ledger, before the batch timer fires. The rows must still be on disk.
// Usage: node --experimental-strip-types exit-without-close.mjs <db> <rows>
import process from 'node:process';
import './typescript-sources.mjs';

const [file, rowCount] = process.argv.slice(2);
const { openLedger } = await import('../ledger.ts');
const ledger = openLedger({ path: file });
for (let index = 0; index < Number(rowCount); index++) {
  await ledger.recordCallAttempt({
    id: `attempt-${index}`,
    callId: `call-${index}`,
    attempt: 1,
    createdAt: Date.now(),
    provider: 'anthropic',
    spec: 'anthropic:claude-sonnet-4-6',
    modelRequested: 'claude-sonnet-4-6',
    success: true,
    durationMs: 1,
    costUsd: 0.001,
    promptHash: 'hash',
  });
}
for (let index = 0; index < Number(rowCount); index++) {
  await ledger.recordRouteDecision(
    {
      id: `decision-${index}`,
      skill: 'fix-bug',
      confidence: 0.9,
      reasoning: 'matched /fix/ (rule)',
      method: 'rules',
      candidates: [
        { skill: 'fix-bug', score: 0.9 },
        { skill: 'none', score: 0.12345 },
      ],
      costUsd: 0,
      durationMs: 1.5,
      timings: { rules: 0.0123 },
      warnings: [],
    },
    { requestText: `text ${index}`, mode: 'local', tags: { caller: 'ci' } },
  );
}
// One more row, then a flush whose write has not started yet (it waits a turn) and at once a synchronous
// exit: the exit handler must write what that flush took.
void ledger.recordRouteDecision(
  {
    id: 'decision-late',
    skill: 'none',
    confidence: 0,
    reasoning: 'no rule matched',
    method: 'default',
    candidates: [],
    costUsd: 0,
    durationMs: 0.1,
    timings: {},
    warnings: [],
  },
  { requestText: 'late', mode: 'local' },
);
void ledger.flush();
process.exit(0);
