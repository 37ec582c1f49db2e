import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../store/database.js';
import { cancelAgentRun, listAgentRuns } from './lifecycle.js';
import { isProcessAlive } from './repo-lock.js';
import { resumeAgentRun } from './runner.js';
import { RUNNER_STALE_MS } from './runner-liveness.js';
import { agentRunRecord } from './__fixtures__/agent-run.js';
import { AgentRunStore } from './run-store.js';

// With one database shared by several machines, a run's runner may live elsewhere: its pid is checked
// only on its own machine; elsewhere its heartbeat says whether it lives, and nothing is signalled.
describe('a run whose runner is on another machine', () => {
  let stateDir: string;
  beforeEach(() => {
    stateDir = mkdtempSync(join(tmpdir(), 'runner-liveness-'));
  });
  afterEach(() => rmSync(stateDir, { recursive: true, force: true }));

  async function recordRun(
    id: string,
    runner: { pid: number; host: string; heartbeatAt: number; childPid?: number },
  ) {
    const store = await AgentRunStore.open(stateDir);
    const run = agentRunRecord(id, { phase: 'agent', attempt: 1, runnerPid: runner.pid });
    await store.insert(run);
    if (runner.childPid !== undefined) await store.update(id, { childPid: runner.childPid });
    await store.close();
    const database = await openDatabase({ stateDir });
    await database.run('UPDATE agent_runs SET runner_host = ?, heartbeat_at = ? WHERE id = ?', [
      runner.host,
      runner.heartbeatAt,
      id,
    ]);
    await database.close();
  }

  it('is live while its heartbeat is fresh and resumable once it is stale, whatever pid it recorded', async () => {
    // The pid is this very process's: were it checked here, the run would look alive forever.
    await recordRun('fresh', { pid: process.pid, host: 'build-7', heartbeatAt: Date.now() });
    await recordRun('stale', {
      pid: process.pid,
      host: 'build-7',
      heartbeatAt: Date.now() - RUNNER_STALE_MS - 1,
    });
    const views = new Map((await listAgentRuns({ stateDir })).map((view) => [view.id, view]));
    expect(views.get('fresh')).toMatchObject({ live: true, resumable: false });
    expect(views.get('stale')).toMatchObject({ live: false, resumable: true });
  });

  it('refuses a resume while that runner lives, naming its machine', async () => {
    await recordRun('busy', { pid: 4242, host: 'build-7', heartbeatAt: Date.now() });
    await expect(resumeAgentRun({ runId: 'busy', stateDir })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringContaining('pid 4242 on build-7') as unknown,
    });
  });

  it('is cancelled in the database without signalling the pids it recorded', async () => {
    const bystander = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      await recordRun('far', {
        pid: bystander.pid!,
        host: 'build-7',
        heartbeatAt: Date.now(),
        childPid: bystander.pid!,
      });
      const result = await cancelAgentRun('far', { stateDir, graceMs: 200 });
      expect(result).toMatchObject({ killed: [], alreadyEnded: false });
      expect(isProcessAlive(bystander.pid)).toBe(true);
      expect((await listAgentRuns({ stateDir }))[0]).toMatchObject({ status: 'cancelled' });
    } finally {
      bystander.kill('SIGKILL');
    }
  });

  it('records this machine as the runner when a process claims a run, and stamps its heartbeat', async () => {
    await recordRun('mine', { pid: 1, host: 'build-7', heartbeatAt: 0 });
    const store = await AgentRunStore.open(stateDir);
    try {
      expect(await store.heartbeat('mine', process.pid)).toBe(false);
      expect(await store.claim('mine', { runnerPid: 1, runnerHost: 'build-7' }, process.pid)).toBe(true);
      const claimed = await store.get('mine');
      expect(claimed).toMatchObject({ runnerPid: process.pid, runnerHost: hostname() });
      expect(claimed?.heartbeatAt).toBeGreaterThan(Date.now() - 60_000);
      expect(await store.heartbeat('mine', process.pid)).toBe(true);
      await store.update('mine', { runnerPid: null });
      expect(await store.get('mine')).not.toHaveProperty('runnerHost');
    } finally {
      await store.close();
    }
  });
});
