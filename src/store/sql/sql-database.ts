/**
 * The one seam between Switchboard's stores and a database. The stores write their SQL once, in the
 * subset SQLite and PostgreSQL share (`ON CONFLICT … DO UPDATE`, `RETURNING`, `coalesce`, `CASE`), with
 * `?` or `@name` placeholders; a backend runs it. `dialect` is there for the few statements that differ
 * (JSON access, locking), which the stores spell out per dialect.
 */

/** Which database a `SqlDatabase` talks to. */
export type SqlDialect = 'sqlite' | 'postgres';

/** A statement's parameters: positional for `?`, an object for `@name`. */
export type SqlParams = readonly unknown[] | Readonly<Record<string, unknown>>;

/** What a write changed. */
export interface SqlRunResult {
  /** Rows inserted, updated or deleted. */
  changes: number;
}

/** Runs statements, on its own connection or inside a transaction. */
export interface SqlClient {
  readonly dialect: SqlDialect;
  /** Every row the statement returns. */
  all<Row = Record<string, unknown>>(sql: string, params?: SqlParams): Promise<Row[]>;
  /** The first row, or `undefined`. */
  get<Row = Record<string, unknown>>(sql: string, params?: SqlParams): Promise<Row | undefined>;
  /** Runs a write. */
  run(sql: string, params?: SqlParams): Promise<SqlRunResult>;
}

export interface TransactionOptions {
  /**
   * Serialises this transaction with every other one naming the same key, in any process: on PostgreSQL
   * a transaction-scoped advisory lock taken first; on SQLite nothing more is needed, because every
   * transaction there is `BEGIN IMMEDIATE` and so already holds the only write lock.
   */
  lockKey?: string;
  /**
   * Runs synchronously once the transaction committed (not after a rollback). On SQLite nothing else of
   * the process runs on the connection in between, so state kept beside the rows (the held budget
   * reservations) changes when they do.
   */
  afterCommit?: () => void;
}

/** A connection (SQLite) or a pool of them (PostgreSQL). */
export interface SqlDatabase extends SqlClient {
  /** For messages: the file path, or the URL without its password. */
  readonly location: string;
  /**
   * Runs `action` in one transaction: committed when it resolves, rolled back when it rejects. Other
   * statements of this process wait while it runs on SQLite (one connection); on PostgreSQL they use
   * other pooled connections.
   */
  transaction<T>(action: (client: SqlClient) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /** Releases the connection(s). Safe to call twice. */
  close(): Promise<void>;
}
