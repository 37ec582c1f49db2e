import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import type Database from 'better-sqlite3';
import { isSwitchboardError, SwitchboardError } from '../core/errors.js';
import { connectPostgresDatabase, openSqliteConnection, toStoreError } from './database.js';
import { describePostgresUrl, isPostgresUrl } from './sql/postgres-database.js';
import type { SqlClient, SqlDatabase } from './sql/sql-database.js';

/** Options of `copyLedger`. */
export interface CopyLedgerOptions {
  /**
   * The SQLite ledger to read (e.g. `.switchboard/ledger.db`). It is brought up to the current schema
   * first, as any Switchboard command opening it would.
   */
  from: string;
  /** `postgres://` URL of the target: a new database, or one whose Switchboard tables hold no rows. */
  to: string;
  /**
   * Rows per INSERT statement (fewer when a table's columns would pass PostgreSQL's 65,535 parameters).
   * @default 500
   */
  batchRows?: number;
  /** Called once a table's rows are committed in the target. */
  onTable?: (table: CopiedTable) => void;
  /** Called after each batch of a table is written: rows done so far and the table's total. */
  onRows?: (table: string, done: number, total: number) => void;
}

/** One table copied, its rows counted in the target after the copy. */
export interface CopiedTable {
  table: string;
  rows: number;
}

export interface CopyLedgerResult {
  /** Absolute path of the SQLite file. */
  from: string;
  /** The target's URL without its password. */
  to: string;
  /** Every table, in the order they were copied. */
  tables: CopiedTable[];
}

const DEFAULT_BATCH_ROWS = 500;
/** Tables a trigger on another table writes (schema 15's spend totals, from call_attempts). */
const TRIGGER_FILLED = new Set(['spend_totals']);
/** PostgreSQL's limit on one statement's parameters (a 16-bit count in the wire protocol). */
const MAX_PARAMETERS = 65_535;

/**
 * Copies every table of a SQLite ledger into a PostgreSQL database, so a team moving to PostgreSQL keeps
 * its history: call attempts, route decisions, cooldowns, the decision cache, agent and workflow runs.
 * The source is read in one snapshot (writers to it are not blocked); each table is copied in one
 * transaction, in `rowid` order with its `rowid` values kept (the stores order rows by it), and its row
 * count checked before the commit. A failure rolls back the table it stopped in; the tables before it
 * stay copied and the error names them.
 *
 * @throws SwitchboardError `INVALID_INPUT` for a missing source file, a target URL that is not
 *   `postgres://`, or a target whose tables already hold rows (nothing is written then);
 *   `STORE_ERROR` for a source that is not a ledger or a failed copy; `DATABASE_UNREACHABLE`,
 *   `DATABASE_AUTH`, `DATABASE_FOREIGN` for a target that cannot be used.
 */
export async function copyLedger(options: CopyLedgerOptions): Promise<CopyLedgerResult> {
  const from = checkSourceFile(options.from);
  if (!isPostgresUrl(options.to)) {
    throw new SwitchboardError(
      'INVALID_INPUT',
      `copy target ${describePostgresUrl(options.to)} is not a postgres:// URL`,
      {
        hint: 'write it as postgres://user@host:5432/database, adding :password after the user if it needs one',
      },
    );
  }
  const source = openSource(from);
  try {
    const target = await connectPostgresDatabase(options.to);
    try {
      // A deferred read transaction: its first read fixes the snapshot every later read sees, so the
      // copy is consistent even while other processes keep writing to the file (WAL lets them).
      source.exec('BEGIN');
      try {
        const tables = sourceTables(source);
        await refuseUsedTarget(target, tables);
        const tablesCopied = await copyTables(source, target, tables, options);
        return { from, to: target.location, tables: tablesCopied };
      } finally {
        source.exec('ROLLBACK');
      }
    } finally {
      await target.close();
    }
  } finally {
    source.close();
  }
}

/** The source's absolute path, once it is known to be a file (opening it would create a new ledger). */
function checkSourceFile(path: string): string {
  const file = resolve(path);
  let isFile: boolean;
  try {
    isFile = statSync(file).isFile();
  } catch {
    throw new SwitchboardError('INVALID_INPUT', `no ledger file at ${file}`, {
      hint: 'pass the SQLite ledger to copy, e.g. --from .switchboard/ledger.db',
      details: { file },
    });
  }
  if (!isFile) {
    throw new SwitchboardError('INVALID_INPUT', `${file} is not a file`, {
      hint: 'pass the SQLite ledger file itself, e.g. --from .switchboard/ledger.db',
      details: { file },
    });
  }
  return file;
}

/** A private connection to the source, checked and migrated like every open of a ledger. */
function openSource(file: string): Database.Database {
  try {
    return openSqliteConnection(file);
  } catch (error) {
    if (isSwitchboardError(error) && error.details?.['sqliteCode'] === 'SQLITE_NOTADB') {
      throw new SwitchboardError('STORE_ERROR', `${file} is not a SQLite database`, {
        hint: 'pass the ledger file Switchboard wrote, e.g. --from .switchboard/ledger.db',
        cause: error,
        details: { file },
      });
    }
    throw error;
  }
}

interface SourceTable {
  name: string;
  columns: string[];
  rows: number;
}

/** Every table of the (checked, migrated, so ours) ledger in creation order, with its columns and rows. */
function sourceTables(source: Database.Database): SourceTable[] {
  const names = source
    .prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid",
    )
    .pluck()
    .all() as string[];
  return names.map((name) => {
    const columns = (source.pragma(`table_info(${quote(name)})`) as { name: string }[]).map(
      (column) => column.name,
    );
    const rows = source
      .prepare(`SELECT count(*) FROM ${quote(name)}`)
      .pluck()
      .get() as number;
    return { name, columns, rows };
  });
}

