import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { loadSqlite } from '../src/core/lazy-packages.js';
import { LATEST_SCHEMA_VERSION, LEDGER_APPLICATION_ID, MIGRATIONS } from '../src/store/migrations.js';
import { openLedger } from '../src/store/ledger.js';
import { adminQuery, createTestDatabase, POSTGRES_SKIP, type TestDatabase } from './helpers/postgres.js';
import { runCli, type CliRun } from './helpers/run-cli.js';

// `switchboard db migrate` and `db copy`: bringing a ledger's schema up to date, and moving a SQLite
// ledger into PostgreSQL with one line per table, refusing anything that would mix or lose rows.

const folders: string[] = [];
function workspace(): string {
  const folder = mkdtempSync(join(tmpdir(), 'switchboard-db-commands-'));
  folders.push(folder);
  return folder;
}
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** The environment without a database URL of the test runner's own. */
function environment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  if (extra.SWITCHBOARD_DATABASE_URL === undefined) delete env.SWITCHBOARD_DATABASE_URL;
  return env;
}

function expectOneLine(result: CliRun, secret?: string): void {
  expect(result.stderr, 'no stack trace').not.toMatch(/\n\s+at /);
  expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
  if (secret !== undefined) expect(result.stderr + result.stdout).not.toContain(secret);
}

function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** A ledger file in `cwd`'s state folder with a few call attempts, written through the library. */
async function ledgerWithCalls(cwd: string, calls: number): Promise<string> {
  const stateDir = join(cwd, '.switchboard');
  const ledger = openLedger({ path: join(stateDir, 'ledger.db') });
  for (let index = 0; index < calls; index++) {
    await ledger.recordCallAttempt({
      id: `a${index}`,
      callId: `c${index}`,
      attempt: 1,
      createdAt: Date.now(),
      provider: 'anthropic',
      spec: 'anthropic:claude-haiku-4-5',
      modelRequested: 'claude-haiku-4-5',
      success: true,
      durationMs: 120,
      costUsd: 0.001,
      promptHash: `h${index}`,
    });
  }
  await ledger.close();
  return join(stateDir, 'ledger.db');
}

describe('db migrate on the SQLite ledger', () => {
  it('creates a fresh ledger, then says it is up to date', async () => {
    const cwd = workspace();
    const first = await runCli(['db', 'migrate'], { cwd, env: environment() });
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout).toBe(
      `migrated ${join(cwd, '.switchboard', 'ledger.db')} from schema version 0 to ${LATEST_SCHEMA_VERSION}\n`,
    );
    const second = await runCli(['db', 'migrate'], { cwd, env: environment() });
    expect(second.status, second.stderr).toBe(0);
    expect(second.stdout).toMatch(
      new RegExp(`is up to date \\(schema version ${LATEST_SCHEMA_VERSION}\\)\\n$`),
    );
  });

  it('brings an old ledger up from its version, keeping its rows', async () => {
    const cwd = workspace();
    mkdirSync(join(cwd, 'state'));
    const file = join(cwd, 'state', 'ledger.db');
    const Sqlite = loadSqlite();
    const old = new Sqlite(file);
    for (const step of MIGRATIONS.filter(({ version }) => version <= 3)) old.exec(step.sql);
    old.pragma(`application_id = ${LEDGER_APPLICATION_ID}`);
    old.pragma('user_version = 3');
    old.exec(
      "INSERT INTO provider_cooldowns (spec, until, failures, reason, updated_at) VALUES ('claude:haiku', 1, 2, 'TIMEOUT', 1)",
    );
    old.close();

    const result = await runCli(['--state-dir', 'state', 'db', 'migrate'], { cwd, env: environment() });
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toBe(`migrated ${file} from schema version 3 to ${LATEST_SCHEMA_VERSION}\n`);
    const migrated = new Sqlite(file, { readonly: true });
    expect(migrated.pragma('user_version', { simple: true })).toBe(LATEST_SCHEMA_VERSION);
    expect(migrated.prepare('SELECT count(*) FROM provider_cooldowns').pluck().get()).toBe(1);
    migrated.close();
  });
});

