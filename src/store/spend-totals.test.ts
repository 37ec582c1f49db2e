import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type * as Pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  adminQuery,
  createTestDatabase,
  POSTGRES_SKIP,
  type TestDatabase,
} from '../../test/helpers/postgres.js';
import { callAttemptRow, callSql, tagParams, type CallAttemptRecord } from './call-records.js';
import { openLedger, type Ledger } from './ledger.js';
import { LEDGER_APPLICATION_ID, MIGRATIONS, POSTGRES_SCHEMA_TABLE, postgresSql } from './migrations.js';
import type { SqlDialect } from './sql/sql-database.js';
import { DAY_MS } from './spend-totals.js';

const requirePackage = createRequire(import.meta.url);

// The spend totals (schema 15) against the sum they replace: random attempts, providers, tags and days,
// some written before the migration (its backfill), the rest through every write path; then every filter
// the budgets, stats and workflows use, and ones they do not, read both ways.

/** Deterministic randomness (mulberry32), so a failure replays. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The schema before the totals: rows written there are the migration's backfill. */
const BEFORE_TOTALS = 14;

/** Around a month's end, so monthly and daily starts both cut the attempts. */
const START = Date.UTC(2026, 1, 26);
const PROVIDERS = ['anthropic', 'openai', 'claude'];
const TAG_KEYS = [
  'team',
  'env',
  'workflow_run',
  'switchboard.key',
  'a.b',
  'a[0]',
  'x y',
  'n',
  'q"k',
  'b\\s',
  '',
];
const TAG_VALUES = ['red', 'blue', 'r-1', '', 'a=b'];