/** Refuses a target that already holds ledger rows: copying into it would mix two histories. */
async function refuseUsedTarget(target: SqlDatabase, tables: readonly SourceTable[]): Promise<void> {
  const used: string[] = [];
  try {
    for (const { name } of tables) {
      // Its rows follow from another table's, which says so already.
      if (TRIGGER_FILLED.has(name)) continue;
      const row = await target.get<{ used: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${quote(name)}) AS used`);
      if (row?.used === true) used.push(name);
    }
  } catch (error) {
    throw toStoreError(error, target.location, 'cannot read the copy target');
  }
  if (used.length === 0) return;
  throw new SwitchboardError(
    'INVALID_INPUT',
    `database ${target.location} already holds ledger rows (${used.join(', ')}); nothing was copied`,
    {
      hint: 'copy into an empty database: create one (createdb switchboard) and pass its URL',
      details: { database: target.location, tables: used },
    },
  );
}

async function copyTables(
  source: Database.Database,
  target: SqlDatabase,
  tables: readonly SourceTable[],
  options: CopyLedgerOptions,
): Promise<CopiedTable[]> {
  const copied: CopiedTable[] = [];
  for (const table of tables) {
    try {
      const rows = await target.transaction((client) => copyTable(source, client, table, options));
      const done = { table: table.name, rows };
      copied.push(done);
      options.onTable?.(done);
    } catch (error) {
      throw copyStopped(error, target.location, table.name, copied);
    }
  }
  return copied;
}

/** Copies one table inside the target's transaction; resolves to the rows the target then holds. */
async function copyTable(
  source: Database.Database,
  client: SqlClient,
  table: SourceTable,
  options: CopyLedgerOptions,
): Promise<number> {
  const columns = ['rowid', ...table.columns];
  const batchRows = Math.max(
    1,
    Math.min(options.batchRows ?? DEFAULT_BATCH_ROWS, Math.floor(MAX_PARAMETERS / columns.length)),
  );
  const read = source
    .prepare(
      `SELECT rowid, ${table.columns.map(quote).join(', ')} FROM ${quote(table.name)} ` +
        'WHERE rowid > ? ORDER BY rowid LIMIT ?',
    )
    .raw();
  const insert = insertStatements(table.name, columns);
  // The target's trigger filled it as call_attempts was copied: the file's own rows (the same sums, of
  // the same snapshot) take their place, so the counts compare as for every other table.
  if (TRIGGER_FILLED.has(table.name)) await client.run(`DELETE FROM ${quote(table.name)}`);
  // SQLite numbers rows from 1 unless a rowid is given, which no store does.
  let lastRowid = 0;
  let done = 0;
  for (;;) {
    const rows = read.all(lastRowid, batchRows) as unknown[][];
    if (rows.length === 0) break;
    await client.run(insert(rows.length), rows.flat());
    lastRowid = rows[rows.length - 1]![0] as number;
    done += rows.length;
    options.onRows?.(table.name, done, table.rows);
  }
  const counted = (await client.get<{ count: number }>(`SELECT count(*) AS count FROM ${quote(table.name)}`))
    ?.count;
  if (counted !== table.rows || done !== table.rows) {
    throw new Error(`${table.rows} rows in the file, ${done} read, ${counted ?? 0} in the target`);
  }
  if (done > 0) {
    // Rows inserted later get the next rowid after the copied ones, as they would have in the file.
    await client.get("SELECT setval(pg_get_serial_sequence(?, 'rowid'), ?)", [table.name, lastRowid]);
    // So do the ids of a table numbered by a sequence of its own (route_names).
    for (const column of table.columns) {
      const sequence = await client.get<{ name: string | null }>(
        'SELECT pg_get_serial_sequence(?, ?) AS name',
        [table.name, column],
      );
      if (sequence?.name != null) {
        await client.get(`SELECT setval(?, (SELECT max(${quote(column)}) FROM ${quote(table.name)}))`, [
          sequence.name,
        ]);
      }
    }
  }
  return counted;
}

/** `INSERT … VALUES (…), (…)` for a number of rows, built once per row count. */
function insertStatements(table: string, columns: readonly string[]): (rows: number) => string {
  const head = `INSERT INTO ${quote(table)} (${columns.map(quote).join(', ')}) VALUES `;
  const row = `(${columns.map(() => '?').join(', ')})`;
  const built = new Map<number, string>();
  return (rows) => {
    let sql = built.get(rows);
    if (sql === undefined) {
      sql = head + Array.from({ length: rows }, () => row).join(', ');
      built.set(rows, sql);
    }
    return sql;
  };
}

/** The failure, naming the table rolled back and the tables already copied, so the user knows where it stands. */
function copyStopped(
  error: unknown,
  location: string,
  table: string,
  copied: readonly CopiedTable[],
): SwitchboardError {
  const cause = toStoreError(error, location, `cannot copy table ${table} into`);
  const before =
    copied.length === 0
      ? 'no table was copied'
      : `copied before it: ${copied.map((done) => `${done.table} (${done.rows} rows)`).join(', ')}`;
  return new SwitchboardError(cause.code, `${cause.message}; ${table} was rolled back, ${before}`, {
    hint: `${cause.hint ?? 'check the database server and its log'}; then copy again into a new, empty database`,
    cause: error,
    details: { ...cause.details, table, copied: copied.map((done) => done.table) },
  });
}

/** A table or column name as a quoted identifier; ours are plain lower-case words. */
function quote(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) {
    throw new SwitchboardError('STORE_ERROR', `the ledger has an unexpected table or column name "${name}"`, {
      hint: 'copy a ledger file written by Switchboard',
    });
  }
  return `"${name}"`;
}
