import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { isProcessAlive } from './repo-lock.js';

describe('isProcessAlive', () => {
  it('tells a running process from a zombie that still answers signal 0', async () => {
    // The background `sleep 0` exits at once; its parent becomes `sleep 3` (exec), which never reaps it.
    const parent = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 3'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    try {
      const zombie = await new Promise<number>((resolve) =>
        parent.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))),
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(() => process.kill(zombie, 0)).not.toThrow();
      expect(isProcessAlive(zombie)).toBe(false);
      expect(isProcessAlive(parent.pid)).toBe(true);
      expect(isProcessAlive(process.pid)).toBe(true);
    } finally {
      parent.kill('SIGKILL');
    }
  });
});
