import {
  attemptColumns,
  callAttemptRow,
  callSql,
  hashText,
  summariseCalls,
  tagParams,
  type AttemptRow,
  type CallAttemptRecord,
  type CallStats,
  type CooldownRecord,
} from './call-records.js';
import {
  EXPIRED_RESERVATION_KEPT_MS,
  judgeReservation,
  reservationSql,
  type CapStanding,
  type ReservationOutcome,
  type SpendReservation,
} from './budget-reservations.js';
import { heldReservationsOf, type HeldReservations, type ReservationRow } from './held-reservations.js';
import { SwitchboardError } from '../core/errors.js';
import { afterCommittedWrite } from './write-seam.js';
import type { RouteDecision } from '../core/route-types.js';
import { BatchedCacheReads } from './cache-reads.js';
import { CACHE_SQL, parseCachedDecision, shouldTrimCache, type CacheWrite } from './route-cache-records.js';
import {
  DECISION_COLUMNS,
  DECISION_SQL,
  RouteNames,
  decisionRow,
  fromDecisionRow,
  namesOf,
  queueDecision,
  type DecisionRow,
  type QueuedDecision,
  type RouteDecisionContext,
  type StoredRouteDecision,
} from './route-decision-records.js';
import { GroupCommit } from './group-commit.js';
import { readSpend, spendSql } from './spend-totals.js';
import { PendingSettles } from './pending-settles.js';
import { columnArrays, unnestInsert } from './sql/unnest-batch.js';
import {
  connectPostgresDatabase,
  locateDatabase,
  openSqliteDatabase,
  sqliteBehind,
  toStoreError,
  whileReachable,
  type DatabaseTarget,
} from './database.js';
import type { SqlClient, SqlDatabase, SqlDialect } from './sql/sql-database.js';
import type { SyncSqlClient } from './sql/sqlite-database.js';
import { describePostgresUrl } from './sql/postgres-database.js';
import { virtualKeyMethods, type KeyUsage, type VirtualKeyRecord } from './virtual-key-records.js';

export { BUSY_TIMEOUT_MS, DATABASE_URL_VARIABLE, DEFAULT_STATE_DIR, LEDGER_FILE_NAME } from './database.js';
/** Rows `listRouteDecisions` returns when no limit is given. */
export const DEFAULT_LIST_LIMIT = 100;

export interface OpenLedgerOptions extends DatabaseTarget {
  /**
   * Store request text alongside its hash. Off by default: prompts may hold private data, and the
   * ledger keeps only what the user opted in to.
   * @default false
   */
  storeText?: boolean;
}

export type { KeyUsage, RouteDecisionContext, StoredRouteDecision, VirtualKeyRecord };

export interface ListRouteDecisionsOptions {
  /**
   * Most rows to return, newest first.
   * @default 100
   */
  limit?: number;
  /** Only decisions made at or after this moment (a Date, epoch milliseconds or an ISO string). */
  since?: Date | number | string;
}

/**
 * The append-only record of what Switchboard decided and did. Every method that touches the database
 * returns a Promise, so that a backend whose driver is asynchronous (PostgreSQL) can implement the same
 * interface; the SQLite implementation does its work synchronously when called and returns a settled
 * Promise, so the order of calls is the order of writes.
 */
