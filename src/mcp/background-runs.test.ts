import { describe, expect, it } from 'vitest';
import { BackgroundRuns, waitAtMost } from './background-runs.js';

function deferred<T>(): {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
} {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  return { promise, resolve, reject };
}

describe('BackgroundRuns', () => {
  it('keeps work pending until it settles, then its outcome, success or failure', async () => {
    const runs = new BackgroundRuns();
    const good = deferred<string>();
    const bad = deferred<string>();
    runs.track('good', good.promise);
    runs.track('bad', bad.promise).catch(() => undefined);
    expect(runs.size).toBe(2);
    expect(runs.pending('good')).toBeDefined();
    expect(runs.outcome('good')).toBeUndefined();
    good.resolve('done');
    bad.reject(new Error('broke'));
    await runs.drain();
    expect(runs.size).toBe(0);
    expect(runs.pending('good')).toBeUndefined();
    expect(runs.outcome('good')).toEqual({ ok: true, value: 'done' });
    expect(runs.outcome('bad')).toMatchObject({ ok: false, error: new Error('broke') });
  });

  it('settle waits for running work up to its time, never throws its failure, and skips unknown ids', async () => {
    const runs = new BackgroundRuns();
    const slow = deferred<string>();
    runs.track('slow', slow.promise).catch(() => undefined);
    await runs.settle('slow', 0.05);
    expect(runs.pending('slow')).toBeDefined();
    setTimeout(() => slow.reject(new Error('broke')), 10);
    await expect(runs.settle('slow', 30)).resolves.toBeUndefined();
    expect(runs.outcome('slow')).toMatchObject({ ok: false });
    await expect(runs.settle('unknown', 30)).resolves.toBeUndefined();
  });

  it('forgets the oldest outcomes past its limit', async () => {
    const runs = new BackgroundRuns(2);
    for (const id of ['a', 'b', 'c']) await runs.track(id, Promise.resolve(id));
    await runs.drain();
    expect(runs.outcome('a')).toBeUndefined();
    expect(runs.outcome('b')).toEqual({ ok: true, value: 'b' });
    expect(runs.outcome('c')).toEqual({ ok: true, value: 'c' });
  });

  it('drain waits for work started while it waits', async () => {
    const runs = new BackgroundRuns();
    const first = deferred<void>();
    const second = deferred<void>();
    runs.track('first', first.promise);
    let drained = false;
    const draining = runs.drain().then(() => (drained = true));
    runs.track('second', second.promise);
    first.resolve();
    await first.promise;
    await Promise.resolve();
    expect(drained).toBe(false);
    second.resolve();
    await draining;
    expect(drained).toBe(true);
  });
});

describe('waitAtMost', () => {
  it('gives the value when it comes in time, and says "not done" when the time runs out', async () => {
    expect(await waitAtMost(Promise.resolve(7), 1_000)).toEqual({ done: true, value: 7 });
    const never = new Promise<number>(() => undefined);
    expect(await waitAtMost(never, 5)).toEqual({ done: false });
  });

  it('throws a rejection that comes in time', async () => {
    await expect(waitAtMost(Promise.reject(new Error('no')), 1_000)).rejects.toThrow('no');
  });
});
