// Child process for the ledger test: records route decisions and cache entries through the real
// `openLedger`, half of them one after another and half at once, records one more without waiting, and
// kills itself with SIGKILL right after, as a crash would. Usage:
//   node --experimental-strip-types kill-after-queue.mjs <db> <decisions>
import process from 'node:process';
import './typescript-sources.mjs';

const [file, count] = process.argv.slice(2);
const { openLedger } = await import('../ledger.ts');
const ledger = openLedger({ path: file });
const half = Number(count) / 2;
async function record(index) {
  const decision = {
    id: `decision-${index}`,
    skill: index % 2 === 0 ? 'fix-bug' : 'none',
    confidence: 0.5,
    reasoning: 'model: fix-bug p=0.500, margin 0.100 over none',
    method: 'local',
    candidates: [{ skill: 'fix-bug', score: 0.5 }],
    costUsd: 0,
    durationMs: 1,
    timings: { local: 1 },
    warnings: [],
  };
  await ledger.recordRouteDecision(decision, { requestText: `text ${index}`, mode: 'local' });
  await ledger.cacheDecision(`key-${index}`, decision, {
    storedAt: Date.now(),
    ttlMs: 60_000,
    maxEntries: 100,
  });
}
for (let index = 0; index < half; index++) await record(index);
await Promise.all(Array.from({ length: Number(count) - half }, (_, offset) => record(half + offset)));
void record(Number(count));
process.kill(process.pid, 'SIGKILL');
