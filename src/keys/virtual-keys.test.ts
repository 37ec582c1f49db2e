import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isSwitchboardError } from '../core/errors.js';
import { timeOrderedId } from '../core/time-ordered-id.js';
import { reserveBudget } from '../invoke/budget.js';
import { callAttempt } from '../store/__fixtures__/call-attempt.js';
import { openLedger, type Ledger, type VirtualKeyRecord } from '../store/ledger.js';
import { generateVirtualKey, hashVirtualKey, loadKeySecret, virtualKeyPrefix } from './key-secret.js';
import { KeyDirectory, keyBudgetRules, keyTags, readPresentedKey, type VirtualKey } from './virtual-keys.js';

let directory: string;
let ledger: Ledger;
const directories: KeyDirectory[] = [];

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'switchboard-key-directory-'));
  ledger = openLedger({ stateDir: directory });
});

afterEach(async () => {
  for (const keys of directories.splice(0)) keys.close();
  await ledger.close();
  rmSync(directory, { recursive: true, force: true });
});

const secret = () => loadKeySecret({ stateDir: directory, env: {} });

/** Creates a key in the ledger the way `keys create` does; returns the key text. */
async function createKey(name: string, overrides: Partial<VirtualKeyRecord> = {}): Promise<string> {
  const key = generateVirtualKey();
  await ledger.createVirtualKey({
    id: `key_${timeOrderedId()}`,
    name,
    hash: hashVirtualKey(key, secret()),
    prefix: virtualKeyPrefix(key),
    tags: { team: 'web' },
    createdAt: Date.now(),
    ...overrides,
  });
  return key;
}

/** The ledger with its key reads counted. */
function counting(): {
  ledger: Pick<Ledger, 'listVirtualKeys' | 'findVirtualKey'>;
  lists: number;
  finds: number;
} {
  const counts = {
    lists: 0,
    finds: 0,
    ledger: {
      listVirtualKeys: () => {
        counts.lists += 1;
        return ledger.listVirtualKeys();
      },
      findVirtualKey: (hash: string) => {
        counts.finds += 1;
        return ledger.findVirtualKey(hash);
      },
    },
  };
  return counts;
}

function open(
  options: { refreshMs?: number; ledger?: Pick<Ledger, 'listVirtualKeys' | 'findVirtualKey'> } = {},
) {
  const keys = new KeyDirectory({ ledger, secret: secret(), ...options });
  directories.push(keys);
  return keys;
}

describe('KeyDirectory', () => {
  it('accepts a key it holds without reading the database, and refuses a missing or unknown one', async () => {
    const key = await createKey('ci', { models: ['sonnet'], rpm: 60, dailyUsd: 5 });
    const counts = counting();
    const keys = open({ ledger: counts.ledger, refreshMs: 60_000 });
    await keys.ready();
    const listsAtStart = counts.lists;
    for (let index = 0; index < 100; index++) {
      const result = await keys.authenticate(key);
      expect(result.ok).toBe(true);
    }
    expect([counts.lists - listsAtStart, counts.finds]).toEqual([0, 0]);
    const accepted = await keys.authenticate(key);
    expect(accepted.ok && accepted.key).toMatchObject({
      name: 'ci',
      tags: { team: 'web' },
      models: ['sonnet'],
      limits: { rpm: 60, dailyUsd: 5 },
      expiresAt: undefined,
    });
    expect(JSON.stringify(accepted)).not.toContain(key);

    expect(await keys.authenticate(undefined)).toMatchObject({ ok: false, reason: 'missing' });
    expect(await keys.authenticate('sk-ant-not-ours')).toMatchObject({ ok: false, reason: 'unknown' });
    expect(await keys.authenticate(generateVirtualKey())).toMatchObject({ ok: false, reason: 'unknown' });
  });

  it('refuses a key revoked by another process within the refresh, and an expired one', async () => {
    const key = await createKey('ci');
    const expired = await createKey('old', { expiresAt: Date.now() - 1 });
    const keys = open({ refreshMs: 50 });
    expect((await keys.authenticate(key)).ok).toBe(true);
    expect(await keys.authenticate(expired)).toMatchObject({ ok: false, reason: 'expired' });
    // Another process: its own ledger handle on the same file.
    const other = openLedger({ stateDir: directory });
    expect(await other.revokeVirtualKey('ci', Date.now())).toBe(true);
    await other.close();
    const deadline = Date.now() + 5_000;
    let result = await keys.authenticate(key);
    while (result.ok && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      result = await keys.authenticate(key);
    }
    expect(result).toMatchObject({ ok: false, reason: 'revoked' });
    expect(!result.ok && result.message).toMatch(/^virtual key ci was revoked/);
  });

  it('finds a key created after it loaded with one lookup, and bounds lookups of random keys', async () => {
    const counts = counting();
    const keys = open({ ledger: counts.ledger, refreshMs: 60_000 });
    await keys.ready();
    const late = await createKey('late');
    expect((await keys.authenticate(late)).ok).toBe(true);
    expect((await keys.authenticate(late)).ok).toBe(true);
    expect(counts.finds).toBe(1);

    // The same bad key again and again: looked up once.
    const bad = generateVirtualKey();
    for (let index = 0; index < 50; index++) await keys.authenticate(bad);
    expect(counts.finds).toBe(2);
    // A flood of distinct random keys: at most 32 lookups until the next refresh.
    await Promise.all(Array.from({ length: 500 }, () => keys.authenticate(generateVirtualKey())));
    expect(counts.finds).toBeLessThanOrEqual(32);
  });
});

