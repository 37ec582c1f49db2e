/**
 * Work a tool started and stopped waiting for: agent runs, workflow runs and calls that outlive the
 * tool call's deadline go on in the server process. The server keeps them here so it can wait for them
 * before it exits, and so a call's result (which has no store of its own) can be asked for later.
 */
export class BackgroundRuns {
  private readonly running = new Map<string, Promise<unknown>>();
  private readonly settled = new Map<string, Settled>();

  /** @param keep how many settled results `result` can still answer for (the oldest go first) */
  private readonly keep: number;

  constructor(keep = 200) {
    this.keep = keep;
  }

  /** Tracks `work` until it settles; its outcome is kept under `id` for `outcome`. */
  track<T>(id: string, work: Promise<T>): Promise<T> {
    const settle = (outcome: Settled): void => {
      this.settled.delete(id);
      this.settled.set(id, outcome);
      for (const old of this.settled.keys()) {
        if (this.settled.size <= this.keep) break;
        this.settled.delete(old);
      }
    };
    const watched = work.then(
      (value) => settle({ ok: true, value }),
      (error: unknown) => settle({ ok: false, error }),
    );
    this.running.set(id, work);
    void watched.finally(() => this.running.delete(id));
    return work;
  }

  /** The work tracked under `id` while it runs. */
  pending(id: string): Promise<unknown> | undefined {
    return this.running.get(id);
  }

  /**
   * Waits up to `waitSeconds` for the work tracked under `id` to settle, if any runs; its failure is
   * not thrown (the caller reads the outcome from where the work recorded it).
   */
  async settle(id: string, waitSeconds: number): Promise<void> {
    const running = this.running.get(id);
    if (running === undefined || waitSeconds <= 0) return;
    await waitAtMost(running, waitSeconds * 1000).catch(() => undefined);
  }

  /** The outcome of settled work, or `undefined` while it runs (or once it is forgotten). */
  outcome(id: string): Settled | undefined {
    return this.settled.get(id);
  }

  /** Work still running. */
  get size(): number {
    return this.running.size;
  }

  /** Resolves once every tracked piece of work has settled (work started meanwhile included). */
  async drain(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running.values()]);
  }
}

/** How a piece of tracked work ended. */
export type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * Waits for `work` at most `ms` milliseconds: `{ done: true, value }` when it resolved in time,
 * `{ done: false }` when the time ran out first. A rejection in time is thrown.
 */
export async function waitAtMost<T>(
  work: Promise<T>,
  ms: number,
): Promise<{ done: true; value: T } | { done: false }> {
  let timer: NodeJS.Timeout | undefined;
  const timeUp = new Promise<{ done: false }>((resolve) => {
    timer = setTimeout(() => resolve({ done: false }), ms);
  });
  try {
    return await Promise.race([work.then((value) => ({ done: true as const, value })), timeUp]);
  } finally {
    clearTimeout(timer);
  }
}
