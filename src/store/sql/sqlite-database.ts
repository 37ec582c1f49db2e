import type Database from 'better-sqlite3';
import type { SqlClient, SqlDatabase, SqlParams, SqlRunResult, TransactionOptions } from './sql-database.js';

/** Statements that run at once, inside a batch's transaction. */
export interface SyncSqlClient {
  run(sql: string, params?: SqlParams): void;
  get<Row>(sql: string, params?: SqlParams): Row | undefined;
}

/**
 * `SqlDatabase` over one better-sqlite3 connection. Statements run synchronously when called and return
 * settled Promises, so the order of calls is the order of writes and a call costs what it did before the
 * stores became asynchronous. The one connection is shared by the whole process, so while a transaction
 * awaits between its statements, every other statement waits in a queue (otherwise it would run inside
 * that transaction).
 */
export class SqliteDatabase implements SqlDatabase {
  readonly dialect = 'sqlite' as const;
  private readonly statements = new Map<string, Database.Statement>();
  /** Work waiting for the running transaction to end, in call order. */
  private readonly waiting: (() => void)[] = [];
  /** Queued work that has not started yet (woken or not): new work goes behind it. */
  private queued = 0;
  private inTransaction = false;
  private closed = false;

  /** The open connection; this class closes it. */
  readonly connection: Database.Database;
  readonly location: string;

  /**
   * A batch's transaction, made once: better-sqlite3's `transaction()` builds four wrappers and sets their
   * properties each time it is asked, a cost on every group commit (one per call when calls come one by one).
   */
  private readonly inTransactionOf: (work: (client: SyncSqlClient) => void) => void;

  constructor(connection: Database.Database, location: string) {
    this.connection = connection;
    this.location = location;
    this.inTransactionOf = connection.transaction((work: (client: SyncSqlClient) => void) =>
      work(this.syncClient),
    );
  }

  all<Row>(sql: string, params?: SqlParams): Promise<Row[]> {
    return this.whenFree(() => this.allNow<Row>(sql, params));
  }

  get<Row>(sql: string, params?: SqlParams): Promise<Row | undefined> {
    return this.whenFree(() => this.getNow<Row>(sql, params));
  }

  run(sql: string, params?: SqlParams): Promise<SqlRunResult> {
    return this.whenFree(() => this.runNow(sql, params));
  }

  /**
   * Runs `work`'s statements in one transaction, synchronously as soon as no asynchronous transaction is
   * open (at once, usually): the group commit's batches.
   */
  writeBatch(work: (client: SyncSqlClient) => void): Promise<void> {
    return this.whenFree(() => this.inTransactionOf(work));
  }

  /**
   * `writeBatch` for the one place that cannot wait for a Promise: the process's `exit` event. Skipped
   * (returns false) while an asynchronous transaction is open.
   */
  writeBatchNow(work: (client: SyncSqlClient) => void): boolean {
    if (this.inTransaction || this.closed) return false;
    this.inTransactionOf(work);
    return true;
  }

  private readonly syncClient: SyncSqlClient = {
    run: (sql, params) => {
      this.runNow(sql, params);
    },
    get: <Row>(sql: string, params?: SqlParams) => this.getNow<Row>(sql, params),
  };

  async transaction<T>(
    action: (client: SqlClient) => Promise<T>,
    options: TransactionOptions = {},
  ): Promise<T> {
    if (this.inTransaction || this.queued > 0) {
      await this.turn();
      this.queued -= 1;
    }
    this.inTransaction = true;
    try {
      this.assertOpen();
      this.connection.exec('BEGIN IMMEDIATE');
      let result: T;
      try {
        result = await action(this.insideTransaction);
      } catch (error) {
        if (this.connection.inTransaction) this.connection.exec('ROLLBACK');
        throw error;
      }
      this.connection.exec('COMMIT');
      options.afterCommit?.();
      return result;
    } finally {
      this.inTransaction = false;
      this.wakeNext();
    }
  }

  close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.statements.clear();
      this.connection.close();
    }
    return Promise.resolve();
  }

  /** Statements issued by a transaction's action: they run at once, inside it. */
  private readonly insideTransaction: SqlClient = {
    dialect: 'sqlite',
    all: <Row>(sql: string, params?: SqlParams) => settle(() => this.allNow<Row>(sql, params)),
    get: <Row>(sql: string, params?: SqlParams) => settle(() => this.getNow<Row>(sql, params)),
    run: (sql: string, params?: SqlParams) => settle(() => this.runNow(sql, params)),
  };

  private whenFree<T>(work: () => T): Promise<T> {
    if (!this.inTransaction && this.queued === 0) return settle(work);
    return this.turn().then(() => {
      this.queued -= 1;
      try {
        return work();
      } finally {
        this.wakeNext();
      }
    });
  }

  /** Resolves when the work queued before this call is done. */
  private turn(): Promise<void> {
    this.queued += 1;
    return new Promise<void>((go) => this.waiting.push(go));
  }

  /** Lets the next queued piece of work run; statements run and wake the next, a transaction holds on. */
  private wakeNext(): void {
    const next = this.waiting.shift();
    if (next !== undefined) next();
  }

  private allNow<Row>(sql: string, params: SqlParams | undefined): Row[] {
    return bind(this.prepare(sql), params).all() as Row[];
  }

  private getNow<Row>(sql: string, params: SqlParams | undefined): Row | undefined {
    return bind(this.prepare(sql), params).get() as Row | undefined;
  }

  private runNow(sql: string, params: SqlParams | undefined): SqlRunResult {
    return { changes: bind(this.prepare(sql), params).run().changes };
  }

  // Prepared once per connection: parsing SQL per row would dominate the cost of these tiny writes.
  private prepare(sql: string): Database.Statement {
    this.assertOpen();
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      statement = this.connection.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('the database connection is closed');
  }
}

interface Bound {
  all(): unknown[];
  get(): unknown;
  run(): Database.RunResult;
}

function bind(statement: Database.Statement, params: SqlParams | undefined): Bound {
  if (params === undefined) return statement as unknown as Bound;
  const args = Array.isArray(params) ? (params as unknown[]) : [params];
  return {
    all: () => statement.all(...args),
    get: () => statement.get(...args),
    run: () => statement.run(...args),
  };
}

/** Runs synchronous work and hands its result (or its throw) back as a settled Promise. */
function settle<T>(work: () => T): Promise<T> {
  try {
    return Promise.resolve(work());
  } catch (error) {
    return Promise.reject(error as Error);
  }
}
