import { afterEach, beforeEach } from 'vitest';
import { createTestDatabase, POSTGRES_SKIP, type TestDatabase } from './helpers/postgres.js';

// Setup file of the PostgreSQL pass (vitest.postgres.config.ts): the same test files run again with every
// store (ledger, agent runs, workflow runs) on the run's PostgreSQL server, through SWITCHBOARD_DATABASE_URL,
// which the CLI processes the tests start inherit too. Each test gets a fresh database, as each gets a
// fresh state folder (and so a fresh SQLite file) in the main pass.
if (POSTGRES_SKIP !== undefined) throw new Error(`the PostgreSQL pass needs a server: ${POSTGRES_SKIP}`);
let database: TestDatabase | undefined;
beforeEach(async () => {
  database = await createTestDatabase();
  process.env.SWITCHBOARD_DATABASE_URL = database.url;
});
afterEach(async () => {
  delete process.env.SWITCHBOARD_DATABASE_URL;
  await database?.drop();
  database = undefined;
});
