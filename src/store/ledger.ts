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
  judgeReservation,
  reservationSql,
  type CapStanding,
  type ReservationOutcome,
  type SpendReservation,
} from './budget-reservations.js';
import { SwitchboardError } from '../core/errors.js';
import { afterCommittedWrite } from './write-seam.js';
import type { RouteCandidate, RouteDecision, RouteMethod } from '../core/route-types.js';
import { readCachedDecision, writeCachedDecision } from './route-cache-records.js';
import { redactSecrets } from '../core/secrets.js';
import {
  connectPostgresDatabase,
  locateDatabase,
  openSqliteDatabase,
  sqliteBehind,
  toStoreError,
  type DatabaseTarget,
} from './database.js';
import type { SqlDatabase, SqlDialect } from './sql/sql-database.js';
import { describePostgresUrl } from './sql/postgres-database.js';

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
   * Holds a call's estimated cost against every cap in one transaction (`BEGIN IMMEDIATE` on SQLite, an
   * advisory lock on PostgreSQL) (spent plus
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
 * Pending-attempt flushes of every open SQLite ledger, run once at process exit by a single listener.
 * This works only because better-sqlite3 writes synchronously: 'exit' cannot wait for a Promise, so a
 * PostgreSQL ledger is flushed by `close()` (every command closes its ledger) and on `beforeExit`.
 */
const flushOnExit = new Set<() => void>();
process.on('exit', () => {
  for (const flush of flushOnExit) flush();
});
const flushBeforeExit = new Set<() => Promise<void>>();
process.on('beforeExit', () => {
  for (const flush of flushBeforeExit) void flush().catch(() => undefined);
});

/** How long call attempts wait to be written together. */
const ATTEMPT_FLUSH_MS = 20;
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

const ROUTE_DECISION_COLUMNS =
  'id, created_at, request_hash, request_text, skill, confidence, method, reasoning, candidates, ' +
  'duration_ms, cost_usd, timings, mode, skills_hash, tags';

function buildSql(dialect: SqlDialect) {
  return {
    ...callSql(dialect),
    ...reservationSql(dialect),
    insertRouteDecision:
      `INSERT INTO route_decisions (${ROUTE_DECISION_COLUMNS}) VALUES (` +
      '@id, @created_at, @request_hash, @request_text, @skill, @confidence, @method, @reasoning, ' +
      '@candidates, @duration_ms, @cost_usd, @timings, @mode, @skills_hash, @tags)',
    listRouteDecisions:
      `SELECT ${ROUTE_DECISION_COLUMNS} FROM route_decisions WHERE created_at >= @since ` +
      'ORDER BY created_at DESC, rowid DESC LIMIT @limit',
    // Keyset pages in (created_at, rowid) order: a large ledger is never held in memory at once.
    pageRouteDecisions:
      `SELECT rowid AS row_number, ${ROUTE_DECISION_COLUMNS} FROM route_decisions ` +
      'WHERE created_at >= @since AND (created_at > @after_time OR (created_at = @after_time AND rowid > @after_row)) ' +
      'ORDER BY created_at, rowid LIMIT @limit',
    getRouteDecision: `SELECT ${ROUTE_DECISION_COLUMNS} FROM route_decisions WHERE id = ?`,
    countRouteDecisions: 'SELECT count(*) AS count FROM route_decisions',
    upsertFeedback:
      'INSERT INTO route_feedback (decision_id, skill, created_at) VALUES (@decision_id, @skill, @created_at) ' +
      'ON CONFLICT (decision_id) DO UPDATE SET skill = excluded.skill, created_at = excluded.created_at',
    listFeedback: 'SELECT decision_id, skill FROM route_feedback ORDER BY created_at',
  };
}

const SQL = { sqlite: buildSql('sqlite'), postgres: buildSql('postgres') };

function createLedger(
  opened: SqlDatabase | Promise<SqlDatabase>,
  location: string,
  dialect: SqlDialect,
  storeText: boolean,
): Ledger {
  const sql = SQL[dialect];
  let closed = false;
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

  // Call attempts are written in batches, one transaction every few milliseconds: a transaction per
  // row costs about 60 µs of synchronous work on the event loop, on every call's path; batched rows
  // cost a fraction of that. Reads, close() and process exit flush first, so nothing recorded is ever
  // missing from a read or lost on a normal exit; a process killed outright loses at most the last
  // 20 milliseconds of attempts.
  const pendingAttempts: CallAttemptRecord[] = [];
  /** The write of the batch taken last, which the next flush (and every read) waits for. */
  let writing: Promise<void> = Promise.resolve();

  function flushAttempts(): Promise<void> {
    if (closed || pendingAttempts.length === 0) return writing;
    const rows = pendingAttempts.splice(0).map((record) => callAttemptRow(record, storeText));
    const previous = writing;
    writing = guarded('cannot record call attempts in', async (db) => {
      await previous.catch(() => undefined);
      if (db.dialect === 'postgres') {
        await db.run(sql.insertCallAttemptsBatch, attemptColumns(rows));
        return;
      }
      await db.transaction(async (client) => {
        for (const row of rows) await client.run(sql.insertCallAttempt, row);
      });
    }).then(afterCommittedWrite);
    return writing;
  }
  function flushAttemptsNow(): void {
    const sqlite = database === undefined ? undefined : sqliteBehind(database);
    if (closed || pendingAttempts.length === 0 || sqlite === undefined) return;
    const rows = pendingAttempts.splice(0).map((record) => callAttemptRow(record, storeText));
    try {
      sqlite.runBatchNow(sql.insertCallAttempt, rows);
    } catch {
      // The process is exiting; there is no one left to tell.
    }
  }
  const flushLater = () => {
    flushAttempts().catch(() => undefined);
  };
  const flushBeforeLeaving = () => flushAttempts();
  if (dialect === 'sqlite') flushOnExit.add(flushAttemptsNow);
  else flushBeforeExit.add(flushBeforeLeaving);

  // Every public call goes through here so callers only ever see STORE_ERROR (or a database error of
  // our own), never a raw driver error.
  async function guarded<T>(what: string, action: (db: SqlDatabase) => Promise<T>): Promise<T> {
    if (closed) {
      throw new SwitchboardError('STORE_ERROR', `${what} ${location}: the ledger is closed`, {
        hint: 'open the ledger again with openLedger()',
        details: { file: location },
      });
    }
    try {
      return await action(database ?? (await ready));
    } catch (error) {
      throw toStoreError(error, location, what);
    }
  }

  async function reserve(db: SqlDatabase, reservation: SpendReservation): Promise<ReservationOutcome> {
    return db.transaction(
      async (client) => {
        const now = reservation.createdAt;
        await client.run(sql.deleteExpiredReservations, [now]);
        const standings: CapStanding[] = [];
        for (const cap of reservation.caps) {
          const filter = { provider: cap.provider ?? null, ...tagParams(cap.tag) };
          const spent = await client.get<{ total: number | null }>(sql.spendSince, {
            since: cap.since,
            ...filter,
          });
          const held = await client.get<{ total: number | null }>(sql.reservedFor, { now, ...filter });
          standings.push({ spentUsd: spent?.total ?? 0, reservedUsd: held?.total ?? 0 });
        }
        const verdict = judgeReservation(
          reservation.caps,
          standings,
          reservation.amountUsd,
          reservation.shrinkToFit,
        );
        if (!verdict.reserved) {
          return {
            reserved: false,
            capIndex: verdict.capIndex,
            ...(reservation.amountUsd === undefined ? {} : { amountUsd: reservation.amountUsd }),
            standings,
          };
        }
        await client.run(sql.insertReservation, {
          id: reservation.id,
          created_at: now,
          expires_at: reservation.expiresAt,
          provider: reservation.provider,
          tags: JSON.stringify(reservation.tags),
          amount_usd: verdict.amountUsd,
        });
        return { reserved: true, amountUsd: verdict.amountUsd, standings };
      },
      // Every process reserving against this ledger takes turns: spending is read and held in one step.
      { lockKey: 'switchboard:budget' },
    );
  }

  return {
    path: location,
    dialect,
    storeText,

    async ready() {
      await guarded('cannot open the ledger', () => Promise.resolve());
    },

    async recordCallAttempt(record) {
      if (closed) await guarded('cannot record a call attempt in', () => Promise.resolve());
      // A copy, turned into a row (and its prompt hashed) at flush time, off the call's path; the
      // caller may reuse or change its own record object afterwards.
      pendingAttempts.push({ ...record, ...(record.tags === undefined ? {} : { tags: { ...record.tags } }) });
      if (pendingAttempts.length === 1) setTimeout(flushLater, ATTEMPT_FLUSH_MS).unref();
    },

    async recordFeedback(decisionId, skill) {
      await guarded('cannot record feedback in', async (db) => {
        if ((await db.get(sql.getRouteDecision, [decisionId])) === undefined) {
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

    async spendSince(since, filter = {}) {
      await flushAttempts();
      return guarded('cannot read spending from', async (db) => {
        const row = await db.get<{ total: number | null }>(sql.spendSince, {
          since,
          provider: filter.provider ?? null,
          ...tagParams(filter.tag),
        });
        return row?.total ?? 0;
      });
    },

    async reserveSpend(reservation) {
      // Our own recorded attempts must be in the database before the spending is read.
      await flushAttempts();
      return guarded('cannot reserve budget in', (db) => reserve(db, reservation));
    },

    async releaseReservation(id) {
      // The attempt goes in before its reservation goes out, so no reader sees neither.
      await flushAttempts();
      await guarded('cannot release a budget reservation in', (db) => db.run(sql.deleteReservation, [id]));
    },

    async reservedAt(now, filter = {}) {
      return guarded('cannot read budget reservations from', async (db) => {
        const row = await db.get<{ total: number | null }>(sql.reservedFor, {
          now,
          provider: filter.provider ?? null,
          ...tagParams(filter.tag),
        });
        return row?.total ?? 0;
      });
    },

    async setCooldown(record) {
      await guarded('cannot record a cooldown in', (db) =>
        db.run(sql.upsertCooldown, { ...record, updated_at: Date.now() }),
      );
    },

    async activeCooldowns(now) {
      return guarded('cannot read cooldowns from', (db) =>
        db.all<CooldownRecord>(sql.selectActiveCooldowns, [now]),
      );
    },

    async getCooldown(spec) {
      return guarded('cannot read cooldowns from', (db) =>
        db.get<CooldownRecord>(sql.selectCooldown, [spec]),
      );
    },

    async recentOutcomes(spec, since, limit) {
      await flushAttempts();
      return guarded('cannot read call attempts from', async (db) =>
        (
          await db.all<{ success: number; error_code: string | null }>(sql.selectRecentOutcomes, {
            spec,
            since,
            limit,
          })
        ).map((row) => (row.success === 1 ? undefined : (row.error_code ?? 'PROVIDER_ERROR'))),
      );
    },

    async callStats(options = {}) {
      await flushAttempts();
      const since = options.since === undefined ? Number.MIN_SAFE_INTEGER : toEpochMs(options.since);
      return guarded('cannot read call attempts from', async (db) =>
        summariseCalls(await db.all<AttemptRow>(sql.selectAttemptsSince, [since])),
      );
    },

    async recordRouteDecision(decision, context) {
      const row = toRow(decision, context, storeText);
      await guarded('cannot record a route decision in', (db) => db.run(sql.insertRouteDecision, { ...row }));
    },

    async listRouteDecisions(options = {}) {
      const limit = options.limit ?? DEFAULT_LIST_LIMIT;
      if (!Number.isSafeInteger(limit) || limit < 1) {
        throw new SwitchboardError('INVALID_INPUT', `limit must be a positive integer, got ${limit}`, {
          hint: 'pass a limit of 1 or more',
        });
      }
      const since = options.since === undefined ? Number.MIN_SAFE_INTEGER : toEpochMs(options.since);
      return guarded('cannot read route decisions from', async (db) =>
        (await db.all<RouteDecisionRow>(sql.listRouteDecisions, { since, limit })).map(fromRow),
      );
    },

    async eachRouteDecision(options, visit) {
      const since = options.since === undefined ? Number.MIN_SAFE_INTEGER : toEpochMs(options.since);
      return guarded('cannot read route decisions from', async (db) => {
        let count = 0;
        let after = { after_time: Number.MIN_SAFE_INTEGER, after_row: Number.MIN_SAFE_INTEGER };
        for (;;) {
          const page = await db.all<RouteDecisionRow & { row_number: number }>(sql.pageRouteDecisions, {
            since,
            ...after,
            limit: PAGE_SIZE,
          });
          for (const row of page) {
            visit(fromRow(row));
            count++;
          }
          const last = page.at(-1);
          if (last === undefined || page.length < PAGE_SIZE) return count;
          after = { after_time: last.created_at, after_row: last.row_number };
        }
      });
    },

    async getRouteDecision(id) {
      const row = await guarded('cannot read a route decision from', (db) =>
        db.get<RouteDecisionRow>(sql.getRouteDecision, [id]),
      );
      return row === undefined ? undefined : fromRow(row);
    },

    async getCachedDecision(key, notBefore) {
      return guarded('cannot read the decision cache in', (db) => readCachedDecision(db, key, notBefore));
    },

    async cacheDecision(key, decision, options) {
      await guarded('cannot write the decision cache in', (db) =>
        writeCachedDecision(db, key, decision, options),
      );
    },

    async countRouteDecisions() {
      return guarded(
        'cannot count route decisions in',
        async (db) => (await db.get<{ count: number }>(sql.countRouteDecisions))?.count ?? 0,
      );
    },

    async flush() {
      await flushAttempts();
    },

    async close() {
      if (closed) return;
      const flushed = flushAttempts();
      flushOnExit.delete(flushAttemptsNow);
      flushBeforeExit.delete(flushBeforeLeaving);
      closed = true;
      try {
        await flushed;
      } finally {
        try {
          await (database ?? (await ready.catch(() => undefined)))?.close();
        } catch (error) {
          // eslint-disable-next-line no-unsafe-finally
          throw toStoreError(error, location, 'cannot close the ledger');
        }
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
