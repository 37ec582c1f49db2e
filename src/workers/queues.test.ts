import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../agents/task.js';
import { loadConfig } from '../core/config.js';
import { expirySeconds, requireWorkerDatabase } from './queues.js';

function configIn(yaml: string) {
  const cwd = mkdtempSync(join(tmpdir(), 'switchboard-workers-config-'));
  writeFileSync(join(cwd, 'switchboard.yaml'), yaml);
  return () => loadConfig({ cwd, env: {} });
}

describe('workers settings', () => {
  it('defaults keep a dead worker’s job away for at most about a minute', () => {
    const { workers } = loadConfig({ cwd: mkdtempSync(join(tmpdir(), 'switchboard-workers-')), env: {} });
    const bound =
      workers.heartbeatSeconds +
      Math.max(workers.superviseIntervalSeconds, workers.monitorIntervalSeconds) +
      workers.pollingIntervalSeconds;
    expect(bound).toBeLessThanOrEqual(60);
    expect(workers).toMatchObject({ concurrency: 1, retryLimit: 5, graceSeconds: 30 });
  });

  it('reads `workers:` from switchboard.yaml', () => {
    const load = configIn(
      'workers:\n  heartbeat_seconds: 10\n  polling_interval_seconds: 0.5\n  concurrency: 3\n',
    );
    expect(load().workers).toMatchObject({
      heartbeatSeconds: 10,
      pollingIntervalSeconds: 0.5,
      concurrency: 3,
    });
  });

  it('refuses a heartbeat pg-boss would refuse, naming the key', () => {
    expect(configIn('workers:\n  heartbeat_seconds: 5\n')).toThrow(/workers\.heartbeat_seconds/);
  });

  it('needs a PostgreSQL URL, with one line saying how to give it', () => {
    const config = loadConfig({ cwd: mkdtempSync(join(tmpdir(), 'switchboard-workers-')), env: {} });
    expect(() => requireWorkerDatabase(config)).toThrow(
      'workers share a PostgreSQL database; set SWITCHBOARD_DATABASE_URL',
    );
    expect(requireWorkerDatabase({ ...config, databaseUrl: 'postgres://db/x' })).toBe('postgres://db/x');
  });

  it('gives a job the task’s wall-clock limit plus a margin, at most a day', () => {
    const task = { limits: { ...DEFAULT_LIMITS, wallClockMs: 1_800_000 } } as Parameters<
      typeof expirySeconds
    >[0];
    expect(expirySeconds(task)).toBe(1800 + 600);
    expect(expirySeconds({ ...task, limits: { ...task.limits, wallClockMs: 48 * 3600_000 } })).toBe(
      24 * 3600,
    );
  });
});
