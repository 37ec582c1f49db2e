import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WorkflowStore, type WorkflowStepRow } from '../src/store/workflow-records.js';

// A crash after *every* committed store write, not only at the engine's named boundaries: a real
// process advances a small workflow (scripts, a route with a condition, a for_each group of scripts, a
// parallel group) and SIGKILLs itself right after its k-th write (SWITCHBOARD_TEST_KILL_AFTER_WRITE), for k = 1,
// 2, … until a run finishes without reaching k. Each time a second process resumes the run, and no step
// whose completion was recorded before the crash may run again: each script appends its name to a
// file, and a step recorded twice would show as a second visit. Runs on SQLite and in the PostgreSQL pass.

const api = resolve(import.meta.dirname, '../dist/workflows/index.js');
/** Crash points tried at once. */
const BATCH = 4;

const FLOW = `workflow:
  name: crash
  entry_point: prep
agents:
  - name: prep
    type: script
    command: sh
    args: ["-c", "echo prep >> ran.log; printf '{\\"items\\": [1, 2]}'"]
    routes:
      - to: fan
  - name: left
    type: set
    value: "L{{ prep.output.items | length }}"
  - name: right
    type: set
    value: "R{{ prep.output.items | length }}"
  - name: decide
    type: set
    value: "{{ fan.outputs | length }}"
    routes:
      - to: finish
        when: "{{ output == 2 }}"
      - to: $end
  - name: finish
    type: script
    command: sh
    args: ["-c", "echo finish >> ran.log; printf '{\\"done\\": true}'"]
for_each:
  - name: fan
    type: for_each
    source: prep.output.items
    as: n
    agent:
      name: item
      type: set
      value: "{{ n * 10 }}"
    routes:
      - to: pair
parallel:
  - name: pair
    agents: [left, right]
    routes:
      - to: decide
output:
  items: "{{ fan.outputs | tojson }}"
  pair: "{{ pair.outputs | tojson }}"
  done: "{{ finish.output.done }}"
`;

/** Starts or resumes the run from the built library, in a process of its own; prints the result. */
const CHILD = `
const api = await import(${JSON.stringify(api)});
const [mode, dir, file, runId] = process.argv.slice(2);
const options = { stateDir: dir + '/.switchboard', runId };
try {
  const result = mode === 'start' ? await api.runWorkflow({ ...options, file }) : await api.resumeWorkflow(options);
  process.stdout.write(JSON.stringify({ status: result.status, output: result.output }));
} catch (error) {
  process.stdout.write(JSON.stringify({ error: { code: error.code, message: error.message } }));
}
`;

interface Outcome {
  signal: NodeJS.Signals | null;
  json?: { status?: string; output?: unknown; error?: { code: string; message: string } };
}

function child(
  script: string,
  mode: 'start' | 'resume',
  cwd: string,
  runId: string,
  killAfter?: number,
): Promise<Outcome> {
  const env = { ...process.env };
  if (killAfter === undefined) delete env.SWITCHBOARD_TEST_KILL_AFTER_WRITE;
  else env.SWITCHBOARD_TEST_KILL_AFTER_WRITE = String(killAfter);
  return new Promise((resolveOutcome) => {
    const running = execFile(
      process.execPath,
      [script, mode, cwd, join(cwd, 'flow.yaml'), runId],
      { cwd, env, encoding: 'utf8', timeout: 60_000 },
      (_error, stdout) => {
        let json: Outcome['json'];
        try {
          json = JSON.parse(stdout) as Outcome['json'];
        } catch {
          json = undefined;
        }
        resolveOutcome({ signal: running.signalCode, ...(json === undefined ? {} : { json }) });
      },
    );
  });
}

/** What each script step appends to ran.log, for a step row. */
function effectOf(row: WorkflowStepRow): string | undefined {
  return ['prep', 'finish'].includes(row.step) ? row.step : undefined;
}

async function stepRows(dir: string, runId: string): Promise<WorkflowStepRow[]> {
  const store = await WorkflowStore.open({ stateDir: join(dir, '.switchboard') });
  try {
    return await store.steps(runId);
  } finally {
    await store.close();
  }
}

function workspace(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-crash-writes-')));
  writeFileSync(join(dir, 'flow.yaml'), FLOW);
  writeFileSync(join(dir, 'child.mjs'), CHILD);
  return dir;
}

const ran = (dir: string): string[] =>
  existsSync(join(dir, 'ran.log')) ? readFileSync(join(dir, 'ran.log'), 'utf8').trim().split('\n') : [];

describe('kill -9 after every committed store write, then resume', () => {
  it(
    'no step recorded as completed runs again, and the run ends with the outputs of an uninterrupted one',
    { timeout: 240_000 },
    async () => {
      const reference = workspace();
      const clean = await child(join(reference, 'child.mjs'), 'start', reference, 'crash-0');
      expect(clean.json).toMatchObject({ status: 'completed' });
      // Sorted: parallel members start in either order.
      const keys = (await stepRows(reference, 'crash-0'))
        .map((row) => row.key.slice('crash-0'.length))
        .sort();
      const effects = ran(reference).sort();

      /** Crashes a run after write k and resumes it; false when the run made fewer than k writes. */
      const crashAfter = async (k: number): Promise<boolean> => {
        const dir = workspace();
        const script = join(dir, 'child.mjs');
        const runId = `crash-${k}`;
        const killed = await child(script, 'start', dir, runId, k);
        if (killed.signal === null) {
          expect(killed.json).toEqual(clean.json);
          return false;
        }
        expect(killed.signal, `write ${k}`).toBe('SIGKILL');
        const completedBefore = (await stepRows(dir, runId)).filter((row) => row.status === 'completed');
        const resumed = await child(script, 'resume', dir, runId);
        const where = `killed after write ${k}; completed then: ${completedBefore.map((row) => row.key).join(', ')}`;
        expect(resumed.json, where).toEqual(clean.json);
        // No completed step ran again: no second visit of any step, no second attempt of a completed
        // row (group members and items keep their key), each effect recorded as done happened once.
        const after = await stepRows(dir, runId);
        expect(after.map((row) => row.key.slice(runId.length)).sort(), where).toEqual(keys);
        for (const row of completedBefore) {
          expect(
            after.find((other) => other.key === row.key),
            `${where}: ${row.key}`,
          ).toMatchObject({ status: 'completed', attempt: row.attempt, output: row.output });
        }
        const log = ran(dir);
        for (const row of completedBefore) {
          const effect = effectOf(row);
          if (effect !== undefined)
            expect(
              log.filter((line) => line === effect),
              `${where}: ${effect}`,
            ).toHaveLength(1);
        }
        expect([...new Set(log)].sort(), where).toEqual(effects);
        return true;
      };
      // A few k at a time (each k its own folder and run): the processes mostly wait on their children
      // and the database. The first batch holding a run that was not killed is the last.
      let crashes = 0;
      for (let first = 1; ; first += BATCH) {
        const batch = Array.from({ length: BATCH }, (_, index) => crashAfter(first + index));
        const crashed = (await Promise.all(batch)).filter(Boolean).length;
        crashes += crashed;
        if (crashed < BATCH) break;
      }
      // The workflow makes a few dozen writes; each was crashed after once.
      expect(crashes).toBeGreaterThan(10);
    },
  );
});
