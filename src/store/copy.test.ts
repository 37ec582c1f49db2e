import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  adminQuery,
  createTestDatabase,
  POSTGRES_SKIP,
  type TestDatabase,
} from '../../test/helpers/postgres.js';
import { agentRunRecord } from '../agents/__fixtures__/agent-run.js';
import { AgentRunStore } from '../agents/run-store.js';
import { isSwitchboardError } from '../core/errors.js';
import type { RouteDecision } from '../core/route-types.js';
import { loadSqlite } from '../core/lazy-packages.js';
import { copyLedger } from './copy.js';
import { openLedger, type Ledger } from './ledger.js';

// Moving a team's SQLite ledger into PostgreSQL: every table's rows arrive, in order, and read back
// through the stores exactly as they read from the file.

const T0 = Date.UTC(2026, 0, 5, 9, 0, 0);

function decision(id: string, skill: string): RouteDecision {
  return {
    id,
    skill,
    confidence: 0.75,
    reasoning: `matched ${skill}`,
    method: 'rules',
    candidates: [
      { skill, score: 0.75 },
      { skill: 'none', score: 0.1 },
    ],
    costUsd: 0.00012,
    durationMs: 3.5,
    timings: { rules: 1.25 },
    warnings: [],
  };
}

/** A ledger with rows in every table, written through the stores (raw rows for the workflow tables). */
async function fillLedger(stateDir: string): Promise<void> {
  const ledger = openLedger({ stateDir });
  // Same timestamp for all: only rowid order tells them apart, so a copy out of order shows.
  for (const [index, skill] of ['deploy', 'billing', 'deploy', 'search', 'billing'].entries()) {
    await ledger.recordRouteDecision(decision(`d${index}`, skill), {
      requestText: `request ${index}`,
      mode: 'local',
      createdAt: new Date(T0),
      tags: { team: 'a' },
    });
  }
  for (let index = 0; index < 7; index++) {
    await ledger.recordCallAttempt({
      id: `a${index}`,
      callId: `c${Math.floor(index / 2)}`,
      attempt: (index % 2) + 1,
      createdAt: T0 + index,
      provider: index % 3 === 0 ? 'anthropic' : 'openai',
      spec: index % 3 === 0 ? 'anthropic:claude-haiku-4-5' : 'openai:gpt-4.1-mini',
      modelRequested: 'm',
      modelUsed: 'm-2026',
      success: index % 2 === 1,
      ...(index % 2 === 1 ? {} : { errorCode: 'RATE_LIMITED' }),
      durationMs: 100 + index * 10.5,
      usage: { inputTokens: 10 * index, outputTokens: 3, cacheReadTokens: 1, cacheWriteTokens: 0 },
      costUsd: index === 4 ? null : 0.001 * index,
      promptHash: `hash${index}`,
      tags: { team: 'a' },
      ...(index === 6 ? { cooldownKey: 'openai:gpt-4.1-mini@http://127.0.0.1:1/v1' } : {}),
    });
  }
  await ledger.setCooldown({
    spec: 'openai:gpt-4.1-mini',
    until: T0 + 60_000,
    failures: 3,
    reason: 'OVERLOADED',
  });
  await ledger.recordFeedback('d1', 'deploy');
  await ledger.cacheDecision('cache-key', decision('d9', 'search'), {
    storedAt: T0,
    ttlMs: 10 * 365 * 86_400_000,
    maxEntries: 100,
  });
  const reservation = await ledger.reserveSpend({
    id: 'r1',
    provider: 'openai',
    tags: { team: 'a' },
    createdAt: T0,
    expiresAt: T0 + 60_000,
    amountUsd: 0.25,
    caps: [{ since: 0, capUsd: 100 }],
  });
  expect(reservation.reserved).toBe(true);
  await ledger.createVirtualKey({
    id: 'key_1',
    name: 'ci',
    hash: 'f'.repeat(64),
    prefix: 'sbk_abcdefgh',
    tags: { team: 'a' },
    models: ['haiku'],
    rpm: 60,
    createdAt: T0,
  });
  await ledger.countKeyUsage('key_1', T0, 1, 100);
  await ledger.close();

  const runs = await AgentRunStore.open(stateDir, {});
  await runs.insert(agentRunRecord('fix-bug-aaa111'));
  await runs.insert(agentRunRecord('fix-bug-bbb222'));
  await runs.update('fix-bug-aaa111', { phase: 'done', status: 'succeeded', costUsd: 0.125, ended: true });
  await runs.addEvent('fix-bug-aaa111', 'agent', 'attempt-start', 'attempt 1', { attempt: 1 });
  await runs.addEvent('fix-bug-aaa111', 'done', 'phase', 'merged');
  await runs.close();

  const Sqlite = loadSqlite();
  const file = new Sqlite(join(stateDir, 'ledger.db'));
  file.exec(`
    INSERT INTO workflow_runs (id, workflow, file, file_hash, inputs, status, created_at, updated_at)
      VALUES ('w1', 'review', '/flows/review.yaml', 'h', '{"topic":"x"}', 'waiting', ${T0}, ${T0});
    INSERT INTO workflow_steps (key, run_id, seq, step, type, visit, attempt, status, output, cost_usd, started_at)
      VALUES ('w1/draft/0', 'w1', 1, 'draft', 'agent', 0, 1, 'completed', '{"text":"hi"}', 0.5, ${T0});
    INSERT INTO workflow_gates (run_id, step, choice, answered_by, answered_at)
      VALUES ('w1', 'approve', 'yes', 'ada', ${T0});
    INSERT INTO workflow_events (run_id, seq, at, type, step) VALUES ('w1', 1, ${T0}, 'step-start', 'draft');
    INSERT INTO workflow_events (run_id, seq, at, type, step) VALUES ('w1', 2, ${T0}, 'step-end', 'draft');
    INSERT INTO workflow_guidance (run_id, step, text, sent_by, sent_at, delivered_step, delivered_key, delivered_visit, delivered_turn, delivered_at)
      VALUES ('w1', NULL, 'use the blue one', 'ada', ${T0}, 'draft', 'w1/draft/0', 0, 1, ${T0});
  `);
  file.close();
}

