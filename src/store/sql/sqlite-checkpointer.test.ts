import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteConnection } from '../database.js';
import { startSqliteCheckpointer } from './sqlite-checkpointer.js';

// A serve's commits no longer pay for WAL checkpoints: a worker folds the log into the file, the
// connection checkpoints nothing itself, and the log is gone once both close.

let folder: string;
beforeEach(() => {
  folder = mkdtempSync(join(tmpdir(), 'switchboard-checkpointer-'));
});
afterEach(() => rmSync(folder, { recursive: true, force: true }));

const until = async (done: () => boolean, timeoutMs = 5000) => {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

describe('startSqliteCheckpointer', () => {
  it('moves committed pages into the database file from a worker, the connection checkpointing none', async () => {
    const file = join(folder, 'ledger.db');
    const connection = openSqliteConnection(file);
    const checkpointer = startSqliteCheckpointer(file, connection, { intervalMs: 20 });
    try {
      await until(() => connection.pragma('wal_autocheckpoint', { simple: true }) === 0);
      connection.exec('CREATE TABLE filler (text TEXT)');
      const sizeBefore = statSync(file).size;
      // About 100 pages: far below the 1,000 at which the connection would checkpoint by itself.
      const insert = connection.prepare('INSERT INTO filler (text) VALUES (?)');
      for (let row = 0; row < 100; row++) insert.run('x'.repeat(4000));
      await until(() => statSync(file).size >= sizeBefore + 100 * 4000);
    } finally {
      await checkpointer.stop();
      connection.close();
    }
    expect(existsSync(`${file}-wal`)).toBe(false);
    const reopened = openSqliteConnection(file);
    expect(reopened.prepare('SELECT count(*) AS rows FROM filler').get()).toEqual({ rows: 100 });
    reopened.close();
  });

  it('leaves the checkpoints to the connection when stopped before its worker started', async () => {
    const file = join(folder, 'ledger.db');
    const connection = openSqliteConnection(file);
    await startSqliteCheckpointer(file, connection).stop();
    expect(connection.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    connection.close();
  });
});
