// What a budget costs every budgeted attempt: `reserveSpend` then `settleReservation` (the locked read of
// each cap's spend, the hold, then the attempt's row and the hold's end), one attempt at a time, with 0,
// 10,000 and 100,000 attempts already recorded today, under four caps (daily, daily for the provider,
// monthly for a tag, daily for a gateway virtual key's `switchboard.key` tag). This tree's ledger
// (schema 15: each cap reads the spend totals, a few rows) beside the base commit's (`main` unless
// `--base`: each cap summed the period's call_attempts), its sources checked out in a temporary
// `git worktree` with this tree's node_modules linked, removed at the end. Blocks of attempts alternate
// between the two sides, so both see the same machine; each side's fill rate shows what the totals'
// trigger costs the inserts. SQLite files, and PostgreSQL (the tests' server, started here on 127.0.0.1
// with fsync off) when there is one. `--open N` holds N reservations (other calls in flight) on each side
// before it is measured, for what summing the held ones costs each check. No build:
//   node --experimental-strip-types --no-warnings bench/budget-reserve.ts [attempts per side] [--base REV] [--open N]
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import './source-hooks.ts';
import type * as LedgerSources from '../src/store/ledger.ts';

const root = join(import.meta.dirname, '..');
const args = process.argv.slice(2);
const baseFlag = args.indexOf('--base');
const baseRevision = baseFlag === -1 ? 'main' : (args.splice(baseFlag, 2)[1] ?? 'main');
const openFlag = args.indexOf('--open');
const openHolds = openFlag === -1 ? 0 : Number(args.splice(openFlag, 2)[1] ?? 0);
const measured = Number(args[0] ?? 200);
const sizes = [0, 10_000, 100_000];
const BLOCK = 20;
const DAY_MS = 86_400_000;

const folder = mkdtempSync(join(tmpdir(), 'switchboard-bench-budget-'));
const baseTree = join(folder, 'base');
console.log(`checking out ${baseRevision} in ${baseTree} …`);
execFileSync('git', ['-C', root, 'worktree', 'add', '--detach', baseTree, baseRevision], { stdio: 'ignore' });
symlinkSync(join(root, 'node_modules'), join(baseTree, 'node_modules'));

type LedgerModule = typeof LedgerSources;
type Ledger = ReturnType<LedgerModule['openLedger']>;
const sides: { name: string; module: LedgerModule }[] = [
  {
    name: `before (${baseRevision})`,
    module: (await import(join(baseTree, 'src/store/ledger.ts'))) as LedgerModule,
  },
  { name: 'after (this tree)', module: await import('../src/store/ledger.ts') },
];

const startPostgres = (await import('../test/postgres-server.ts')).default;
const stopPostgres = await startPostgres();
const { createTestDatabase, POSTGRES_SKIP } = await import('../test/helpers/postgres.ts');
const databases: { drop(): Promise<void> }[] = [];

const now = Date.now();
const today = now - (now % DAY_MS);
const month = Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), 1);
const caps = [
  { since: today, capUsd: 1e9 },
  { since: today, capUsd: 1e9, provider: 'anthropic' },
  { since: month, capUsd: 1e9, tag: 'team=red' },
  // A gateway virtual key's --daily-usd.
  { since: today, capUsd: 1e9, tag: 'switchboard.key=key_bench' },
];

function attempt(createdAt: number, index: number) {
  return {
    id: randomUUID(),
    callId: randomUUID(),
    attempt: 1,
    createdAt,
    provider: index % 3 === 0 ? 'openai' : 'anthropic',
    spec: 'anthropic:claude-haiku-4-5',
    modelRequested: 'claude-haiku-4-5',
    success: true,
    durationMs: 12,
    usage: { inputTokens: 20, outputTokens: 2, cacheReadTokens: 0, cacheWriteTokens: 0 },
    costUsd: 0.00003,
    promptHash: 'h',
    tags: {
      team: index % 2 === 0 ? 'red' : 'blue',
      env: 'prod',
      'switchboard.key': `key_${index % 4 === 0 ? 'bench' : 'other'}`,
    },
  };
}

/** `rows` attempts spread over today so far, written 500 callers at a time through the group commit. */
async function fill(ledger: Ledger, rows: number): Promise<void> {
  for (let first = 0; first < rows; first += 500) {
    const chunk = Array.from({ length: Math.min(500, rows - first) }, (_, offset) => first + offset);
    await Promise.all(
      chunk.map((index) =>
        ledger.recordCallAttempt(attempt(today + Math.floor(((now - today) * index) / rows), index)),
      ),
    );
  }
}

/** One budgeted attempt's ledger work: the hold under every cap, then its row in and the hold out. */
async function reserveAndSettle(ledger: Ledger, index: number): Promise<number> {
  const started = performance.now();
  const id = randomUUID();
  const at = Date.now();
  const outcome = await ledger.reserveSpend({
    id,
    provider: 'anthropic',
    tags: { team: 'red', env: 'prod', 'switchboard.key': 'key_bench' },
    createdAt: at,
    expiresAt: at + 60_000,
    amountUsd: 0.0001,
    caps,
  });
  if (!outcome.reserved) throw new Error('a cap of $1e9 refused the bench');
  await ledger.settleReservation(id, { ...attempt(at, index * 2), id });
  return performance.now() - started;
}

