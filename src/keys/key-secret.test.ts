import { fork } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { isSwitchboardError } from '../core/errors.js';
import {
  generateVirtualKey,
  hashVirtualKey,
  KEY_SECRET_FILE_NAME,
  loadKeySecret,
  virtualKeyPrefix,
} from './key-secret.js';

function stateDir(): string {
  return mkdtempSync(join(tmpdir(), 'switchboard-keys-'));
}

function failure(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  throw new Error('expected a failure');
}

describe('virtual keys and the server secret', () => {
  it('generates distinct sbk_ keys of 43 base64url characters, shown by their first 12', () => {
    const key = generateVirtualKey();
    expect(key).toMatch(/^sbk_[A-Za-z0-9_-]{43}$/);
    expect(generateVirtualKey()).not.toBe(key);
    expect(virtualKeyPrefix(key)).toBe(key.slice(0, 12));
  });

  it('creates the secret file 0600 once, reads the same back, and never shows it', () => {
    const directory = join(stateDir(), 'nested', 'state');
    const first = loadKeySecret({ stateDir: directory, env: {} });
    const file = join(directory, KEY_SECRET_FILE_NAME);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const again = loadKeySecret({ stateDir: directory, env: {} });
    expect(hashVirtualKey('sbk_x', again)).toBe(hashVirtualKey('sbk_x', first));
    expect(hashVirtualKey('sbk_x', first)).toMatch(/^[0-9a-f]{64}$/);
    const content = readFileSync(file, 'utf8').trim();
    expect(inspect(first) + JSON.stringify(first) + String(first)).not.toContain(content);
    // Only the file: no temporary file left behind.
    expect(readdirSync(directory)).toEqual([KEY_SECRET_FILE_NAME]);
    // The file's content works as SWITCHBOARD_KEY_SECRET on another machine.
    const fromEnv = loadKeySecret({ stateDir: stateDir(), env: { SWITCHBOARD_KEY_SECRET: content } });
    expect(hashVirtualKey('sbk_x', fromEnv)).toBe(hashVirtualKey('sbk_x', first));
  });

  it('refuses a SWITCHBOARD_KEY_SECRET shorter than 32 characters in one line with a hint', () => {
    const error = failure(() =>
      loadKeySecret({ stateDir: stateDir(), env: { SWITCHBOARD_KEY_SECRET: 'short' } }),
    );
    expect(isSwitchboardError(error) && error.code).toBe('INVALID_INPUT');
    expect(String((error as Error).message)).not.toContain('\n');
    expect((error as { hint?: string }).hint).toMatch(/at least|32 or more/);
  });

  it('refuses a secret file other users can read, and a damaged one', () => {
    const directory = stateDir();
    const file = join(directory, KEY_SECRET_FILE_NAME);
    writeFileSync(file, 'x'.repeat(64), { mode: 0o644 });
    chmodSync(file, 0o644);
    const open = failure(() => loadKeySecret({ stateDir: directory, env: {} }));
    expect(isSwitchboardError(open) && open.hint).toMatch(/chmod 600/);
    writeFileSync(file, 'short');
    chmodSync(file, 0o600);
    const damaged = failure(() => loadKeySecret({ stateDir: directory, env: {} }));
    expect(isSwitchboardError(damaged) && damaged.message).toMatch(/damaged/);
  });

  it('gives 8 processes racing to create the file one secret', async () => {
    const directory = stateDir();
    const script = fileURLToPath(new URL('./__fixtures__/load-secret.mjs', import.meta.url));
    const children = Array.from({ length: 8 }, () =>
      fork(script, [directory], {
        execPath: process.execPath,
        execArgv: ['--experimental-strip-types', '--disable-warning=ExperimentalWarning'],
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      }),
    );
    await Promise.all(children.map((child) => new Promise((resolve) => child.once('message', resolve))));
    const hashes = children.map(
      (child) =>
        new Promise<string>((resolve, reject) => {
          child.once('message', (message) => resolve((message as { hash: string }).hash));
          child.once('exit', (code) => reject(new Error(`child exited ${code}`)));
        }),
    );
    for (const child of children) child.send('go');
    const seen = await Promise.all(hashes);
    expect(new Set(seen).size).toBe(1);
    expect(seen[0]).toBe(hashVirtualKey('sbk_race', loadKeySecret({ stateDir: directory, env: {} })));
    expect(statSync(join(directory, KEY_SECRET_FILE_NAME)).mode & 0o777).toBe(0o600);
    expect(readdirSync(directory)).toEqual([KEY_SECRET_FILE_NAME]);
  });
});
