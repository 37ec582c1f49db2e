import { describe, expect, it } from 'vitest';
import type { CallAttemptRecord } from './call-records.js';
import { PendingSettles, type PendingSettle } from './pending-settles.js';

const record = (id: string): CallAttemptRecord => ({
  id,
  callId: 'call',
  attempt: 1,
  createdAt: 0,
  provider: 'openai',
  spec: 'openai:gpt-4.1-mini',
  modelRequested: 'gpt-4.1-mini',
  success: true,
  durationMs: 1,
  costUsd: 0.002,
  promptText: 'hi',
});

describe('settles a full disk refused', () => {
  it('are written again, oldest first, once the disk takes them; a failure stops the round', async () => {
    let full = true;
    const written: string[] = [];
    const settles = new PendingSettles({
      write: async ({ reservationId }) => {
        if (full) throw new Error('database or disk is full');
        written.push(reservationId);
      },
      gaveUp: () => {
        throw new Error('nothing is given up within its time');
      },
    });
    settles.keep('r1', record('a1'));
    settles.keep('r2', record('a2'));
    await settles.retry();
    expect(settles.size).toBe(2);
    full = false;
    await settles.retry();
    expect(written).toEqual(['r1', 'r2']);
    expect(settles.size).toBe(0);
    settles.stop();
  });

  it('are given up (their reservations stay) once they failed for longer than retryForMs', async () => {
    let now = 0;
    const given: PendingSettle[][] = [];
    const settles = new PendingSettles({
      write: () => Promise.reject(new Error('attempt to write a readonly database')),
      gaveUp: (settled) => given.push([...settled]),
      retryForMs: 1_000,
      now: () => now,
    });
    settles.keep('old', record('a1'));
    now = 600;
    settles.keep('new', record('a2'));
    now = 1_200;
    await settles.retry();
    expect(given.map((batch) => batch.map((settle) => settle.reservationId))).toEqual([['old']]);
    expect(settles.all.map((settle) => settle.reservationId)).toEqual(['new']);
    settles.stop();
  });
});
