import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { processState } from '../../test/helpers/process-state.js';
import { waitFor } from '../../test/helpers/wait-for.js';
import { processRunning } from './server-tokens.js';

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
    await waitFor(() => processState(pid) === 'Z' || processState(pid) === undefined, {
      what: 'the orphan exited',
    });
    expect(processRunning(pid)).toBe(false);
  });
});
