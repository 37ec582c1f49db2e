import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { waitForProcessesGone } from '../providers/claude-code/process-group.js';
import { killRunProcesses, PROCESS_TAG_VARIABLE, runProcessTag } from './processes.js';

describe('killRunProcesses', () => {
  it('kills a run’s tagged processes even when no child pid was recorded (a runner killed during setup)', async () => {
    const tagged = spawn('sleep', ['60'], {
      detached: true,
      stdio: 'ignore',
      env: { ...process.env, [PROCESS_TAG_VARIABLE]: runProcessTag('orphan-run') },
    });
    const other = spawn('sleep', ['60'], {
      detached: true,
      stdio: 'ignore',
      env: { ...process.env, [PROCESS_TAG_VARIABLE]: runProcessTag('another-run') },
    });
    try {
      const killed = killRunProcesses(undefined, 'orphan-run');
      expect(killed).toContain(tagged.pid);
      expect(killed).not.toContain(other.pid);
      expect(await waitForProcessesGone([tagged.pid as number], 5000)).toEqual([]);
      expect(() => process.kill(other.pid as number, 0)).not.toThrow();
    } finally {
      tagged.kill('SIGKILL');
      other.kill('SIGKILL');
    }
  });
});
