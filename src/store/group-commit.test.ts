import { describe, expect, it } from 'vitest';
import { GroupCommit } from './group-commit.js';

/** Group commit of numbers over a fake database that fails while `down` is set and can be held. */
function commit(options: { maxRows?: number; retries?: number } = {}) {
  const written: number[][] = [];
  const failed: number[] = [];
  const state = { down: 0, writes: 0, hold: undefined as Promise<void> | undefined };
  const group = new GroupCommit<number[]>({
    maxRows: options.maxRows ?? 500,
    retryDelayMs: 1,
    ...(options.retries === undefined ? {} : { retries: options.retries }),
    empty: () => [],
    size: (batch) => batch.length,
    write: async (batch) => {
      state.writes++;
      await state.hold;
      // `down` counts the writes still to fail.
      if (state.down > 0) {
        state.down--;
        throw new Error('database is locked');
      }
      written.push([...batch]);
    },
    failed: (batch) => failed.push(...batch),
  });
  return { group, written, failed, state };
}

/** A held write and the function that lets it go on. */
function held(): { hold: Promise<void>; open: () => void } {
  let open!: () => void;
  const hold = new Promise<void>((resolve) => (open = resolve));
  return { hold, open };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('GroupCommit', () => {
  it('resolves a caller only once the write holding its row has committed', async () => {
    const { group, written, state } = commit();
    const { hold, open } = held();
    state.hold = hold;
    let committed = false;
    const recorded = group.enqueue((batch) => batch.push(1)).then(() => (committed = true));
    await turn();
    await turn();
    expect(state.writes).toBe(1);
    expect(committed).toBe(false);
    open();
    await recorded;
    expect(written).toEqual([[1]]);
  });

  it('starts a write at the end of the turn when none is in flight, with no timer', async () => {
    const { group, state } = commit();
    void group.enqueue((batch) => batch.push(1));
    expect(state.writes).toBe(0);
    await turn();
    expect(state.writes).toBe(1);
  });

  it('puts the rows of one turn in one transaction, and rows arriving during a write in the next', async () => {
    const { group, written, state } = commit();
    const { hold, open } = held();
    state.hold = hold;
    const first = [1, 2, 3].map((row) => group.enqueue((batch) => batch.push(row)));
    await turn();
    // The first write is in flight: these wait for the next one, together.
    const second = [4, 5].map((row) => group.enqueue((batch) => batch.push(row)));
    await turn();
    expect(state.writes).toBe(1);
    open();
    await Promise.all([...first, ...second]);
    expect(written).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
  });

  it('writes at most maxRows rows per transaction', async () => {
    const { group, written } = commit({ maxRows: 2 });
    await Promise.all([1, 2, 3, 4, 5].map((row) => group.enqueue((batch) => batch.push(row))));
    expect(written).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('tries a failed write again and resolves its callers once it commits', async () => {
    const { group, written, failed, state } = commit({ retries: 2 });
    state.down = 2;
    await group.enqueue((batch) => batch.push(1));
    expect(written).toEqual([[1]]);
    expect(failed).toEqual([]);
    expect(state.writes).toBe(3);
  });

  it('rejects the callers of a write that failed its retries, says so, and writes later rows', async () => {
    const { group, written, failed, state } = commit({ retries: 1 });
    state.down = 2;
    await expect(group.enqueue((batch) => batch.push(1))).rejects.toThrow('locked');
    expect(failed).toEqual([1]);
    await group.enqueue((batch) => batch.push(2));
    await expect(group.flush()).resolves.toBeUndefined();
    expect(written).toEqual([[2]]);
  });

  it('flushes at once and waits for every row recorded before, rejecting when one was not written', async () => {
    const { group, written, state } = commit({ retries: 0 });
    const first = group.enqueue((batch) => batch.push(1));
    await group.flush();
    await first;
    expect(written).toEqual([[1]]);
    state.down = 1;
    const second = group.enqueue((batch) => batch.push(2));
    await expect(group.flush()).rejects.toThrow('locked');
    await expect(second).rejects.toThrow('locked');
  });

  it('writes what is recorded when stopped, then refuses more', async () => {
    const { group, written } = commit();
    const recorded = group.enqueue((batch) => batch.push(1));
    await group.stop();
    await recorded;
    expect(written).toEqual([[1]]);
    await expect(group.enqueue((batch) => batch.push(2))).rejects.toThrow('stopped');
  });

  it('hands the batches no write has started to the exit hook, and leaves the one being written', async () => {
    const { group, state } = commit({ maxRows: 1 });
    const { hold } = held();
    state.hold = hold;
    void group.enqueue((batch) => batch.push(1));
    await turn();
    void group.enqueue((batch) => batch.push(2));
    void group.enqueue((batch) => batch.push(3));
    expect(group.pending).toEqual([[1], [2], [3]]);
    expect(group.takeAll()).toEqual([[2], [3]]);
    expect(group.pending).toEqual([[1]]);
  });
});