/** Reservations of calls still in flight, held until the ledger closes. */
async function holdOpen(ledger: Ledger, count: number): Promise<void> {
  for (let index = 0; index < count; index += 1) {
    const at = Date.now();
    const outcome = await ledger.reserveSpend({
      id: randomUUID(),
      provider: index % 3 === 0 ? 'openai' : 'anthropic',
      tags: { team: index % 2 === 0 ? 'red' : 'blue', env: 'prod', 'switchboard.key': 'key_bench' },
      createdAt: at,
      expiresAt: at + 3_600_000,
      amountUsd: 0.0001,
      caps,
    });
    if (!outcome.reserved) throw new Error('a cap of $1e9 refused an open reservation');
  }
}

const percentile = (values: number[], share: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * share))] ?? NaN;

async function measure(backend: string, open: () => Promise<Ledger>, rows: number): Promise<string> {
  const ledgers: Ledger[] = [];
  for (const _ of sides) {
    const ledger = await open();
    ledgers.push(ledger);
  }
  try {
    // Filled one after the other, then measured side by side.
    // What the totals cost the writes: each side's fill rate, attempts a second.
    const fillRates: number[] = [];
    for (const [index] of sides.entries()) {
      const started = performance.now();
      await fill(ledgers[index]!, rows);
      fillRates.push(rows / ((performance.now() - started) / 1000));
    }
    for (const ledger of ledgers) await holdOpen(ledger, openHolds);
    const times: number[][] = sides.map(() => []);
    // A first block each, not counted: statement caches and the connection pool warm up.
    for (const [index] of sides.entries())
      for (let i = 0; i < BLOCK; i++) await reserveAndSettle(ledgers[index]!, i);
    for (let done = 0; done < measured; done += BLOCK) {
      const order = (done / BLOCK) % 2 === 0 ? [0, 1] : [1, 0];
      for (const index of order) {
        for (let i = 0; i < BLOCK; i++) times[index]!.push(await reserveAndSettle(ledgers[index]!, done + i));
      }
    }
    const [before, after] = times.map((side) => ({
      p50: percentile(side, 0.5),
      p95: percentile(side, 0.95),
    }));
    return [
      backend.padEnd(11),
      rows.toLocaleString('en-US').padStart(8),
      before!.p50.toFixed(3).padStart(9),
      before!.p95.toFixed(3).padStart(8),
      after!.p50.toFixed(3).padStart(9),
      after!.p95.toFixed(3).padStart(8),
      `×${(before!.p50 / after!.p50).toFixed(2)}`.padStart(8),
      ...(rows === 0
        ? []
        : fillRates.map((rate) => `${Math.round(rate).toLocaleString('en-US')}/s`.padStart(10))),
    ].join(' ');
  } finally {
    for (const ledger of ledgers) await ledger.close();
  }
}

try {
  const backends: { name: string; open: (side: number) => Promise<Ledger> }[] = [
    {
      name: 'SQLite',
      open: async (side) =>
        sides[side]!.module.openLedger({ stateDir: mkdtempSync(join(folder, 'sqlite-')) }),
    },
  ];
  if (POSTGRES_SKIP === undefined) {
    backends.push({
      name: 'PostgreSQL',
      open: async (side) => {
        const database = await createTestDatabase();
        databases.push(database);
        const ledger = sides[side]!.module.openLedger({ url: database.url });
        await ledger.ready();
        return ledger;
      },
    });
  } else console.log(`PostgreSQL skipped: ${POSTGRES_SKIP}`);
  console.log(
    `reserve + settle, ms per budgeted attempt, ${measured} a side in blocks of ${BLOCK} alternating; ` +
      `caps: daily, daily anthropic, monthly team=red, daily switchboard.key=key_bench; ` +
      `${openHolds} other reservations open; load ${loadavg()[0]!.toFixed(1)}`,
  );
  console.log(
    `${'backend'.padEnd(11)} ${'today'.padStart(8)} ${'before p50'.padStart(9)} ${'p95'.padStart(8)} ${'after p50'.padStart(9)} ${'p95'.padStart(8)} ${'p50 ×'.padStart(8)} ${'fill before'.padStart(10)} ${'after'.padStart(10)}`,
  );
  for (const backend of backends) {
    for (const rows of sizes) {
      let side = 0;
      console.log(await measure(backend.name, () => backend.open(side++), rows));
    }
  }
  console.log(`load at the end ${loadavg()[0]!.toFixed(1)}`);
} finally {
  for (const database of databases) await database.drop().catch(() => undefined);
  await stopPostgres?.();
  try {
    execFileSync('git', ['-C', root, 'worktree', 'remove', '--force', baseTree], { stdio: 'ignore' });
  } catch {
    // Never added: nothing to remove.
  }
  rmSync(folder, { recursive: true, force: true });
}
