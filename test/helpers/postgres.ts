import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type * as Pg from 'pg';

/**
 * The run's PostgreSQL server (started by test/postgres-server.ts), or why there is none. Test files
 * that need it use `describe.skipIf(POSTGRES_SKIP !== undefined)` and make their own database.
 */
export const POSTGRES_ADMIN_URL = process.env.SWITCHBOARD_TEST_PG_ADMIN_URL;
export const POSTGRES_SKIP: string | undefined =
  POSTGRES_ADMIN_URL === undefined
    ? (process.env.SWITCHBOARD_TEST_PG_SKIP ?? 'no PostgreSQL server')
    : undefined;

const requirePackage = createRequire(import.meta.url);

/** Runs one statement as the server's admin. */
export async function adminQuery(sql: string, url = POSTGRES_ADMIN_URL): Promise<Pg.QueryResult> {
  if (url === undefined) throw new Error(POSTGRES_SKIP);
  const { Client } = requirePackage('pg') as typeof Pg;
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(sql);
  } finally {
    await client.end();
  }
}

export interface TestDatabase {
  /** postgres://… of a new, empty database. */
  url: string;
  name: string;
  /** Drops it, closing whatever connections are left. */
  drop(): Promise<void>;
}

/** A new empty database on the run's server, for one test or file. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `sb_test_${randomBytes(6).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${name}`);
  const url = new URL(POSTGRES_ADMIN_URL!);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: async () => {
      await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}