describe('KeyDirectory while the ledger fails', () => {
  it('keeps the keys it loaded when a refresh fails, and loads again after a failed start', async () => {
    const key = await createKey('ci');
    let down = true;
    const flaky = {
      listVirtualKeys: () => (down ? Promise.reject(new Error('database down')) : ledger.listVirtualKeys()),
      findVirtualKey: (hash: string) => ledger.findVirtualKey(hash),
    };
    const keys = open({ ledger: flaky, refreshMs: 60_000 });
    await expect(keys.ready()).rejects.toThrow('database down');
    await expect(keys.authenticate(key)).rejects.toThrow('database down');
    down = false;
    expect((await keys.authenticate(key)).ok).toBe(true);
    down = true;
    await expect(keys.refresh()).rejects.toThrow('database down');
    expect(keys.lastRefreshError).toBeInstanceOf(Error);
    expect((await keys.authenticate(key)).ok).toBe(true);
  });

  it('refuses a key it cannot look up in time as unknown, rather than hold the request', async () => {
    const stalled = {
      listVirtualKeys: () => ledger.listVirtualKeys(),
      findVirtualKey: () => new Promise<undefined>(() => undefined),
    };
    const keys = new KeyDirectory({ ledger: stalled, secret: secret(), lookupTimeoutMs: 50 });
    directories.push(keys);
    await keys.ready();
    const started = Date.now();
    expect(await keys.authenticate(generateVirtualKey())).toMatchObject({ ok: false, reason: 'unknown' });
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});

describe('what a key adds to a call', () => {
  const key: VirtualKey = {
    id: 'key_1',
    name: 'ci',
    tags: { team: 'web', 'switchboard.key': 'spoofed' },
    models: ['sonnet', 'claude-haiku-4-5'],
    limits: { dailyUsd: 5 },
    expiresAt: undefined,
  };

  it('tags every call with the key id and caps its day', () => {
    expect(keyTags(key)).toEqual({ team: 'web', 'switchboard.key': 'key_1' });
    expect(keyBudgetRules(key)).toEqual([{ tag: 'switchboard.key=key_1', dailyUsd: 5 }]);
    expect(keyBudgetRules({ ...key, limits: {} })).toEqual([]);
  });

  it("holds what the key spends to its daily cap through the ledger's budgets, other keys apart", async () => {
    const rules = keyBudgetRules({ ...key, limits: { dailyUsd: 1 } });
    const attempt = (id: string, tags: Record<string, string>) => ({
      id,
      provider: 'openai',
      model: 'gpt-4.1-mini',
      tags,
      estimateUsd: 0.01,
      now: Date.now(),
    });
    await ledger.recordCallAttempt(callAttempt('spent', 1.5, { tags: keyTags(key) }));
    await ledger.flush();
    const refused = await reserveBudget(ledger, rules, attempt('next', keyTags(key))).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isSwitchboardError(refused) && refused.code).toBe('BUDGET_EXCEEDED');
    // Another key's calls are not under this cap.
    const other = await reserveBudget(ledger, rules, attempt('other', keyTags({ ...key, id: 'key_2' })));
    await other.release();
  });

  it('reads the key from x-api-key or Authorization: Bearer, as Claude Code sends it', () => {
    expect(readPresentedKey({ 'x-api-key': 'sbk_a' })).toBe('sbk_a');
    expect(readPresentedKey({ authorization: 'Bearer sbk_b' })).toBe('sbk_b');
    expect(readPresentedKey({ authorization: 'bearer  sbk_c ' })).toBe('sbk_c');
    expect(readPresentedKey(new Headers({ Authorization: 'Bearer sbk_d' }))).toBe('sbk_d');
    expect(readPresentedKey(new Headers({ 'X-Api-Key': 'sbk_e', Authorization: 'Bearer sbk_f' }))).toBe(
      'sbk_e',
    );
    expect(readPresentedKey({ authorization: 'Basic abc' })).toBeUndefined();
    expect(readPresentedKey({})).toBeUndefined();
  });
});
