import { describe, expect, it } from 'vitest';
import { toStoreError } from './database.js';

// A ledger that cannot be written (full, read-only) is told apart from other store errors: before a call
// it refuses the call (exit 75), after an answer it is a warning. Each backend's own words for it.

const driverError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe('toStoreError', () => {
  it.each([
    ['SQLITE_FULL', 'database or disk is full', 'full'],
    ['SQLITE_READONLY', 'attempt to write a readonly database', 'read-only'],
    ['SQLITE_READONLY_DBMOVED', 'attempt to write a readonly database', 'read-only'],
    ['ENOSPC', 'no space left on device', 'full'],
    ['EROFS', 'read-only file system', 'read-only'],
  ])('makes SQLite %s LEDGER_UNWRITABLE (%s)', (code, message, reason) => {
    const error = toStoreError(driverError(code, message), '/state/ledger.db', 'cannot reserve budget in');
    expect(error).toMatchObject({
      code: 'LEDGER_UNWRITABLE',
      message: `cannot reserve budget in /state/ledger.db: ${message}`,
      details: { reason },
    });
    expect(error.hint).toBe(
      reason === 'full'
        ? 'free disk space on /state'
        : 'make /state writable, or choose another state folder with --state-dir',
    );
  });

  it.each([
    ['53100', 'could not extend file: No space left on device', /free disk space on the database server/],
    ['25006', 'cannot execute INSERT in a read-only transaction', /accepts no writes .*primary/],
  ])('makes PostgreSQL %s LEDGER_UNWRITABLE', (code, message, hint) => {
    const error = toStoreError(
      driverError(code, message),
      'postgres://u@db/switchboard',
      'cannot record a call attempt in',
    );
    expect(error).toMatchObject({ code: 'LEDGER_UNWRITABLE', details: { sqlState: code } });
    expect(error.hint).toMatch(hint);
  });

  it('leaves other failures STORE_ERROR', () => {
    expect(
      toStoreError(driverError('SQLITE_CORRUPT', 'database disk image is malformed'), '/s/l.db', 'x'),
    ).toMatchObject({
      code: 'STORE_ERROR',
    });
  });
});
