import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/helpers/wait-for.js';
import { waitForProcessesGone } from './process-group.js';

// A real Node parent (the built library) starts a Claude Code-like process as the warm pool and one-shot
// calls do, with a background job in its group and a `setsid` job in a session of its own, as Claude
// Code's Bash tool leaves them; then it idles, or is killed with SIGKILL, or exits by itself.

const processGroup = join(import.meta.dirname, '../../../dist/providers/claude-code/process-group.js');
const started: ChildProcess[] = [];

afterEach(() => {
  for (const child of started.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

interface Parent {
  child: ChildProcess;
  /** The watched process, its background job, its `setsid` job. */
  pids: number[];
  keyFolder: string;
}

/** Starts a parent that watches `sh` (leaving two jobs behind) with `keyFolder` to remove on its death. */
async function startParent(then: 'idle' | 'exit'): Promise<Parent> {
  const folder = mkdtempSync(join(tmpdir(), 'switchboard-parent-watch-'));
  const keyFolder = join(folder, 'key');
  mkdirSync(keyFolder);
  writeFileSync(join(keyFolder, 'api-key'), 'token');
  const jobs = join(folder, 'jobs');
  const script = `
    import { existsSync, readFileSync } from 'node:fs';
    import { ClaudeProcess, REMOVE_ON_PARENT_DEATH_VARIABLE } from ${JSON.stringify(processGroup)};
    const watched = new ClaudeProcess({
      command: 'sh',
      args: ['-c', 'sleep 300 & b=$!; setsid sleep 300 & echo "$$ $b $!" > ${jobs}; exec sleep 301'],
      env: { PATH: process.env.PATH, [REMOVE_ON_PARENT_DEATH_VARIABLE]: ${JSON.stringify(keyFolder)} },
    });
    const ready = () => existsSync(${JSON.stringify(jobs)}) && readFileSync(${JSON.stringify(jobs)}, 'utf8').trim().split(' ').length === 3;
    const poll = setInterval(() => {
      if (!ready()) return;
      // 'exit': nothing left to wait for but the watched process, which no longer holds the loop open.
      if (${JSON.stringify(then)} === 'exit') {
        clearInterval(poll);
        watched.detach();
      }
    }, 20);
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'ignore' });
  started.push(child);
  await waitFor(() => existsSync(jobs) && readFileSync(jobs, 'utf8').trim().split(' ').length === 3, {
    what: 'the watched process and its jobs',
  });
  const pids = readFileSync(jobs, 'utf8').trim().split(' ').map(Number);
  return { child, pids, keyFolder };
}

/** pid → parent pid of every process. */
function parents(): Map<number, number> {
  const table = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      table.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // Gone while we looked.
    }
  }
  return table;
}

/** A process's command line, words joined by spaces ('' once it is gone). */
function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
  } catch {
    return '';
  }
}

/** Whether `pid` runs (a zombie waiting to be reaped does not). */
function running(pid: number): boolean {
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return !['Z', 'X'].includes(state.slice(state.lastIndexOf(')') + 2).charAt(0));
  } catch {
    return false;
  }
}

/** Processes below `root` now (its descendants, not itself). */
function below(root: number): number[] {
  const table = parents();
  return [...table.keys()].filter((pid) => {
    for (let cursor = table.get(pid), depth = 0; cursor !== undefined && depth < 50; depth++) {
      if (cursor === root) return true;
      cursor = table.get(cursor);
    }
    return false;
  });
}

function exited(child: ChildProcess): Promise<NodeJS.Signals | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.signalCode);
  return new Promise((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
}

describe.skipIf(process.platform !== 'linux')('the parent watch', () => {
  it('starts no process while a watched process idles', async () => {
    const parent = await startParent('idle');
    const before = new Set(below(parent.child.pid!));
    const appeared = new Set<number>();
    const until = Date.now() + 3_000;
    while (Date.now() < until) {
      for (const pid of below(parent.child.pid!)) if (!before.has(pid)) appeared.add(pid);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // A watch that polled would start a `sleep` every second.
    expect([...appeared]).toEqual([]);
  });

  it(
    'on kill -9 of the parent ends the group and its setsid job, and removes the key folder',
    { timeout: 180_000 },
    async () => {
      const parent = await startParent('idle');
      expect(existsSync(parent.keyFolder)).toBe(true);
      const table = parents();
      const watchers = [...table.keys()].filter(
        (pid) => table.get(pid) === parent.child.pid && commandLine(pid).includes('switchboard-parent-watch'),
      );
      expect(watchers).toHaveLength(1);
      parent.child.kill('SIGKILL');
      expect(await exited(parent.child)).toBe('SIGKILL');
      // The promise is that they end and the folder goes, not how fast: the test waits for the watcher to
      // finish its work and exit (on a saturated machine its `ps` pass has taken over 30 s), then looks.
      await waitFor(() => !running(watchers[0]!), { what: 'the parent watch to finish', withinMs: 170_000 });
      expect(await waitForProcessesGone(parent.pids, 10_000)).toEqual([]);
      expect(existsSync(parent.keyFolder)).toBe(false);
    },
  );

  it('lets the parent exit by itself, and then ends what it left running', async () => {
    const parent = await startParent('exit');
    // Neither the watcher nor its pipe holds the parent's event loop open.
    expect(await exited(parent.child)).toBeNull();
    expect(parent.child.exitCode).toBe(0);
    expect(await waitForProcessesGone(parent.pids, 5_000)).toEqual([]);
    await waitFor(() => !existsSync(parent.keyFolder), { what: 'the key folder removed', withinMs: 5_000 });
  });
});