export interface Ledger {
  /** Absolute path of the SQLite file (or `:memory:`), or the PostgreSQL URL without its password. */
  readonly path: string;
  /** Which database the ledger is in. */
  readonly dialect: SqlDialect;
  /**
   * Resolves once the database is connected, checked and migrated; rejects with the reason it cannot be
   * used (`DATABASE_UNREACHABLE`, `DATABASE_AUTH`, `DATABASE_FOREIGN`, `STORE_ERROR`). A SQLite ledger is
   * ready when `openLedger` returns; a PostgreSQL one connects in the background.
   */
  ready(): Promise<void>;
  /** Whether request text is stored next to its hash. */
  readonly storeText: boolean;
  /**
   * Records one decision; resolves once it is committed (see `recordCallAttempt`), so a decision handed
   * on after this resolved survives a crash. A decision whose id is already recorded is ignored. Rejects
   * with `INVALID_INPUT` for an invalid `createdAt`, `STORE_ERROR` when it could not be written.
   */
  recordRouteDecision(decision: RouteDecision, context: RouteDecisionContext): Promise<void>;
  /** Decisions, newest first. */
  listRouteDecisions(options?: ListRouteDecisionsOptions): Promise<StoredRouteDecision[]>;
  /**
   * Every decision since `since` (all when omitted), oldest first, read one row at a time so a large
   * ledger is never held in memory at once. Resolves to how many were visited.
   */
  eachRouteDecision(
    options: { since?: Date | number | string },
    visit: (decision: StoredRouteDecision) => void,
  ): Promise<number>;
  /** One decision by id, or `undefined`. */
  getRouteDecision(id: string): Promise<StoredRouteDecision | undefined>;
  /** Decisions recorded (since a time, when given). */
  countRouteDecisions(options?: { since?: Date | number | string }): Promise<number>;
  /**
   * Deletes the route decisions made before `before` (epoch ms), the feedback on them, and decision-cache
   * entries stored before it; resolves to how many rows of each went. Spending and workflow rows are
   * never pruned.
   */
  pruneRouteDecisions(before: number): Promise<{ decisions: number; feedback: number; cached: number }>;
  /**
   * The decision cached under `key` at or after `notBefore` (epoch ms), or undefined. The router's
   * decision cache lives here so that it outlives a process (each CLI call is one).
   */
  getCachedDecision(key: string, notBefore: number): Promise<RouteDecision | undefined>;
  /**
   * Caches a decision under `key`; resolves once the entry is committed (with the rows recorded beside
   * it). Entries older than `ttlMs` and beyond `maxEntries` are dropped about once every thousand
   * writes, not on each.
   */
  cacheDecision(
    key: string,
    decision: RouteDecision,
    options: { storedAt: number; ttlMs: number; maxEntries: number },
  ): Promise<void>;
  /** Records a user's correction of a decision (the latest one wins). */
  recordFeedback(decisionId: string, skill: string): Promise<void>;
  /** Every correction, oldest first. */
  listFeedback(): Promise<{ decisionId: string; skill: string }[]>;
  /**
   * Records one call attempt (a call with retries or fallbacks has several). Resolves once the attempt is
   * committed: the attempts, decisions and cache entries recorded by concurrent callers share one
   * transaction (group commit), which starts at the end of the current turn of the event loop, or as soon
   * as the write in flight ends. Rejects with `STORE_ERROR` when the row could not be written.
   */
  recordCallAttempt(record: CallAttemptRecord): Promise<void>;
  /** Commits the recorded rows now, without waiting for the end of the turn. */
  flush(): Promise<void>;
  /**
   * Dollars spent since a time, optionally for one provider and/or one `key=value` tag. Read from the
   * spend totals kept per UTC day (a few rows, however many attempts), plus the attempts since `since`
   * when it falls inside a day.
   */
  spendSince(since: number, filter?: { provider?: string; tag?: string }): Promise<number>;
  /**
   * Holds a call's estimated cost against every cap in one transaction (`BEGIN IMMEDIATE` on SQLite, an
   * advisory lock on PostgreSQL) (spent plus
   * other calls' open reservations plus this estimate), so parallel calls in any number of processes
   * cannot all pass. Taken only when every cap has room; end it with `releaseReservation`.
   */
  reserveSpend(reservation: SpendReservation): Promise<ReservationOutcome>;
  /** Ends a reservation once the attempt (and its real cost) is recorded. Safe to call twice. */
  releaseReservation(id: string): Promise<void>;
  /**
   * Records an attempt made under reservation `id` and ends the reservation, in one transaction written at
   * once (not queued): the spend moves from the reserved amount to the attempt's cost with no moment when
   * both or neither count. When the write fails (a full disk, a read-only ledger: `LEDGER_UNWRITABLE`) the
   * reservation stays, counting as spent at its amount, and this ledger writes the settle again in the
   * background while the process lives (up to 15 minutes), before each reservation, at `close()` and at
   * exit; the promise rejects with the error, so the caller can say the record is late.
   */
  settleReservation(id: string, record: CallAttemptRecord): Promise<void>;
  /**
   * Dollars the budget caps count as held at `now`, optionally for one provider and/or one `key=value`
   * tag: calls in flight, and (with `since`, a cap's period start) reservations taken since then that no
   * record has settled yet, such as those of a process that died or could not write its record.
   */
  reservedAt(now: number, filter?: { provider?: string; tag?: string; since?: number }): Promise<number>;
  /** Records a circuit breaker that opened or closed, visible to every process using this ledger. */
  setCooldown(record: CooldownRecord): Promise<void>;
  /** `spec` here and in `recentRequests` is the breaker's key: the spec, plus its endpoint when it has one. */
  getCooldown(spec: string): Promise<CooldownRecord | undefined>;
  /**
   * The requests (calls) that tried a spec since a time, from every process writing to this ledger: one
   * entry per call and outcome, `errorCode` undefined for a success, so a call retried three times with one
   * error is one entry. For circuit breakers that count failures across short-lived processes; matched on
   * the attempt's `cooldownKey`, else its spec.
   */
  recentRequests(
    spec: string,
    since: number,
    limit: number,
  ): Promise<{ callId: string; errorCode: string | undefined }[]>;
  /** Breakers still open at `now` (not yet half-open). */
  activeCooldowns(now: number): Promise<CooldownRecord[]>;
  /** Calls, success rate, latency, tokens and cost by provider and model, error codes; since a time. */
  callStats(options?: { since?: Date | number | string }): Promise<CallStats>;
  /**
   * Stores a new virtual key (its hash, never the key). Rejects with `KEY_EXISTS` when a key of that name
   * exists, revoked or not: the first writer wins, in any number of processes.
   */
  createVirtualKey(record: VirtualKeyRecord): Promise<void>;
  /** Every virtual key, revoked and expired ones included, oldest first. */
  listVirtualKeys(): Promise<VirtualKeyRecord[]>;
  /** The virtual key whose HMAC is `hash`, or undefined. */
  findVirtualKey(hash: string): Promise<VirtualKeyRecord | undefined>;
  /**
   * Marks the key named (or with id) `nameOrId` revoked at `at` (epoch ms); a key revoked before keeps its
   * time. Resolves to whether there was such a key.
   */
  revokeVirtualKey(nameOrId: string, at: number): Promise<boolean>;
  /**
   * Adds `requests` and `tokens` to the key's rate window starting at `windowStart` (epoch ms) and
   * resolves to the window's totals after adding, in one statement, so processes on one database count
   * together without losing an increment.
   */
  countKeyUsage(keyId: string, windowStart: number, requests: number, tokens: number): Promise<KeyUsage>;
  /** Deletes the rate windows that started before `before` (epoch ms); resolves to how many went. */
  pruneKeyUsage(before: number): Promise<number>;
  /**
   * Commits the recorded rows and releases the database. Safe to call twice; any other call
   * afterwards rejects with `STORE_ERROR`. Await it before the process ends: on SQLite the work is done
   * when it returns, but an asynchronous backend can only finish its writes while the process lives.
   */
  close(): Promise<void>;
}

