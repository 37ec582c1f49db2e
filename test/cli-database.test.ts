import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { adminQuery, createTestDatabase, POSTGRES_SKIP, type TestDatabase } from './helpers/postgres.js';
import { runCli, type CliRun } from './helpers/run-cli.js';

// The CLI on PostgreSQL: SWITCHBOARD_DATABASE_URL or database_url in switchboard.yaml moves the ledger
// there, and a URL that cannot be used is one line with what to do and an exit code of its own.

const folders: string[] = [];
function workspace(): string {
  const folder = mkdtempSync(join(tmpdir(), 'switchboard-db-cli-'));
  folders.push(folder);
  return folder;
}
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

function expectOneLine(result: CliRun, secret: string): void {
  expect(result.stderr, 'no stack trace').not.toMatch(/\n\s+at /);
  expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(result.stderr + result.stdout).not.toContain(secret);
}

function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

it('exits 8 when the database in SWITCHBOARD_DATABASE_URL does not answer', async () => {
  const url = `postgres://switchboard:hunter2-hunter2@127.0.0.1:${await closedPort()}/switchboard`;
  const result = await runCli(['stats'], {
    cwd: workspace(),
    env: { ...process.env, SWITCHBOARD_DATABASE_URL: url },
  });
  expect(result.status, result.stderr).toBe(8);
  expectOneLine(result, 'hunter2-hunter2');
  expect(result.stderr).toMatch(/cannot reach database postgres:\/\/switchboard@127\.0\.0\.1/);
});

it('exits 3 for a database_url in switchboard.yaml that is not a postgres:// URL', async () => {
  const cwd = workspace();
  writeFileSync(join(cwd, 'switchboard.yaml'), 'database_url: mysql://root@localhost/app\n');
  const result = await runCli(['stats'], { cwd, env: process.env });
  expect(result.status, result.stderr).toBe(3);
  expect(result.stderr).toContain('database_url');
});

it('the hint for a URL that is not postgres:// shows the form to write, none of it redacted', async () => {
  for (const [args, url] of [
    [['stats'], 'notaurl'],
    [['db', 'copy'], ''],
  ] as const) {
    const result = await runCli([...args], {
      cwd: workspace(),
      env: { ...process.env, SWITCHBOARD_DATABASE_URL: url },
    });
    expect(result.status, result.stderr).toBe(2);
    expect(result.stderr).toContain('postgres://user@host:5432/database, adding :password after the user');
    expect(result.stderr).not.toContain('[redacted]');
  }
});

describe.skipIf(POSTGRES_SKIP !== undefined)('with a PostgreSQL server', () => {
  let database: TestDatabase;
  let simulator: Simulator;
  beforeAll(async () => {
    database = await createTestDatabase();
    simulator = await startSimulator({
      maxLifetimeMs: 120_000,
      scenario: { fallback: { text: 'hello from pg' } },
    });
    return async () => {
      await simulator.close();
      await database.drop();
    };
  });

  const withPassword = (password: string) => {
    const url = new URL(database.url);
    url.password = password;
    return url.toString();
  };

  it('exits 9 for a wrong password', async () => {
    const result = await runCli(['stats'], {
      cwd: workspace(),
      env: { ...process.env, SWITCHBOARD_DATABASE_URL: withPassword('wrong-password-42') },
    });
    expect(result.status, result.stderr).toBe(9);
    expectOneLine(result, 'wrong-password-42');
    expect(result.stderr).toMatch(/password/);
  });

  it('exits 11 for a database another application uses, and leaves it as it was', async () => {
    const other = await createTestDatabase();
    try {
      await adminQuery('CREATE TABLE orders (id INT)', other.url);
      const result = await runCli(['stats'], {
        cwd: workspace(),
        env: { ...process.env, SWITCHBOARD_DATABASE_URL: other.url },
      });
      expect(result.status, result.stderr).toBe(11);
      expectOneLine(result, new URL(other.url).password);
      const tables = await adminQuery(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
        other.url,
      );
      expect(tables.rows).toEqual([{ table_name: 'orders' }]);
    } finally {
      await other.drop();
    }
  });

  it('records calls in the database named by database_url, where stats from another folder reads them', async () => {
    const cwd = workspace();
    writeFileSync(join(cwd, 'switchboard.yaml'), `database_url: ${database.url}\n`);
    const env = { ...process.env, ANTHROPIC_API_KEY: 'sk-ant-db-test', ANTHROPIC_BASE_URL: simulator.url };
    const call = await runCli(['call', 'anthropic:claude-haiku-4-5', 'say hello'], { cwd, env });
    expect(call.status, call.stderr).toBe(0);
    expect(call.stdout).toContain('hello from pg');
    // Another "machine": its own folder and state, the same database through the variable.
    const stats = await runCli(['stats', '--json'], {
      cwd: workspace(),
      env: { ...process.env, SWITCHBOARD_DATABASE_URL: database.url },
    });
    expect(stats.status, stats.stderr).toBe(0);
    expect(JSON.parse(stats.stdout)).toMatchObject({ calls: { calls: 1, attempts: 1, successfulCalls: 1 } });
    const rows = await adminQuery('SELECT provider, success FROM call_attempts', database.url);
    expect(rows.rows).toEqual([{ provider: 'anthropic', success: '1' }]);
  });
});
