import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isSwitchboardError } from '../core/errors.js';
import { createTestDatabase, POSTGRES_SKIP, type TestDatabase } from '../../test/helpers/postgres.js';
import { openLedger, type Ledger, type VirtualKeyRecord } from './ledger.js';
import { callAttempt } from './__fixtures__/call-attempt.js';

// Virtual keys in the ledger, on both backends: the same statements run on a SQLite file and on a
// fresh PostgreSQL database per test.
let directory: string;
let database: TestDatabase | undefined;
const opened: Ledger[] = [];

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'switchboard-virtual-keys-'));
});

afterEach(async () => {
  for (const ledger of opened.splice(0)) await ledger.close();
  await database?.drop();
  database = undefined;
  rmSync(directory, { recursive: true, force: true });
});

const backends = [
  { name: 'sqlite', skip: undefined },
  { name: 'postgres', skip: POSTGRES_SKIP },
] as const;

function record(overrides: Partial<VirtualKeyRecord> = {}): VirtualKeyRecord {
  return {
    id: 'key_0001',
    name: 'ci',
    hash: 'a'.repeat(64),
    prefix: 'sbk_abcdefgh',
    tags: { team: 'web' },
    createdAt: 1_000,
    ...overrides,
  };
}

describe.each(backends)('virtual keys on $name', ({ name, skip }) => {
  async function open(): Promise<Ledger> {
    if (name === 'postgres') database ??= await createTestDatabase();
    const ledger =
      name === 'postgres'
        ? openLedger({ url: database!.url })
        : openLedger({ stateDir: join(directory, 'state') });
    opened.push(ledger);
    await ledger.ready();
    return ledger;
  }

  it.skipIf(skip !== undefined)('stores, lists, finds by hash and revokes a key', async () => {
    const ledger = await open();
    const full = record({
      models: ['sonnet', 'haiku'],
      dailyUsd: 5.5,
      rpm: 60,
      tpm: 100_000,
      concurrency: 4,
      expiresAt: 1_700_000_000_000,
    });
    await ledger.createVirtualKey(full);
    await ledger.createVirtualKey(record({ id: 'key_0002', name: 'plain', hash: 'b'.repeat(64), tags: {} }));
    expect(await ledger.listVirtualKeys()).toEqual([
      full,
      record({ id: 'key_0002', name: 'plain', hash: 'b'.repeat(64), tags: {} }),
    ]);
    expect(await ledger.findVirtualKey('a'.repeat(64))).toEqual(full);
    expect(await ledger.findVirtualKey('c'.repeat(64))).toBeUndefined();

    expect(await ledger.revokeVirtualKey('ci', 5_000)).toBe(true);
    expect(await ledger.revokeVirtualKey('key_0002', 6_000)).toBe(true);
    // A second revoke keeps the first time.
    expect(await ledger.revokeVirtualKey('key_0001', 9_000)).toBe(true);
    expect(await ledger.revokeVirtualKey('nope', 9_000)).toBe(false);
    expect((await ledger.listVirtualKeys()).map((key) => key.revokedAt)).toEqual([5_000, 6_000]);
  });

  it.skipIf(skip !== undefined)('refuses a name that is taken, revoked or not, with KEY_EXISTS', async () => {
    const ledger = await open();
    await ledger.createVirtualKey(record());
    await ledger.revokeVirtualKey('ci', 2_000);
    const error = await ledger.createVirtualKey(record({ id: 'key_0003', hash: 'd'.repeat(64) })).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(isSwitchboardError(error) && error.code).toBe('KEY_EXISTS');
    expect((await ledger.listVirtualKeys()).map((key) => key.id)).toEqual(['key_0001']);
  });

  it.skipIf(skip !== undefined)('counts usage per window atomically, many at once', async () => {
    const ledger = await open();
    const totals = await Promise.all(
      Array.from({ length: 40 }, () => ledger.countKeyUsage('key_0001', 60_000, 1, 10)),
    );
    expect(totals.map((total) => total.requests).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 40 }, (_, index) => index + 1),
    );
    expect(await ledger.countKeyUsage('key_0001', 60_000, 0, 5)).toEqual({ requests: 40, tokens: 405 });
    expect(await ledger.countKeyUsage('key_0001', 120_000, 1, 0)).toEqual({ requests: 1, tokens: 0 });
    expect(await ledger.countKeyUsage('key_0002', 60_000, 1, 0)).toEqual({ requests: 1, tokens: 0 });
    expect(await ledger.pruneKeyUsage(120_000)).toBe(2);
    expect(await ledger.countKeyUsage('key_0001', 120_000, 0, 0)).toEqual({ requests: 1, tokens: 0 });
  });

  it.skipIf(skip !== undefined)(
    'filters spending by a tag whose name has a dot (switchboard.key)',
    async () => {
      const ledger = await open();
      await ledger.recordCallAttempt(callAttempt('a1', 0.25, { tags: { 'switchboard.key': 'key_0001' } }));
      await ledger.recordCallAttempt(callAttempt('a2', 0.5, { tags: { 'switchboard.key': 'key_0002' } }));
      await ledger.flush();
      expect(await ledger.spendSince(0, { tag: 'switchboard.key=key_0001' })).toBeCloseTo(0.25);
      expect(await ledger.spendSince(0, { tag: 'switchboard.key=key_0003' })).toBe(0);
    },
  );
});