/**
 * Writes of every open SQLite ledger's uncommitted rows, run once at process exit by a single listener
 * (a row recorded without waiting for its promise, then `process.exit`). This works only because
 * better-sqlite3 writes synchronously: 'exit' cannot wait for a Promise, so a PostgreSQL ledger is
 * flushed by `close()` (every command closes its ledger) and on `beforeExit`.
 */
const flushOnExit = new Set<() => void>();
process.on('exit', () => {
  for (const flush of flushOnExit) flush();
});
const flushBeforeExit = new Set<() => Promise<void>>();
process.on('beforeExit', () => {
  for (const flush of flushBeforeExit) void flush().catch(() => undefined);
});

/** Most rows (call attempts, route decisions, cache entries) one group-commit transaction takes. */
const GROUP_ROWS = 500;
/** Rows `eachRouteDecision` reads at a time. */
const PAGE_SIZE = 500;

export { hashText };

/**
 * Opens (creating if needed) the ledger and brings its schema up to date: the SQLite file in the state
 * folder, or the PostgreSQL database in `url` / `SWITCHBOARD_DATABASE_URL`. Safe to call from several
 * processes on the same database at once. A SQLite ledger is opened and checked before this returns;
 * a PostgreSQL one connects in the background, and its problems reject `ready()` and every later call.
 *
 * @throws SwitchboardError `STORE_ERROR` when the folder cannot be created, the file is not a SQLite
 *   database or was written by a newer Switchboard; `DATABASE_FOREIGN` when it belongs to another
 *   program; `INVALID_INPUT` for a URL that is not `postgres://`.
 */
export function openLedger(options: OpenLedgerOptions = {}): Ledger {
  const location = locateDatabase(options);
  const storeText = options.storeText ?? false;
  let ledger: Ledger;
  if (location.kind === 'postgres') {
    const connecting = connectPostgresDatabase(location.url);
    // Seen by ready() and every call; marked handled here so a ledger never used is no crash.
    connecting.catch(() => undefined);
    ledger = createLedger(connecting, describePostgresUrl(location.url), 'postgres', storeText);
    targets.set(ledger, { url: location.url });
  } else {
    ledger = createLedger(openSqliteDatabase(location.file), location.file, 'sqlite', storeText);
    targets.set(ledger, { path: location.file });
  }
  return ledger;
}

/**
 * Where each open ledger lives, with the URL's password: `path` leaves it out. Kept on `globalThis` so
 * that every copy of this module in a process (the built library and its sources, two installed
 * versions) finds the database of a ledger another copy opened: without it the workflow store once fell
 * back to `ledger.path`, and a PostgreSQL URL became a SQLite file under ./postgres:/.
 */
const TARGETS_KEY = Symbol.for('switchboard.ledger-databases');
const targets = ((globalThis as Record<symbol, unknown>)[TARGETS_KEY] ??= new WeakMap<
  Ledger,
  DatabaseTarget
>()) as WeakMap<Ledger, DatabaseTarget>;

/**
 * The database a ledger from `openLedger` uses, for stores that keep their tables beside it (workflow
 * and agent runs); undefined for a ledger made elsewhere.
 */
export function ledgerDatabase(ledger: Ledger): DatabaseTarget | undefined {
  return targets.get(ledger);
}

/** Opens the ledger and waits until it is ready, so a bad database URL fails here. */
export async function connectLedger(options: OpenLedgerOptions = {}): Promise<Ledger> {
  const ledger = openLedger(options);
  try {
    await ledger.ready();
  } catch (error) {
    await ledger.close().catch(() => undefined);
    throw error;
  }
  return ledger;
}

function buildSql(dialect: SqlDialect) {
  return {
    ...callSql(dialect),
    ...spendSql(dialect),
    ...reservationSql(dialect),
    ...DECISION_SQL,
    ...CACHE_SQL[dialect],
    upsertFeedback:
      'INSERT INTO route_feedback (decision_id, skill, created_at) VALUES (@decision_id, @skill, @created_at) ' +
      'ON CONFLICT (decision_id) DO UPDATE SET skill = excluded.skill, created_at = excluded.created_at',
    listFeedback: 'SELECT decision_id, skill FROM route_feedback ORDER BY created_at',
    insertDecisionsBatch: unnestInsert('route_decisions', DECISION_COLUMNS, 'ON CONFLICT (id) DO NOTHING'),
  };
}

const SQL = { sqlite: buildSql('sqlite'), postgres: buildSql('postgres') };
type Statements = (typeof SQL)['sqlite'];

/** The rows of one group commit. */
interface Batch {
  attempts: CallAttemptRecord[];
  decisions: QueuedDecision[];
  /** Cache entries by key: a key written twice is written once, with the later entry. */
  cache: Map<string, CacheWrite>;
}

function rowsOf(batch: Batch): number {
  return batch.attempts.length + batch.decisions.length + batch.cache.size;
}

