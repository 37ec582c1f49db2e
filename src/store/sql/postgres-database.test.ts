import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  adminQuery,
  createTestDatabase,
  POSTGRES_SKIP,
  type TestDatabase,
} from '../../../test/helpers/postgres.js';
import { PostgresDatabase } from './postgres-database.js';

// What a database restart does to a process holding connections: PostgreSQL ends every backend with
// 57P01 (`pg_terminate_backend`, a fast shutdown). The process must not die of it, and the next query
// must find a new connection.
describe.skipIf(POSTGRES_SKIP !== undefined)('PostgresDatabase when the server ends its connections', () => {
  let database: TestDatabase;
  let opened: PostgresDatabase | undefined;
  beforeEach(async () => {
    database = await createTestDatabase();
  });
  afterEach(async () => {
    await opened?.close();
    opened = undefined;
    await database.drop();
  });

  const terminateAll = () =>
    adminQuery(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${database.name}' AND pid <> pg_backend_pid()`,
    );

  it('fails a transaction whose connection was ended, lives on, and answers the next query', async () => {
    opened = await PostgresDatabase.connect(database.url);
    const db = opened;
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      // Checked out and busy inside a transaction (the state a worker's step-end write is in), and
      // idle in the pool: both kinds of connection are ended at once.
      await db.get('SELECT 1 AS one');
      const busy = db.transaction((client) => client.get('SELECT pg_sleep(5) AS slept'));
      const outcome = busy.then(
        () => 'committed',
        (error: unknown) => error,
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      await terminateAll();
      expect(await outcome).toBeInstanceOf(Error);
      // The idle connection's error event, and a checked-out one's after its query failed, come later.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(uncaught).toEqual([]);
      expect(await db.get<{ one: number }>('SELECT 1 AS one')).toEqual({ one: 1 });
      expect(await db.transaction((client) => client.get<{ two: number }>('SELECT 2 AS two'))).toEqual({
        two: 2,
      });
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });
});
