import { accessSync, constants, mkdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type Database from 'better-sqlite3';
import { isSwitchboardError, SwitchboardError } from '../core/errors.js';
import { loadSqlite } from '../core/lazy-packages.js';
import { refuseUrlAsPath } from '../core/url-path.js';
import {
  LATEST_SCHEMA_VERSION,
  findSchemaProblem,
  migrate,
  migratePostgres,
  readSchemaState,
  type SchemaProblem,
} from './migrations.js';
import { describePostgresUrl, isPostgresUrl, PostgresDatabase } from './sql/postgres-database.js';
import type {
  SqlClient,
  SqlDatabase,
  SqlParams,
  SqlRunResult,
  TransactionOptions,
} from './sql/sql-database.js';
import { startSqliteCheckpointer, type SqliteCheckpointer } from './sql/sqlite-checkpointer.js';
import { SqliteDatabase } from './sql/sqlite-database.js';

/** Folder, relative to the working directory, that holds Switchboard's state by default. */
export const DEFAULT_STATE_DIR = '.switchboard';
/** File name of the ledger inside the state folder. */
export const LEDGER_FILE_NAME = 'ledger.db';
/** The variable that points every store at a PostgreSQL database instead of the SQLite file. */
export const DATABASE_URL_VARIABLE = 'SWITCHBOARD_DATABASE_URL';
/**
 * How long a SQLite write waits for another process's lock before failing. Generous, because writes are
 * tiny and a failure loses a ledger row; a stall this long means something is wrong anyway.
 */
export const BUSY_TIMEOUT_MS = 10_000;

/** Where the stores live: a PostgreSQL URL, or a SQLite file (by path, or `ledger.db` in a state folder). */
export interface DatabaseTarget {
  /**
   * A `postgres://` URL. When neither this nor `path` is given, `SWITCHBOARD_DATABASE_URL` is used when set.
   */
  url?: string;
  /** The SQLite file; `:memory:` for a private in-memory database. */
  path?: string;
  /** @default `.switchboard` in the current working directory */
  stateDir?: string;
}

export type DatabaseLocation = { kind: 'postgres'; url: string } | { kind: 'sqlite'; file: string };

/** Which database a target names, checking the URL's form. */
export function locateDatabase(target: DatabaseTarget): DatabaseLocation {
  // Checked before anything is resolved: `resolve('postgres://u:p@h/db')` is a path under ./postgres:/.
  refuseUrlAsPath(target.path, 'ledger path');
  refuseUrlAsPath(target.stateDir, 'state folder');
  const fromEnvironment = target.path === undefined ? process.env[DATABASE_URL_VARIABLE] : undefined;
  const url = target.url ?? (fromEnvironment === '' ? undefined : fromEnvironment);
  if (url !== undefined) {
    if (!isPostgresUrl(url)) {
      throw new SwitchboardError(
        'INVALID_INPUT',
        `database URL ${describePostgresUrl(url)} is not a postgres:// URL`,
        {
          hint: `write it as postgres://user@host:5432/database, adding :password after the user if it needs one, or unset ${DATABASE_URL_VARIABLE} to use the SQLite file`,
        },
      );
    }
    return { kind: 'postgres', url };
  }
  return { kind: 'sqlite', file: resolveSqlitePath(target) };
}

// Every store of a process shares one connection (SQLite) or pool (PostgreSQL) per database: on SQLite
// two connections of one process would wait on each other's write lock while the event loop that could
// release it is blocked; on PostgreSQL a pool per store would multiply connections.
const shared = new Map<string, { ready: Promise<SqlDatabase>; users: number }>();

/**
 * Opens the SQLite file, checked and migrated, synchronously (the ledger's callers are synchronous).
 * Shared by the process's stores; each `close()` of the returned handle releases one use.
 *
 * @throws SwitchboardError `STORE_ERROR` when the folder cannot be created, the file is not a SQLite
 *   database, was written by a newer Switchboard; `DATABASE_FOREIGN` when it belongs to another program.
 */
export function openSqliteDatabase(file: string): SqlDatabase {
  if (file === ':memory:') return new SqliteDatabase(openSqliteConnection(file), file);
  const key = `sqlite:${file}`;
  let entry = sharedSqlite.get(key);
  if (entry === undefined) {
    const connection = openSqliteConnection(file);
    entry = {
      database: new SqliteDatabase(connection, file),
      users: 0,
      checkpointer: checkpointInBackground ? startSqliteCheckpointer(file, connection) : undefined,
    };
    sharedSqlite.set(key, entry);
  }
  entry.users += 1;
  const { database, checkpointer } = entry;
  return new SharedDatabase(database, async () => {
    entry.users -= 1;
    if (entry.users > 0) return;
    sharedSqlite.delete(key);
    // The worker's connection first: the last one to close folds the log into the file and removes it.
    await checkpointer?.stop();
    await database.close();
  });
}
const sharedSqlite = new Map<
  string,
  { database: SqliteDatabase; users: number; checkpointer: SqliteCheckpointer | undefined }
>();

let checkpointInBackground = false;

/**
 * For a long-running process (`serve`): the SQLite ledgers it opens from now on move their WAL
 * checkpoints to a worker thread (see `startSqliteCheckpointer`), off the event loop and off the commit
 * of whichever request would have paid for them. A short command keeps SQLite's own checkpoints: a
 * worker's start costs more than the few it would move.
 */
export function checkpointSqliteInBackground(): void {
  checkpointInBackground = true;
}

/**
 * Connects to PostgreSQL, checks the database is ours (or empty) and migrates it. Shared like
 * `openSqliteDatabase`: later callers wait for the first one's connection.
 *
 * @throws SwitchboardError `DATABASE_UNREACHABLE`, `DATABASE_AUTH`, `DATABASE_FOREIGN`, `STORE_ERROR`
 */
export async function connectPostgresDatabase(url: string): Promise<SqlDatabase> {
  const key = `postgres:${url}`;
  let entry = shared.get(key);
  if (entry === undefined) {
    entry = { ready: connectAndMigrate(url), users: 0 };
    shared.set(key, entry);
  }
  entry.users += 1;
  let database: SqlDatabase;
  try {
    database = await entry.ready;
  } catch (error) {
    entry.users -= 1;
    if (shared.get(key) === entry) shared.delete(key);
    throw error;
  }
  const mine = entry;
  return new SharedDatabase(database, async () => {
    mine.users -= 1;
    if (mine.users > 0) return;
    if (shared.get(key) === mine) shared.delete(key);
    await database.close();
  });
}

async function connectAndMigrate(url: string): Promise<SqlDatabase> {
  const database = await PostgresDatabase.connect(url);
  try {
    throwOnSchemaProblem(await migratePostgres(database), database.location);
    return database;
  } catch (error) {
    await database.close();
    throw toStoreError(error, database.location, 'cannot open the ledger');
  }
}

/** One user's handle on a shared database: closing it releases that use only. */
class SharedDatabase implements SqlDatabase {
  private released = false;
  readonly dialect: SqlDatabase['dialect'];
  readonly location: string;
  private readonly database: SqlDatabase;
  private readonly onClose: () => Promise<void>;

  constructor(database: SqlDatabase, onClose: () => Promise<void>) {
    this.database = database;
    this.onClose = onClose;
    this.dialect = database.dialect;
    this.location = database.location;
  }

  /** The SQLite implementation underneath, for the synchronous exit flush; undefined on PostgreSQL. */
  get sqlite(): SqliteDatabase | undefined {
    return this.database instanceof SqliteDatabase ? this.database : undefined;
  }

  all<Row>(sql: string, params?: SqlParams): Promise<Row[]> {
    return this.database.all<Row>(sql, params);
  }
  get<Row>(sql: string, params?: SqlParams): Promise<Row | undefined> {
    return this.database.get<Row>(sql, params);
  }
  run(sql: string, params?: SqlParams): Promise<SqlRunResult> {
    return this.database.run(sql, params);
  }
  transaction<T>(action: (client: SqlClient) => Promise<T>, options?: TransactionOptions): Promise<T> {
    return this.database.transaction(action, options);
  }
  close(): Promise<void> {
    if (this.released) return Promise.resolve();
    this.released = true;
    return this.onClose();
  }
}

/** The SqliteDatabase behind a handle from `openSqliteDatabase`, when there is one. */
export function sqliteBehind(database: SqlDatabase): SqliteDatabase | undefined {
  if (database instanceof SqliteDatabase) return database;
  return database instanceof SharedDatabase ? database.sqlite : undefined;
}

function resolveSqlitePath(target: DatabaseTarget): string {
  if (target.path === ':memory:') return target.path;
  const file =
    target.path === undefined
      ? resolve(target.stateDir ?? DEFAULT_STATE_DIR, LEDGER_FILE_NAME)
      : resolve(target.path);
  const directory = dirname(file);
  try {
    mkdirSync(directory, { recursive: true });
  } catch (error) {
    const unwritable = unwritableStoreError(error, file, `cannot create the ledger folder ${directory} for`);
    if (unwritable !== undefined) throw unwritable;
    throw new SwitchboardError('STORE_ERROR', `cannot create the ledger folder ${directory}`, {
      hint: 'make the folder writable, or choose another state directory or ledger path',
      cause: error,
      details: { file },
    });
  }
  if (isDirectory(file)) {
    throw new SwitchboardError('STORE_ERROR', `ledger path ${file} is a directory`, {
      hint: 'point the ledger path at a file, e.g. ' + join(file, LEDGER_FILE_NAME),
      details: { file },
    });
  }
  return file;
}

function isDirectory(file: string): boolean {
  try {
    return statSync(file).isDirectory();
  } catch {
    return false;
  }
}

/** A better-sqlite3 connection to the file, checked and migrated (WAL, busy timeout). The caller closes it. */
export function openSqliteConnection(file: string): Database.Database {
  let database: Database.Database;
  try {
    const Sqlite = loadSqlite();
    database = new Sqlite(file);
  } catch (error) {
    throw toStoreError(error, file, 'cannot open the ledger');
  }
  try {
    // Set first, so every later step (including the pragmas below) waits for other writers.
    database.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    // Checked before switching to WAL, which would rewrite the header of someone else's file.
    throwOnSchemaProblem(findSchemaProblem(readSchemaState(database)), file);
    // WAL lets readers and one writer proceed together; NORMAL sync is durable across crashes of
    // the process and only risks the last transactions on power loss, which a ledger can accept.
    enableWal(database);
    database.pragma('synchronous = NORMAL');
    throwOnSchemaProblem(migrate(database), file);
    return database;
  } catch (error) {
    database.close();
    throw toStoreError(error, file, 'cannot open the ledger');
  }
}

/**
 * Switches a ledger to WAL (a setting kept in the file, so usually already done). SQLite answers the
 * switch with SQLITE_BUSY at once, without the busy timeout, when processes open a new ledger together;
 * this waits and tries again for as long as the busy timeout would have.
 */
function enableWal(database: Database.Database): void {
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      if (database.pragma('journal_mode', { simple: true }) !== 'wal') database.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() > deadline) throw error;
      Atomics.wait(pause, 0, 0, 5 + Math.random() * 20);
    }
  }
}