/** The open database, shared by the ledger's stages: its connection, the guard every call goes through. */
interface Connection {
  readonly location: string;
  readonly dialect: SqlDialect;
  readonly sql: Statements;
  readonly storeText: boolean;
  readonly names: RouteNames;
  /** Runs `action` on the database, turning any failure into `STORE_ERROR`; rejects once closed. */
  guarded<T>(what: string, action: (db: SqlDatabase) => Promise<T>): Promise<T>;
  /** `guarded` without the closed check: the group commit's last write runs while the ledger closes. */
  use<T>(what: string, action: (db: SqlDatabase) => Promise<T>): Promise<T>;
  /** The database once connected (a SQLite one at once), else undefined. */
  current(): SqlDatabase | undefined;
  readonly ready: Promise<SqlDatabase>;
  closed: boolean;
}

/**
 * The ledger, as a sequence of stages over one connection: connect; the group commit; then the
 * methods by subject (route decisions, the decision cache, call attempts and breakers, budgets); close.
 */
function createLedger(
  opened: SqlDatabase | Promise<SqlDatabase>,
  location: string,
  dialect: SqlDialect,
  storeText: boolean,
): Ledger {
  const connection = connect(opened, location, dialect, storeText);
  const { queue, detach } = groupCommit(connection);
  const settles = pendingSettles(connection);
  return {
    path: location,
    dialect,
    storeText,
    async ready() {
      await connection.guarded('cannot open the ledger', () => Promise.resolve());
    },
    ...routeDecisionMethods(connection, queue),
    ...decisionCacheMethods(connection, queue),
    ...callMethods(connection, queue),
    ...budgetMethods(connection, queue, settles.pending),
    ...virtualKeyMethods(connection.guarded, location),
    async flush() {
      await queue.flush();
    },
    async close() {
      if (connection.closed) return;
      // A last try for the settles a full or read-only disk refused; what still fails keeps its reservation.
      await settles.pending.retry();
      settles.detach();
      detach();
      const flushed = queue.stop();
      connection.closed = true;
      try {
        await flushed;
      } finally {
        try {
          await (connection.current() ?? (await connection.ready.catch(() => undefined)))?.close();
        } catch (error) {
          // eslint-disable-next-line no-unsafe-finally
          throw toStoreError(error, location, 'cannot close the ledger');
        }
      }
    },
  };
}

/** Stage 1: the connection (a SQLite file at once, PostgreSQL in the background) and its guard. */
function connect(
  opened: SqlDatabase | Promise<SqlDatabase>,
  location: string,
  dialect: SqlDialect,
  storeText: boolean,
): Connection {
  let database: SqlDatabase | undefined = opened instanceof Promise ? undefined : opened;
  const ready: Promise<SqlDatabase> = opened instanceof Promise ? opened : Promise.resolve(opened);
  if (database === undefined) {
    void ready.then(
      (connected) => {
        database = connected;
      },
      () => undefined,
    );
  }
  const connection: Connection = {
    location,
    dialect,
    sql: SQL[dialect],
    storeText,
    names: new RouteNames(),
    ready,
    closed: false,
    current: () => database,
    // Every public call goes through here so callers only ever see STORE_ERROR (or a database error of
    // our own), never a raw driver error.
    async guarded(what, action) {
      if (connection.closed) {
        throw new SwitchboardError('STORE_ERROR', `${what} ${location}: the ledger is closed`, {
          hint: 'open the ledger again with openLedger()',
          details: { file: location },
        });
      }
      // A PostgreSQL ledger that was reached rides out a restart (see `whileReachable`); one that never
      // connected fails at once, so a wrong URL is told, not waited on.
      if (dialect === 'postgres' && database !== undefined)
        return whileReachable(() => connection.use(what, action));
      return connection.use(what, action);
    },
    async use(what, action) {
      try {
        return await action(database ?? (await ready));
      } catch (error) {
        throw toStoreError(error, location, what);
      }
    },
  };
  return connection;
}

/**
 * Stage 2: the group commit (see group-commit.ts) of call attempts, route decisions and cache entries,
 * one transaction per group; at process exit, a SQLite ledger writes what is left synchronously, a
 * PostgreSQL one on `beforeExit`.
 */
