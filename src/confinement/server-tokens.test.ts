import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../../test/helpers/wait-for.js';
import { processRunning } from './server-tokens.js';

/** A process's state letter from /proc (R, S, Z, …), or undefined once it is gone. */
function stateOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return undefined;
  }
}

describe('processRunning', () => {
  it('is true for this process and false for a pid that names none', () => {
    expect(processRunning(process.pid)).toBe(true);
    expect(processRunning(0)).toBe(false);
    expect(processRunning(2 ** 22 + 1)).toBe(false);
  });

  it('is false for a process that has exited but is not reaped yet (an orphan waiting for init)', async () => {
    // Its parent exits at once, so only init reaps it: in a container that may take seconds, and
    // meanwhile the pid still takes signal 0. A background server that failed to start is such a one.
    const script =
      "const c = require('node:child_process').spawn(process.execPath, ['-e', '0'], { detached: true, stdio: 'ignore' });" +
      'c.unref(); console.log(c.pid);';
    const pid = Number(spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' }).stdout);
    expect(pid).toBeGreaterThan(0);
    await waitFor(() => stateOf(pid) === 'Z' || stateOf(pid) === undefined, { what: 'the orphan exited' });
    expect(processRunning(pid)).toBe(false);
  });
});