function throwOnSchemaProblem(problem: SchemaProblem | undefined, location: string): void {
  if (problem === undefined) return;
  const postgres = isPostgresUrl(location);
  if (problem.kind === 'foreign') {
    throw new SwitchboardError(
      'DATABASE_FOREIGN',
      postgres
        ? `database ${location} holds tables Switchboard did not create`
        : `${location} is a SQLite database that Switchboard did not create`,
      {
        hint: postgres
          ? 'give Switchboard a database of its own (createdb switchboard) and point the URL at it; it leaves this one untouched'
          : 'point the ledger at another path; Switchboard leaves files it does not own untouched',
        details: postgres ? { database: location } : { file: location },
      },
    );
  }
  throw new SwitchboardError(
    'STORE_ERROR',
    `ledger ${location} has schema version ${problem.version}, newer than this Switchboard supports (${LATEST_SCHEMA_VERSION})`,
    {
      hint: 'upgrade Switchboard, or point the ledger at another database',
      details: {
        database: location,
        schemaVersion: problem.version,
        supportedVersion: LATEST_SCHEMA_VERSION,
      },
    },
  );
}

/** Hints for SQLite result codes a user can do something about. */
const HINTS_BY_SQLITE_CODE: Record<string, string> = {
  SQLITE_NOTADB:
    'the file is not a SQLite database; point the ledger at another path (Switchboard will not overwrite it)',
  SQLITE_CORRUPT: 'the ledger is damaged; move it aside and Switchboard will start a new one',
  SQLITE_CANTOPEN: 'check that the folder exists and is writable, or choose another ledger path',
  SQLITE_PERM: 'make the ledger file and its folder writable, or choose another ledger path',
  SQLITE_IOERR: 'check the disk and the file system holding the ledger',
  SQLITE_BUSY: 'another process held the ledger locked for too long; retry, or look for a stuck process',
  SQLITE_CONSTRAINT_PRIMARYKEY: 'each route decision needs a unique id',
};

