import { isConnectionLost } from '../store/database.js';
import { redactSecrets } from '../core/secrets.js';

export interface DatabaseWatchOptions {
  /** The database as messages name it (no password). */
  location: string;
  /** One statement that answers when the database does (`SELECT 1`). */
  probe: () => Promise<unknown>;
  log: (line: string) => void;
  /**
   * How often the database is probed (ms).
   * @default 2_000
   */
  intervalMs?: number;
  now?: () => number;
}

/**
 * What a worker says about its database: one line when it goes out of reach (a restart, a cut, its
 * connections terminated) and one when it answers again, instead of a line per failed poll of every
 * queue. The worker itself rides the outage out: its stores retry their writes, pg-boss reconnects its
 * pool and its LISTEN connection, and its jobs go on.
 */
export class DatabaseWatch {
  private awaySince: number | undefined;
  private cameBackAt: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private probing = false;
  private readonly options: DatabaseWatchOptions;
  private readonly now: () => number;

  constructor(options: DatabaseWatchOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
  }

  /** Probes every `intervalMs` until `stop`, so that a return is noticed even by an idle worker. */
  start(): void {
    this.timer ??= setInterval(() => void this.check(), this.options.intervalMs ?? 2_000);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Whether the database was last seen out of reach. */
  get away(): boolean {
    return this.awaySince !== undefined;
  }

  /**
   * When the database last came back (epoch ms), undefined when it was never away; now while it is away
   * (a statement may already get through before the next probe says it is back).
   */
  backAt(): number | undefined {
    return this.awaySince === undefined ? this.cameBackAt : this.now();
  }

  /**
   * Reports an error some client met. A lost connection is logged once per outage; any other error is
   * the caller's to log, and this returns false for it.
   */
  report(error: unknown, text: string): boolean {
    if (!isConnectionLost(error)) return false;
    if (this.awaySince === undefined) {
      this.awaySince = this.now();
      this.options.log(
        `switchboard: database ${this.options.location} unreachable (${redactSecrets(text)}); the worker keeps its jobs and reconnects`,
      );
    }
    return true;
  }

  /** Probes once: logs the database's return, or its going away. */
  async check(): Promise<void> {
    if (this.probing) return;
    this.probing = true;
    try {
      await this.options.probe();
      if (this.awaySince !== undefined) {
        this.cameBackAt = this.now();
        const seconds = Math.round((this.cameBackAt - this.awaySince) / 1000);
        this.awaySince = undefined;
        this.options.log(
          `switchboard: database ${this.options.location} reachable again (away about ${seconds}s)`,
        );
      }
    } catch (error) {
      const text = error instanceof Error ? (error.message.split('\n', 1)[0] ?? '') : String(error);
      this.report(error, text);
    } finally {
      this.probing = false;
    }
  }
}