function groupCommit(connection: Connection): { queue: GroupCommit<Batch>; detach: () => void } {
  const { sql, names, storeText } = connection;
  let cacheWritesSinceTrim = 0;
  /** The trims a batch's cache writes call for, decided once per batch. */
  function trimsFor(cache: Map<string, CacheWrite>): { before: number; keep: number } | undefined {
    if (cache.size === 0 || !shouldTrimCache(cacheWritesSinceTrim, cache.size)) {
      cacheWritesSinceTrim += cache.size;
      return undefined;
    }
    cacheWritesSinceTrim = 0;
    const last = [...cache.values()].at(-1) as CacheWrite;
    return { before: last.storedAt - last.ttlMs, keep: last.maxEntries };
  }

  function writeNow(client: SyncSqlClient, batch: Batch): void {
    for (const record of batch.attempts) client.run(sql.insertCallAttempt, callAttemptRow(record, storeText));
    for (const decision of batch.decisions) {
      names.ensureNow(client, namesOf(decision));
      client.run(sql.insertDecision, decisionRow(decision, names.idOf));
    }
    for (const [key, entry] of batch.cache) {
      client.run(sql.putCached, { key, decision: entry.decision, stored_at: entry.storedAt });
    }
    const trim = trimsFor(batch.cache);
    if (trim !== undefined) {
      client.run(sql.dropExpiredCache, { before: trim.before });
      client.run(sql.dropOldestCache, { keep: trim.keep });
    }
  }

  async function writePostgres(db: SqlDatabase, batch: Batch): Promise<void> {
    // Names are shared by every decision and never removed: added (idempotently) before the batch's
    // transaction, so a rolled-back batch cannot leave an id in memory that the table does not have.
    if (batch.decisions.length > 0) await names.ensure(db, new Set(batch.decisions.flatMap(namesOf)));
    await db.transaction(async (client) => {
      if (batch.attempts.length > 0) {
        await client.run(
          sql.insertCallAttemptsBatch,
          attemptColumns(batch.attempts.map((record) => callAttemptRow(record, storeText))),
        );
      }
      if (batch.decisions.length > 0) {
        const rows = batch.decisions.map((decision) => decisionRow(decision, names.idOf));
        await client.run(sql.insertDecisionsBatch, columnArrays(DECISION_COLUMNS, rows));
      }
      if (batch.cache.size > 0) {
        const entries = [...batch.cache];
        await client.run(sql.putCachedBatch, {
          keys: entries.map(([key]) => key),
          decisions: entries.map(([, entry]) => entry.decision),
          stored_at: entries.map(([, entry]) => entry.storedAt),
        });
      }
    });
    // Trimming the cache is housekeeping, after the commit: every process trimming takes turns.
    const trim = trimsFor(batch.cache);
    if (trim !== undefined) {
      await db.transaction(
        async (client) => {
          await client.run(sql.dropExpiredCache, { before: trim.before });
          await client.run(sql.dropOldestCache, { keep: trim.keep });
        },
        { lockKey: 'switchboard:route-cache' },
      );
    }
  }

  function write(batch: Batch): Promise<void> {
    const what = 'cannot write call attempts and route decisions to';
    const once = () =>
      connection.use(what, async (db) => {
        const sqlite = sqliteBehind(db);
        if (sqlite !== undefined) await sqlite.writeBatch((client) => writeNow(client, batch));
        else await writePostgres(db, batch);
      });
    // As `guarded`: a PostgreSQL ledger that was reached rides out a restart.
    const reachable = connection.dialect === 'postgres' && connection.current() !== undefined;
    return (reachable ? whileReachable(once) : once()).then(afterCommittedWrite);
  }

  const queue = new GroupCommit<Batch>({
    maxRows: GROUP_ROWS,
    // SQLite has waited out the busy timeout (10 s, holding the event loop) before it fails: its callers
    // are told then. PostgreSQL's failures are a connection's or a statement's, worth trying again.
    retries: connection.dialect === 'sqlite' ? 0 : 2,
    empty: () => ({ attempts: [], decisions: [], cache: new Map() }),
    size: rowsOf,
    write,
  });

  // At process exit: a SQLite ledger writes what is left synchronously ('exit' cannot wait for a
  // Promise), a PostgreSQL one flushes on 'beforeExit'. `close()` takes the hook away.
  let detach: () => void;
  if (connection.dialect === 'sqlite') {
    const flushNow = () => {
      const database = connection.current();
      const sqlite = database === undefined ? undefined : sqliteBehind(database);
      if (connection.closed || sqlite === undefined) return;
      const batches = queue.takeAll();
      try {
        sqlite.writeBatchNow((client) => {
          for (const batch of batches) writeNow(client, batch);
        });
      } catch {
        // The process is exiting; there is no one left to tell.
      }
    };
    flushOnExit.add(flushNow);
    detach = () => flushOnExit.delete(flushNow);
  } else {
    const flushBeforeLeaving = () => queue.flush();
    flushBeforeExit.add(flushBeforeLeaving);
    detach = () => flushBeforeExit.delete(flushBeforeLeaving);
  }
  return { queue, detach };
}

type RouteDecisionMethods = Pick<
  Ledger,
  | 'recordRouteDecision'
  | 'listRouteDecisions'
  | 'eachRouteDecision'
  | 'getRouteDecision'
  | 'countRouteDecisions'
  | 'pruneRouteDecisions'
  | 'recordFeedback'
  | 'listFeedback'
>;