/** Hints for PostgreSQL SQLSTATE classes a user can do something about. */
const HINTS_BY_SQLSTATE: Record<string, string> = {
  '23505': 'each route decision needs a unique id',
  '53300': 'the server has no connections left; raise max_connections or run fewer workers',
  '57P01': 'the server shut down; start it again and retry',
};

function sqliteCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_') ? code : undefined;
}

function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/**
 * Wraps any failure as a one-line `STORE_ERROR` naming the database (`LEDGER_UNWRITABLE` when its disk is
 * full or it is read-only); passes our own errors through.
 */
export function toStoreError(error: unknown, location: string, what: string): SwitchboardError {
  if (error instanceof SwitchboardError) return error;
  const unwritable = unwritableStoreError(error, location, what);
  if (unwritable !== undefined) return unwritable;
  const reason = error instanceof Error ? error.message.split('\n', 1)[0] : String(error);
  const code = sqliteCode(error);
  if (code !== undefined || !isPostgresUrl(location)) {
    const hint =
      (code === undefined
        ? undefined
        : (HINTS_BY_SQLITE_CODE[code] ?? HINTS_BY_SQLITE_CODE[code.replace(/_[A-Z]+$/, '')])) ??
      'check the ledger path and its permissions';
    return new SwitchboardError('STORE_ERROR', `${what} ${location}: ${reason}`, {
      hint,
      cause: error,
      details: code === undefined ? { file: location } : { file: location, sqliteCode: code },
    });
  }
  const state = sqlState(error);
  if (connectionWentAway(error, state)) {
    return new SwitchboardError('DATABASE_UNREACHABLE', `${what} ${location}: ${reason}`, {
      hint: 'check that PostgreSQL is running and reachable, then retry',
      cause: error,
      details: { database: location },
    });
  }
  return new SwitchboardError('STORE_ERROR', `${what} ${location}: ${reason}`, {
    hint:
      (state === undefined ? undefined : HINTS_BY_SQLSTATE[state]) ?? 'check the database server and its log',
    cause: error,
    details: state === undefined ? { database: location } : { database: location, sqlState: state },
  });
}

