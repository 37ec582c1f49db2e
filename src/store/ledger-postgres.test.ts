import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from 'node:net';
import { isSwitchboardError } from '../core/errors.js';
import {
  adminQuery,
  createTestDatabase,
  POSTGRES_SKIP,
  type TestDatabase,
} from '../../test/helpers/postgres.js';
import { connectLedger, openLedger } from './ledger.js';
import { LATEST_SCHEMA_VERSION, POSTGRES_SCHEMA_TABLE } from './migrations.js';
import { callAttempt } from './__fixtures__/call-attempt.js';

// What only a PostgreSQL ledger does: connecting, refusing databases it must not touch, several
// processes migrating one database at once. The behaviour both backends share is in ledger.test.ts.
describe.skipIf(POSTGRES_SKIP !== undefined)('a ledger on PostgreSQL', () => {
  let database: TestDatabase;
  beforeEach(async () => {
    database = await createTestDatabase();
  });
  afterEach(async () => database.drop());

  const withPassword = (url: string, password: string) => {
    const parsed = new URL(url);
    parsed.password = password;
    return parsed.toString();
  };

  async function failure(url: string): Promise<unknown> {
    return connectLedger({ url }).then(
      async (ledger) => {
        await ledger.close();
        return undefined;
      },
      (error: unknown) => error,
    );
  }

  function expectOneLine(error: unknown, code: string, hint: RegExp): void {
    expect(isSwitchboardError(error), String(error)).toBe(true);
    if (!isSwitchboardError(error)) return;
    expect(error.code).toBe(code);
    expect(error.message).not.toContain('\n');
    expect(error.hint).toMatch(hint);
  }

  it('is created and migrated on first use, and says where it is without the password', async () => {
    const ledger = await connectLedger({ url: database.url });
    expect(ledger.dialect).toBe('postgres');
    expect(ledger.path).not.toContain(new URL(database.url).password);
    expect(ledger.path).toContain(database.name);
    await ledger.close();
    const version = await adminQuery(`SELECT version FROM ${POSTGRES_SCHEMA_TABLE}`, database.url);
    expect(version.rows).toEqual([{ version: String(LATEST_SCHEMA_VERSION) }]);
  });

  it('migrates once when many ledgers open a fresh database together', async () => {
    const ledgers = await Promise.all(
      Array.from({ length: 6 }, (_, index) =>
        connectLedger({ url: index % 2 === 0 ? database.url : `${database.url}?application_name=other` }),
      ),
    );
    for (const ledger of ledgers) expect(await ledger.countRouteDecisions()).toBe(0);
    for (const ledger of ledgers) await ledger.close();
  });

  it('names an unreachable server in one line with what to check', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as { port: number };
        probe.close(() => resolve(free));
      });
    });
    const error = await failure(`postgres://switchboard:s3cret-password@127.0.0.1:${port}/switchboard`);
    expectOneLine(error, 'DATABASE_UNREACHABLE', /running.*host and port/);
    expect(JSON.stringify(error) + String(error)).not.toContain('s3cret-password');
  });

  it('names a wrong password and a missing database, never printing the password', async () => {
    const wrong = await failure(withPassword(database.url, 'not-the-password-123'));
    expectOneLine(wrong, 'DATABASE_AUTH', /password/);
    expect(String(wrong) + JSON.stringify(wrong)).not.toContain('not-the-password-123');
    const missing = new URL(database.url);
    missing.pathname = '/no_such_database';
    expectOneLine(await failure(missing.toString()), 'DATABASE_AUTH', /createdb/);
  });

  it("refuses another application's database and leaves it untouched", async () => {
    await adminQuery('CREATE TABLE invoices (id INT); INSERT INTO invoices VALUES (7)', database.url);
    expectOneLine(await failure(database.url), 'DATABASE_FOREIGN', /database of its own/);
    const tables = await adminQuery(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
      database.url,
    );
    expect(tables.rows).toEqual([{ table_name: 'invoices' }]);
  });

  it('refuses a database migrated by a newer Switchboard', async () => {
    const ledger = await connectLedger({ url: database.url });
    await ledger.close();
    await adminQuery(
      `UPDATE ${POSTGRES_SCHEMA_TABLE} SET version = ${LATEST_SCHEMA_VERSION + 1}`,
      database.url,
    );
    expectOneLine(await failure(database.url), 'STORE_ERROR', /upgrade/);
  });

  it('has a call attempt committed when its promise resolves, and a ledger that never connected closes cleanly', async () => {
    const ledger = openLedger({ url: database.url });
    await ledger.recordCallAttempt(callAttempt('a', 0.5));
    // Seen by another connection without a flush or a close: resolved means committed.
    const rows = await adminQuery('SELECT cost_usd FROM call_attempts', database.url);
    expect(rows.rows).toEqual([{ cost_usd: 0.5 }]);
    await ledger.close();
    const never = openLedger({ url: 'postgres://nobody@127.0.0.1:1/none' });
    await never.close();
  });

  it('keeps a settle a read-only database refuses (25006), and writes it once the database takes writes', async () => {
    const ledger = await connectLedger({ url: database.url });
    const now = Date.now();
    const hold = (id: string) => ({
      id,
      provider: 'openai',
      tags: {},
      createdAt: now,
      expiresAt: now + 60_000,
      amountUsd: 0.5,
      caps: [{ since: now - 1_000, capUsd: 1 }],
    });
    // The ledger's sessions take the setting when they start: end them, as a failover to a standby does.
    const readOnly = async (on: boolean) => {
      await adminQuery(
        `ALTER DATABASE ${database.name} SET default_transaction_read_only = ${on ? 'on' : 'off'}`,
      );
      await adminQuery(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${database.name}' AND pid <> pg_backend_pid()`,
      );
    };
    try {
      expect(await ledger.reserveSpend(hold('r1'))).toMatchObject({ reserved: true });
      await readOnly(true);
      await expect(ledger.settleReservation('r1', callAttempt('a1', 0.25))).rejects.toMatchObject({
        code: 'LEDGER_UNWRITABLE',
        details: { sqlState: '25006' },
      });
      await expect(ledger.reserveSpend(hold('r2'))).rejects.toMatchObject({ code: 'LEDGER_UNWRITABLE' });
      // Still held, so still counted: the settle did not release it.
      expect(await ledger.reservedAt(now, { since: now - 1_000 })).toBeCloseTo(0.5, 9);
      await readOnly(false);
      // Written again in the background: the reservation goes and the cost counts instead.
      for (const giveUpAt = Date.now() + 30_000; Date.now() < giveUpAt;) {
        if ((await ledger.reservedAt(now, { since: now - 1_000 })) === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(await ledger.spendSince(now - 1_000)).toBeCloseTo(0.25, 9);
      expect(await ledger.reserveSpend(hold('r3'))).toMatchObject({
        reserved: true,
        standings: [{ spentUsd: 0.25, reservedUsd: 0 }],
      });
    } finally {
      await ledger.close();
    }
  });

  it('commits the rows of concurrent callers together, and the ones recorded during a write next', async () => {
    const ledger = openLedger({ url: database.url });
    await ledger.ready();
    const first = Array.from({ length: 20 }, (_, index) =>
      ledger.recordCallAttempt(callAttempt(`a${index}`, 1)),
    );
    // Recorded while the first group's write is in flight (it started at the end of the last turn).
    await new Promise((resolve) => setImmediate(resolve));
    const second = Array.from({ length: 20 }, (_, index) =>
      ledger.recordCallAttempt(callAttempt(`b${index}`, 1)),
    );
    await Promise.all([...first, ...second]);
    // One transaction per group: the rows of a group share its transaction id.
    const groups = await adminQuery(
      'SELECT count(DISTINCT xmin::text) AS transactions, count(*) AS attempts FROM call_attempts',
      database.url,
    );
    expect(groups.rows).toEqual([{ transactions: '2', attempts: '40' }]);
    await ledger.close();
  });
});