/** Stage 3: route decisions (group-committed, read after a flush) and the feedback on them. */
function routeDecisionMethods(connection: Connection, queue: GroupCommit<Batch>): RouteDecisionMethods {
  const { sql, names, guarded, location } = connection;
  /** Rows read back as decisions, their names loaded first. */
  async function decisions(db: SqlClient, rows: DecisionRow[]): Promise<StoredRouteDecision[]> {
    await names.load(db, rows);
    return rows.map((row) => fromDecisionRow(row, names));
  }
  return {
    async recordRouteDecision(decision, context) {
      if (connection.closed) await guarded('cannot record a route decision in', () => Promise.resolve());
      const queued = queueDecision(decision, context, connection.storeText);
      await queue.enqueue((batch) => batch.decisions.push(queued));
    },

    async listRouteDecisions(options = {}) {
      const limit = options.limit ?? DEFAULT_LIST_LIMIT;
      if (!Number.isSafeInteger(limit) || limit < 1) {
        throw new SwitchboardError('INVALID_INPUT', `limit must be a positive integer, got ${limit}`, {
          hint: 'pass a limit of 1 or more',
        });
      }
      const since = options.since === undefined ? Number.MIN_SAFE_INTEGER : toEpochMs(options.since);
      await queue.settled();
      return guarded('cannot read route decisions from', async (db) =>
        decisions(db, await db.all<DecisionRow>(sql.listDecisions, { since, limit })),
      );
    },

    async eachRouteDecision(options, visit) {
      const since = options.since === undefined ? Number.MIN_SAFE_INTEGER : toEpochMs(options.since);
      await queue.settled();
      return guarded('cannot read route decisions from', async (db) => {
        let count = 0;
        let after = { after_time: Number.MIN_SAFE_INTEGER, after_row: Number.MIN_SAFE_INTEGER };
        for (;;) {
          const page = await db.all<DecisionRow & { row_number: number }>(sql.pageDecisions, {
            since,
            ...after,
            limit: PAGE_SIZE,
          });
          for (const decision of await decisions(db, page)) {
            visit(decision);
            count++;
          }
          const last = page.at(-1);
          if (last === undefined || page.length < PAGE_SIZE) return count;
          after = { after_time: Number(last.created_at), after_row: Number(last.row_number) };
        }
      });
    },

    async getRouteDecision(id) {
      await queue.settled();
      return guarded('cannot read a route decision from', async (db) => {
        const row = await db.get<DecisionRow>(sql.getDecision, [id]);
        return row === undefined ? undefined : (await decisions(db, [row]))[0];
      });
    },

    async countRouteDecisions(options = {}) {
      await queue.settled();
      return guarded('cannot count route decisions in', async (db) => {
        const row =
          options.since === undefined
            ? await db.get<{ count: number }>(sql.countDecisions)
            : await db.get<{ count: number }>(sql.countDecisionsSince, [toEpochMs(options.since)]);
        return Number(row?.count ?? 0);
      });
    },

    async pruneRouteDecisions(before) {
      await queue.settled();
      return guarded('cannot prune route decisions in', (db) =>
        db.transaction(async (client) => {
          const decisions = (await client.run(sql.pruneDecisions, [before])).changes;
          const feedback = (await client.run(sql.pruneFeedback)).changes;
          const cached = (await client.run(sql.dropExpiredCache, { before })).changes;
          return { decisions, feedback, cached };
        }),
      );
    },

    async recordFeedback(decisionId, skill) {
      await queue.settled();
      await guarded('cannot record feedback in', async (db) => {
        if ((await db.get(sql.decisionExists, [decisionId])) === undefined) {
          throw new SwitchboardError(
            'INVALID_INPUT',
            `there is no route decision ${decisionId} in ${location}`,
            {
              hint: 'use an id printed by `switchboard route --json` (run in the same folder)',
            },
          );
        }
        await db.run(sql.upsertFeedback, { decision_id: decisionId, skill, created_at: Date.now() });
      });
    },

    async listFeedback() {
      return guarded('cannot read feedback from', async (db) =>
        (await db.all<{ decision_id: string; skill: string }>(sql.listFeedback)).map((row) => ({
          decisionId: row.decision_id,
          skill: row.skill,
        })),
      );
    },
  };
}

/**
 * Stage 4: the router's decision cache. A read looks at the rows not committed yet first and never waits
 * for a write: a serve reads the cache on every request.
 */
function decisionCacheMethods(
  connection: Connection,
  queue: GroupCommit<Batch>,
): Pick<Ledger, 'getCachedDecision' | 'cacheDecision'> {
  const { sql, guarded } = connection;
  // On SQLite a read blocks the event loop: those of one turn share a statement. PostgreSQL's are
  // round trips that run side by side already.
  const reads =
    connection.dialect === 'sqlite'
      ? new BatchedCacheReads((keys) =>
          guarded('cannot read the decision cache in', async (db) => {
            const rows = await db.all<{ key: string; decision: string; stored_at: number }>(
              sql.getCachedMany,
              { keys: JSON.stringify(keys) },
            );
            return new Map(
              rows.map((row) => [row.key, { decision: row.decision, storedAt: Number(row.stored_at) }]),
            );
          }),
        )
      : undefined;
  return {
    async getCachedDecision(key, notBefore) {
      // The latest entry not committed yet wins over the table's.
      const queued = queue.pending.findLast((batch) => batch.cache.has(key))?.cache.get(key);
      if (queued !== undefined) {
        return queued.storedAt >= notBefore ? parseCachedDecision(queued.decision) : undefined;
      }
      if (reads !== undefined) return parseCachedDecision(await reads.read(key, notBefore));
      return guarded('cannot read the decision cache in', async (db) =>
        parseCachedDecision(
          (await db.get<{ decision: string }>(sql.getCached, { key, not_before: notBefore }))?.decision,
        ),
      );
    },

    async cacheDecision(key, decision, { storedAt, ttlMs, maxEntries }) {
      if (connection.closed) await guarded('cannot write the decision cache in', () => Promise.resolve());
      const entry = { decision: JSON.stringify(decision), storedAt, ttlMs, maxEntries };
      await queue.enqueue((batch) => {
        batch.cache.delete(key);
        batch.cache.set(key, entry);
      });
    },
  };
}

type CooldownRow = Omit<CooldownRecord, 'updatedAt'> & { updated_at: number };

function cooldownRecord({ updated_at, ...record }: CooldownRow): CooldownRecord {
  return { ...record, updatedAt: updated_at };
}

/** Stage 5: call attempts (group-committed), what is read from them, and the circuit breakers' cooldowns. */
function callMethods(
  connection: Connection,
  queue: GroupCommit<Batch>,
): Pick<
  Ledger,
  'recordCallAttempt' | 'callStats' | 'recentRequests' | 'setCooldown' | 'getCooldown' | 'activeCooldowns'