/** Why a store cannot be written: its disk (or quota) is full, or it is read-only. */
export type UnwritableReason = 'full' | 'read-only';

// SQLITE_IOERR_SHMSIZE: no room to grow the -shm file a WAL ledger needs to be opened at all.
const FULL_CODES: ReadonlySet<string> = new Set([
  'SQLITE_FULL',
  'SQLITE_IOERR_SHMSIZE',
  'ENOSPC',
  'EDQUOT',
  '53100',
]);
const READ_ONLY_CODES: ReadonlySet<string> = new Set(['EROFS', 'EACCES', 'EPERM', '25006']);

/**
 * Whether a driver or file-system error says the store cannot be written, and why: SQLite's "database or
 * disk is full" and "attempt to write a readonly database", ENOSPC,
 * EDQUOT, EROFS, EACCES, EPERM, and PostgreSQL's 53100 disk_full and 25006 read_only_sql_transaction.
 * A SQLite file that cannot be opened counts when its folder cannot be written (a read-only mount).
 */
export function unwritableReason(error: unknown, location: string): UnwritableReason | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return undefined;
  if (FULL_CODES.has(code)) return 'full';
  if (READ_ONLY_CODES.has(code) || code.startsWith('SQLITE_READONLY')) return 'read-only';
  if (code === 'SQLITE_CANTOPEN' && !isPostgresUrl(location) && location !== ':memory:') {
    try {
      accessSync(dirname(location), constants.W_OK);
    } catch (problem) {
      const reason = (problem as { code?: unknown }).code;
      if (reason === 'EROFS' || reason === 'EACCES' || reason === 'EPERM') return 'read-only';
    }
  }
  return undefined;
}

