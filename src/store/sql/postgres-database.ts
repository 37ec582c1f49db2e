import { createRequire } from 'node:module';
import type * as Pg from 'pg';
import { SwitchboardError } from '../../core/errors.js';
import { registerSecret } from '../../core/secrets.js';
import { orderParams, toNumbered, type NumberedStatement } from './placeholders.js';
import type { SqlClient, SqlDatabase, SqlParams, SqlRunResult, TransactionOptions } from './sql-database.js';

const requirePackage = createRequire(import.meta.url);

/** PostgreSQL type ids whose text form we read as JavaScript numbers: bigint (epoch ms, counts) and numeric (sums). */
const INT8_OID = 20;
const NUMERIC_OID = 1700;

/** How long opening a connection may take before the database counts as unreachable. */
export const CONNECT_TIMEOUT_MS = 10_000;

export interface PostgresOptions {
  /**
   * Connections in the pool.
   * @default 10
   */
  max?: number;
  /** @default 10 s */
  connectTimeoutMs?: number;
}

/** Whether a ledger location names a PostgreSQL database rather than a SQLite file. */
export function isPostgresUrl(location: string): boolean {
  return /^postgres(?:ql)?:\/\//i.test(location);
}

/** The URL without its password (and without query options), for messages and `location`. */
export function describePostgresUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const user = parsed.username === '' ? '' : `${parsed.username}@`;
    return `${parsed.protocol}//${user}${parsed.host}${parsed.pathname}`;
  } catch {
    return 'postgres://(unparseable URL)';
  }
}

/**
 * `SqlDatabase` over a `pg` pool. Opening checks the connection once, so a wrong host or password is
 * reported where the user gave the URL, as one line with what to do.
 */
export class PostgresDatabase implements SqlDatabase {
  readonly dialect = 'postgres' as const;
  private readonly statements = new Map<string, NumberedStatement & { name: string }>();
  private closed: Promise<void> | undefined;

  private readonly pool: Pg.Pool;
  readonly location: string;

  private constructor(pool: Pg.Pool, location: string) {
    this.pool = pool;
    this.location = location;
  }

  /** @throws SwitchboardError `DATABASE_UNREACHABLE`, `DATABASE_AUTH` */
  static async connect(url: string, options: PostgresOptions = {}): Promise<PostgresDatabase> {
    const location = describePostgresUrl(url);
    let config: Pg.PoolConfig;
    try {
      const parsed = new URL(url);
      registerSecret(decodeURIComponent(parsed.password));
      config = { connectionString: url };
    } catch (error) {
      throw new SwitchboardError('INVALID_INPUT', `database URL ${location} is not a valid URL`, {
        hint: 'write it as postgres://user@host:5432/database, adding :password after the user if it needs one',
        cause: error,
      });
    }
    const pg = requirePackage('pg') as typeof Pg;
    const pool = new pg.Pool({
      ...config,
      max: options.max ?? 10,
      connectionTimeoutMillis: options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
      application_name: 'switchboard',
      types: { getTypeParser: numbersAsNumbers(pg) },
      allowExitOnIdle: true,
    });
    // A pooled connection the server drops while idle is an error event, not a rejected query; the next
    // query opens a new connection. Without a listener the event would end the process.
    pool.on('error', () => undefined);
    const database = new PostgresDatabase(pool, location);
    try {
      await pool.query('SELECT 1');
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw connectionError(error, location);
    }
    return database;
  }

  all<Row>(sql: string, params?: SqlParams): Promise<Row[]> {
    return this.query<Row>(this.pool, sql, params).then((result) => result.rows);
  }

  get<Row>(sql: string, params?: SqlParams): Promise<Row | undefined> {
    return this.query<Row>(this.pool, sql, params).then((result) => result.rows[0]);
  }

  run(sql: string, params?: SqlParams): Promise<SqlRunResult> {
    return this.query(this.pool, sql, params).then((result) => ({ changes: result.rowCount ?? 0 }));
  }

