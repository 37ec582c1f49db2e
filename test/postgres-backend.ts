import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, expect } from 'vitest';
import {
  createTestDatabase,
  POSTGRES_ADMIN_URL,
  POSTGRES_SKIP,
  type TestDatabase,
} from './helpers/postgres.js';

// Setup file of the PostgreSQL pass (the `postgres` project in vitest.config.ts): the same test files run again with every
// store (ledger, agent runs, workflow runs) on the run's PostgreSQL server, through SWITCHBOARD_DATABASE_URL,
// which the CLI processes the tests start inherit too. Each test gets a fresh database, as each gets a
// fresh state folder (and so a fresh SQLite file) in the main pass.
if (POSTGRES_SKIP !== undefined) throw new Error(`the PostgreSQL pass needs a server: ${POSTGRES_SKIP}`);
// Read by test files that check, in this pass only, that their rows reached PostgreSQL.
process.env.SWITCHBOARD_TEST_PG_PASS = '1';
let database: TestDatabase | undefined;
// What a test file does in its own beforeAll (a baseline run) goes to PostgreSQL as well, to a database
// of the file's: without it that work wrote SQLite files, which the check below then found.
let fileDatabase: TestDatabase | undefined;
beforeAll(async () => {
  fileDatabase = await createTestDatabase();
  process.env.SWITCHBOARD_DATABASE_URL = fileDatabase.url;
});
afterAll(async () => {
  delete process.env.SWITCHBOARD_DATABASE_URL;
  await fileDatabase?.drop();
  fileDatabase = undefined;
});
beforeEach(async () => {
  database = await createTestDatabase();
  process.env.SWITCHBOARD_DATABASE_URL = database.url;
});
afterEach(async () => {
  // A store that did not follow the URL wrote a SQLite file instead: the test passed on the wrong
  // database. Look where one would land: this file's temporary folders and the current folder (where a
  // URL taken for a path becomes ./postgres:/…, password in the name).
  const password = new URL(POSTGRES_ADMIN_URL!).password;
  const strays = [
    ...sqliteStrays(process.env.TMPDIR ?? '', 4, password),
    ...sqliteStrays(process.cwd(), 1, password),
  ];
  expect(strays, 'SQLite files written during the PostgreSQL pass').toEqual([]);
  if (fileDatabase === undefined) delete process.env.SWITCHBOARD_DATABASE_URL;
  else process.env.SWITCHBOARD_DATABASE_URL = fileDatabase.url;
  await database?.drop();
  database = undefined;
});

/** Ledger files, `postgres:` folders and names holding the password, `depth` levels down (not into .git or node_modules). */
function sqliteStrays(folder: string, depth: number, password: string): string[] {
  if (folder === '' || depth === 0) return [];
  let entries;
  try {
    entries = readdirSync(folder, { withFileTypes: true });
  } catch {
    return [];
  }
  const found: string[] = [];
  for (const entry of entries) {
    const path = join(folder, entry.name);
    if (
      /^ledger\.db|^postgres(?:ql)?:/.test(entry.name) ||
      (password !== '' && entry.name.includes(password))
    ) {
      found.push(path);
    } else if (entry.isDirectory() && entry.name !== '.git' && entry.name !== 'node_modules') {
      found.push(...sqliteStrays(path, depth - 1, password));
    }
  }
  return found;
}
