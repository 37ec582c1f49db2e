/**
 * A write-behind queue: high-rate, low-value rows (call attempts, route decisions, decision-cache
 * entries) are queued in memory and written together, one transaction every `flushMs` milliseconds or
 * every `maxRows` rows, whichever comes first. A row per transaction costs about 60–200 µs of
 * synchronous work on the event loop (more on a busy `serve`); a batch costs a fraction of that per row.
 *
 * What this buys is paid for on a crash: a process killed outright (SIGKILL, power loss) loses what was
 * queued, at most the last `flushMs` of these rows. A normal exit loses nothing: `close()`, every read
 * of the ledger and (SQLite) the process's `exit` event write the queue first. Money and workflow state
 * never go through here: budget reservations, cooldowns and workflow rows are written at once.
 */
export interface WriteBehindOptions<Batch> {
  /** Longest a queued row waits. */
  flushMs: number;
  /** A queue this long is written at once, without waiting for the timer. */
  maxRows: number;
  /** An empty batch to fill. */
  empty(): Batch;
  /** Rows in a batch. */
  size(batch: Batch): number;
  /** Writes a batch (asynchronously, in one transaction where the backend allows). */
  write(batch: Batch): Promise<void>;
}

export class WriteBehind<Batch> {
  private queued: Batch;
  private timer: NodeJS.Timeout | undefined;
  /** The write of the batch taken last, which the next flush (and every read) waits for. */
  private writing: Promise<void> = Promise.resolve();
  private stopped = false;
  /** Batches taken by a flush whose write has not started (it waits for the one before). */
  private readonly waiting = new Set<Batch>();
  private readonly options: WriteBehindOptions<Batch>;

  constructor(options: WriteBehindOptions<Batch>) {
    this.options = options;
    this.queued = options.empty();
  }

  /**
   * Adds rows through `add` (which mutates the queued batch) and schedules the write. Resolves at once,
   * unless the queue is past twice `maxRows` (the database is behind): then it waits for the write in
   * flight, so a slow database slows its callers instead of growing memory without bound.
   */
  enqueue(add: (batch: Batch) => void): Promise<void> {
    add(this.queued);
    const size = this.options.size(this.queued);
    if (size >= this.options.maxRows) {
      const previous = this.writing;
      void this.flush().catch(() => undefined);
      return size >= 2 * this.options.maxRows ? previous.catch(() => undefined) : Promise.resolve();
    }
    if (this.timer === undefined) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.flush().catch(() => undefined);
      }, this.options.flushMs);
      this.timer.unref();
    }
    return Promise.resolve();
  }

  /** The rows still queued (not yet taken by a write), for reads that must see them. */
  get pending(): Batch {
    return this.queued;
  }

  /** Writes what is queued; resolves (or rejects with the write's error) once it and earlier writes are done. */
  flush(): Promise<void> {
    if (this.stopped || this.options.size(this.queued) === 0) return this.writing;
    const batch = this.take();
    this.waiting.add(batch);
    const previous = this.writing;
    this.writing = previous
      .catch(() => undefined)
      .then(() => {
        // Taken by `takeAll` at process exit meanwhile: written there.
        if (!this.waiting.delete(batch)) return undefined;
        return this.options.write(batch);
      });
    return this.writing;
  }

  /** Empties the queue and hands its rows over. */
  take(): Batch {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const batch = this.queued;
    this.queued = this.options.empty();
    return batch;
  }

  /**
   * Every row not written yet, in order: batches a flush took whose write has not started, then the
   * queue. For the synchronous write at process exit, when no Promise will ever settle again.
   */
  takeAll(): Batch[] {
    const batches = [...this.waiting, this.take()];
    this.waiting.clear();
    return batches;
  }

  /** Writes what is queued and accepts no more flushes. */
  async stop(): Promise<void> {
    const flushed = this.flush();
    this.stopped = true;
    await flushed;
  }
}
