import { mkdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type Database from 'better-sqlite3';
import {
  callAttemptRow,
  hashText,
  prepareCallStatements,
  summariseCalls,
  type CallAttemptRecord,
  type CallStatements,
  type CallStats,
  type CooldownRecord,
} from './call-records.js';
import {
  judgeReservation,
  prepareReservationStatements,
  type CapStanding,
  type ReservationOutcome,
  type ReservationStatements,
  type SpendReservation,
} from './budget-reservations.js';
import { SwitchboardError } from '../core/errors.js';
import { loadSqlite } from '../core/lazy-packages.js';
import type { RouteCandidate, RouteDecision, RouteMethod } from '../core/route-types.js';
import {
  prepareRouteCacheStatements,
  readCachedDecision,
  writeCachedDecision,
  type RouteCacheStatements,
} from './route-cache-records.js';
import { LATEST_SCHEMA_VERSION, findSchemaProblem, migrate, readSchemaState } from './migrations.js';
import type { SchemaProblem } from './migrations.js';
import { redactSecrets } from '../core/secrets.js';

/** Folder, relative to the working directory, that holds Switchboard's state by default. */
export const DEFAULT_STATE_DIR = '.switchboard';
/** File name of the ledger inside the state folder. */
export const LEDGER_FILE_NAME = 'ledger.db';
/**
 * How long a write waits for another process's lock before failing. Generous, because writes are tiny
 * and a failure loses a ledger row; a stall this long means something is wrong anyway.
 */
export const BUSY_TIMEOUT_MS = 10_000;
/** Rows `listRouteDecisions` returns when no limit is given. */
export const DEFAULT_LIST_LIMIT = 100;

export interface OpenLedgerOptions {
  /**
   * The database file. `:memory:` gives a private in-memory ledger (tests, dry runs).
   * @default `<stateDir>/ledger.db`
   */
  path?: string;
  /**
   * Folder for Switchboard's state, created when missing. Ignored when `path` is given.
   * @default `.switchboard` in the current working directory
   */
  stateDir?: string;
  /**
   * Store request text alongside its hash. Off by default: prompts may hold private data, and the
   * ledger keeps only what the user opted in to.
   * @default false
   */
  storeText?: boolean;
}

/** What the caller knows about a routed request beyond the decision itself. */
export interface RouteDecisionContext {
  /** The request as the user sent it. Stored only when the ledger was opened with `storeText`. */
  requestText: string;
  /** The text the router actually matched on; hashed instead of `requestText` when given. */
  normalizedText?: string;
  /** The routing mode that produced the decision. */
  mode: string;
  /** Identifies the skill set the router chose from. */
  skillsHash?: string;
  /** Free labels (e.g. caller, experiment). */
  tags?: Record<string, string>;
  /**
   * When the decision was made.
   * @default now
   */
  createdAt?: Date;
}

/** A route decision as read back from the ledger. */
export interface StoredRouteDecision extends Omit<RouteDecision, 'warnings'> {
  /** ISO 8601 timestamp, UTC. */
  createdAt: string;
  /** sha256 hex of the normalized request text. */
  requestHash: string;
  /** Present only when the ledger stored text. */
  requestText?: string;
  mode: string;
  skillsHash?: string;
  tags: Record<string, string>;
}

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
  /** Absolute path of the database file (or `:memory:`). */
  readonly path: string;
  /** Whether request text is stored next to its hash. */
  readonly storeText: boolean;
  /** Appends one decision. Rejects with `STORE_ERROR` if the write fails (for example a duplicate id). */
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
  countRouteDecisions(): Promise<number>;
  /**
   * The decision cached under `key` at or after `notBefore` (epoch ms), or undefined. The router's
   * decision cache lives here so that it outlives a process (each CLI call is one).
   */
  getCachedDecision(key: string, notBefore: number): Promise<RouteDecision | undefined>;
  /** Caches a decision under `key`, dropping entries older than `ttlMs` and beyond `maxEntries`. */
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
   * Queues one call attempt (a call with retries or fallbacks has several). Resolves once the attempt is
   * queued, not written: attempts are written in batches a few milliseconds later, and every read of
   * this ledger, `flush()`, `close()` and process exit write them first.
   */
  recordCallAttempt(record: CallAttemptRecord): Promise<void>;
  /** Writes the queued call attempts now. */
  flush(): Promise<void>;
  /** Dollars spent since a time, optionally for one provider and/or one `key=value` tag. */
  spendSince(since: number, filter?: { provider?: string; tag?: string }): Promise<number>;
  /**
   * Holds a call's estimated cost against every cap in one `BEGIN IMMEDIATE` transaction (spent plus
   * other calls' open reservations plus this estimate), so parallel calls in any number of processes
   * cannot all pass. Taken only when every cap has room; end it with `releaseReservation`.
   */
  reserveSpend(reservation: SpendReservation): Promise<ReservationOutcome>;
  /** Ends a reservation once the attempt (and its real cost) is recorded. Safe to call twice. */
  releaseReservation(id: string): Promise<void>;
  /** Dollars held by calls in flight at `now`, optionally for one provider and/or one `key=value` tag. */
  reservedAt(now: number, filter?: { provider?: string; tag?: string }): Promise<number>;
  /** Records a tripped circuit breaker, visible to every process using this ledger. */
  setCooldown(record: CooldownRecord): Promise<void>;
  /** `spec` here and in `recentOutcomes` is the breaker's key: the spec, plus its endpoint when it has one. */
  getCooldown(spec: string): Promise<CooldownRecord | undefined>;
  /**
   * The outcomes of a spec's latest attempts since a time, newest first, from every process writing to
   * this ledger: `undefined` for a success, else the error code. For circuit breakers that count
   * failures across short-lived processes; matched on the attempt's `cooldownKey`, else its spec.
   */
  recentOutcomes(spec: string, since: number, limit: number): Promise<(string | undefined)[]>;
  /** Breakers still open at `now`. */
  activeCooldowns(now: number): Promise<CooldownRecord[]>;
  /** Calls, success rate, latency, tokens and cost by provider and model, error codes; since a time. */
  callStats(options?: { since?: Date | number | string }): Promise<CallStats>;
  /**
   * Writes the queued call attempts and releases the database. Safe to call twice; any other call
   * afterwards rejects with `STORE_ERROR`. Await it before the process ends: on SQLite the work is done
   * when it returns, but an asynchronous backend can only finish its writes while the process lives.
   */
  close(): Promise<void>;
}

