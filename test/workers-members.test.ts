import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { WorkflowRunResult } from '../src/workflows/api-types.js';
import { adminQuery, createTestDatabase, POSTGRES_SKIP, type TestDatabase } from './helpers/postgres.js';
import { runCli } from './helpers/run-cli.js';
import {
  killWorkers,
  startWorker,
  untilWorkflowStatus,
  workerMachine,
  type WorkerMachine,
  type WorkerProcess,
} from './helpers/worker-process.js';

// for_each items and parallel members as jobs of their own (`switchboard.members`) on real worker
// processes sharing a real PostgreSQL: they spread over the workers, max_concurrent holds across them,
// each item runs once, and a member whose worker is killed runs again on another one.

const folders: string[] = [];
const children = new Set<ChildProcess>();

afterAll(() => {
  killWorkers(children);
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

function workspace(): string {
  const folder = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-members-')));
  folders.push(folder);
  return folder;
}

function lines(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

/**
 * The item workflow each for_each item runs (group members are agent, set or sub-workflow steps): a
 * script that logs `start <ns>` and `end <ns>` around a short wait (so items overlap when they may) in
 * `<dir>/item-<n>.log`; item 2 waits for `<dir>/go` when `hold` is set (so a test can kill its worker);
 * with `fail` set, item 1 fails once item 2 has started.
 */
const ITEM = `workflow:
  name: item
  entry_point: work
  input:
    n: { type: string }
    hold: { type: string, default: "no" }
    fail: { type: string, default: "no" }
agents:
  - name: work
    type: script
    command: sh
    args: ["-c", "echo start $(date +%s%N) >> '{{ workflow.dir }}/item-{{ workflow.input.n }}.log'; if [ {{ workflow.input.fail }}{{ workflow.input.n }} = yes1 ]; then while [ ! -f '{{ workflow.dir }}/item-2.log' ]; do sleep 0.1; done; exit 1; fi; sleep 1; if [ {{ workflow.input.hold }}{{ workflow.input.n }} = yes2 ]; then while [ ! -f '{{ workflow.dir }}/go' ]; do sleep 0.1; done; fi; echo end $(date +%s%N) >> '{{ workflow.dir }}/item-{{ workflow.input.n }}.log'"]
    routes:
      - to: $end
        when: exit_code == 0
      - to: boom
  - name: boom
    type: terminate
    status: failed
    reason: the item failed
output:
  n: "{{ workflow.input.n }}"
`;

/** A for_each over `count` items, `max` at a time, each one running ITEM as a sub-workflow. */
function forEach(count: number, max: number, hold: boolean, failFast = false): string {
  const items = Array.from({ length: count }, (_, index) => index + 1).join(', ');
  return `workflow:
  name: many
  entry_point: find
agents:
  - name: find
    type: set
    values:
      items: "[${items}]"
    routes:
      - to: each
for_each:
  - name: each
    type: for_each
    source: find.output.items
    as: n
    max_concurrent: ${max}${failFast ? '\n    failure_mode: fail_fast' : ''}
    agent:
      name: item
      type: workflow
      workflow: item.yaml
      input_mapping:
        n: "{{ n }}"
        hold: "${hold ? 'yes' : 'no'}"
        fail: "${failFast ? 'yes' : 'no'}"
    routes:
      - to: $end
output:
  done: "{{ each.outputs | map(attribute='n') | join(',') }}"
`;
}

/** A parallel group of two set steps. */
const PARALLEL = `workflow:
  name: pair
  entry_point: both
agents:
  - name: left
    type: set
    values:
      side: left
  - name: right
    type: set
    values:
      side: right
parallel:
  - name: both
    agents: [left, right]
    routes:
      - to: $end
output:
  left: "{{ both.outputs.left.side }}"
  right: "{{ both.outputs.right.side }}"
`;

/** How often item `n` started. */
function starts(root: string, n: number): number {
  return lines(join(root, `item-${n}.log`)).filter((line) => line.startsWith('start')).length;
}

interface MemberRow {
  key: string;
  status: string;
  attempt: number;
  claimed_by: string | null;
}

describe.skipIf(POSTGRES_SKIP !== undefined)('for_each and parallel members as jobs on workers', () => {
  let database: TestDatabase;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    return async () => {
      killWorkers(children);
      await database.drop();
    };
  });

  afterEach(async () => {
    for (const worker of workers.splice(0)) {
      if (worker.child.exitCode === null && worker.child.signalCode === null) {
        worker.child.kill('SIGTERM');
        await worker.exited;
      }
    }
  });

  const machine = (root: string, name: string): WorkerMachine => workerMachine(root, name, database.url);

  async function worker(root: string, name: string): Promise<WorkerProcess> {
    const m = machine(root, name);
    const started = await startWorker(['--config', m.config, 'worker', '--queues', 'workflows'], {
      cwd: m.cwd,
      env: m.env,
      children,
    });
    workers.push(started);
    return started;
  }

  async function enqueue(m: WorkerMachine, file: string): Promise<string> {
    const result = await runCli(['--config', m.config, 'workflow', 'run', file, '--enqueue'], m);
    expect(result.status, result.stderr).toBe(0);
    return result.stdout.trim();
  }

  async function untilCompleted(
    m: WorkerMachine,
    runId: string,
    withinMs = 90_000,
  ): Promise<WorkflowRunResult> {
    const deadline = Date.now() + withinMs;
    const run = await untilWorkflowStatus(m, runId, (status) => status !== 'running', deadline);
    if (run.status !== 'completed') throw new Error(`run ${runId} is ${run.status}: ${JSON.stringify(run)}`);
    return run;
  }

  async function memberRows(runId: string): Promise<MemberRow[]> {
    const result = await adminQuery(
      `SELECT key, status, attempt::int AS attempt, claimed_by FROM workflow_steps
         WHERE run_id = '${runId}' AND group_key IS NOT NULL ORDER BY item_index, key`,
      database.url,
    );
    return result.rows as MemberRow[];
  }

  it('six items with max_concurrent 2 on three workers: spread over workers, never more than two at once, each once', async () => {
    const root = workspace();
    writeFileSync(join(root, 'item.yaml'), ITEM);
    writeFileSync(join(root, 'six.yaml'), forEach(6, 2, false));
    const submitter = machine(root, 'submitter');
    const runId = await enqueue(submitter, join(root, 'six.yaml'));
    const started = await Promise.all([worker(root, 'w1'), worker(root, 'w2'), worker(root, 'w3')]);
    const done = await untilCompleted(machine(root, 'observer'), runId);
    expect(done.output).toEqual({ done: '1,2,3,4,5,6' });

    const intervals: [number, number][] = [];
    for (let n = 1; n <= 6; n++) {
      const log = lines(join(root, `item-${n}.log`));
      expect(
        log.map((line) => line.split(' ')[0]),
        `item ${n}`,
      ).toEqual(['start', 'end']);
      intervals.push([Number(log[0]?.split(' ')[1]), Number(log[1]?.split(' ')[1])]);
    }
    // At every item's start, how many items were between their start and end (itself included).
    const overlaps = intervals.map(([start]) => intervals.filter(([s, e]) => s <= start && start < e).length);
    expect(Math.max(...overlaps)).toBe(2);

    const rows = await memberRows(runId);
    expect(rows).toHaveLength(6);
    for (const row of rows) expect(row).toMatchObject({ status: 'completed', attempt: 1 });
    const runners = new Set(rows.map((row) => row.claimed_by));
    expect(runners.size).toBeGreaterThan(1);
    const pids = started.map((w) => `pid ${w.pid} on`);
    for (const runner of runners)
      expect(
        pids.some((pid) => runner?.startsWith(pid)),
        String(runner),
      ).toBe(true);
    const memberLines = started
      .flatMap((w) => w.jobLines())
      .filter((line) => line.includes('switchboard.members'));
    expect(memberLines.filter((line) => line.includes(`${runId} completed each/`))).toHaveLength(6);
  });

  it('kill -9 of the worker running an item: another worker runs it again, the run completes, no other item runs twice', async () => {
    const root = workspace();
    writeFileSync(join(root, 'item.yaml'), ITEM);
    writeFileSync(join(root, 'held.yaml'), forEach(3, 3, true));
    const submitter = machine(root, 'submitter');
    const runId = await enqueue(submitter, join(root, 'held.yaml'));
    const started = await Promise.all([worker(root, 'w1'), worker(root, 'w2'), worker(root, 'w3')]);
    try {
      const deadline = Date.now() + 60_000;
      let holder: WorkerProcess | undefined;
      while (holder === undefined) {
        if (Date.now() > deadline) throw new Error('item 2 never started');
        const row = (await memberRows(runId)).find((candidate) => candidate.key.endsWith('/1'));
        if (starts(root, 2) === 1 && row?.claimed_by != null)
          holder = started.find((w) => row.claimed_by?.startsWith(`pid ${w.pid} on`));
        else await new Promise((resolve) => setTimeout(resolve, 50));
      }
      holder.child.kill('SIGKILL');
      await holder.exited;
      const again = Date.now() + 90_000;
      while (starts(root, 2) < 2) {
        if (Date.now() > again) throw new Error('no worker ran item 2 again');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      writeFileSync(join(root, 'go'), '');
    }
    const done = await untilCompleted(machine(root, 'observer'), runId);
    expect(done.output).toEqual({ done: '1,2,3' });
    expect(lines(join(root, 'item-2.log')).filter((line) => line.startsWith('start'))).toHaveLength(2);
    const rows = await memberRows(runId);
    expect(rows.map((row) => [row.key.split('/').at(-1), row.status])).toEqual([
      ['0', 'completed'],
      ['1', 'completed'],
      ['2', 'completed'],
    ]);
    expect(rows[1]?.attempt).toBe(2);
    // Items 1 and 3 ran once, unless they were on the killed worker and had not ended yet.
    for (const n of [1, 3]) expect(rows[n - 1]?.attempt, `item ${n}`).toBe(starts(root, n));
  });

  it('kill -9 of the coordinating worker: the next one waits for the item still running elsewhere instead of sending it again', async () => {
    const root = workspace();
    writeFileSync(join(root, 'item.yaml'), ITEM);
    writeFileSync(join(root, 'held.yaml'), forEach(3, 3, true));
    const submitter = machine(root, 'submitter');
    const runId = await enqueue(submitter, join(root, 'held.yaml'));
    const started = await Promise.all([worker(root, 'w1'), worker(root, 'w2'), worker(root, 'w3')]);
    const ownerPid = async (): Promise<number | null> => {
      const result = await adminQuery(
        `SELECT owner_pid FROM workflow_runs WHERE id = '${runId}'`,
        database.url,
      );
      const pid = (result.rows[0] as { owner_pid: number | string | null } | undefined)?.owner_pid;
      return pid == null ? null : Number(pid);
    };
    let holderPid: string | undefined;
    let coordinator: number | null = null;
    try {
      const deadline = Date.now() + 60_000;
      while (holderPid === undefined || coordinator === null) {
        if (Date.now() > deadline) throw new Error('item 2 never started');
        const row = (await memberRows(runId)).find((candidate) => candidate.key.endsWith('/1'));
        if (starts(root, 2) === 1 && row?.claimed_by != null) {
          holderPid = row.claimed_by;
          coordinator = await ownerPid();
        } else await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const killed = started.find((w) => w.pid === coordinator);
      if (killed === undefined) throw new Error(`the coordinator ${coordinator} is no worker`);
      killed.child.kill('SIGKILL');
      await killed.exited;
      // Another worker takes the run over (its job comes back after the heartbeat) while item 2 still runs.
      const takeover = Date.now() + 90_000;
      for (;;) {
        const pid = await ownerPid();
        if (pid !== null && pid !== coordinator) break;
        if (Date.now() > takeover) throw new Error('no worker took the run over');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      writeFileSync(join(root, 'go'), '');
    }
    const done = await untilCompleted(machine(root, 'observer'), runId);
    expect(done.output).toEqual({ done: '1,2,3' });
    // Item 2 ran once, unless it ran on the killed coordinator's own worker (then it ran again there).
    const sameWorker = holderPid.startsWith(`pid ${coordinator} on`);
    expect(starts(root, 2)).toBe(sameWorker ? 2 : 1);
    const rows = await memberRows(runId);
    expect(rows.map((row) => row.status)).toEqual(['completed', 'completed', 'completed']);
    expect(rows[1]?.attempt).toBe(sameWorker ? 2 : 1);
  });

  it('fail_fast: the first failed item stops the one running on another worker (ABORTED) and the run fails', async () => {
    const root = workspace();
    writeFileSync(join(root, 'item.yaml'), ITEM);
    writeFileSync(join(root, 'fast.yaml'), forEach(3, 2, true, true));
    const submitter = machine(root, 'submitter');
    const runId = await enqueue(submitter, join(root, 'fast.yaml'));
    const started = await Promise.all([worker(root, 'w1'), worker(root, 'w2'), worker(root, 'w3')]);
    const observer = machine(root, 'observer');
    let run: WorkflowRunResult;
    try {
      run = await untilWorkflowStatus(observer, runId, (status) => status === 'failed', Date.now() + 30_000);
    } catch (error) {
      writeFileSync(join(root, 'go'), '');
      throw new Error(
        `${String(error)}: ${JSON.stringify(await memberRows(runId))} ${started.map((w) => w.stderr()).join('\n')}`,
        { cause: error },
      );
    }
    expect(run.error).toContain('fail_fast');
    const rows = await memberRows(runId);
    // Item 2 was running (held) when item 1 failed; item 3 was never sent.
    expect(rows.map((row) => [row.key.split('/').at(-1), row.status])).toEqual([
      ['0', 'failed'],
      ['1', 'failed'],
    ]);
    const aborted = await adminQuery(
      `SELECT error_code FROM workflow_steps WHERE key = '${rows[1]?.key}'`,
      database.url,
    );
    expect(aborted.rows).toEqual([{ error_code: 'ABORTED' }]);
    expect(starts(root, 3)).toBe(0);
    // The held item's job saw its claim revoked and stopped without recording anything.
    const stoppedBy = Date.now() + 30_000;
    const stoppedLine = (): string | undefined =>
      started.flatMap((w) => w.jobLines()).find((line) => line.includes(`${runId} stopped each/1`));
    while (stoppedLine() === undefined) {
      if (Date.now() > stoppedBy) throw new Error('the held item never stopped');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(starts(root, 2)).toBe(1);
  });

  it('a parallel group runs its members as jobs, each once', async () => {
    const root = workspace();
    writeFileSync(join(root, 'pair.yaml'), PARALLEL);
    const submitter = machine(root, 'submitter');
    const runId = await enqueue(submitter, join(root, 'pair.yaml'));
    const started = await Promise.all([worker(root, 'w1'), worker(root, 'w2')]);
    const done = await untilCompleted(machine(root, 'observer'), runId);
    expect(done.output).toEqual({ left: 'left', right: 'right' });
    const rows = await memberRows(runId);
    expect(rows.map((row) => [row.key.split('/').at(-1), row.status, row.attempt])).toEqual([
      ['left', 'completed', 1],
      ['right', 'completed', 1],
    ]);
    for (const row of rows) expect(row.claimed_by).toMatch(/^pid \d+ on /);
    const memberLines = started
      .flatMap((w) => w.jobLines())
      .filter((line) => line.includes('switchboard.members'));
    expect(memberLines).toHaveLength(2);
  });
});
