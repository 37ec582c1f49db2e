// The ledger's size and read speed for route decisions, side by side in one run:
//   1. bytes per route decision: the decisions a real router makes for N new texts (local mode,
//      examples/skills, decision cache on, as `serve` runs), in this tree's ledger beside the same
//      decisions written as the rows of schema 12 (the layout before issue 27) into a file of their own;
//      whole files after an orderly close, and the decision table with its indexes alone (SQLite dbstat);
//   2. `switchboard stats` (the built CLI, a fresh process each run) over a ledger of 1,000,000 decisions,
//      all time and --since 24h, beside `node -e 0`; and, in process, the --since count as it was read
//      before (listing the rows and counting them) beside this tree's count.
//   npm run build && node --experimental-strip-types --no-warnings bench/ledger-size.ts [decisions] [big]
// Everything lives in a temporary folder removed at the end.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { assertFreshBuild } from './fresh-build.ts';
import './source-hooks.ts';

const root = join(import.meta.dirname, '..');
const cli = join(root, 'dist/cli/main.js');
assertFreshBuild(cli, 'this bench runs the built CLI');
const { createRouter } = await import('../src/route/router.js');
const { openLedger, hashText } = await import('../src/store/ledger.js');
const { MIGRATIONS, LEDGER_APPLICATION_ID } = await import('../src/store/migrations.js');

const decisions = Number(process.argv[2] ?? 50_000);
const big = Number(process.argv[3] ?? 1_000_000);
const base = mkdtempSync(join(tmpdir(), 'switchboard-bench-ledger-size-'));
const words =
  'review the pull request fix a bug in login release docs refactor module speed up query deploy'.split(' ');
const textOf = (index: number) =>
  Array.from({ length: 8 }, (_, i) => words[(index * 7 + i * 13 + (index >> i)) % words.length]).join(' ') +
  ` item ${index}`;

