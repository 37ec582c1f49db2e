import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  isProcessAlive,
  isRecordedProcessAlive,
  processStartTime,
  REPO_LOCK_FILE,
  withRepoLock,
} from './repo-lock.js';
import { processState } from '../../test/helpers/process-state.js';
import { waitFor } from '../../test/helpers/wait-for.js';

describe('isProcessAlive', () => {
  it('tells a running process from a zombie that still answers signal 0', async () => {
    // The background child exits once its parent has become `sleep 30` (exec), which never reaps it.
    // (A child that exits before the exec may be reaped by the shell first: then no zombie is left.)
    const child = `sh -c 'until [ "$(cat /proc/$PPID/comm)" = sleep ]; do sleep 0.01; done'`;
    const parent = spawn('sh', ['-c', `${child} & echo $!; exec sleep 30`], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    try {
      const zombie = await new Promise<number>((resolve) =>
        parent.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))),
      );
      // Wait until the kernel shows the child as a zombie (state Z).
      await waitFor(() => processState(zombie) === 'Z', { what: `process ${zombie} to become a zombie` });
      expect(() => process.kill(zombie, 0)).not.toThrow();
      expect(isProcessAlive(zombie)).toBe(false);
      expect(isProcessAlive(parent.pid)).toBe(true);
      expect(isProcessAlive(process.pid)).toBe(true);
    } finally {
      parent.kill('SIGKILL');
    }
  });
});

describe('a recorded process identity (pid and start time)', () => {
  it('tells the recorded process from a later one that got its pid', () => {
    const started = processStartTime(process.pid);
    expect(started).toBeDefined();
    expect(Math.abs((started as number) - (Date.now() - process.uptime() * 1000))).toBeLessThan(2_000);
    expect(isRecordedProcessAlive(process.pid, started)).toBe(true);
    // Same pid, started a minute earlier: that was another process, now gone.
    expect(isRecordedProcessAlive(process.pid, (started as number) - 60_000)).toBe(false);
    expect(isRecordedProcessAlive(process.pid)).toBe(true);
  });

  it("breaks a repository lock whose owner's pid now belongs to another process, and waits on a live owner", async () => {
    const directory = mkdtempSync(join(tmpdir(), 'switchboard-lock-'));
    const other = spawn('sleep', ['10'], { stdio: 'ignore' });
    try {
      const pid = other.pid as number;
      const started = processStartTime(pid) as number;
      const lock = join(directory, REPO_LOCK_FILE);
      writeFileSync(lock, `${pid} 0123456789abcdef ${started}`);
      await expect(withRepoLock(directory, async () => 'held', { timeoutMs: 300 })).rejects.toThrow(
        /timed out waiting for the repository lock/,
      );
      writeFileSync(lock, `${pid} 0123456789abcdef ${started - 3_600_000}`);
      await expect(withRepoLock(directory, async () => 'held', { timeoutMs: 5_000 })).resolves.toBe('held');
      expect(existsSync(lock)).toBe(false);
    } finally {
      other.kill('SIGKILL');
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
