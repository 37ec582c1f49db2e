import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bounded } from '../../agents/session-events.js';
import { registerSecret } from '../../core/secrets.js';
import { FilePolicy } from './file-policy.js';
import { fileTools } from './file-tools.js';

// What a hostile model can do with the read-only file tools of an API step (an attacker's review of the
// tool loop): each case here got through, hung the process, or leaked a secret before it was fixed.

const temporary: string[] = [];
afterAll(() => {
  for (const folder of temporary) rmSync(folder, { recursive: true, force: true });
});

function workspace(): { root: string; tools: ReturnType<typeof fileTools> } {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-file-tools-')));
  temporary.push(root);
  mkdirSync(join(root, 'work', '.git'), { recursive: true });
  writeFileSync(
    join(root, 'work', '.git', 'config'),
    '[remote "origin"]\n  url = https://x:tok@example.invalid/r\n',
  );
  writeFileSync(join(root, 'work', '.envrc'), 'export TOKEN=envrc-secret\n');
  writeFileSync(join(root, 'work', '.ENV'), 'TOKEN=upper-secret\n');
  writeFileSync(join(root, 'work', 'notes.txt'), 'hello\n');
  execFileSync('mkfifo', [join(root, 'work', 'pipe')]);
  return { root, tools: fileTools(new FilePolicy(join(root, 'work'), [])) };
}

const signal = new AbortController().signal;

describe('the file tools against a hostile model', () => {
  it('refuses a glob that would hold the process (brace ranges, too many groups) at once', async () => {
    const { tools } = workspace();
    const range = await tools.list_files.run({ pattern: '{1..100000}' }, signal);
    expect(range).toMatchObject({ isError: true, content: expect.stringMatching(/brace ranges/) });
    const groups = await tools.search_files.run({ pattern: 'x', glob: '{a,b}{a,b}{a,b}{a,b}{a,b}' }, signal);
    expect(groups).toMatchObject({ isError: true, content: expect.stringMatching(/at most 4 brace groups/) });
    expect(await tools.list_files.run({ pattern: '*.txt' }, signal)).toMatchObject({ content: 'notes.txt' });
  });

  it('refuses a FIFO named directly, to read_file and to search_files, instead of blocking on it', async () => {
    const { tools } = workspace();
    expect(await tools.read_file.run({ path: 'pipe' }, signal)).toMatchObject({
      isError: true,
      content: expect.stringMatching(/not a regular file/),
    });
    expect(await tools.search_files.run({ pattern: 'x', path: 'pipe' }, signal)).toMatchObject({
      isError: true,
      content: expect.stringMatching(/not a regular file/),
    });
  });

  it('refuses .envrc, .ENV and git’s own folder', async () => {
    const { tools } = workspace();
    for (const path of ['.envrc', '.ENV', '.git/config']) {
      const outcome = await tools.read_file.run({ path }, signal);
      expect(outcome, path).toMatchObject({ isError: true });
      expect(JSON.stringify(outcome)).not.toMatch(/envrc-secret|upper-secret|tok@/);
    }
    const found = await tools.search_files.run({ pattern: 'TOKEN|url' }, signal);
    expect(JSON.stringify(found)).not.toMatch(/envrc-secret|upper-secret|tok@/);
  });

  it('reads through a symlink inside, and not through one that leads out', async () => {
    const { root, tools } = workspace();
    writeFileSync(join(root, 'outside.txt'), 'outside-secret\n');
    symlinkSync(join(root, 'outside.txt'), join(root, 'work', 'out'));
    symlinkSync(join(root, 'work', 'notes.txt'), join(root, 'work', 'in'));
    expect(await tools.read_file.run({ path: 'in' }, signal)).toMatchObject({ content: 'hello' });
    expect(await tools.read_file.run({ path: 'out' }, signal)).toMatchObject({ isError: true });
    const searched = await tools.search_files.run({ pattern: 'secret|hello' }, signal);
    expect(JSON.stringify(searched)).not.toContain('outside-secret');
  });

  it('cuts an event’s text after redacting it, so no part of a secret is left', () => {
    const secret = 'cut-secret-0123456789abcdef';
    registerSecret(secret);
    const text = `${'x'.repeat(490)}${secret}`;
    const cut = bounded(text, 500);
    expect(cut).not.toContain('cut-secret');
    expect(cut).toContain('[redacted]');
  });
});

describe('search_files patterns', () => {
  it('a catastrophic pattern over a long line answers at once, not at the search time limit', async () => {
    const { root, tools } = workspace();
    writeFileSync(join(root, 'work', 'long.txt'), `${'a'.repeat(40)}!\naaaa\n`);
    const started = performance.now();
    const found = await tools.search_files.run({ pattern: '^(a|a)+$', path: 'long.txt' }, signal);
    expect(found).toEqual({ content: 'long.txt:2: aaaa' });
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it('a backreference or lookaround is a tool error naming it', async () => {
    const { tools } = workspace();
    expect(await tools.search_files.run({ pattern: '(l)\\1' }, signal)).toMatchObject({
      isError: true,
      content: expect.stringContaining('the backreference \\1 is not supported'),
    });
    expect(await tools.search_files.run({ pattern: 'hel(?=lo)' }, signal)).toMatchObject({
      isError: true,
      content: expect.stringContaining('the lookahead (?=…) is not supported'),
    });
  });
});