describe('db copy and db migrate: bad input', () => {
  it('exits 2 when --from names no file, creating nothing', async () => {
    const cwd = workspace();
    const result = await runCli(
      ['db', 'copy', '--from', 'missing.db', '--to', 'postgres://switchboard@127.0.0.1:1/switchboard'],
      { cwd, env: environment() },
    );
    expect(result.status, result.stderr).toBe(2);
    expectOneLine(result);
    expect(result.stderr).toContain(`no ledger file at ${join(cwd, 'missing.db')}`);
  });

  it('exits 6 when --from is not a SQLite file, leaving it as it was', async () => {
    const cwd = workspace();
    writeFileSync(join(cwd, 'notes.db'), 'these are my notes, not a database\n'.repeat(200));
    const result = await runCli(
      ['db', 'copy', '--from', 'notes.db', '--to', 'postgres://switchboard@127.0.0.1:1/switchboard'],
      { cwd, env: environment() },
    );
    expect(result.status, result.stderr).toBe(6);
    expectOneLine(result);
    expect(result.stderr).toMatch(/notes\.db is not a SQLite database/);
  });

  it('exits 2 without a target, naming --to and the variable', async () => {
    const cwd = workspace();
    await ledgerWithCalls(cwd, 1);
    const result = await runCli(['db', 'copy'], { cwd, env: environment() });
    expect(result.status, result.stderr).toBe(2);
    expectOneLine(result);
    expect(result.stderr).toMatch(/--to postgres:\/\/.*SWITCHBOARD_DATABASE_URL/);
  });

  it('exits 8 when --to does not answer, and 8 for db migrate --url, never printing the password', async () => {
    const cwd = workspace();
    await ledgerWithCalls(cwd, 1);
    const url = `postgres://switchboard:pw-hunter2-xyz@127.0.0.1:${await closedPort()}/switchboard`;
    const copy = await runCli(['db', 'copy', '--to', url], { cwd, env: environment() });
    expect(copy.status, copy.stderr).toBe(8);
    expectOneLine(copy, 'pw-hunter2-xyz');
    expect(copy.stderr).toMatch(/cannot reach database postgres:\/\/switchboard@127\.0\.0\.1/);

    const migrate = await runCli(['db', 'migrate', '--url', url], { cwd, env: environment() });
    expect(migrate.status, migrate.stderr).toBe(8);
    expectOneLine(migrate, 'pw-hunter2-xyz');
  });
});

describe.skipIf(POSTGRES_SKIP !== undefined)('with a PostgreSQL server', () => {
  let database: TestDatabase;
  let password: string;
  beforeEach(async () => {
    database = await createTestDatabase();
    password = decodeURIComponent(new URL(database.url).password);
    return () => database.drop();
  });

  it('db migrate creates the schema in a fresh database, then finds it up to date', async () => {
    const cwd = workspace();
    const first = await runCli(['db', 'migrate'], {
      cwd,
      env: environment({ SWITCHBOARD_DATABASE_URL: database.url }),
    });
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout).toMatch(
      new RegExp(
        `^migrated postgres://\\S+/${database.name} from schema version 0 to ${LATEST_SCHEMA_VERSION}\\n$`,
      ),
    );
    const version = await adminQuery('SELECT version FROM switchboard_schema', database.url);
    expect(version.rows).toEqual([{ version: String(LATEST_SCHEMA_VERSION) }]);

    const second = await runCli(['db', 'migrate', '--url', database.url], { cwd, env: environment() });
    expect(second.status, second.stderr).toBe(0);
    expect(second.stdout).toMatch(
      new RegExp(
        `^postgres://\\S+/${database.name} is up to date \\(schema version ${LATEST_SCHEMA_VERSION}\\)\\n$`,
      ),
    );
    expect(first.stdout + second.stdout + first.stderr + second.stderr).not.toContain(password);
  });

  it('db copy prints one line per table, and stats on PostgreSQL then counts the copied calls', async () => {
    const cwd = workspace();
    await ledgerWithCalls(cwd, 3);
    writeFileSync(join(cwd, 'switchboard.yaml'), `database_url: ${database.url}\n`);
    const copy = await runCli(['db', 'copy'], { cwd, env: environment() });
    expect(copy.status, copy.stderr).toBe(0);
    const lines = copy.stdout.trimEnd().split('\n');
    expect(lines).toContain('call_attempts 3 rows');
    expect(lines).toContain('route_decisions 0 rows');
    expect(lines.at(-1)).toMatch(
      new RegExp(
        `^copied \\d+ tables from ${join(cwd, '.switchboard', 'ledger.db')} to postgres://\\S+/${database.name}$`,
      ),
    );
    expect(copy.stdout + copy.stderr).not.toContain(password);

    // Another machine: no ledger file of its own, the same database.
    const stats = await runCli(['stats', '--json'], {
      cwd: workspace(),
      env: environment({ SWITCHBOARD_DATABASE_URL: database.url }),
    });
    expect(stats.status, stats.stderr).toBe(0);
    expect(JSON.parse(stats.stdout)).toMatchObject({ calls: { calls: 3, attempts: 3 } });
  });

  it('db copy refuses a database that already holds ledger rows (exit 2), writing nothing', async () => {
    const cwd = workspace();
    const file = await ledgerWithCalls(cwd, 2);
    const copied = await runCli(['db', 'copy', '--from', file, '--to', database.url], {
      cwd,
      env: environment(),
    });
    expect(copied.status, copied.stderr).toBe(0);

    const again = await runCli(['db', 'copy', '--from', file, '--to', database.url], {
      cwd,
      env: environment(),
    });
    expect(again.status, again.stderr).toBe(2);
    expectOneLine(again, password);
    expect(again.stderr).toMatch(
      /already holds ledger rows \(call_attempts\); nothing was copied \(.*empty database/,
    );
    const rows = await adminQuery('SELECT count(*) AS count FROM call_attempts', database.url);
    expect(rows.rows).toEqual([{ count: '2' }]);
  });

  it('db copy and db migrate exit 11 for a database of another application, leaving it untouched', async () => {
    const cwd = workspace();
    const file = await ledgerWithCalls(cwd, 1);
    await adminQuery('CREATE TABLE orders (id INT)', database.url);
    const result = await runCli(['db', 'copy', '--from', file, '--to', database.url], {
      cwd,
      env: environment(),
    });
    expect(result.status, result.stderr).toBe(11);
    expectOneLine(result, password);
    const tables = await adminQuery(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
      database.url,
    );
    expect(tables.rows).toEqual([{ table_name: 'orders' }]);

    const migrate = await runCli(['db', 'migrate', '--url', database.url], { cwd, env: environment() });
    expect(migrate.status, migrate.stderr).toBe(11);
    expectOneLine(migrate, password);
    expect(
      await adminQuery(
        "SELECT count(*) AS count FROM information_schema.tables WHERE table_schema = 'public'",
        database.url,
      ),
    ).toMatchObject({ rows: [{ count: '1' }] });
  });
});