try {
  console.log(`load ${loadavg()[0]!.toFixed(2)}; ${decisions} decisions for the size, ${big} for stats`);
  // 1. Bytes per decision.
  const stateDir = join(base, 'now');
  const router = await createRouter({ skills: join(root, 'examples/skills'), mode: 'local', stateDir });
  const oldFile = join(base, 'schema-12.db');
  const old = new Database(oldFile);
  old.pragma('journal_mode = WAL');
  for (const step of MIGRATIONS.filter(({ version }) => version <= 12)) old.exec(step.sql);
  old.pragma(`application_id = ${LEDGER_APPLICATION_ID}`);
  const insertOld = old.prepare(
    'INSERT INTO route_decisions (id, created_at, request_hash, request_text, skill, confidence, method, reasoning, ' +
      'candidates, duration_ms, cost_usd, timings, mode, skills_hash, tags) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const putOld = old.prepare(
    'INSERT INTO route_cache (key, decision, stored_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET decision = excluded.decision, stored_at = excluded.stored_at',
  );
  const trimOld = old.prepare(
    'DELETE FROM route_cache WHERE key IN (SELECT key FROM route_cache ORDER BY stored_at DESC LIMIT -1 OFFSET 10000)',
  );
  const oldBatch = old.transaction((rows: unknown[][]) => {
    for (const row of rows) {
      insertOld.run(...row.slice(0, 15));
      putOld.run(...row.slice(15));
      trimOld.run();
    }
  });
  let pending: unknown[][] = [];
  for (let index = 0; index < decisions; index++) {
    const text = textOf(index);
    const decision = await router.route(text);
    const now = Date.now();
    pending.push([
      decision.id,
      now,
      hashText(text.toLowerCase()),
      null,
      decision.skill,
      decision.confidence,
      decision.method,
      decision.reasoning,
      JSON.stringify(decision.candidates),
      decision.durationMs,
      decision.costUsd,
      JSON.stringify(decision.timings),
      'local',
      router.skillsHash,
      '{}',
      hashText(`key ${text}`),
      JSON.stringify(decision),
      now,
    ]);
    if (pending.length === 500) {
      oldBatch(pending);
      pending = [];
    }
  }
  oldBatch(pending);
  await router.close();
  old.close();
  const tableBytes = (file: string) => {
    const database = new Database(file, { readonly: true });
    const bytes = (names: string[]) =>
      Number(
        database
          .prepare(
            `SELECT sum(pgsize) AS bytes FROM dbstat WHERE name IN (${names.map(() => '?').join(', ')})`,
          )
          .get(...names) as { bytes: number },
      );
    const row = database
      .prepare(
        "SELECT sum(pgsize) AS bytes FROM dbstat WHERE name = 'route_decisions' OR name LIKE 'route_decisions_%' OR name LIKE 'sqlite_autoindex_route_decisions%' OR name = 'route_names' OR name LIKE 'sqlite_autoindex_route_names%'",
      )
      .get() as { bytes: number };
    void bytes;
    const count = (database.prepare('SELECT count(*) AS n FROM route_decisions').get() as { n: number }).n;
    database.close();
    return { decisionBytes: row.bytes, count };
  };
  const nowFile = join(stateDir, 'ledger.db');
  const before = { file: statSync(oldFile).size, ...tableBytes(oldFile) };
  const after = { file: statSync(nowFile).size, ...tableBytes(nowFile) };
  console.log(
    'ledger for route decisions            file bytes/decision   decision table+indexes bytes/decision   rows',
  );
  for (const [name, row] of [
    ['schema 12 (before), same decisions', before],
    ['this tree (compact rows, write-behind)', after],
  ] as const) {
    console.log(
      `${name.padEnd(40)}${(row.file / decisions).toFixed(0).padStart(18)}${(row.decisionBytes / row.count).toFixed(0).padStart(40)}${String(row.count).padStart(9)}`,
    );
  }
  const perDecision = after.decisionBytes / after.count;
  console.log(
    `verdict: ${perDecision.toFixed(0)} B per decision ${perDecision <= 400 ? 'meets' : 'misses'} ≤ 400 B (×${(before.decisionBytes / before.count / perDecision).toFixed(2)} smaller than before)`,
  );

  // 2. stats over a big ledger.
  const bigDir = join(base, 'big');
  const ledger = openLedger({ stateDir: bigDir });
  const skills = ['fix-bug', 'review-code', 'write-docs', 'refactor', 'none'];
  const start = Date.now() - 30 * 86_400_000;
  const filled = performance.now();
  // 500 callers at a time: their decisions share group commits, as a busy serve's do.
  const recording: Promise<void>[] = [];
  for (let index = 0; index < big; index++) {
    if (recording.length === 500) await Promise.all(recording.splice(0));
    const skill = skills[index % skills.length]!;
    const recorded = ledger.recordRouteDecision(
      {
        id: `d-${index}`,
        skill,
        confidence: 0.5 + (index % 50) / 100,
        reasoning: `model: ${skill} p=0.${index % 1000}, margin 0.1 over none`,
        method: index % 3 === 0 ? 'rules' : 'local',
        candidates: [
          { skill, score: 0.8 },
          { skill: 'none', score: 0.1 },
        ],
        costUsd: 0,
        durationMs: 0.3,
        timings: { cache: 0.01, rules: 0.02, local: 0.2 },
        warnings: [],
      },
      {
        requestText: `text ${index}`,
        mode: 'local',
        createdAt: new Date(start + (index * 30 * 86_400_000) / big),
      },
    );
    recording.push(recorded);
  }
  await Promise.all(recording);
  await ledger.close();
  console.log(
    `filled ${big} decisions through the group commit in ${((performance.now() - filled) / 1000).toFixed(1)} s (${(((performance.now() - filled) * 1000) / big).toFixed(1)} µs each); ${(statSync(join(bigDir, 'ledger.db')).size / big).toFixed(0)} B per decision`,
  );
  const env = { ...process.env, SWITCHBOARD_STATE_DIR: bigDir };
  const time = (args: string[]) => {
    const began = performance.now();
    execFileSync(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'inherit'] });
    return performance.now() - began;
  };
  const rows: Record<string, number[]> = {
    'node -e 0': [],
    'switchboard stats': [],
    'switchboard stats --since 24h': [],
  };
  for (let round = 0; round < 5; round++) {
    rows['node -e 0']!.push(time(['-e', '0']));
    rows['switchboard stats']!.push(time([cli, 'stats', '--json']));
    rows['switchboard stats --since 24h']!.push(time([cli, 'stats', '--since', '24h', '--json']));
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  console.log(`stats over ${big} decisions (5 interleaved runs, a fresh process each)   median ms   max ms`);
  for (const [name, values] of Object.entries(rows)) {
    console.log(
      `${name.padEnd(68)}${median(values).toFixed(0).padStart(9)}${Math.max(...values)
        .toFixed(0)
        .padStart(9)}`,
    );
  }
  const worst = Math.max(median(rows['switchboard stats']!), median(rows['switchboard stats --since 24h']!));
  console.log(
    `verdict: stats over ${big} decisions ${worst <= 1000 ? 'meets' : 'misses'} ≤ 1 s (${worst.toFixed(0)} ms)`,
  );
  const reader = openLedger({ stateDir: bigDir });
  const since = Date.now() - 86_400_000 * 7;
  let began = performance.now();
  const listed = (await reader.listRouteDecisions({ since, limit: big })).length;
  const listMs = performance.now() - began;
  began = performance.now();
  const counted = await reader.countRouteDecisions({ since });
  const countMs = performance.now() - began;
  await reader.close();
  console.log(
    `--since 7d in process: listing the rows and counting them (before) ${listMs.toFixed(0)} ms for ${listed}; count(*) (now) ${countMs.toFixed(1)} ms for ${counted} (×${(listMs / countMs).toFixed(0)})`,
  );
} finally {
  rmSync(base, { recursive: true, force: true });
}