/** `LEDGER_UNWRITABLE` for a failure that says the store cannot be written, with what to do; else undefined. */
function unwritableStoreError(error: unknown, location: string, what: string): SwitchboardError | undefined {
  const reason = unwritableReason(error, location);
  if (reason === undefined) return undefined;
  const postgres = isPostgresUrl(location);
  const code = (error as { code?: unknown }).code as string;
  const message =
    code === 'SQLITE_IOERR_SHMSIZE'
      ? 'the disk is full (no room for its -shm file)'
      : error instanceof Error
        ? error.message.split('\n', 1)[0]
        : String(error);
  const where = postgres ? 'the database server' : dirname(location);
  const hint =
    reason === 'full'
      ? `free disk space on ${where}`
      : postgres
        ? 'the database accepts no writes (a standby, or default_transaction_read_only): point the URL at the primary'
        : `make ${where} writable, or choose another state folder with --state-dir`;
  return new SwitchboardError('LEDGER_UNWRITABLE', `${what} ${location}: ${message}`, {
    hint,
    cause: error,
    details: postgres
      ? { database: location, reason, sqlState: code }
      : { file: location, reason, [code.startsWith('SQLITE_') ? 'sqliteCode' : 'errno']: code },
  });
}

/** How long a store waits for a PostgreSQL it had reached to come back before a statement fails. */
export const RECONNECT_FOR_MS = 120_000;

/**
 * Runs `attempt` again, backing off from 250 ms to 5 s, while it fails with DATABASE_UNREACHABLE, for up
 * to `RECONNECT_FOR_MS`: a PostgreSQL restart is a pause, not a failure, for a store that was connected.
 */
export async function whileReachable<T>(attempt: () => Promise<T>): Promise<T> {
  const giveUpAt = Date.now() + RECONNECT_FOR_MS;
  for (let pauseMs = 250; ; pauseMs = Math.min(pauseMs * 2, 5_000)) {
    try {
      return await attempt();
    } catch (error) {
      if (!(isSwitchboardError(error) && error.code === 'DATABASE_UNREACHABLE') || Date.now() >= giveUpAt)
        throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
}

/**
 * Whether PostgreSQL ended the connection rather than refusing the statement: a connection exception
 * (class 08), an administrator's or a crash's shutdown and a server still starting (57P01–57P03), or the
 * driver's own word for a socket that closed under it. Such a write may succeed once the server is back.
 */
function serverWentAway(error: unknown, state: string | undefined): boolean {
  // Five capital letters may also be a socket's errno (EPIPE): no SQLSTATE class starts with E.
  if (state !== undefined)
    return state.startsWith('08') || /^57P0[1-3]$/.test(state) || state.startsWith('E');
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' && DRIVER_CONNECTION_LOST.test(message);
}

/**
 * pg's and pg-pool's own words, without a code, for a connection that closed, could not be opened in
 * time (a server still starting, or a machine too busy to answer), or broke before this statement.
 */
const DRIVER_CONNECTION_LOST =
  /^(?:Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;

/**
 * Whether a driver's error (pg's, or pg-boss's copy of one) says the database is out of reach or ended
 * the connection: a restart, a cut, a terminated backend. The same rule that makes a store's write
 * DATABASE_UNREACHABLE (and so retried); anything else is the statement's own failure.
 */
export function isConnectionLost(error: unknown): boolean {
  if (isSwitchboardError(error)) return error.code === 'DATABASE_UNREACHABLE';
  return connectionWentAway(error, sqlState(error));
}

/**
 * The one rule for a driver error that means the server went away rather than refused the statement:
 * `serverWentAway`, or a network error after connecting (ECONNRESET, ECONNREFUSED, EAI_AGAIN), which
 * carries an errno instead of a SQLSTATE.
 */
function connectionWentAway(error: unknown, state: string | undefined): boolean {
  return (
    serverWentAway(error, state) ||
    (state === undefined && (error as { code?: unknown } | null)?.code !== undefined)
  );
}

/**
 * The database a target names, opened for a store: the process's shared SQLite connection, or its pool
 * for the PostgreSQL URL (connected, checked and migrated). Close the handle when done.
 */
export async function openDatabase(target: DatabaseTarget): Promise<SqlDatabase> {
  const location = locateDatabase(target);
  return location.kind === 'postgres'
    ? connectPostgresDatabase(location.url)
    : openSqliteDatabase(location.file);
}
