import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/core/errors.js';
import { loadKeySecret } from '../src/keys/key-secret.js';
import { KeyDirectory } from '../src/keys/virtual-keys.js';
import { openLedger } from '../src/store/ledger.js';
import { createTestDatabase, POSTGRES_SKIP } from './helpers/postgres.js';
import { runCli, type CliRun } from './helpers/run-cli.js';

// `switchboard keys` as a user runs it: the built CLI on a real SQLite ledger in a temporary state
// folder, its keys checked by the KeyDirectory the gateway uses.

const temporary: string[] = [];
afterAll(() => {
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

function workspace(): { cwd: string; stateDir: string } {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-keys-cli-')));
  temporary.push(cwd);
  return { cwd, stateDir: join(cwd, 'state') };
}

function keys(
  args: string[],
  { cwd, stateDir }: { cwd: string; stateDir: string },
  extra: NodeJS.ProcessEnv = {},
): Promise<CliRun> {
  const env = { ...process.env };
  delete env.SWITCHBOARD_DATABASE_URL;
  delete env.SWITCHBOARD_KEY_SECRET;
  return runCli(['--state-dir', stateDir, 'keys', ...args], { cwd, env: { ...env, ...extra } });
}

/** Every byte the state folder holds but the secret: the ledger and its WAL files. */
function ledgerBytes(stateDir: string): string {
  return readdirSync(stateDir)
    .filter((name) => name !== 'key-secret')
    .map((name) => readFileSync(join(stateDir, name)).toString('latin1'))
    .join('');
}

async function directoryOn(stateDir: string, refreshMs = 60_000) {
  const ledger = openLedger({ stateDir });
  const directory = new KeyDirectory({ ledger, secret: loadKeySecret({ stateDir, env: {} }), refreshMs });
  await directory.ready();
  return {
    directory,
    close: async () => {
      directory.close();
      await ledger.close();
    },
  };
}

describe('switchboard keys', () => {
  it('prints a new key once; the gateway accepts it; list, the ledger and stderr never show it', async () => {
    const place = workspace();
    const created = await keys(
      [
        'create',
        '--name',
        'ci',
        '--tag',
        'team=web',
        '--tag',
        'env=staging',
        '--models',
        'sonnet,haiku',
        '--daily-usd',
        '5',
        '--rpm',
        '60',
        '--tpm',
        '100000',
        '--concurrency',
        '4',
        '--expires',
        '30d',
      ],
      place,
    );
    expect(created.status, created.stderr).toBe(0);
    const key = created.stdout.trim();
    expect(created.stdout).toBe(`${key}\n`);
    expect(key).toMatch(/^sbk_[A-Za-z0-9_-]{43}$/);
    expect(created.stderr).toMatch(/shown only this once/);
    expect(created.stderr).toContain('ANTHROPIC_AUTH_TOKEN=<key> ANTHROPIC_BASE_URL=http://127.0.0.1:8787');
    expect(created.stderr).not.toContain(key);
    expect(statSync(join(place.stateDir, 'key-secret')).mode & 0o777).toBe(0o600);

    const gateway = await directoryOn(place.stateDir);
    try {
      const accepted = await gateway.directory.authenticate(key);
      expect(accepted.ok && accepted.key).toMatchObject({
        name: 'ci',
        tags: { team: 'web', env: 'staging' },
        models: ['sonnet', 'haiku'],
        limits: { dailyUsd: 5, rpm: 60, tpm: 100_000, concurrency: 4 },
      });
      const expiresIn = accepted.ok ? (accepted.key.expiresAt ?? 0) - Date.now() : 0;
      expect(expiresIn).toBeGreaterThan(29.9 * 86_400_000);
      expect(expiresIn).toBeLessThanOrEqual(30 * 86_400_000);
      // One character off is another key.
      const other = `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`;
      expect(await gateway.directory.authenticate(other)).toMatchObject({ ok: false, reason: 'unknown' });
    } finally {
      await gateway.close();
    }

    const listed = await keys(['list', '--json'], place);
    expect(listed.status, listed.stderr).toBe(0);
    const rows = JSON.parse(listed.stdout) as Record<string, unknown>[];
    expect(rows).toEqual([
      expect.objectContaining({
        name: 'ci',
        prefix: key.slice(0, 12),
        tags: { team: 'web', env: 'staging' },
        models: ['sonnet', 'haiku'],
        limits: { dailyUsd: 5, rpm: 60, tpm: 100_000, concurrency: 4 },
        revoked: null,
      }),
    ]);
    expect(Object.keys(rows[0]!)).not.toContain('hash');
    expect(listed.stdout).not.toContain(key.slice(12));
    const plain = await keys(['list'], place);
    expect(plain.stdout).toMatch(
      /^ci {2}key_\S+ {2}sbk_\S{8}… {2}team=web,env=staging {2}models sonnet,haiku/,
    );
    expect(plain.stdout).not.toContain(key.slice(12));
    // The ledger file holds the prefix, never the key.
    const bytes = ledgerBytes(place.stateDir);
    expect(bytes).toContain(key.slice(0, 12));
    expect(bytes).not.toContain(key);
    expect(bytes).not.toContain(key.slice(12));
  });

  it('--json prints the key with its id and limits, once', async () => {
    const place = workspace();
    const created = await keys(['create', '--name', 'bot', '--rpm', '10', '--json'], place);
    expect(created.status, created.stderr).toBe(0);
    const printed = JSON.parse(created.stdout) as { id: string; name: string; key: string; limits: unknown };
    expect(printed).toMatchObject({ name: 'bot', limits: { rpm: 10 }, models: null, expires: null });
    expect(printed.id).toMatch(/^key_/);
    expect(printed.key).toMatch(/^sbk_/);
    expect(ledgerBytes(place.stateDir)).not.toContain(printed.key);
  });

  it('a key revoked by the CLI is refused by a running gateway within its refresh', async () => {
    const place = workspace();
    const key = (await keys(['create', '--name', 'ci'], place)).stdout.trim();
    const gateway = await directoryOn(place.stateDir, 100);
    try {
      expect((await gateway.directory.authenticate(key)).ok).toBe(true);
      const revoked = await keys(['revoke', 'ci'], place);
      expect(revoked.status, revoked.stderr).toBe(0);
      expect(revoked.stdout).toBe('revoked virtual key ci\n');
      const started = Date.now();
      let result = await gateway.directory.authenticate(key);
      while (result.ok && Date.now() - started < 5_000) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        result = await gateway.directory.authenticate(key);
      }
      expect(result).toMatchObject({ ok: false, reason: 'revoked' });
      expect(Date.now() - started).toBeLessThan(2_000);
      const listed = JSON.parse((await keys(['list', '--json'], place)).stdout) as {
        revoked: string | null;
      }[];
      expect(listed[0]?.revoked).toMatch(/^\d{4}-/);
    } finally {
      await gateway.close();
    }
  });

  it('an expired key is refused', async () => {
    const place = workspace();
    const key = (await keys(['create', '--name', 'brief', '--expires', '1m'], place)).stdout.trim();
    const gateway = await directoryOn(place.stateDir);
    try {
      expect((await gateway.directory.authenticate(key)).ok).toBe(true);
      const later = await gateway.directory.authenticate(key, Date.now() + 61_000);
      expect(later).toMatchObject({ ok: false, reason: 'expired' });
      expect(!later.ok && later.message).toMatch(/^virtual key brief expired at /);
    } finally {
      await gateway.close();
    }
  });

  it('bad input is one line with a hint and its own exit code', async () => {
    const place = workspace();
    expect((await keys(['create', '--name', 'ci'], place)).status).toBe(0);
    const taken = await keys(['create', '--name', 'ci'], place);
    expect(taken.status).toBe(EXIT_CODES.KEY_EXISTS);
    expect(taken.stderr).toMatch(/^switchboard: a virtual key named ci exists already .*\(.+\)\n$/);
    expect(taken.stdout).toBe('');
    const missing = await keys(['revoke', 'nope'], place);
    expect(missing.status).toBe(EXIT_CODES.KEY_NOT_FOUND);
    expect(missing.stderr).toMatch(/^switchboard: there is no virtual key named nope .*keys list.*\n$/);
    for (const args of [
      ['--expires', '3w'],
      ['--rpm', '0'],
      ['--daily-usd', 'lots'],
      ['--tag', 'team'],
      ['--models', 'sonnet,,haiku'],
    ]) {
      const result = await keys(['create', '--name', 'other', ...args], place);
      expect(result.status, args.join(' ')).toBe(EXIT_CODES.INVALID_INPUT);
      expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
    }
    const badName = await keys(['create', '--name', 'key_1'], place);
    expect(badName.status).toBe(EXIT_CODES.INVALID_INPUT);
    expect(badName.stderr).toMatch(/not valid \(use letters/);
    const listed = JSON.parse((await keys(['list', '--json'], place)).stdout) as unknown[];
    expect(listed).toHaveLength(1);
  });

  it.skipIf(POSTGRES_SKIP !== undefined)(
    'on PostgreSQL with SWITCHBOARD_KEY_SECRET, a key made on one machine works on another',
    async () => {
      const database = await createTestDatabase();
      try {
        const secret = 'a-shared-secret-of-at-least-32-characters';
        const env = { SWITCHBOARD_DATABASE_URL: database.url, SWITCHBOARD_KEY_SECRET: secret };
        const place = workspace();
        const created = await keys(['create', '--name', 'ci', '--rpm', '5'], place, env);
        expect(created.status, created.stderr).toBe(0);
        const key = created.stdout.trim();
        // Nothing in the state folder: neither a SQLite ledger nor a secret file.
        expect(existsSync(place.stateDir) ? readdirSync(place.stateDir) : []).toEqual([]);
        const listed = await keys(['list', '--json'], place, env);
        expect(JSON.parse(listed.stdout)).toEqual([
          expect.objectContaining({ name: 'ci', limits: { rpm: 5 } }),
        ]);

        const ledger = openLedger({ url: database.url });
        const elsewhere = workspace().stateDir;
        const directory = new KeyDirectory({
          ledger,
          secret: loadKeySecret({ stateDir: elsewhere, env: { SWITCHBOARD_KEY_SECRET: secret } }),
        });
        try {
          expect((await directory.authenticate(key)).ok).toBe(true);
        } finally {
          directory.close();
          await ledger.close();
        }
        expect((await keys(['revoke', 'ci'], place, env)).status).toBe(0);
      } finally {
        await database.drop();
      }
    },
  );
});