  async transaction<T>(
    action: (client: SqlClient) => Promise<T>,
    options: TransactionOptions = {},
  ): Promise<T> {
    const connection = await this.pool.connect().catch((error: unknown) => {
      throw connectionError(error, this.location);
    });
    let broken = false;
    // The pool listens for errors on idle connections only. One the server ends while it is checked out
    // (a restart's 57P01 in the middle of a transaction) emits 'error' as well as failing its query:
    // without a listener that event would end the process. The query's failure is what reaches the caller.
    const onError = (): void => {
      broken = true;
    };
    connection.on('error', onError);
    try {
      await connection.query('BEGIN');
      if (options.lockKey !== undefined) {
        await connection.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [options.lockKey]);
      }
      const client: SqlClient = {
        dialect: 'postgres',
        all: (sql, params) => this.query(connection, sql, params).then((result) => result.rows as never[]),
        get: (sql, params) => this.query(connection, sql, params).then((result) => result.rows[0] as never),
        run: (sql, params) =>
          this.query(connection, sql, params).then((result) => ({ changes: result.rowCount ?? 0 })),
      };
      const result = await action(client);
      await connection.query('COMMIT');
      options.afterCommit?.();
      return result;
    } catch (error) {
      await connection.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw error;
    } finally {
      // A dead connection keeps the listener: its socket may still report the end after this.
      if (!broken) connection.off('error', onError);
      // A connection whose rollback failed may still hold the transaction, and one that errored is dead:
      // drop it rather than reuse it.
      connection.release(broken);
    }
  }

  close(): Promise<void> {
    this.closed ??= this.pool.end();
    return this.closed;
  }

  private query<Row>(
    runner: Pg.Pool | Pg.PoolClient,
    sql: string,
    params: SqlParams | undefined,
  ): Promise<Pg.QueryResult<Row & Pg.QueryResultRow>> {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      // Named, so each connection parses and plans it once and reuses the plan.
      statement = { ...toNumbered(sql), name: `switchboard_${this.statements.size + 1}` };
      this.statements.set(sql, statement);
    }
    const values = orderParams(statement, params);
    return runner.query<Row & Pg.QueryResultRow>({ name: statement.name, text: statement.text, values });
  }
}

function numbersAsNumbers(pg: typeof Pg): Pg.CustomTypesConfig['getTypeParser'] {
  const parse = (text: string): number => Number(text);
  return ((oid: number, format?: string) =>
    oid === INT8_OID || oid === NUMERIC_OID
      ? parse
      : pg.types.getTypeParser(oid, format as 'text')) as Pg.CustomTypesConfig['getTypeParser'];
}

/** SQLSTATE codes a user fixes in the URL or on the server, with what to do. */
const AUTH_PROBLEMS: Record<string, string> = {
  '28P01': 'check the user name and password in the database URL',
  '28000': 'the server refused this user from this host; check pg_hba.conf or the URL',
  '3D000': 'create the database first (createdb NAME), or fix its name in the URL',
  '42501': 'grant the user CREATE and USAGE on the database, or use its owner in the URL',
};

/** A failure to reach or log in to the server, as one line with what to do. */
export function connectionError(error: unknown, location: string): SwitchboardError {
  if (error instanceof SwitchboardError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  const reason = error instanceof Error ? error.message.split('\n', 1)[0] : String(error);
  if (typeof code === 'string' && code in AUTH_PROBLEMS) {
    return new SwitchboardError('DATABASE_AUTH', `cannot use database ${location}: ${reason}`, {
      hint: AUTH_PROBLEMS[code]!,
      cause: error,
      details: { database: location, sqlState: code },
    });
  }
  return new SwitchboardError('DATABASE_UNREACHABLE', `cannot reach database ${location}: ${reason}`, {
    hint: 'check that PostgreSQL is running and that the host and port in the URL (SWITCHBOARD_DATABASE_URL or database_url) are right',
    cause: error,
    details: { database: location, ...(typeof code === 'string' ? { errorCode: code } : {}) },
  });
}
