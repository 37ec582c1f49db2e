/**
 * Group commit: rows (call attempts, route decisions, decision-cache entries) that concurrent callers
 * record together share one transaction, and each caller's promise resolves only once the transaction
 * holding its row has committed. A row per transaction costs about 60–200 µs of synchronous work on the
 * event loop (more on a busy `serve`); a group costs a fraction of that per row.
 *
 * When no write is in flight, one starts at the end of the current turn of the event loop
 * (`setImmediate`), not after a timer: it takes every row recorded by the requests handled in that turn.
 * Rows recorded while a write is in flight form the next group, written as soon as that write ends. A
 * group holds at most `maxRows` rows; more go into the group after it. The back-pressure is the promise
 * itself: a caller waits for its commit, so a slow database slows its callers instead of growing memory.
 *
 * A write that fails is tried again `retries` times; then the callers of its group are rejected with its
 * error (their rows are not in the database) and `failed` is told. Nothing resolved is ever lost, on a
 * crash (SIGKILL, power loss as far as the database's sync setting allows) or otherwise.
 */
export interface GroupCommitOptions<Batch> {
  /** Most rows one transaction takes; rows beyond it wait for the next. */
  maxRows: number;
  /** An empty batch to fill. */
  empty(): Batch;
  /** Rows in a batch. */
  size(batch: Batch): number;
  /** Writes a batch in one transaction; resolves once it committed. */
  write(batch: Batch): Promise<void>;
  /** Writes a failed batch gets again before its callers are told; 2 unless told. */
  retries?: number;
  /** Pause before each retry, in milliseconds; 20 unless told. */
  retryDelayMs?: number;
  /** Told when a batch's rows were not written after its last retry (its callers are rejected too). */
  failed?(batch: Batch, error: unknown): void;
}

/** The rows of one transaction and the promise its callers wait on. */
interface Group<Batch> {
  readonly batch: Batch;
  readonly committed: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
  /** No more rows go in: its write started, or it is full. */
  sealed: boolean;
  /** Its write is running (`takeAll` leaves it to that write). */
  writing: boolean;
}

export class GroupCommit<Batch> {
  /** Groups not committed yet, oldest first; the first is being written while `draining`. */
  private readonly groups: Group<Batch>[] = [];
  private draining = false;
  private scheduled = false;
  private stopped = false;
  /** Settles when the current drain ends: what `stop` waits for. */
  private drained: Promise<void> = Promise.resolve();
  private readonly options: GroupCommitOptions<Batch>;

  constructor(options: GroupCommitOptions<Batch>) {
    this.options = options;
  }

  /**
   * Adds rows through `add` (which mutates the open group's batch) and resolves once they are committed;
   * rejects with the write's error when they could not be written. Rejects at once after `stop`.
   */
  enqueue(add: (batch: Batch) => void): Promise<void> {
    if (this.stopped) return Promise.reject(new Error('the group commit is stopped'));
    const group = this.openGroup();
    add(group.batch);
    if (this.options.size(group.batch) >= this.options.maxRows) group.sealed = true;
    this.start();
    return group.committed;
  }

  /** Batches not committed yet, oldest first, for reads that must see them (the decision cache). */
  get pending(): readonly Batch[] {
    return this.groups.map((group) => group.batch);
  }

  /**
   * Writes what is recorded now, without waiting for the turn to end; resolves once every row recorded
   * before it is committed, or rejects with the error of a group that could not be written.
   */
  async flush(): Promise<void> {
    const waiting = this.groups.map((group) => group.committed);
    if (waiting.length === 0) return;
    for (const group of this.groups) group.sealed = true;
    if (!this.draining) void this.drain();
    const failure = (await Promise.allSettled(waiting)).find((outcome) => outcome.status === 'rejected');
    if (failure !== undefined) throw failure.reason;
  }

  /**
   * `flush` for reads: resolves once every row recorded before it is committed or given up (whose
   * callers were told), so a read sees everything committed and never fails with another caller's error.
   */
  async settled(): Promise<void> {
    await this.flush().catch(() => undefined);
  }

  /**
   * Every batch whose write has not started, oldest first, taken out of the queue (their callers' promises
   * never settle). For the synchronous write at process exit, when no Promise will ever settle again.
   */
  takeAll(): Batch[] {
    const taken = this.groups.filter((group) => !group.writing);
    this.groups.splice(0, this.groups.length, ...this.groups.filter((group) => group.writing));
    return taken.map((group) => group.batch);
  }

  /** Writes what is recorded, then accepts no more rows. */
  async stop(): Promise<void> {
    const flushed = this.flush();
    this.stopped = true;
    try {
      await flushed;
    } finally {
      await this.drained;
    }
  }

  /** The group new rows go into: the last one, unless it is sealed. */
  private openGroup(): Group<Batch> {
    const last = this.groups.at(-1);
    if (last !== undefined && !last.sealed) return last;
    let resolve!: () => void;
    let reject!: (error: unknown) => void;
    const committed = new Promise<void>((onCommit, onFailure) => {
      resolve = onCommit;
      reject = onFailure;
    });
    // Its callers see the rejection; a group nobody waits on (taken at exit) must not crash the process.
    committed.catch(() => undefined);
    const group = { batch: this.options.empty(), committed, resolve, reject, sealed: false, writing: false };
    this.groups.push(group);
    return group;
  }

  /** Starts a drain at the end of this turn, unless one runs (it takes the new rows next) or is due. */
  private start(): void {
    if (this.draining || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (!this.draining) void this.drain();
    });
  }

  /** Writes groups one after another until none is left. */
  private drain(): Promise<void> {
    this.draining = true;
    this.drained = (async () => {
      try {
        for (let group = this.groups[0]; group !== undefined; group = this.groups[0]) {
          group.sealed = true;
          group.writing = true;
          try {
            await this.writeWithRetries(group.batch);
            this.groups.shift();
            group.resolve();
          } catch (error) {
            this.groups.shift();
            this.options.failed?.(group.batch, error);
            group.reject(error);
          }
        }
      } finally {
        this.draining = false;
      }
    })();
    return this.drained;
  }

  private async writeWithRetries(batch: Batch): Promise<void> {
    const retries = this.options.retries ?? 2;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.options.write(batch);
        return;
      } catch (error) {
        if (attempt >= retries) throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, this.options.retryDelayMs ?? 20));
    }
  }
}
