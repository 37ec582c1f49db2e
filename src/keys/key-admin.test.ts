import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isSwitchboardError } from '../core/errors.js';
import { openLedger, type Ledger } from '../store/ledger.js';
import { issueVirtualKey, type IssueVirtualKeyOptions } from './key-admin.js';
import { loadKeySecret } from './key-secret.js';
import { KeyDirectory } from './virtual-keys.js';

let directory: string;
let ledger: Ledger;

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'switchboard-key-admin-'));
  ledger = openLedger({ stateDir: directory });
});

afterEach(async () => {
  await ledger.close();
  rmSync(directory, { recursive: true, force: true });
});

const secret = () => loadKeySecret({ stateDir: directory, env: {} });

async function refusal(options: Partial<IssueVirtualKeyOptions>): Promise<string> {
  const error = await issueVirtualKey({ ledger, secret: secret(), name: 'ci', ...options }).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!isSwitchboardError(error)) throw new Error(`expected a SwitchboardError, got ${String(error)}`);
  return `${error.code}: ${error.message}`;
}

describe('issueVirtualKey', () => {
  it('issues a key the directory accepts, listed without the key', async () => {
    const { key, listed } = await issueVirtualKey({
      ledger,
      secret: secret(),
      name: 'ci',
      tags: { team: 'web' },
      models: ['haiku'],
      rpm: 5,
      now: Date.now(),
    });
    expect(listed).toMatchObject({
      name: 'ci',
      prefix: key.slice(0, 12),
      models: ['haiku'],
      limits: { rpm: 5 },
    });
    expect(JSON.stringify(listed)).not.toContain(key);
    const keys = new KeyDirectory({ ledger, secret: secret() });
    try {
      const result = await keys.authenticate(key);
      expect(result.ok && result.key.id).toBe(listed.id);
    } finally {
      keys.close();
    }
  });

  it('refuses bad names, tags, models and limits, naming what is wrong', async () => {
    expect(await refusal({ name: 'key_123' })).toMatch(/^INVALID_INPUT: virtual key name "key_123"/);
    expect(await refusal({ name: 'has space' })).toMatch(/^INVALID_INPUT/);
    expect(await refusal({ tags: { 'switchboard.key': 'x' } })).toMatch(
      /^INVALID_INPUT: tag "switchboard.key"/,
    );
    expect(await refusal({ models: [] })).toMatch(/^INVALID_INPUT: the model list/);
    expect(await refusal({ rpm: 1.5 })).toMatch(/^INVALID_INPUT: Expected "rpm" to be a whole number/);
    expect(await refusal({ dailyUsd: -1 })).toMatch(/^INVALID_INPUT: Expected "dailyUsd"/);
    expect(await refusal({ expiresAt: Date.now() - 1 })).toMatch(/^INVALID_INPUT: Expected "expiresAt"/);
    expect(await ledger.listVirtualKeys()).toEqual([]);
  });
});
