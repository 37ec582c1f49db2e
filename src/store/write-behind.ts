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
  /** `earlier`'s rows, then `later`'s: a batch whose write failed goes back in front of the queue. */
  merge(earlier: Batch, later: Batch): Batch;
  /** Writes a failed batch gets again (at the next flush) before its rows are dropped; 2 unless told. */
  retries?: number;
  /** Told when rows are dropped after their last retry failed. */
  dropped?(batch: Batch, error: unknown): void;
}

export class WriteBehind<Batch> {
  private queued: Batch;
  private timer: NodeJS.Timeout | undefined;
  /** The write of the batch taken last, which the next flush (and every read) waits for. */
  private writing: Promise<void> = Promise.resolve();
  /** Rows taken by writes that have not finished yet. */
  private inFlight = 0;
  /** Writes that failed in a row: a batch is retried `retries` times, then dropped. */
  private failures = 0;
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
   * unless `maxRows` rows or more are still being written (the database is behind): then it waits for
   * those writes, so a slow database slows its callers instead of growing memory without bound.
   */
  enqueue(add: (batch: Batch) => void): Promise<void> {
    add(this.queued);
    const behind = this.inFlight >= this.options.maxRows;
    const previous = this.writing;
    if (this.options.size(this.queued) >= this.options.maxRows) void this.flush().catch(() => undefined);
    else this.schedule();
    return behind ? previous.catch(() => undefined) : Promise.resolve();
  }

  /** The rows still queued (not yet taken by a write), for reads that must see them. */
  get pending(): Batch {
    return this.queued;
  }

  /**
   * Writes what is queued; resolves (or rejects with the write's error) once it and earlier writes are
   * done. A failed batch goes back in front of the queue, for the next flush (at the latest after
   * `flushMs`) to write again; its error is reported to the callers of this flush only, so a read
   * after the database recovered does not fail with an old error.
   */
  flush(): Promise<void> {
    if (this.stopped || this.options.size(this.queued) === 0) return this.writing;
    const batch = this.take();
    const rows = this.options.size(batch);
    this.inFlight += rows;
    this.waiting.add(batch);
    const write = this.writing
      .catch(() => undefined)
      .then(() => {
        // Taken by `takeAll` at process exit meanwhile: written there.
        if (!this.waiting.delete(batch)) return undefined;
        return this.options.write(batch);
      });
    this.writing = write;
    write.then(
      () => {
        this.inFlight -= rows;
        this.failures = 0;
      },
      (error: unknown) => {
        this.inFlight -= rows;
        this.failures += 1;
        if (this.failures <= (this.options.retries ?? 2) && !this.stopped) {
          this.queued = this.options.merge(batch, this.queued);
          this.schedule();
        } else {
          this.failures = 0;
          this.options.dropped?.(batch, error);
        }
        if (this.writing === write) this.writing = Promise.resolve();
      },
    );
    return write;
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

  /** Starts the timer that writes the queue, unless it runs already. */
  private schedule(): void {
    if (this.timer !== undefined || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush().catch(() => undefined);
    }, this.options.flushMs);
    this.timer.unref();
  }
}
