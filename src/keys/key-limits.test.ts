import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase, POSTGRES_SKIP, type TestDatabase } from '../../test/helpers/postgres.js';
import { openLedger, type Ledger } from '../store/ledger.js';
import { KeyLimits, type KeyAdmission } from './key-limits.js';
import type { VirtualKey } from './virtual-keys.js';

function key(limits: VirtualKey['limits'], id = 'key_1'): VirtualKey {
  return { id, name: 'ci', tags: {}, models: undefined, limits, expiresAt: undefined };
}

/** A minute's start, so a test's requests fall in one window. */
const MINUTE = 1_800_000_000_000 - (1_800_000_000_000 % 60_000);

describe('KeyLimits in memory', () => {
  it('admits rpm requests a minute, synchronously, then refuses with 429 until the next minute', () => {
    const limits = new KeyLimits();
    const ci = key({ rpm: 3 });
    const results = Array.from({ length: 4 }, () => limits.admit(ci, MINUTE + 10_000) as KeyAdmission);
    expect(results.map((result) => result.ok)).toEqual([true, true, true, false]);
    expect(results[3]).toMatchObject({ status: 429, limit: 'rpm', retryAfterMs: 50_000 });
    expect(!results[3]!.ok && results[3]!.message).toMatch(
      /^virtual key ci reached its rpm limit .*try again in 50 s$/,
    );
    expect((limits.admit(ci, MINUTE + 60_000) as KeyAdmission).ok).toBe(true);
    // Another key has its own count.
    expect((limits.admit(key({ rpm: 3 }, 'key_2'), MINUTE + 10_000) as KeyAdmission).ok).toBe(true);
  });

  it('holds concurrency slots until release, and counts released tokens toward tpm', () => {
    let now = MINUTE;
    const limits = new KeyLimits({ _internal: { now: () => now } });
    const ci = key({ concurrency: 2, tpm: 100 });
    const first = limits.admit(ci) as KeyAdmission;
    const second = limits.admit(ci) as KeyAdmission;
    expect(limits.admit(ci)).toMatchObject({ ok: false, limit: 'concurrency' });
    if (!first.ok || !second.ok) throw new Error('expected admissions');
    first.release(60);
    first.release(60);
    expect((limits.admit(ci) as KeyAdmission).ok).toBe(true);
    second.release(40);
    // 100 tokens this minute: the next request waits for the next minute.
    expect(limits.admit(ci)).toMatchObject({ ok: false, limit: 'tpm' });
    now = MINUTE + 60_000;
    expect((limits.admit(ci) as KeyAdmission).ok).toBe(true);
  });

  it('lets everything through for a key with no limits', () => {
    const limits = new KeyLimits();
    for (let index = 0; index < 1000; index++) expect((limits.admit(key({})) as KeyAdmission).ok).toBe(true);
  });
});

describe('KeyLimits with shared counters that fail', () => {
  it('judges by its own counts when the counter fails or stalls, and says so', async () => {
    const errors: unknown[] = [];
    let stall = false;
    const ledger = {
      dialect: 'postgres' as const,
      countKeyUsage: () =>
        stall ? new Promise<never>(() => undefined) : Promise.reject(new Error('database down')),
      pruneKeyUsage: () => Promise.resolve(0),
    };
    const limits = new KeyLimits({ ledger, sharedTimeoutMs: 50, onError: (error) => errors.push(error) });
    const ci = key({ rpm: 2 });
    expect((await limits.admit(ci, MINUTE)).ok).toBe(true);
    stall = true;
    const started = Date.now();
    expect((await limits.admit(ci, MINUTE)).ok).toBe(true);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await limits.admit(ci, MINUTE)).toMatchObject({ ok: false, limit: 'rpm' });
    expect(errors.map(String)).toEqual([
      'Error: database down',
      'Error: the shared rate counter did not answer within 50 ms',
      'Error: the shared rate counter did not answer within 50 ms',
    ]);
  });
});

describe.skipIf(POSTGRES_SKIP !== undefined)('KeyLimits on PostgreSQL', () => {
  let database: TestDatabase | undefined;
  const ledgers: Ledger[] = [];
  afterEach(async () => {
    for (const ledger of ledgers.splice(0)) await ledger.close();
    await database?.drop();
    database = undefined;
  });

  /** Two gateways: two ledgers with pools of their own on one database, each with its KeyLimits. */
  async function twoGateways(): Promise<[KeyLimits, KeyLimits]> {
    database = await createTestDatabase();
    const first = openLedger({ url: database.url });
    const second = openLedger({ url: `${database.url}?application_name=second-gateway` });
    ledgers.push(first, second);
    await Promise.all([first.ready(), second.ready()]);
    return [new KeyLimits({ ledger: first }), new KeyLimits({ ledger: second })];
  }

  it('admits exactly rpm=5 requests across two instances racing', async () => {
    const [one, two] = await twoGateways();
    expect(one.shared && two.shared).toBe(true);
    const ci = key({ rpm: 5 });
    const now = Date.now();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, index) => (index % 2 === 0 ? one : two).admit(ci, now)),
    );
    expect(results.filter((result) => result.ok)).toHaveLength(5);
    expect(
      results.filter((result) => !result.ok).map((result) => !result.ok && [result.status, result.limit]),
    ).toEqual(Array.from({ length: 15 }, () => [429, 'rpm']));
  });

  it('shares tokens released in one instance with the other', async () => {
    const [one, two] = await twoGateways();
    const ci = key({ tpm: 1_000 });
    const admitted = await one.admit(ci);
    if (!admitted.ok) throw new Error('expected an admission');
    admitted.release(1_500);
    const deadline = Date.now() + 5_000;
    let result = await two.admit(ci);
    while (result.ok && Date.now() < deadline) {
      result.release(0);
      await new Promise((resolve) => setTimeout(resolve, 20));
      result = await two.admit(ci);
    }
    expect(result).toMatchObject({ ok: false, limit: 'tpm' });
  });
});