function attempts(seed: number, count: number): CallAttemptRecord[] {
  const next = random(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
  return Array.from({ length: count }, (_, index) => {
    const tags: Record<string, unknown> = {};
    for (let tag = Math.floor(next() * 4); tag > 0; tag--) tags[pick(TAG_KEYS)] = pick(TAG_VALUES);
    // A number or null is no string tag: SQLite's json_extract and PostgreSQL's ->> read them differently.
    if (next() < 0.1) tags['n'] = next() < 0.5 ? 5 : null;
    const createdAt = START + Math.floor(next() * 6 * DAY_MS) - (next() < 0.05 ? START + 3 * DAY_MS : 0);
    return {
      id: `a${seed}-${index}`,
      callId: `c${index}`,
      attempt: 1,
      createdAt,
      provider: pick(PROVIDERS),
      spec: 'x:y',
      modelRequested: 'y',
      success: true,
      durationMs: 1,
      costUsd: next() < 0.1 ? null : Math.round(next() * 1e6) / 1e7,
      promptHash: 'h',
      tags: tags as Record<string, string>,
    };
  });
}

/** Every filter worth asking: day and month starts, ever, inside a day, before everything. */
function queries(): { since: number; provider?: string; tag?: string }[] {
  const sinces = [
    0,
    Number.MIN_SAFE_INTEGER,
    Date.UTC(2026, 2, 1),
    Date.UTC(2026, 1, 1),
    ...Array.from({ length: 7 }, (_, day) => START + day * DAY_MS),
    START + 1234567,
    START + 2 * DAY_MS + 7,
    START + 9 * DAY_MS,
  ];
  const tags = [
    undefined,
    'team=red',
    'team=blue',
    'env=',
    'workflow_run=r-1',
    'team=a=b',
    'a.b=red',
    'switchboard.key=r-1',
    'a[0]=blue',
    'b\\s=red',
    'x y=blue',
    'n=5',
    'q"k=red',
    'nobody=red',
    'nokey',
    '=red',
  ];
  return sinces.flatMap((since) =>
    [undefined, ...PROVIDERS, 'nobody'].flatMap((provider) =>
      tags.map((tag) => ({
        since,
        ...(provider === undefined ? {} : { provider }),
        ...(tag === undefined ? {} : { tag }),
      })),
    ),
  );
}

interface Backend {
  dialect: SqlDialect;
  /** Writes rows straight into call_attempts of a ledger at `BEFORE_TOTALS`. */
  seedOld(rows: readonly CallAttemptRecord[]): Promise<void>;
  open(): Ledger;
  /** The sum before schema 15: the scan of call_attempts. */
  scan(since: number, filter: { provider?: string; tag?: string }): Promise<number>;
  close(): Promise<void>;
}

function sqliteBackend(): Backend {
  const folder = mkdtempSync(join(tmpdir(), 'switchboard-spend-'));
  const file = join(folder, 'ledger.db');
  const sql = callSql('sqlite');
  let raw: Database.Database | undefined;
  return {
    dialect: 'sqlite',
    async seedOld(rows) {
      const old = new Database(file);
      for (const step of MIGRATIONS.filter(({ version }) => version <= BEFORE_TOTALS)) old.exec(step.sql);
      old.pragma(`application_id = ${LEDGER_APPLICATION_ID}`);
      old.pragma(`user_version = ${BEFORE_TOTALS}`);
      const insert = old.prepare(sql.insertCallAttempt);
      old.transaction(() => {
        for (const row of rows) insert.run(callAttemptRow(row, false));
      })();
      old.close();
    },
    open: () => openLedger({ stateDir: folder }),
    async scan(since, filter) {
      raw ??= new Database(file, { readonly: true });
      const row = raw
        .prepare(sql.spendSince)
        .get({ since, provider: filter.provider ?? null, ...tagParams(filter.tag) }) as {
        total: number | null;
      };
      return row.total ?? 0;
    },
    async close() {
      raw?.close();
      rmSync(folder, { recursive: true, force: true });
    },
  };
}

function postgresBackend(database: TestDatabase): Backend {
  const literal = (value: unknown) => `'${JSON.stringify(value).replace(/'/g, "''")}'`;
  const columns =
    'id, call_id, attempt, created_at, provider, spec, model_requested, model_used, success, error_code, ' +
    'duration_ms, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, session_id, ' +
    'prompt_hash, prompt_text, tags, cooldown_key';
  let client: Pg.Client | undefined;
  return {
    dialect: 'postgres',
    async seedOld(rows) {
      const steps = MIGRATIONS.filter(({ version }) => version <= BEFORE_TOTALS).map(postgresSql);
      await adminQuery(
        `CREATE TABLE ${POSTGRES_SCHEMA_TABLE} (application_id BIGINT NOT NULL, version BIGINT NOT NULL);
         INSERT INTO ${POSTGRES_SCHEMA_TABLE} VALUES (${LEDGER_APPLICATION_ID}, ${BEFORE_TOTALS});
         ${steps.join(';\n')};
         INSERT INTO call_attempts (${columns}) SELECT ${columns} FROM
           json_populate_recordset(NULL::call_attempts, ${literal(rows.map((row) => callAttemptRow(row, false)))})`,
        database.url,
      );
    },
    open: () => openLedger({ url: database.url }),
    async scan(since, filter) {
      const { tag_key, tag_value } = tagParams(filter.tag);
      const text = (value: string | null) => (value === null ? 'NULL' : `'${value.replace(/'/g, "''")}'`);
      if (client === undefined) {
        client = new (requirePackage('pg') as typeof Pg).Client({ connectionString: database.url });
        await client.connect();
      }
      const result = await client.query(
        `SELECT sum(cost_usd) AS total FROM call_attempts WHERE created_at >= ${since} ` +
          `AND (${filter.provider === undefined ? 'TRUE' : `provider = ${text(filter.provider)}`}) ` +
          `AND (${tag_key === null ? 'TRUE' : `(CAST(tags AS JSONB) ->> ${text(tag_key)}) = ${text(tag_value)}`})`,
      );
      return Number((result.rows[0] as { total: number | null }).total ?? 0);
    },
    async close() {
      await client?.end();
    },
  };
}

/** A read's answer, or the error it failed with (SQLite refuses an empty key's JSON path either way). */
async function outcome(read: () => Promise<number>): Promise<number | string> {
  try {
    return await read();
  } catch {
    return 'error';
  }
}

async function expectSameAnswers(backend: Backend, ledger: Ledger): Promise<void> {
  let compared = 0;
  for (const { since, ...filter } of queries()) {
    const before = await outcome(() => backend.scan(since, filter));
    const now = await outcome(() => ledger.spendSince(since, filter));
    const label = JSON.stringify({ since, ...filter });
    if (typeof before === 'string') expect(now, label).toBe(before);
    else expect(now, label).toBeCloseTo(before, 9);
    if (typeof before === 'number' && before > 0) compared++;
  }
  // The random rows fall inside most filters: a test that compares zeros proves nothing.
  expect(compared).toBeGreaterThan(200);
  // The reservation reads the same spending, cap by cap, in its transaction.
  const caps = queries()
    .filter(({ tag }) => tag === undefined || (!tag.startsWith('=') && tag.includes('=')))
    .slice(0, 60)
    .map(({ since, ...filter }) => ({ since, capUsd: 1e9, ...filter }));
  const held = await ledger.reserveSpend({
    id: 'r-check',
    provider: 'openai',
    tags: {},
    createdAt: START,
    expiresAt: START + 1,
    amountUsd: 0,
    caps,
  });
  for (const [index, cap] of caps.entries()) {
    const expected = await backend.scan(cap.since, cap);
    expect(held.standings[index]?.spentUsd, JSON.stringify(cap)).toBeCloseTo(expected, 9);
  }
  await ledger.releaseReservation('r-check');
}

async function writeThroughLedger(ledger: Ledger, rows: readonly CallAttemptRecord[]): Promise<void> {
  const [grouped, settled] = [rows.filter((_, index) => index % 3 !== 0), rows.filter((_, i) => i % 3 === 0)];
  // Group-committed batches of several rows, each written twice (the second finds them there).
  await Promise.all(grouped.map((row) => ledger.recordCallAttempt(row)));
  await Promise.all(grouped.slice(0, 40).map((row) => ledger.recordCallAttempt(row)));
  // Settles, one transaction each; one settled again as a retry would.
  for (const row of settled) {
    await ledger.reserveSpend({
      id: `r-${row.id}`,
      provider: row.provider,
      tags: row.tags ?? {},
      createdAt: row.createdAt,
      expiresAt: row.createdAt + 60_000,
      amountUsd: 0.01,
      caps: [{ since: 0, capUsd: 1e9 }],
    });
    await ledger.settleReservation(`r-${row.id}`, row);
  }
  if (settled[0] !== undefined) await ledger.settleReservation(`r-${settled[0].id}`, settled[0]);
}

function spendTotalsSuite(name: string, seeds: readonly number[], make: () => Promise<Backend>): void {
  describe(`spend totals on ${name}`, () => {
    let backend: Backend;
    let ledger: Ledger | undefined;
    beforeEach(async () => {
      backend = await make();
    });
    afterEach(async () => {
      await ledger?.close();
      ledger = undefined;
      await backend.close();
    });

    for (const seed of seeds) {
      it(`read what the sum of call_attempts read, backfilled and written (seed ${seed})`, async () => {
        const rows = attempts(seed, 600);
        await backend.seedOld(rows.slice(0, 300));
        ledger = backend.open();
        await ledger.ready();
        await expectSameAnswers(backend, ledger);
        await writeThroughLedger(ledger, rows.slice(300));
        await ledger.flush();
        await expectSameAnswers(backend, ledger);
      });
    }
  });
}

spendTotalsSuite('SQLite', [1, 2, 3], async () => sqliteBackend());

let database: TestDatabase | undefined;
describe.skipIf(POSTGRES_SKIP !== undefined)('on PostgreSQL', () => {
  afterEach(async () => {
    await database?.drop();
    database = undefined;
  });
  spendTotalsSuite('PostgreSQL', [1], async () => {
    database = await createTestDatabase();
    return postgresBackend(database);
  });
});
