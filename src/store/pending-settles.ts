import type { CallAttemptRecord } from './call-records.js';

/** An attempt made under a budget reservation whose record the ledger could not write yet. */
export interface PendingSettle {
  /** The reservation the record ends. */
  reservationId: string;
  record: CallAttemptRecord;
  /** Epoch milliseconds of the first failed write. */
  since: number;
}

export interface PendingSettlesOptions {
  /** Writes the record and ends its reservation, in one transaction. */
  write(settle: PendingSettle): Promise<void>;
  /** Told once when settles are given up (their reservations stay, counting as spent). */
  gaveUp(settles: readonly PendingSettle[], error: unknown): void;
  /** How long a settle is tried again before it is given up. @default SETTLE_RETRY_FOR_MS */
  retryForMs?: number;
  now?: () => number;
}

/**
 * How long a process keeps trying to write a settle that failed: as long as a reservation made without a
 * timeout counts as in flight. Past it the reservation stays, counting as spent at its amount.
 */
export const SETTLE_RETRY_FOR_MS = 15 * 60_000;
const FIRST_PAUSE_MS = 1_000;
const LONGEST_PAUSE_MS = 30_000;

/**
 * Settles (an attempt's record plus the end of its reservation) that failed to write, kept and written
 * again in the background (backing off from 1 s to 30 s) while the process lives, so a disk that has room
 * again gets the real row and the reservation goes: a cap is not held at the estimate longer than the
 * fault lasts. Until then, and for good if the process ends first, the reservation counts as spent.
 */
export class PendingSettles {
  private readonly settles = new Map<string, PendingSettle>();
  private readonly options: PendingSettlesOptions;
  private timer: NodeJS.Timeout | undefined;
  private pauseMs = FIRST_PAUSE_MS;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(options: PendingSettlesOptions) {
    this.options = options;
  }

  get size(): number {
    return this.settles.size;
  }

  /** Every settle still unwritten, oldest first (for the synchronous write at process exit). */
  get all(): readonly PendingSettle[] {
    return [...this.settles.values()];
  }

  /** Keeps a settle whose write failed, to be written again. */
  keep(reservationId: string, record: CallAttemptRecord): void {
    if (this.stopped) return;
    const since = this.settles.get(reservationId)?.since ?? (this.options.now ?? Date.now)();
    this.settles.set(reservationId, { reservationId, record, since });
    this.schedule();
  }

  /** Forgets a settle written elsewhere (the exit handler). */
  written(reservationId: string): void {
    this.settles.delete(reservationId);
  }

  /**
   * Writes every kept settle now, oldest first, stopping at the first failure (the fault is usually the
   * whole disk). Never rejects: what failed stays kept, or is given up once past `retryForMs`.
   */
  retry(): Promise<void> {
    if (this.settles.size === 0) return Promise.resolve();
    this.running ??= this.writeAll().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** Stops the background writes; what is still kept stays unwritten (its reservations count as spent). */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async writeAll(): Promise<void> {
    for (const settle of [...this.settles.values()]) {
      try {
        await this.options.write(settle);
        this.settles.delete(settle.reservationId);
      } catch (error) {
        this.giveUpOld(error);
        this.schedule();
        return;
      }
    }
    this.pauseMs = FIRST_PAUSE_MS;
  }

  private giveUpOld(error: unknown): void {
    const oldest = (this.options.now ?? Date.now)() - (this.options.retryForMs ?? SETTLE_RETRY_FOR_MS);
    const given = [...this.settles.values()].filter((settle) => settle.since <= oldest);
    if (given.length === 0) return;
    for (const settle of given) this.settles.delete(settle.reservationId);
    this.options.gaveUp(given, error);
  }

  /** The next background write, unless one is due already; the timer never keeps the process alive. */
  private schedule(): void {
    if (this.timer !== undefined || this.stopped || this.settles.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.retry();
    }, this.pauseMs);
    this.timer.unref();
    this.pauseMs = Math.min(this.pauseMs * 2, LONGEST_PAUSE_MS);
  }
}
