import { hostname } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { WorkflowStore } from '../src/store/workflow-records.js';
import { acquireRunLock } from '../src/workflows/run-lock.js';
import { cancelWorkflowRun } from '../src/workflows/index.js';
import { stateDir } from './workflows-engine-support.js';

// The run lock: one process advances a run; a dead owner on this machine frees it at once (its pid is
// gone), an owner on another machine once its heartbeat is older than the stale limit.

const stores: WorkflowStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

async function storeWithRun(now?: () => number): Promise<WorkflowStore> {
  const store = await WorkflowStore.open({ stateDir: stateDir(), ...(now === undefined ? {} : { now }) });
  stores.push(store);
  await store.createRun({
    id: 'run-1',
    workflow: 'w',
    file: '/w.yaml',
    fileHash: 'h',
    inputs: {},
    currentStep: 'a',
  });
  return store;
}

describe('workflow run lock', () => {
  it('refuses a run whose owner on another host beats, and takes it once the heartbeat is stale', async () => {
    let clock = 1_000_000;
    const store = await storeWithRun(() => clock);
    expect(await store.claimRun('run-1', undefined, { pid: 4242, host: 'builder-7', token: 'theirs' })).toBe(
      true,
    );
    clock += 30_000;
    await expect(acquireRunLock(store, 'run-1', { now: () => clock })).rejects.toThrow(
      expect.objectContaining({
        code: 'WORKFLOW_LOCKED',
        message: 'workflow run run-1 is being advanced by pid 4242 on builder-7 (heartbeat 30s ago)',
      }),
    );
    clock += 31_000;
    const lock = await acquireRunLock(store, 'run-1', { now: () => clock });
    expect((await store.getRun('run-1'))?.owner).toMatchObject({
      pid: process.pid,
      host: hostname(),
      token: lock.token,
    });
    await lock.release();
    expect((await store.getRun('run-1'))?.owner).toBeUndefined();
  });

  it('after a database outage, waits for another host’s owner to beat again for as long as the stale limit before taking its run', async () => {
    let clock = 1_000_000;
    const store = await storeWithRun(() => clock);
    await store.claimRun('run-1', undefined, { pid: 4242, host: 'builder-7', token: 'theirs' });
    // The database was away for 90 s and came back 10 s ago: the owner could not beat meanwhile.
    clock += 100_000;
    let backAt = clock - 10_000;
    const options = { now: () => clock, databaseBackAt: () => backAt };
    await expect(acquireRunLock(store, 'run-1', options)).rejects.toThrow(
      expect.objectContaining({ code: 'WORKFLOW_LOCKED' }),
    );
    // Still silent a whole stale limit after the database's return: dead.
    backAt = clock - 61_000;
    const lock = await acquireRunLock(store, 'run-1', options);
    expect((await store.getRun('run-1'))?.owner?.token).toBe(lock.token);
    await lock.release();
  });

  it('frees a run at once when its owner on this host is dead, and never while it lives', async () => {
    const store = await storeWithRun();
    await store.claimRun('run-1', undefined, { pid: 2 ** 22 + 17, host: hostname(), token: 'dead' });
    const lock = await acquireRunLock(store, 'run-1');
    await expect(acquireRunLock(store, 'run-1')).rejects.toThrow(
      expect.objectContaining({ code: 'WORKFLOW_LOCKED' }),
    );
    await lock.release();
  });

  it('frees a run recorded as this process’s when no lock of this process holds it (its release never reached the store)', async () => {
    const store = await storeWithRun();
    const lock = await acquireRunLock(store, 'run-1');
    // The database was away when the lock let go: the row still names this live process.
    const releaseRun = store.releaseRun.bind(store);
    store.releaseRun = () => Promise.reject(new Error('the database is away'));
    await expect(lock.release()).rejects.toThrow('the database is away');
    store.releaseRun = releaseRun;
    expect((await store.getRun('run-1'))?.owner).toMatchObject({ pid: process.pid, token: lock.token });
    // A job's retry in the same worker takes it instead of waiting for itself to let go.
    const again = await acquireRunLock(store, 'run-1');
    expect((await store.getRun('run-1'))?.owner?.token).toBe(again.token);
    await again.release();
  });

  it('aborts the holder’s signal when another process takes the run over', async () => {
    const store = await storeWithRun();
    const lock = await acquireRunLock(store, 'run-1', { pollMs: 10 });
    await store.claimRun('run-1', lock.token, { pid: 1, host: 'elsewhere', token: 'stolen' });
    await new Promise((resolve) => lock.signal.addEventListener('abort', resolve, { once: true }));
    expect(lock.signal.reason).toMatchObject({ code: 'WORKFLOW_LOST' });
    await lock.release();
    expect((await store.getRun('run-1'))?.owner?.token).toBe('stolen');
  });
});

describe('cancel of a run nobody advances', () => {
  it('marks a run whose owner died cancelled at once, and a second start with its id is refused', async () => {
    const dir = stateDir();
    const store = await WorkflowStore.open({ stateDir: dir });
    stores.push(store);
    await store.createRun({
      id: 'run-dead',
      workflow: 'w',
      file: '/w.yaml',
      fileHash: 'h',
      inputs: {},
      currentStep: 'a',
    });
    await store.claimRun('run-dead', undefined, { pid: 2 ** 22 + 19, host: hostname(), token: 'dead' });
    const cancelled = await cancelWorkflowRun('run-dead', { stateDir: dir });
    expect(cancelled).toMatchObject({ status: 'cancelled', errorCode: 'WORKFLOW_CANCELLED' });
    await expect(
      store.createRun({
        id: 'run-dead',
        workflow: 'w',
        file: '/w.yaml',
        fileHash: 'h',
        inputs: {},
        currentStep: 'a',
      }),
    ).rejects.toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT', message: 'workflow run run-dead already exists' }),
    );
  });
});