/**
 * Pending-attempt flushes of every open ledger, run once at process exit by a single listener. This works
 * only because better-sqlite3 writes synchronously: 'exit' cannot wait for a Promise, so a ledger on an
 * asynchronous driver must be flushed before the process decides to exit (`close()`, or `beforeExit`).
 */
const flushOnExit = new Set<() => void>();
process.on('exit', () => {
  for (const flush of flushOnExit) flush();
});

/** How long call attempts wait to be written together. */
const ATTEMPT_FLUSH_MS = 20;

/**
 * Opens (creating if needed) the ledger database and brings its schema up to date. Safe to call from
 * several processes on the same file at once.
 *
 * @throws SwitchboardError `STORE_ERROR` when the folder cannot be created, the file is not a SQLite
 *   database, belongs to another program, or was written by a newer Switchboard.
 */
export { hashText };

export function openLedger(options: OpenLedgerOptions = {}): Ledger {
  const { path: file, database } = openLedgerDatabase(options);
  try {
    const statements = prepareStatements(database);
    return createLedger(database, statements, file, options.storeText ?? false);
  } catch (error) {
    database.close();
    throw toStoreError(error, file, 'cannot prepare the ledger');
  }
}

/**
 * The ledger's SQLite connection, opened, checked and migrated as `openLedger` does (WAL, busy timeout),
 * for stores that keep tables of their own in the same file (agent runs). The caller closes it.
 */
export function openLedgerDatabase(options: OpenLedgerOptions = {}): {
  path: string;
  database: Database.Database;
} {
  const path = resolveLedgerPath(options);
  return { path, database: openDatabase(path) };
}

