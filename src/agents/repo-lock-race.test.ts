import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_LOCK_FILE } from './repo-lock.js';
import { waitFor } from '../../test/helpers/wait-for.js';

const PROCESSES = 8;
const ROUNDS = 6;
const ENTRIES_PER_ROUND = 3;

// Each racer waits for the start file, so all of them find the planted stale lock at once, then takes
// the lock a few times, writing "enter"/"exit" lines around a critical section that lasts a while and
// yields to the event loop (as a real holder running git does), so an overlapping holder would write
// in between.
// A breaker pauses between the steps of breaking a stale lock, each racer for its own time (0 to
// 45 ms), as the scheduler of a loaded machine might: the racers then act on stale readings of a lock
// someone else has since broken and taken, which must still let only one process in.
const racer = `
import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
const [moduleUrl, directory, log, ready, start, entries, racer] = process.argv.slice(1);
const steps = new Map();
const pause = (step) => {
  steps.set(step, (steps.get(step) ?? 0) + 1);
  const milliseconds = ((Number(racer) * 7 + steps.get(step) * 3 + step.length) % 10) * 5;
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, milliseconds);
};
const { withRepoLock } = await import(moduleUrl);
writeFileSync(ready, '');
while (!existsSync(start)) await new Promise((resolve) => setImmediate(resolve));
for (let entry = 0; entry < Number(entries); entry++) {
  await withRepoLock(directory, async () => {
    appendFileSync(log, 'enter ' + process.pid + '\\n');
    await new Promise((resolve) => setTimeout(resolve, 25));
    appendFileSync(log, 'exit ' + process.pid + '\\n');
  }, {
    timeoutMs: 120_000,
    _internal: { pause },
  });
}
`;

function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', ''], { stdio: 'ignore' });
  return child.pid;
}

function runRacer(folder: string, round: number, index: number): Promise<number | null> {
  const moduleUrl = new URL('../../dist/agents/repo-lock.js', import.meta.url).href;
  const child = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      racer,
      moduleUrl,
      folder,
      join(folder, 'holders.log'),
      join(folder, `ready-${round}-${index}`),
      join(folder, `start-${round}`),
      String(ENTRIES_PER_ROUND),
      String(index),
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** The first line where a second process entered before the holder left, if any. */
function overlap(lines: string[]): string | undefined {
  let holder: string | undefined;
  for (const [index, line] of lines.entries()) {
    const [event, pid] = line.split(' ');
    if (event === 'enter') {
      if (holder !== undefined) return `line ${index + 1}: ${pid} entered while ${holder} held the lock`;
      holder = pid;
    } else {
      if (holder !== pid) return `line ${index + 1}: ${pid} left a lock ${holder ?? 'nobody'} held`;
      holder = undefined;
    }
  }
  return undefined;
}

describe('the repository lock under real processes racing for it', () => {
  const folder = mkdtempSync(join(tmpdir(), 'switchboard-lock-race-'));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  it(`never has two holders: ${PROCESSES} processes, ${ROUNDS} rounds, each starting on a stale lock`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      writeFileSync(join(folder, REPO_LOCK_FILE), `${deadPid()} 0123456789abcdef`);
      const exits = Array.from({ length: PROCESSES }, (_, index) => runRacer(folder, round, index));
      await waitFor(
        () =>
          Array.from({ length: PROCESSES }, (_, index) => join(folder, `ready-${round}-${index}`)).every(
            existsSync,
          ),
        { what: 'every racer to be ready', withinMs: 120_000 },
      );
      writeFileSync(join(folder, `start-${round}`), '');
      expect(await Promise.all(exits)).toEqual(Array.from({ length: PROCESSES }, () => 0));
    }
    const lines = readFileSync(join(folder, 'holders.log'), 'utf8').trim().split('\n');
    expect(overlap(lines)).toBeUndefined();
    expect(lines).toHaveLength(2 * PROCESSES * ROUNDS * ENTRIES_PER_ROUND);
    // Nothing is left behind: no lock, no claim to break one, no temporary file.
    expect(readdirSync(folder).filter((name) => name.includes(REPO_LOCK_FILE))).toEqual([]);
  }, 300_000);
});
