import { describe, expect, it } from 'vitest';
import { isConnectionLost } from '../store/database.js';
import { DatabaseWatch } from './database-watch.js';

describe('DatabaseWatch', () => {
  it('logs one line when the database goes away, however many errors, and one when it answers again', async () => {
    const lines: string[] = [];
    let now = 1_000;
    let up = true;
    const watch = new DatabaseWatch({
      location: 'postgres://sb@db:5432/sb',
      probe: () =>
        up
          ? Promise.resolve()
          : Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })),
      log: (line) => lines.push(line),
      now: () => now,
    });
    const terminated = Object.assign(new Error('terminating connection due to administrator command'), {
      code: '57P01',
    });
    expect(watch.report(terminated, '57P01 terminating connection')).toBe(true);
    up = false;
    for (let poll = 0; poll < 5; poll++) {
      expect(
        watch.report({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED', queue: 'q' }, 'refused'),
      ).toBe(true);
      await watch.check();
    }
    expect(watch.away).toBe(true);
    expect(watch.backAt()).toBe(now);
    now += 15_000;
    up = true;
    await watch.check();
    await watch.check();
    expect(lines).toEqual([
      'switchboard: database postgres://sb@db:5432/sb unreachable (57P01 terminating connection); the worker keeps its jobs and reconnects',
      'switchboard: database postgres://sb@db:5432/sb reachable again (away about 15s)',
    ]);
    expect(watch.away).toBe(false);
    expect(watch.backAt()).toBe(16_000);
  });

  it('leaves an error that is not a lost connection to the caller', () => {
    const watch = new DatabaseWatch({ location: 'x', probe: () => Promise.resolve(), log: () => undefined });
    expect(watch.report(Object.assign(new Error('duplicate key'), { code: '23505' }), 'duplicate key')).toBe(
      false,
    );
    expect(watch.away).toBe(false);
  });
});

describe('isConnectionLost', () => {
  it.each([
    [{ code: '57P01', message: 'terminating connection due to administrator command' }, true],
    [{ code: '57P03', message: 'the database system is starting up' }, true],
    [{ code: '08006', message: 'connection failure' }, true],
    [{ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:5432' }, true],
    [{ code: 'EPIPE', message: 'write EPIPE' }, true],
    [{ code: 'EAI_AGAIN', message: 'getaddrinfo EAI_AGAIN db.internal' }, true],
    [new Error('Connection terminated unexpectedly'), true],
    [new Error('timeout exceeded when trying to connect'), true],
    [{ code: '23505', message: 'duplicate key value violates unique constraint' }, false],
    [{ code: '42P01', message: 'relation "x" does not exist' }, false],
    [new Error('something else'), false],
  ])('%o → %s', (error, expected) => {
    expect(isConnectionLost(error)).toBe(expected);
  });
});
