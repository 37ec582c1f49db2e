import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase, POSTGRES_SKIP, type TestDatabase } from '../../../test/helpers/postgres.js';
import { PostgresDatabase } from './postgres-database.js';
import type { SqlDatabase } from './sql-database.js';
import { openSqliteDatabase } from '../database.js';

interface Backend {
  name: string;
  skip?: string;
  open(): Promise<SqlDatabase>;
  /** Another connection to the same database, as another process would have. */
  openAnother(): Promise<SqlDatabase>;
  cleanUp(): Promise<void>;
}

function sqliteBackend(): Backend {
  let folder: string | undefined;
  // The stores of one process share one connection per file (two would block each other's writes while
  // the event loop that could finish one is blocked waiting): "another" connection is another handle.
  const open = () => {
    folder ??= mkdtempSync(join(tmpdir(), 'sql-port-'));
    return Promise.resolve(openSqliteDatabase(join(folder, 'test.db')));
  };
  return {
    name: 'sqlite',
    open,
    openAnother: open,
    cleanUp: () => {
      if (folder !== undefined) rmSync(folder, { recursive: true, force: true });
      folder = undefined;
      return Promise.resolve();
    },
  };
}

function postgresBackend(): Backend {
  let database: TestDatabase | undefined;
  const open = async () => {
    database ??= await createTestDatabase();
    return PostgresDatabase.connect(database.url);
  };
  return {
    name: 'postgres',
    ...(POSTGRES_SKIP === undefined ? {} : { skip: POSTGRES_SKIP }),
    open,
    openAnother: open,
    cleanUp: async () => {
      await database?.drop();
      database = undefined;
    },
  };
}

describe.each([sqliteBackend(), postgresBackend()])('SqlDatabase on $name', (backend) => {
  let db: SqlDatabase;
  const opened: SqlDatabase[] = [];

  beforeAll(() => {
    if (backend.skip !== undefined) console.log(`skipped: ${backend.skip}`);
  });

  beforeEach(async (context) => {
    if (backend.skip !== undefined) context.skip();
    db = await backend.open();
    opened.push(db);
    await db.run(
      'CREATE TABLE items (id TEXT PRIMARY KEY, n BIGINT NOT NULL, price DOUBLE PRECISION, note TEXT)',
    );
  });

  afterEach(async () => {
    for (const each of opened.splice(0)) await each.close();
    await backend.cleanUp();
  });

  afterAll(async () => backend.cleanUp());

  it('binds ? and @name placeholders, leaves quoted ones alone, and reads big integers as numbers', async () => {
    await db.run('INSERT INTO items (id, n, price, note) VALUES (?, ?, ?, ?)', [
      'a',
      1_700_000_000_000,
      0.25,
      'what?',
    ]);
    await db.run("INSERT INTO items (id, n, price, note) VALUES (@id, @n, @price, '@not_a_param ?')", {
      id: 'b',
      n: 2,
      price: 1.5,
    });
    expect(await db.all('SELECT id, n, price, note FROM items ORDER BY id')).toEqual([
      { id: 'a', n: 1_700_000_000_000, price: 0.25, note: 'what?' },
      { id: 'b', n: 2, price: 1.5, note: '@not_a_param ?' },
    ]);
    expect(await db.get('SELECT count(*) AS count, sum(n) AS total FROM items')).toEqual({
      count: 2,
      total: 1_700_000_000_002,
    });
    expect(await db.get('SELECT id FROM items WHERE id = ?', ['zzz'])).toBeUndefined();
  });

  it('commits a transaction that resolves and rolls back one that rejects', async () => {
    await db.transaction(async (tx) => {
      await tx.run('INSERT INTO items (id, n) VALUES (?, ?)', ['kept', 1]);
    });
    await expect(
      db.transaction(async (tx) => {
        await tx.run('INSERT INTO items (id, n) VALUES (?, ?)', ['lost', 1]);
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect(await db.all('SELECT id FROM items')).toEqual([{ id: 'kept' }]);
  });

  it("keeps this process's other statements out of an open transaction", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const inside = db.transaction(async (tx) => {
      await tx.run('INSERT INTO items (id, n) VALUES (?, ?)', ['tx', 1]);
      await held;
      throw new Error('roll back');
    });
    // Issued while the transaction is open: must not become part of it (and so must survive its rollback).
    const outside = db.run('INSERT INTO items (id, n) VALUES (?, ?)', ['outside', 2]);
    release();
    await expect(inside).rejects.toThrow('roll back');
    await outside;
    expect(await db.all('SELECT id FROM items')).toEqual([{ id: 'outside' }]);
  });

  it('serialises read-then-write transactions across handles, so none of them loses an update', async () => {
    await db.run('INSERT INTO items (id, n) VALUES (?, ?)', ['counter', 0]);
    const others = await Promise.all([backend.openAnother(), backend.openAnother(), backend.openAnother()]);
    opened.push(...others);
    const bump = (each: SqlDatabase) =>
      each.transaction(
        async (tx) => {
          const row = await tx.get<{ n: number }>('SELECT n FROM items WHERE id = ?', ['counter']);
          await new Promise((resolve) => setTimeout(resolve, 2));
          await tx.run('UPDATE items SET n = ? WHERE id = ?', [row!.n + 1, 'counter']);
        },
        { lockKey: 'counter' },
      );
    await Promise.all(others.flatMap((each) => Array.from({ length: 5 }, () => bump(each))));
    expect(await db.get('SELECT n FROM items WHERE id = ?', ['counter'])).toEqual({ n: 15 });
  });

  it('supports the upsert and RETURNING forms the stores use', async () => {
    const upsert =
      'INSERT INTO items (id, n) VALUES (@id, @n) ON CONFLICT (id) DO UPDATE SET n = items.n + excluded.n RETURNING n';
    expect(await db.get(upsert, { id: 'x', n: 2 })).toEqual({ n: 2 });
    expect(await db.get(upsert, { id: 'x', n: 3 })).toEqual({ n: 5 });
    expect(
      (await db.run('INSERT INTO items (id, n) VALUES (?, ?) ON CONFLICT DO NOTHING', ['x', 9])).changes,
    ).toBe(0);
    expect((await db.run('DELETE FROM items WHERE id = ?', ['x'])).changes).toBe(1);
  });
});
