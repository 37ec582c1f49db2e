import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeFileAtomically } from './atomic-file.js';

describe('writeFileAtomically', () => {
  let folder: string;
  let umask: number;
  beforeEach(() => {
    folder = mkdtempSync(join(tmpdir(), 'switchboard-atomic-'));
    umask = process.umask(0o022);
  });
  afterEach(() => {
    process.umask(umask);
    rmSync(folder, { recursive: true, force: true });
  });

  const permissions = (file: string): number => statSync(file).mode & 0o7777;

  it('keeps a group-writable file group-writable under umask 022', () => {
    const file = join(folder, 'settings.json');
    writeFileSync(file, '{}');
    chmodSync(file, 0o664);
    writeFileAtomically(file, '{"a": 1}', { redact: false });
    expect(readFileSync(file, 'utf8')).toBe('{"a": 1}');
    expect(permissions(file).toString(8)).toBe('664');
  });

  it('keeps a private file private whatever mode the caller passes', () => {
    const file = join(folder, 'secret.env');
    writeFileSync(file, 'x');
    chmodSync(file, 0o600);
    writeFileAtomically(file, 'y', { mode: 0o644 });
    expect(permissions(file).toString(8)).toBe('600');
  });

  it('gives a new file the mode asked for, less the umask', () => {
    writeFileAtomically(join(folder, 'new.txt'), 'x');
    expect(permissions(join(folder, 'new.txt')).toString(8)).toBe('644');
    writeFileAtomically(join(folder, 'shared.txt'), 'x', { mode: 0o666 });
    expect(permissions(join(folder, 'shared.txt')).toString(8)).toBe('644');
  });

  it('writes every byte of a large text and leaves no temporary file', () => {
    const file = join(folder, 'big.jsonl');
    const text = `${'é'.repeat(3_000_000)}\n`;
    writeFileAtomically(file, text, { redact: false });
    expect(readFileSync(file, 'utf8')).toBe(text);
    expect(readdirSync(folder)).toEqual(['big.jsonl']);
  });
});
