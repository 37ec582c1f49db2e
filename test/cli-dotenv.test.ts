import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// A project's `.env` holds settings beside secrets: the secrets are redacted from every output, but a
// plain setting such as `NODE_ENV=production` must not turn every "production" a command prints into
// `[redacted]`.

const root = join(import.meta.dirname, '..');
const cli = join(root, 'dist/cli/main.js');
const skills = join(root, 'test/fixtures/skills');

function evalMissing(dataset: string, dotEnv: string): string {
  const cwd = mkdtempSync(join(tmpdir(), 'switchboard-dotenv-'));
  writeFileSync(join(cwd, '.env'), dotEnv);
  const result = spawnSync(process.execPath, [cli, 'eval', '--dataset', dataset, '--skills', skills], {
    cwd,
    input: '',
    encoding: 'utf8',
  });
  expect(result.status).toBe(5);
  return result.stderr;
}

describe('.env values in output', () => {
  it('leaves plain settings readable in what a command prints', () => {
    const stderr = evalMissing(
      'production-localhost-Questions.jsonl',
      'NODE_ENV=production\nDB_HOST=localhost\nAPP_NAME="Acme Questions Service"\n',
    );
    expect(stderr).toContain('cannot read dataset production-localhost-Questions.jsonl');
  });

  it('still redacts a credential-like value whatever its name', () => {
    const value = 'postgres://app:pw-7Hq2x@db.internal/app';
    const stderr = evalMissing(
      `${value}.jsonl`,
      `DATABASE_URL=${value}\nUPLOAD_PASSWORD=correcthorsebattery\n`,
    );
    expect(stderr).toContain('cannot read dataset [redacted].jsonl');
    expect(stderr).not.toContain('pw-7Hq2x');
  });

  it('still redacts a value named like a secret, even a plain word', () => {
    const stderr = evalMissing('correcthorsebattery.jsonl', 'UPLOAD_PASSWORD=correcthorsebattery\n');
    expect(stderr).toContain('cannot read dataset [redacted].jsonl');
  });
});
