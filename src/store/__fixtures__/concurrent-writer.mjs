// Child process for the multi-process ledger test. It goes through the real `openLedger` and
// `recordRouteDecision` in `../ledger.ts`, run by Node's type stripping, so the test exercises the code
// that ships rather than a copy of its SQL.
//
// Usage (forked with IPC): node --experimental-strip-types concurrent-writer.mjs <db> <writer> <rows>
// Sends `ready` once loaded, waits for `go` so every writer starts at the same moment, then exits 0.
import process from 'node:process';
import './typescript-sources.mjs';

const [file, writer, rowCount] = process.argv.slice(2);
const { openLedger } = await import('../ledger.ts');

await new Promise((resolveStart) => {
  process.once('message', resolveStart);
  process.send?.('ready');
});

// Opening happens after the barrier too, so the writers also race on creating the schema.
const ledger = openLedger({ path: file });
for (let index = 0; index < Number(rowCount); index += 1) {
  await ledger.recordRouteDecision(
    {
      id: `writer-${writer}-${index}`,
      skill: 'summarise',
      confidence: 0.9,
      reasoning: 'concurrency test',
      method: 'rules',
      candidates: [{ skill: 'summarise', score: 0.9 }],
      costUsd: 0,
      durationMs: 1,
      timings: { rules: 1 },
      warnings: [],
    },
    { requestText: `request ${writer}/${index}`, mode: 'rules-only', tags: { writer: String(writer) } },
  );
}
await ledger.close();
process.disconnect?.();