function resolveLedgerPath(options: OpenLedgerOptions): string {
  if (options.path === ':memory:') return options.path;
  const file =
    options.path === undefined
      ? resolve(options.stateDir ?? DEFAULT_STATE_DIR, LEDGER_FILE_NAME)
      : resolve(options.path);
  const directory = dirname(file);
  try {
    mkdirSync(directory, { recursive: true });
  } catch (error) {
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

function openDatabase(file: string): Database.Database {
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

function throwOnSchemaProblem(problem: SchemaProblem | undefined, file: string): void {
  if (problem === undefined) return;
  if (problem.kind === 'foreign') {
    throw new SwitchboardError(
      'STORE_ERROR',
      `${file} is a SQLite database that Switchboard did not create`,
      {
        hint: 'point the ledger at another path; Switchboard leaves files it does not own untouched',
        details: { file },
      },
    );
  }
  throw new SwitchboardError(
    'STORE_ERROR',
    `ledger ${file} has schema version ${problem.version}, newer than this Switchboard supports (${LATEST_SCHEMA_VERSION})`,
    {
      hint: 'upgrade Switchboard, or point the ledger at another path',
      details: { file, schemaVersion: problem.version, supportedVersion: LATEST_SCHEMA_VERSION },
    },
  );
}

/** Hints for SQLite result codes a user can do something about. */
const HINTS_BY_SQLITE_CODE: Record<string, string> = {
  SQLITE_NOTADB:
    'the file is not a SQLite database; point the ledger at another path (Switchboard will not overwrite it)',
  SQLITE_CORRUPT: 'the ledger is damaged; move it aside and Switchboard will start a new one',
  SQLITE_CANTOPEN: 'check that the folder exists and is writable, or choose another ledger path',
  SQLITE_READONLY: 'make the ledger file and its folder writable, or choose another ledger path',
  SQLITE_PERM: 'make the ledger file and its folder writable, or choose another ledger path',
  SQLITE_FULL: 'free some disk space',
  SQLITE_IOERR: 'check the disk and the file system holding the ledger',
  SQLITE_BUSY: 'another process held the ledger locked for too long; retry, or look for a stuck process',
  SQLITE_CONSTRAINT_PRIMARYKEY: 'each route decision needs a unique id',
};

function sqliteCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_') ? code : undefined;
}

/** Wraps any failure as a one-line `STORE_ERROR` naming the file; passes our own errors through. */
function toStoreError(error: unknown, file: string, what: string): SwitchboardError {
  if (error instanceof SwitchboardError) return error;
  const code = sqliteCode(error);
  const reason = error instanceof Error ? error.message.split('\n', 1)[0] : String(error);
  const hint =
    (code === undefined
      ? undefined
      : (HINTS_BY_SQLITE_CODE[code] ?? HINTS_BY_SQLITE_CODE[code.replace(/_[A-Z]+$/, '')])) ??
    'check the ledger path and its permissions';
  return new SwitchboardError('STORE_ERROR', `${what} ${file}: ${reason}`, {
    hint,
    cause: error,
    details: code === undefined ? { file } : { file, sqliteCode: code },
  });
}

interface RouteDecisionRow {
  id: string;
  created_at: number;
  request_hash: string;
  request_text: string | null;
  skill: string;
  confidence: number;
  method: string;
  reasoning: string;
  candidates: string;
  duration_ms: number;
  cost_usd: number;
  timings: string;
  mode: string;
  skills_hash: string | null;
  tags: string;
}

interface Statements extends CallStatements, ReservationStatements, RouteCacheStatements {
  upsertFeedback: Database.Statement<[{ decision_id: string; skill: string; created_at: number }]>;
  listFeedback: Database.Statement<[], { decision_id: string; skill: string }>;
  insertRouteDecision: Database.Statement<[RouteDecisionRow]>;
  listRouteDecisions: Database.Statement<[{ since: number; limit: number }], RouteDecisionRow>;
  eachRouteDecision: Database.Statement<[{ since: number }], RouteDecisionRow>;
  getRouteDecision: Database.Statement<[string], RouteDecisionRow>;
  countRouteDecisions: Database.Statement<[], { count: number }>;
}

const ROUTE_DECISION_COLUMNS =
  'id, created_at, request_hash, request_text, skill, confidence, method, reasoning, candidates, ' +
  'duration_ms, cost_usd, timings, mode, skills_hash, tags';

// Prepared once per connection: parsing SQL per row would dominate the cost of these tiny writes.
function prepareStatements(database: Database.Database): Statements {
  return {
    insertRouteDecision: database.prepare(
      `INSERT INTO route_decisions (${ROUTE_DECISION_COLUMNS}) VALUES (` +
        '@id, @created_at, @request_hash, @request_text, @skill, @confidence, @method, @reasoning, ' +
        '@candidates, @duration_ms, @cost_usd, @timings, @mode, @skills_hash, @tags)',
    ),
    listRouteDecisions: database.prepare(
      `SELECT ${ROUTE_DECISION_COLUMNS} FROM route_decisions WHERE created_at >= @since ` +
        'ORDER BY created_at DESC, rowid DESC LIMIT @limit',
    ),
    eachRouteDecision: database.prepare(
      `SELECT ${ROUTE_DECISION_COLUMNS} FROM route_decisions WHERE created_at >= @since ORDER BY created_at, rowid`,
    ),
    getRouteDecision: database.prepare(`SELECT ${ROUTE_DECISION_COLUMNS} FROM route_decisions WHERE id = ?`),
    countRouteDecisions: database.prepare('SELECT count(*) AS count FROM route_decisions'),
    upsertFeedback: database.prepare(
      'INSERT INTO route_feedback (decision_id, skill, created_at) VALUES (@decision_id, @skill, @created_at) ' +
        'ON CONFLICT (decision_id) DO UPDATE SET skill = excluded.skill, created_at = excluded.created_at',
    ),
    listFeedback: database.prepare('SELECT decision_id, skill FROM route_feedback ORDER BY created_at'),
    ...prepareCallStatements(database),
    ...prepareReservationStatements(database),
    ...prepareRouteCacheStatements(database),
  };
}

function createLedger(
  database: Database.Database,
  statements: Statements,
  file: string,
  storeText: boolean,
): Ledger {
  let closed = false;

  // Call attempts are written in batches, one transaction every few milliseconds: a transaction per
  // row costs about 60 µs of synchronous work on the event loop, on every call's path; batched rows
  // cost a fraction of that. Reads, close() and process exit flush first, so nothing recorded is ever
  // missing from a read or lost on a normal exit; a process killed outright loses at most the last
  // 20 milliseconds of attempts.
  const pendingAttempts: CallAttemptRecord[] = [];
  const insertAttempts = database.transaction((records: CallAttemptRecord[]) => {
    for (const record of records) statements.insertCallAttempt.run(callAttemptRow(record, storeText));
  });
  function flushAttempts(): void {
    if (closed || pendingAttempts.length === 0) return;
    const rows = pendingAttempts.splice(0);
    guarded('cannot record call attempts in', () => insertAttempts(rows));
  }
  flushOnExit.add(flushAttempts);

  const reserve = database.transaction((reservation: SpendReservation): ReservationOutcome => {
    const now = reservation.createdAt;
    statements.deleteExpiredReservations.run(now);
    const standings = reservation.caps.map((cap): CapStanding => {
      const filter = { provider: cap.provider ?? null, tag: cap.tag ?? null };
      return {
        spentUsd: statements.spendSince.get({ since: cap.since, ...filter })?.total ?? 0,
        reservedUsd: statements.reservedFor.get({ now, ...filter })?.total ?? 0,
      };
    });
    const verdict = judgeReservation(reservation.caps, standings, reservation.amountUsd);
    if (!verdict.reserved) {
      return {
        reserved: false,
        capIndex: verdict.capIndex,
        ...(reservation.amountUsd === undefined ? {} : { amountUsd: reservation.amountUsd }),
        standings,
      };
    }
    statements.insertReservation.run({
      id: reservation.id,
      created_at: now,
      expires_at: reservation.expiresAt,
      provider: reservation.provider,
      tags: JSON.stringify(reservation.tags),
      amount_usd: verdict.amountUsd,
    });
    return { reserved: true, amountUsd: verdict.amountUsd, standings };
  });

  // Every public call goes through here so callers only ever see STORE_ERROR, never a raw SqliteError.
  function guarded<T>(what: string, action: () => T): T {
    if (closed) {
      throw new SwitchboardError('STORE_ERROR', `${what} ${file}: the ledger is closed`, {
        hint: 'open the ledger again with openLedger()',
        details: { file },
      });
    }
    try {
      return action();
    } catch (error) {
      throw toStoreError(error, file, what);
    }
  }

  return {
    path: file,
    storeText,

    async recordCallAttempt(record) {
      guarded('cannot record a call attempt in', () => undefined);
      // A copy, turned into a row (and its prompt hashed) at flush time, off the call's path; the
      // caller may reuse or change its own record object afterwards.
      pendingAttempts.push({ ...record, ...(record.tags === undefined ? {} : { tags: { ...record.tags } }) });
      if (pendingAttempts.length === 1) setTimeout(flushAttempts, ATTEMPT_FLUSH_MS).unref();
    },

    async recordFeedback(decisionId, skill) {
      guarded('cannot record feedback in', () => {
        if (statements.getRouteDecision.get(decisionId) === undefined) {
          throw new SwitchboardError('INVALID_INPUT', `there is no route decision ${decisionId} in ${file}`, {
            hint: 'use an id printed by `switchboard route --json` (run in the same folder)',
          });
        }
        statements.upsertFeedback.run({ decision_id: decisionId, skill, created_at: Date.now() });
      });
    },

    async listFeedback() {
      return guarded('cannot read feedback from', () =>
        statements.listFeedback.all().map((row) => ({ decisionId: row.decision_id, skill: row.skill })),
      );
    },

    async spendSince(since, filter = {}) {
      flushAttempts();
      return guarded('cannot read spending from', () => {
        const row = statements.spendSince.get({
          since,
          provider: filter.provider ?? null,
          tag: filter.tag ?? null,
        });
        return row?.total ?? 0;
      });
    },

    async reserveSpend(reservation) {
      // Our own recorded attempts must be in the file before the spending is read.
      flushAttempts();
      return guarded('cannot reserve budget in', () => reserve.immediate(reservation));
    },

    async releaseReservation(id) {
      // The attempt goes in before its reservation goes out, so no reader sees neither.
      flushAttempts();
      guarded('cannot release a budget reservation in', () => statements.deleteReservation.run(id));
    },

    async reservedAt(now, filter = {}) {
      return guarded('cannot read budget reservations from', () => {
        const row = statements.reservedFor.get({
          now,
          provider: filter.provider ?? null,
          tag: filter.tag ?? null,
        });
        return row?.total ?? 0;
      });
    },

    async setCooldown(record) {
      guarded('cannot record a cooldown in', () =>
        statements.upsertCooldown.run({ ...record, updated_at: Date.now() }),
      );
    },

    async activeCooldowns(now) {
      return guarded('cannot read cooldowns from', () => statements.selectActiveCooldowns.all(now));
    },

    async getCooldown(spec) {
      return guarded('cannot read cooldowns from', () => statements.selectCooldown.get(spec));
    },

    async recentOutcomes(spec, since, limit) {
      flushAttempts();
      return guarded('cannot read call attempts from', () =>
        statements.selectRecentOutcomes
          .all({ spec, since, limit })
          .map((row) => (row.success === 1 ? undefined : (row.error_code ?? 'PROVIDER_ERROR'))),
      );
    },

    async callStats(options = {}) {
      flushAttempts();
      const since = options.since === undefined ? Number.MIN_SAFE_INTEGER : toEpochMs(options.since);
      return guarded('cannot read call attempts from', () =>
        summariseCalls(statements.selectAttemptsSince.all(since)),
      );
    },

    async recordRouteDecision(decision, context) {
      const row = toRow(decision, context, storeText);
      guarded('cannot record a route decision in', () => statements.insertRouteDecision.run(row));
    },

    async listRouteDecisions(options = {}) {
      const limit = options.limit ?? DEFAULT_LIST_LIMIT;
      if (!Number.isSafeInteger(limit) || limit < 1) {
        throw new SwitchboardError('INVALID_INPUT', `limit must be a positive integer, got ${limit}`, {
          hint: 'pass a limit of 1 or more',
        });
      }
      const since = options.since === undefined ? Number.MIN_SAFE_INTEGER : toEpochMs(options.since);
      return guarded('cannot read route decisions from', () =>
        statements.listRouteDecisions.all({ since, limit }).map(fromRow),
      );
    },

    async eachRouteDecision(options, visit) {
      const since = options.since === undefined ? Number.MIN_SAFE_INTEGER : toEpochMs(options.since);
      return guarded('cannot read route decisions from', () => {
        let count = 0;
        for (const row of statements.eachRouteDecision.iterate({ since })) {
          visit(fromRow(row));
          count++;
        }
        return count;
      });
    },

    async getRouteDecision(id) {
      const row = guarded('cannot read a route decision from', () => statements.getRouteDecision.get(id));
      return row === undefined ? undefined : fromRow(row);
    },

    async getCachedDecision(key, notBefore) {
      return guarded('cannot read the decision cache in', () =>
        readCachedDecision(statements, key, notBefore),
      );
    },

    async cacheDecision(key, decision, options) {
      guarded('cannot write the decision cache in', () =>
        writeCachedDecision(database, statements, key, decision, options),
      );
    },

    async countRouteDecisions() {
      return guarded(
        'cannot count route decisions in',
        () => statements.countRouteDecisions.get()?.count ?? 0,
      );
    },

    async flush() {
      flushAttempts();
    },

    async close() {
      if (closed) return;
      flushAttempts();
      flushOnExit.delete(flushAttempts);
      closed = true;
      try {
        database.close();
      } catch (error) {
        throw toStoreError(error, file, 'cannot close the ledger');
      }
    },
  };
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

function toRow(decision: RouteDecision, context: RouteDecisionContext, storeText: boolean): RouteDecisionRow {
  const createdAt = context.createdAt ?? new Date();
  if (!Number.isFinite(createdAt.getTime())) {
    throw new SwitchboardError('INVALID_INPUT', `createdAt is an invalid date for decision ${decision.id}`, {
      hint: 'pass a valid Date, or leave createdAt out to use the current time',
    });
  }
  return {
    id: decision.id,
    created_at: createdAt.getTime(),
    request_hash: hashText(context.normalizedText ?? context.requestText),
    request_text: storeText ? redactSecrets(context.requestText) : null,
    skill: decision.skill,
    confidence: decision.confidence,
    method: decision.method,
    // An LLM tier's failure is quoted here; the ledger never stores a secret.
    reasoning: redactSecrets(decision.reasoning),
    candidates: JSON.stringify(decision.candidates),
    duration_ms: decision.durationMs,
    cost_usd: decision.costUsd,
    timings: JSON.stringify(decision.timings),
    mode: context.mode,
    skills_hash: context.skillsHash ?? null,
    tags: JSON.stringify(context.tags ?? {}),
  };
}

function fromRow(row: RouteDecisionRow): StoredRouteDecision {
  const stored: StoredRouteDecision = {
    id: row.id,
    createdAt: new Date(row.created_at).toISOString(),
    requestHash: row.request_hash,
    skill: row.skill,
    confidence: row.confidence,
    method: row.method as RouteMethod,
    reasoning: row.reasoning,
    candidates: JSON.parse(row.candidates) as RouteCandidate[],
    durationMs: row.duration_ms,
    costUsd: row.cost_usd,
    timings: JSON.parse(row.timings) as Record<string, number>,
    mode: row.mode,
    tags: JSON.parse(row.tags) as Record<string, string>,
  };
  if (row.request_text !== null) stored.requestText = row.request_text;
  if (row.skills_hash !== null) stored.skillsHash = row.skills_hash;
  return stored;
}
