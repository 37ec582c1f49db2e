import { describe, expect, it } from 'vitest';
import { WriteBehind } from './write-behind.js';

/** A queue of numbers over a fake database that fails while `down` is set and can be held. */
function queue(options: { maxRows?: number; retries?: number } = {}) {
  const written: number[] = [];
  const dropped: number[] = [];
  const state = { down: false, writes: 0, hold: undefined as Promise<void> | undefined };
  const behind = new WriteBehind<number[]>({
    flushMs: 5,
    maxRows: options.maxRows ?? 500,
    ...(options.retries === undefined ? {} : { retries: options.retries }),
    empty: () => [],
    size: (batch) => batch.length,
    merge: (earlier, later) => [...earlier, ...later],
    write: async (batch) => {
      state.writes++;
      await state.hold;
      if (state.down) throw new Error('database is locked');
      written.push(...batch);
    },
    dropped: (batch) => dropped.push(...batch),
  });
  return { behind, written, dropped, state };
}

describe('WriteBehind', () => {
  it('keeps a failed batch and writes it once the database is back, in order', async () => {
    const { behind, written, state } = queue();
    state.down = true;
    await behind.enqueue((batch) => batch.push(1));
    await expect(behind.flush()).rejects.toThrow('locked');
    await behind.enqueue((batch) => batch.push(2));
    state.down = false;
    await behind.flush();
    expect(written).toEqual([1, 2]);
  });

  it('does not fail a later flush with an old error', async () => {
    const { behind, dropped, state } = queue({ retries: 0 });
    state.down = true;
    await behind.enqueue((batch) => batch.push(1));
    await expect(behind.flush()).rejects.toThrow('locked');
    expect(dropped).toEqual([1]);
    state.down = false;
    await expect(behind.flush()).resolves.toBeUndefined();
  });

  it('drops a batch after its retries, and says so', async () => {
    const { behind, written, dropped, state } = queue({ retries: 1 });
    state.down = true;
    await behind.enqueue((batch) => batch.push(1));
    await expect(behind.flush()).rejects.toThrow();
    await expect(behind.flush()).rejects.toThrow();
    state.down = false;
    await behind.flush();
    expect(dropped).toEqual([1]);
    expect(written).toEqual([]);
  });

  it('makes callers wait while a full batch is still being written', async () => {
    const { behind, written, state } = queue({ maxRows: 2 });
    let open!: () => void;
    state.hold = new Promise((resolve) => (open = resolve));
    await behind.enqueue((batch) => batch.push(1));
    await behind.enqueue((batch) => batch.push(2)); // a batch of 2 taken, its write held
    let waited = true;
    const third = behind.enqueue((batch) => batch.push(3)).then(() => (waited = false));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(waited).toBe(true);
    open();
    await third;
    await behind.flush();
    expect(written).toEqual([1, 2, 3]);
  });
});
