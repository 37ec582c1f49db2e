import { spawn, type ChildProcess } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { IN_CI } from '../../test/helpers/ci.js';
import { createRepository, git } from '../../test/helpers/git-repo.js';
import { runVerify } from './verify.js';

// The verify and setup commands run code the agent may have edited (a test file, an npm script), so
// they are confined as the agent's Bash is. test/agent-verify-sandbox.test.ts has the whole run.
const hasBwrap = (process.env['PATH'] ?? '').split(':').some((folder) => existsSync(join(folder, 'bwrap')));
const sandboxed = hasBwrap || IN_CI ? it : it.skip;
const PLANTED = `sk-ant-PLANTED-verify-${Math.random().toString(36).slice(2)}`;

const temporary: string[] = [];
let holder: ChildProcess | undefined;
afterEach(() => {
  holder?.kill('SIGKILL');
  holder = undefined;
});
afterAll(() => {
  for (const folder of temporary) rmSync(folder, { recursive: true, force: true });
});

function folder(): string {
  const made = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-verify-')));
  temporary.push(made);
  return made;
}

/**
 * A process of the user's holding a key in its environment, as the runner does when ANTHROPIC_API_KEY
 * was exported in the shell that started it (`/proc/<pid>/environ` shows a process's starting environment).
 */
async function plantedHolder(): Promise<void> {
  holder = spawn('sleep', ['60'], {
    env: { ...process.env, SWB_VERIFY_PLANTED_KEY: PLANTED },
    stdio: 'ignore',
  });
  await new Promise((resolve) => holder?.once('spawn', resolve));
}

const scanEnvironments = `cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c SWB_VERIFY_PLANTED_KEY > found.txt; true`;

describe('the verify command in the sandbox', () => {
  sandboxed('reads no other process, no hidden folder, writes nowhere but the worktree', async () => {
    await plantedHolder();
    const root = folder();
    const worktree = join(root, 'worktree');
    mkdirSync(worktree);
    const hidden = join(root, 'state');
    mkdirSync(hidden);
    writeFileSync(join(hidden, 'ledger.db'), PLANTED);
    const outside = join(root, 'outside.txt');
    // The agent rewrote the worktree's `.git` file to name the hidden folder as the repository's git folder.
    mkdirSync(join(worktree, 'fake'));
    writeFileSync(join(worktree, '.git'), `gitdir: ${join(worktree, 'fake')}\n`);
    writeFileSync(join(worktree, 'fake', 'commondir'), `${hidden}\n`);
    const hostile = [
      scanEnvironments,
      `cat '${hidden}/ledger.db' > ledger.txt 2>&1`,
      `echo escaped > '${outside}' 2>/dev/null`,
      `echo escaped > '${hidden}/escaped.txt' 2>/dev/null`,
      'ls /proc | grep -c "^[0-9]" > pids.txt',
      'true',
    ].join('; ');
    const result = await runVerify({
      command: hostile,
      cwd: worktree,
      timeoutMs: 30_000,
      confine: { hiddenDirectories: [hidden] },
    });
    expect(result.passed, result.outputTail).toBe(true);
    expect(result.sandbox).toEqual({ enabled: true });
    expect(readFileSync(join(worktree, 'found.txt'), 'utf8').trim()).toBe('0');
    expect(readFileSync(join(worktree, 'ledger.txt'), 'utf8')).not.toContain(PLANTED);
    expect(existsSync(outside)).toBe(false);
    expect(existsSync(join(hidden, 'escaped.txt'))).toBe(false);
    // Its own processes only: the runner and everything else on the machine are out of sight.
    expect(Number(readFileSync(join(worktree, 'pids.txt'), 'utf8'))).toBeLessThan(8);
  });

  sandboxed(
    'still runs node and git in a linked worktree of a repository under a hidden folder',
    async () => {
      const root = folder();
      const repo = createRepository(join(root, 'repo'));
      const worktree = join(root, 'worktree');
      git(repo, 'worktree', 'add', '-q', '-b', 'agent/x', worktree);
      writeFileSync(join(worktree, 'test.js'), "require('node:fs').writeFileSync('ran.txt', 'ok');\n");
      const command =
        'node test.js && git status --porcelain > status.txt && git log -1 --format=%s > log.txt';
      const result = await runVerify({
        command,
        cwd: worktree,
        timeoutMs: 30_000,
        confine: { hiddenDirectories: [repo], gitDirectory: join(repo, '.git') },
      });
      expect(result.passed, result.outputTail).toBe(true);
      expect(readFileSync(join(worktree, 'ran.txt'), 'utf8')).toBe('ok');
      expect(readFileSync(join(worktree, 'status.txt'), 'utf8')).toContain('?? test.js');
      expect(readFileSync(join(worktree, 'log.txt'), 'utf8').trim()).toBe(
        git(repo, 'log', '-1', '--format=%s'),
      );
    },
  );

  it('without the sandbox the same scan finds the key (what the sandbox prevents)', async () => {
    await plantedHolder();
    const worktree = folder();
    const result = await runVerify({ command: scanEnvironments, cwd: worktree, timeoutMs: 30_000 });
    expect(result.passed, result.outputTail).toBe(true);
    expect(result.sandbox).toBeUndefined();
    expect(Number(readFileSync(join(worktree, 'found.txt'), 'utf8'))).toBeGreaterThanOrEqual(1);
  });
});
