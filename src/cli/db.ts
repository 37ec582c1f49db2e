import type { Command } from 'commander';
import { SwitchboardError } from '../core/errors.js';
import type { DatabaseLocation } from '../store/database.js';
import { createProgress } from './progress.js';
import { commandConfig, type GlobalFlags } from './shared.js';

interface MigrateFlags {
  url?: string;
}

interface CopyFlags {
  from?: string;
  to?: string;
}

/** Tables smaller than this copy too fast for a progress bar to be worth drawing. */
const PROGRESS_MIN_ROWS = 5_000;

export function registerDbCommand(program: Command): void {
  const db = program
    .command('db')
    .description("the ledger's database: bring its schema up to date, copy a SQLite ledger into PostgreSQL");

  db.command('migrate')
    .description(
      'bring the ledger (the PostgreSQL database in SWITCHBOARD_DATABASE_URL / database_url, else the SQLite file) up to the schema of this Switchboard',
    )
    .option(
      '--url <url>',
      'the PostgreSQL database to migrate (default: SWITCHBOARD_DATABASE_URL, database_url)',
    )
    .action(async (flags: MigrateFlags, command: Command) => {
      const { locateDatabase } = await import('../store/database.js');
      const config = commandConfig(command.optsWithGlobals<GlobalFlags>());
      const location = locateDatabase({
        stateDir: config.stateDir,
        ...(flags.url === undefined ? {} : { url: flags.url }),
      });
      const { where, from, to } = await migrateDatabase(location);
      process.stdout.write(
        from === to
          ? `${where} is up to date (schema version ${to})\n`
          : `migrated ${where} from schema version ${from} to ${to}\n`,
      );
    });

  registerDbPruneCommand(db);

  db.command('copy')
    .description('copy every table of a SQLite ledger into an empty PostgreSQL database, keeping row order')
    .option('--from <file>', 'the SQLite ledger to copy (default: ledger.db in the state directory)')
    .option('--to <url>', 'the PostgreSQL database to fill (default: SWITCHBOARD_DATABASE_URL, database_url)')
    .action(async (flags: CopyFlags, command: Command) => {
      const globals = command.optsWithGlobals<GlobalFlags>();
      const config = commandConfig(globals);
      const { DATABASE_URL_VARIABLE, LEDGER_FILE_NAME } = await import('../store/database.js');
      const { join } = await import('node:path');
      const to = flags.to ?? process.env[DATABASE_URL_VARIABLE];
      if (to === undefined || to === '') {
        throw new SwitchboardError('INVALID_INPUT', 'db copy needs a PostgreSQL database to copy into', {
          hint: `pass --to postgres://user@host:5432/database, adding :password after the user if it needs one, or set ${DATABASE_URL_VARIABLE}`,
        });
      }
      const { copyLedger } = await import('../store/copy.js');
      const progress = await createProgress(globals.quiet);
      let barFor: string | undefined;
      try {
        const result = await copyLedger({
          from: flags.from ?? join(config.stateDir, LEDGER_FILE_NAME),
          to,
          onRows(table, done, total) {
            if (total < PROGRESS_MIN_ROWS) return;
            if (barFor !== table) progress.start(`copying ${table}`, total);
            barFor = table;
            progress.update(done);
          },
          onTable({ table, rows }) {
            progress.stop();
            process.stdout.write(`${table} ${rows} rows\n`);
          },
        });
        process.stdout.write(`copied ${result.tables.length} tables from ${result.from} to ${result.to}\n`);
      } finally {
        progress.stop();
      }
    });
}

/** `db prune`: route decisions older than `--older-than`, else `ledger.retention`. */
export function registerDbPruneCommand(db: Command): void {
  db.command('prune')
    .description(
      'delete route decisions (with their feedback) and decision-cache entries older than a duration; spending and workflow runs are kept',
    )
    .option('--older-than <duration>', 'e.g. 90d, 24h or 30m (default: ledger.retention in switchboard.yaml)')
    .action(async (flags: { olderThan?: string }, command: Command) => {
      const config = commandConfig(command.optsWithGlobals<GlobalFlags>());
      const { durationMs } = await import('../core/config.js');
      const given = flags.olderThan;
      const keepMs = given === undefined ? config.ledger.retentionMs : durationMs(given);
      if (keepMs === undefined) {
        throw new SwitchboardError(
          'INVALID_INPUT',
          'db prune needs to know how long to keep route decisions',
          {
            hint: 'pass --older-than 90d (or 24h, 30m), or set ledger.retention: 90d in switchboard.yaml',
          },
        );
      }
      if (!Number.isFinite(keepMs) || keepMs <= 0) {
        throw new SwitchboardError('INVALID_INPUT', `--older-than ${String(given)} is not a duration`, {
          hint: 'pass a duration such as 90d, 24h or 30m',
        });
      }
      const { connectLedger } = await import('../store/ledger.js');
      const ledger = await connectLedger({ stateDir: config.stateDir });
      try {
        // Not before the earliest time a Date holds: a huge --older-than prunes nothing, and says so.
        const before = Math.max(Date.now() - keepMs, -8.64e15);
        const pruned = await ledger.pruneRouteDecisions(before);
        process.stdout.write(
          `pruned ${pruned.decisions} route decisions, ${pruned.feedback} feedback and ${pruned.cached} cached decisions from before ${new Date(before).toISOString()} in ${ledger.path}\n`,
        );
      } finally {
        await ledger.close();
      }
    });
}

/** The database's schema version before and after bringing it up to date. */
async function migrateDatabase(
  location: DatabaseLocation,
): Promise<{ where: string; from: number; to: number }> {
  const { LATEST_SCHEMA_VERSION } = await import('../store/migrations.js');
  if (location.kind === 'postgres') {
    const { connectPostgresDatabase } = await import('../store/database.js');
    const from = await postgresVersion(location.url);
    const database = await connectPostgresDatabase(location.url);
    await database.close();
    return { where: database.location, from, to: LATEST_SCHEMA_VERSION };
  }
  const { openSqliteDatabase } = await import('../store/database.js');
  const from = await sqliteVersion(location.file);
  const database = openSqliteDatabase(location.file);
  await database.close();
  return { where: location.file, from: from ?? 0, to: LATEST_SCHEMA_VERSION };
}

/** The version before migrating, over a connection of its own (opening the store migrates at once). */
async function postgresVersion(url: string): Promise<number> {
  const { PostgresDatabase } = await import('../store/sql/postgres-database.js');
  const { readPostgresSchemaState } = await import('../store/migrations.js');
  const database = await PostgresDatabase.connect(url, { max: 1 });
  try {
    return (await readPostgresSchemaState(database)).userVersion;
  } finally {
    await database.close();
  }
}

/** The file's version, read without changing it; undefined for a missing file or one SQLite cannot read (opening it says why). */
async function sqliteVersion(file: string): Promise<number | undefined> {
  const { loadSqlite } = await import('../core/lazy-packages.js');
  const { readSchemaState } = await import('../store/migrations.js');
  try {
    const Sqlite = loadSqlite();
    const database = new Sqlite(file, { readonly: true, fileMustExist: true });
    try {
      return readSchemaState(database).userVersion;
    } finally {
      database.close();
    }
  } catch {
    return undefined;
  }
}
