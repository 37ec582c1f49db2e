/** A decision-cache row as read: its decision's JSON and when it was stored (epoch ms). */
export interface CachedRow {
  decision: string;
  storedAt: number;
}

interface Waiter {
  notBefore: number;
  resolve(decision: string | undefined): void;
  reject(error: unknown): void;
}

/**
 * The decision cache's reads of one turn of the event loop, made in one statement at its end
 * (`setImmediate`, like the group commit's writes). On SQLite a read is synchronous work on the event
 * loop, a read transaction with its WAL locks for each; serve's /route made one for every new text.
 * The requests handled in one turn now share it. Each caller still gets only its own key's entry, and
 * only when stored at or after its own `notBefore`.
 */
export class BatchedCacheReads {
  private waiting = new Map<string, Waiter[]>();
  private scheduled = false;
  private readonly readMany: (keys: readonly string[]) => Promise<Map<string, CachedRow>>;

  /** `readMany` reads the rows of the keys given (those it has), in one statement. */
  constructor(readMany: (keys: readonly string[]) => Promise<Map<string, CachedRow>>) {
    this.readMany = readMany;
  }

  /** The decision's JSON stored under `key` at or after `notBefore`, or undefined. */
  read(key: string, notBefore: number): Promise<string | undefined> {
    return new Promise((resolve, reject) => {
      const waiters = this.waiting.get(key);
      if (waiters === undefined) this.waiting.set(key, [{ notBefore, resolve, reject }]);
      else waiters.push({ notBefore, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => void this.readAll());
    });
  }

  private async readAll(): Promise<void> {
    const waiting = this.waiting;
    this.waiting = new Map();
    this.scheduled = false;
    let rows: Map<string, CachedRow>;
    try {
      rows = await this.readMany([...waiting.keys()]);
    } catch (error) {
      for (const waiters of waiting.values()) for (const waiter of waiters) waiter.reject(error);
      return;
    }
    for (const [key, waiters] of waiting) {
      const row = rows.get(key);
      for (const waiter of waiters) {
        waiter.resolve(row !== undefined && row.storedAt >= waiter.notBefore ? row.decision : undefined);
      }
    }
  }
}