describe('db prune', () => {
  async function ledgerWithDecisions(cwd: string, ages: number[]): Promise<void> {
    const ledger = openLedger({ stateDir: join(cwd, 'state') });
    for (const [index, ageMs] of ages.entries()) {
      await ledger.recordRouteDecision(
        {
          id: `d${index}`,
          skill: 'fix-bug',
          confidence: 0.9,
          reasoning: 'matched /fix/',
          method: 'rules',
          candidates: [{ skill: 'fix-bug', score: 0.9 }],
          costUsd: 0,
          durationMs: 1,
          timings: { rules: 1 },
          warnings: [],
        },
        { requestText: `text ${index}`, mode: 'local', createdAt: new Date(Date.now() - ageMs) },
      );
    }
    await ledger.close();
  }
  const DAY = 86_400_000;

  it('deletes the route decisions older than --older-than and says how many', async () => {
    const cwd = workspace();
    await ledgerWithDecisions(cwd, [40 * DAY, 31 * DAY, 2 * DAY]);
    const result = await runCli(['--state-dir', 'state', 'db', 'prune', '--older-than', '30d'], {
      cwd,
      env: environment(),
    });
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /^pruned 2 route decisions, 0 feedback and 0 cached decisions from before \S+Z in \S+ledger\.db\n$/,
    );
    const stats = await runCli(['--state-dir', 'state', 'stats', '--json'], { cwd, env: environment() });
    expect(JSON.parse(stats.stdout)).toMatchObject({ routeDecisions: 1 });
  });

  it('takes ledger.retention from switchboard.yaml, and without either says what to pass (exit 2)', async () => {
    const cwd = workspace();
    await ledgerWithDecisions(cwd, [3 * DAY, 1 * DAY]);
    const missing = await runCli(['--state-dir', 'state', 'db', 'prune'], { cwd, env: environment() });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(
      /db prune needs to know how long to keep route decisions.*--older-than 90d/,
    );
    expectOneLine(missing);
    const bad = await runCli(['--state-dir', 'state', 'db', 'prune', '--older-than', 'soon'], {
      cwd,
      env: environment(),
    });
    expect(bad.status).toBe(2);
    expectOneLine(bad);
    writeFileSync(join(cwd, 'switchboard.yaml'), 'ledger:\n  retention: 2d\n');
    const pruned = await runCli(['--state-dir', 'state', 'db', 'prune'], { cwd, env: environment() });
    expect(pruned.status, pruned.stderr).toBe(0);
    expect(pruned.stdout).toMatch(/^pruned 1 route decisions/);
  });
});