> {
  const { sql, guarded } = connection;
  return {
    async recordCallAttempt(record) {
      if (connection.closed) await guarded('cannot record a call attempt in', () => Promise.resolve());
      // A copy, turned into a row (and its prompt hashed) at write time, off the call's path; the
      // caller may reuse or change its own record object afterwards.
      const copy = copyOfRecord(record);
      await queue.enqueue((batch) => batch.attempts.push(copy));
    },

    async callStats(options = {}) {
      await queue.settled();
      const since = options.since === undefined ? Number.MIN_SAFE_INTEGER : toEpochMs(options.since);
      return guarded('cannot read call attempts from', async (db) =>
        summariseCalls(await db.all<AttemptRow>(sql.selectAttemptsSince, [since])),
      );
    },

    async recentRequests(spec, since, limit) {
      await queue.settled();
      return guarded('cannot read call attempts from', async (db) =>
        (
          await db.all<{ call_id: string; success: number; error_code: string | null }>(
            sql.selectRecentRequests,
            { spec, since, limit },
          )
        ).map((row) => ({
          callId: row.call_id,
          errorCode: row.success === 1 ? undefined : (row.error_code ?? 'PROVIDER_ERROR'),
        })),
      );
    },

    async setCooldown({ spec, until, failures, reason, updatedAt }) {
      await guarded('cannot record a cooldown in', (db) =>
        db.run(sql.upsertCooldown, { spec, until, failures, reason, updated_at: updatedAt ?? Date.now() }),
      );
    },

    async activeCooldowns(now) {
      return guarded('cannot read cooldowns from', async (db) =>
        (await db.all<CooldownRow>(sql.selectActiveCooldowns, [now])).map(cooldownRecord),
      );
    },

    async getCooldown(spec) {
      return guarded('cannot read cooldowns from', async (db) => {
        const row = await db.get<CooldownRow>(sql.selectCooldown, [spec]);
        return row === undefined ? undefined : cooldownRecord(row);
      });
    },
  };
}

/**
 * Stage 6: budgets. Spending is read after the recorded rows are committed (our own attempts count), and
 * a reservation is read and held in one transaction of its own.
 */
function budgetMethods(
  connection: Connection,
  queue: GroupCommit<Batch>,
  settles: PendingSettles,
): Pick<Ledger, 'spendSince' | 'reserveSpend' | 'releaseReservation' | 'settleReservation' | 'reservedAt'> {
  const { sql, guarded } = connection;
  return {
    async spendSince(since, filter = {}) {
      await queue.settled();
      return guarded('cannot read spending from', (db) => readSpend(db, sql, since, filter));
    },

    async reserveSpend(reservation) {
      // Our own recorded attempts must be in the database before the spending is read, and a settle a
      // full disk refused goes in first when there is room again, so its estimate no longer holds the cap.
      await settles.retry();
      await queue.settled();
      return guarded('cannot reserve budget in', (db) => reserve(db, sql, reservation));
    },

    async releaseReservation(id) {
      // The attempt goes in before its reservation goes out, so no reader sees neither.
      await queue.settled();
      await guarded('cannot release a budget reservation in', async (db) => {
        const held = heldOn(db);
        if (held === undefined) return db.run(sql.deleteReservation, [id]);
        return whileHeld(held, () =>
          db.transaction((client) => client.run(sql.deleteReservation, [id]), {
            afterCommit: () => held.removed(id),
          }),
        );
      });
    },

    async settleReservation(id, record) {
      const copy = copyOfRecord(record);
      try {
        await writeSettle(connection, id, copy);
      } catch (error) {
        if (!connection.closed) settles.keep(id, copy);
        throw error;
      }
    },

    async reservedAt(now, filter = {}) {
      return guarded('cannot read budget reservations from', async (db) => {
        const row = await db.get<{ total: number | null }>(sql.reservedFor, {
          now,
          since: filter.since ?? now,
          provider: filter.provider ?? null,
          ...tagParams(filter.tag),
        });
        return row?.total ?? 0;
      });
    },
  };
}

/** A record of the caller's own, copied: the caller may reuse or change its object afterwards. */
function copyOfRecord(record: CallAttemptRecord): CallAttemptRecord {
  return { ...record, ...(record.tags === undefined ? {} : { tags: { ...record.tags } }) };
}

/**
 * A settle's one transaction: the attempt's row in (once, whatever the retries), its reservation out.
 * `again`: a background retry, which does not wait out a PostgreSQL restart (it backs off on its own).
 */
async function writeSettle(
  connection: Connection,
  reservationId: string,
  record: CallAttemptRecord,
  again = false,
): Promise<void> {
  const { sql, storeText } = connection;
  await connection[again ? 'use' : 'guarded']('cannot record a call attempt in', (db) => {
    const held = heldOn(db);
    return whileHeld(held, () =>
      db.transaction(
        async (client) => {
          await client.run(sql.insertCallAttempt, callAttemptRow(record, storeText));
          await client.run(sql.deleteReservation, [reservationId]);
        },
        { afterCommit: () => held?.removed(reservationId) },
      ),
    );
  });
  afterCommittedWrite();
}

/**
 * The settles a full or read-only disk refused, written again in the background; at process exit a SQLite
 * ledger tries them once more synchronously, a PostgreSQL one on `beforeExit`.
 */