/** Everything a user reads back through the stores, for comparing two ledgers. */
async function readBack(ledger: Ledger, runs: AgentRunStore): Promise<unknown> {
  return {
    decisions: await ledger.listRouteDecisions({ limit: 100 }),
    eachDecision: await (async () => {
      const seen: string[] = [];
      await ledger.eachRouteDecision({}, (stored) => seen.push(stored.id));
      return seen;
    })(),
    stats: await ledger.callStats(),
    spend: await ledger.spendSince(0, { tag: 'team=a' }),
    requests: await ledger.recentRequests('openai:gpt-4.1-mini', 0, 10),
    cooldown: await ledger.getCooldown('openai:gpt-4.1-mini'),
    feedback: await ledger.listFeedback(),
    cached: await ledger.getCachedDecision('cache-key', 0),
    reserved: await ledger.reservedAt(T0 + 1, {}),
    keys: await ledger.listVirtualKeys(),
    usage: await ledger.countKeyUsage('key_1', T0, 0, 0),
    runs: await runs.list(),
    events: await runs.events('fix-bug-aaa111'),
  };
}

const WORKFLOW_TABLES = [
  'workflow_runs',
  'workflow_steps',
  'workflow_gates',
  'workflow_events',
  'workflow_guidance',
];

describe.skipIf(POSTGRES_SKIP !== undefined)('copyLedger', () => {
  let folder: string;
  let database: TestDatabase;
  beforeEach(async () => {
    folder = mkdtempSync(join(tmpdir(), 'switchboard-copy-'));
    database = await createTestDatabase();
  });
  afterEach(async () => {
    await database.drop();
    rmSync(folder, { recursive: true, force: true });
  });

  it('copies every table, and the stores read the same from PostgreSQL as from the file', async () => {
    await fillLedger(folder);
    const file = join(folder, 'ledger.db');
    const committed: string[] = [];
    const result = await copyLedger({
      from: file,
      to: database.url,
      batchRows: 2,
      onTable: ({ table }) => committed.push(table),
    });

    const Sqlite = loadSqlite();
    const source = new Sqlite(file, { readonly: true });
    const counts = Object.fromEntries(
      (
        source
          .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid")
          .pluck()
          .all() as string[]
      ).map((table) => [table, source.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number]),
    );
    source.close();
    // Every table of the ledger has rows here, so a table the copy skipped would show.
    expect(
      Object.values(counts).every((rows) => rows > 0),
      JSON.stringify(counts),
    ).toBe(true);
    expect(Object.fromEntries(result.tables.map(({ table, rows }) => [table, rows]))).toEqual(counts);
    expect(committed).toEqual(Object.keys(counts));
    expect(result.to).not.toContain(new URL(database.url).password);

    const fromFile = openLedger({ stateDir: folder });
    const runsFromFile = await AgentRunStore.open(folder, {});
    const fromPostgres = openLedger({ url: database.url });
    const runsFromPostgres = await AgentRunStore.open(folder, { url: database.url });
    try {
      const expected = await readBack(fromFile, runsFromFile);
      expect(await readBack(fromPostgres, runsFromPostgres)).toEqual(expected);
      expect((expected as { decisions: { id: string }[] }).decisions.map(({ id }) => id)).toEqual([
        'd4',
        'd3',
        'd2',
        'd1',
        'd0',
      ]);

      // New rows come after the copied ones: the rowid sequence continues past the copied maximum.
      await fromPostgres.recordRouteDecision(decision('d5', 'deploy'), {
        requestText: 'later',
        mode: 'local',
        createdAt: new Date(T0),
      });
      expect((await fromPostgres.listRouteDecisions({ limit: 2 })).map(({ id }) => id)).toEqual(['d5', 'd4']);
    } finally {
      await fromFile.close();
      await runsFromFile.close();
      await fromPostgres.close();
      await runsFromPostgres.close();
    }
    for (const table of WORKFLOW_TABLES) {
      const copied = await adminQuery(`SELECT * FROM ${table} ORDER BY rowid`, database.url);
      const original = new Sqlite(file, { readonly: true });
      const rows = original.prepare(`SELECT rowid, * FROM ${table} ORDER BY rowid`).all();
      original.close();
      expect(copied.rows.map(normalise), table).toEqual(rows.map(normalise));
    }
  });

  it('refuses a database whose tables hold rows, and writes nothing', async () => {
    await fillLedger(folder);
    const existing = openLedger({ url: database.url });
    await existing.setCooldown({ spec: 'claude:haiku', until: T0, failures: 1, reason: 'TIMEOUT' });
    await existing.close();

    const error = await copyLedger({ from: join(folder, 'ledger.db'), to: database.url }).catch(
      (thrown: unknown) => thrown,
    );
    expect(isSwitchboardError(error) && error.code, String(error)).toBe('INVALID_INPUT');
    expect(String(error)).toMatch(/already holds ledger rows \(provider_cooldowns\)/);
    const rows = await adminQuery(
      'SELECT (SELECT count(*) FROM provider_cooldowns) AS cooldowns, (SELECT count(*) FROM call_attempts) AS attempts, ' +
        '(SELECT count(*) FROM route_decisions) AS decisions',
      database.url,
    );
    expect(rows.rows).toEqual([{ cooldowns: '1', attempts: '0', decisions: '0' }]);
  });

  it('rolls back the table it fails in, keeps the ones before it and names them', async () => {
    await fillLedger(folder);
    const Sqlite = loadSqlite();
    const file = new Sqlite(join(folder, 'ledger.db'));
    // SQLite keeps text in an INTEGER column; PostgreSQL's BIGINT refuses it.
    file.exec(`INSERT INTO workflow_events (run_id, seq, at, type) VALUES ('w1', 3, 'not a time', 'bad')`);
    file.close();

    const error = await copyLedger({ from: join(folder, 'ledger.db'), to: database.url }).catch(
      (thrown: unknown) => thrown,
    );
    expect(isSwitchboardError(error) && error.code, String(error)).toBe('STORE_ERROR');
    const message = (error as Error).message;
    expect(message).toMatch(/cannot copy table workflow_events/);
    expect(message).toMatch(/workflow_events was rolled back, copied before it: call_attempts \(7 rows\)/);
    expect(message).not.toContain('\n');
    expect(message).not.toContain(new URL(database.url).password);
    const counts = await adminQuery(
      'SELECT (SELECT count(*) FROM workflow_events) AS events, (SELECT count(*) FROM workflow_gates) AS gates',
      database.url,
    );
    expect(counts.rows).toEqual([{ events: '0', gates: '1' }]);
  });
});

/** A row with PostgreSQL's text-form whole numbers and SQLite's numbers made comparable. */
function normalise(row: unknown): Record<string, string | null> {
  return Object.fromEntries(
    Object.entries(row as Record<string, unknown>).map(([key, value]) => [
      key,
      value === null ? null : String(value),
    ]),
  );
}