function pendingSettles(connection: Connection): { pending: PendingSettles; detach: () => void } {
  const pending = new PendingSettles({
    write: ({ reservationId, record }) => writeSettle(connection, reservationId, record, true),
    gaveUp: (given, error) => {
      process.emitWarning(
        `${given.length} call attempts could not be written to ${connection.location} for 15 minutes; their budget reservations stay, counting as spent: ${
          error instanceof Error ? error.message : String(error)
        }`,
        { code: 'SWITCHBOARD_LEDGER_SETTLE_GAVE_UP' },
      );
    },
  });
  const { sql, storeText } = connection;
  const settleNow = () => {
    const database = connection.current();
    const sqlite = database === undefined ? undefined : sqliteBehind(database);
    if (connection.closed || sqlite === undefined) return;
    for (const { reservationId, record } of pending.all) {
      try {
        const written = sqlite.writeBatchNow((client) => {
          client.run(sql.insertCallAttempt, callAttemptRow(record, storeText));
          client.run(sql.deleteReservation, [reservationId]);
        });
        if (written) heldReservationsOf(sqlite).removed(reservationId);
      } catch {
        // The process is exiting: the reservation stays, counting as spent.
        return;
      }
    }
  };
  const settleBeforeLeaving = () => pending.retry();
  if (connection.dialect === 'sqlite') flushOnExit.add(settleNow);
  else flushBeforeExit.add(settleBeforeLeaving);
  return {
    pending,
    detach: () => {
      pending.stop();
      flushOnExit.delete(settleNow);
      flushBeforeExit.delete(settleBeforeLeaving);
    },
  };
}

/**
 * The in-memory copy of the reservations on a SQLite connection; undefined on PostgreSQL, where other
 * machines write the table and each check sums it under the advisory lock.
 */
function heldOn(db: SqlDatabase): HeldReservations | undefined {
  const sqlite = sqliteBehind(db);
  return sqlite === undefined ? undefined : heldReservationsOf(sqlite);
}

/** A write of reservations: when it fails, whether it committed is unknown, so the copy is read again. */
async function whileHeld<T>(held: HeldReservations | undefined, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    held?.forget();
    throw error;
  }
}

async function reserve(
  db: SqlDatabase,
  sql: Statements,
  reservation: SpendReservation,
): Promise<ReservationOutcome> {
  const held = heldOn(db);
  const now = reservation.createdAt;
  const expiredBy = now - EXPIRED_RESERVATION_KEPT_MS;
  let inserted: ReservationRow | undefined;
  const afterCommit = () => {
    held?.expiredBy(expiredBy);
    if (inserted !== undefined) held?.added(inserted);
  };
  return whileHeld(held, () =>
    db.transaction(
      async (client) => {
        // Read before the delete below, so a rollback leaves the copy equal to the table.
        await held?.refresh(client);
        await client.run(sql.deleteExpiredReservations, [expiredBy]);
        const standings = await standingsOf(client, sql, reservation, { held, expiredBy });
        const { caps, amountUsd, shrinkToFit } = reservation;
        const verdict = judgeReservation(caps, standings, amountUsd, shrinkToFit);
        if (!verdict.reserved) {
          return {
            reserved: false,
            capIndex: verdict.capIndex,
            ...(amountUsd === undefined ? {} : { amountUsd }),
            standings,
          };
        }
        const row: ReservationRow = {
          id: reservation.id,
          created_at: now,
          expires_at: reservation.expiresAt,
          provider: reservation.provider,
          tags: JSON.stringify(reservation.tags),
          amount_usd: verdict.amountUsd,
        };
        await client.run(sql.insertReservation, { ...row });
        inserted = row;
        return { reserved: true, amountUsd: verdict.amountUsd, standings };
      },
      // Every process reserving against this ledger takes turns: spending is read and held in one step.
      { lockKey: 'switchboard:budget', afterCommit },
    ),
  );
}

/**
 * Where each cap stands, inside the reservation's transaction: its spending from the totals, what is held
 * from the connection's copy of the reservations (SQLite) or summed from the table (PostgreSQL, or a tag
 * filter only SQLite can answer).
 */
async function standingsOf(
  client: SqlClient,
  sql: Statements,
  reservation: SpendReservation,
  { held, expiredBy }: { held: HeldReservations | undefined; expiredBy: number },
): Promise<CapStanding[]> {
  const standings: CapStanding[] = [];
  for (const cap of reservation.caps) {
    const spentUsd = await readSpend(client, sql, cap.since, cap);
    const filter = {
      now: reservation.createdAt,
      since: cap.since,
      provider: cap.provider ?? null,
      ...tagParams(cap.tag),
    };
    const reservedUsd =
      held?.heldFor(filter, expiredBy) ??
      (await client.get<{ total: number | null }>(sql.reservedFor, filter))?.total ??
      0;
    standings.push({ spentUsd, reservedUsd });
  }
  return standings;
}

function toEpochMs(value: Date | number | string): number {
  const epochMs =
    value instanceof Date ? value.getTime() : typeof value === 'number' ? value : Date.parse(value);
  if (!Number.isFinite(epochMs)) {
    throw new SwitchboardError('INVALID_INPUT', `since is not a valid time: ${String(value)}`, {
      hint: 'pass a Date, epoch milliseconds, or an ISO 8601 timestamp such as 2025-01-31T12:00:00Z',
    });
  }
  return epochMs;
}
