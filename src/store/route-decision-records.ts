import { hash } from 'node:crypto';
import { SwitchboardError } from '../core/errors.js';
import type { RouteCandidate, RouteDecision, RouteMethod } from '../core/route-types.js';
import { redactSecrets } from '../core/secrets.js';
import type { SqlClient } from './sql/sql-database.js';
import type { SyncSqlClient } from './sql/sqlite-database.js';

/**
 * Route decisions as rows, compactly (schema 13): a serve answering thousands of requests a second keeps
 * every decision, so a row holds what the reports need and nothing twice. Names that repeat from row to
 * row (skills, methods, modes, skill-set hashes, a rule's reasoning) are ids into `route_names`; the
 * request hash is 32 bytes, not 64 hex characters; candidates are `[nameId, score]` pairs with scores to
 * 4 places; timings to the microsecond (the duration exact: metrics rebuilt from the
 * ledger sum it); no tags is NULL. About 250 bytes a decision with its indexes, where
 * the first schema took 830. Rows from before schema 13 (hex hashes, candidates and timings as the
 * decision's own JSON) read back the same.
 */

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

/** A decision waiting for its group commit: everything it needs, taken when it was recorded. */
export interface QueuedDecision {
  id: string;
  createdAt: number;
  requestHash: Buffer;
  requestText: string | null;
  skill: string;
  confidence: number;
  method: string;
  reasoning: string;
  candidates: RouteCandidate[];
  durationMs: number;
  costUsd: number;
  timings: Record<string, number>;
  mode: string;
  skillsHash: string | null;
  tags: string | null;
}

/** A row as stored. */
interface DecisionRow {
  id: string;
  created_at: number;
  request_hash: Buffer | string;
  request_text: string | null;
  skill: number | string;
  confidence: number;
  method: number | string;
  reasoning: string | null;
  reasoning_name: number | null;
  candidates: string;
  duration_ms: number;
  cost_usd: number;
  timings: string;
  mode: number | string;
  skills_hash: number | string | null;
  tags: string | null;
}

/** The route_decisions columns with their PostgreSQL types, for a batch insert of arrays. */
export const DECISION_COLUMNS = [
  ['id', 'TEXT'],
  ['created_at', 'BIGINT'],
  ['request_hash', 'BYTEA'],
  ['request_text', 'TEXT'],
  ['skill', 'BIGINT'],
  ['confidence', 'DOUBLE PRECISION'],
  ['method', 'BIGINT'],
  ['reasoning', 'TEXT'],
  ['reasoning_name', 'BIGINT'],
  ['candidates', 'TEXT'],
  ['duration_ms', 'DOUBLE PRECISION'],
  ['cost_usd', 'DOUBLE PRECISION'],
  ['timings', 'TEXT'],
  ['mode', 'BIGINT'],
  ['skills_hash', 'BIGINT'],
  ['tags', 'TEXT'],
] as const;

const COLUMNS = DECISION_COLUMNS.map(([column]) => column).join(', ');

export const DECISION_SQL = {
  insertDecision:
    `INSERT INTO route_decisions (${COLUMNS}) ` +
    `VALUES (${DECISION_COLUMNS.map(([column]) => `@${column}`).join(', ')}) ON CONFLICT (id) DO NOTHING`,
  listDecisions:
    `SELECT ${COLUMNS} FROM route_decisions WHERE created_at >= @since ` +
    'ORDER BY created_at DESC, rowid DESC LIMIT @limit',
  // Keyset pages in (created_at, rowid) order: a large ledger is never held in memory at once.
  pageDecisions:
    `SELECT rowid AS row_number, ${COLUMNS} FROM route_decisions ` +
    'WHERE created_at >= @since AND (created_at > @after_time OR (created_at = @after_time AND rowid > @after_row)) ' +
    'ORDER BY created_at, rowid LIMIT @limit',
  getDecision: `SELECT ${COLUMNS} FROM route_decisions WHERE id = ?`,
  decisionExists: 'SELECT 1 AS found FROM route_decisions WHERE id = ?',
  countDecisions: 'SELECT count(*) AS count FROM route_decisions',
  countDecisionsSince: 'SELECT count(*) AS count FROM route_decisions WHERE created_at >= ?',
  pruneDecisions: 'DELETE FROM route_decisions WHERE created_at < ?',
  // Feedback is recorded only on a decision that exists: what is left without one was pruned with it.
  pruneFeedback: 'DELETE FROM route_feedback WHERE decision_id NOT IN (SELECT id FROM route_decisions)',
  listNames: 'SELECT id, name FROM route_names',
  addName: 'INSERT INTO route_names (name) VALUES (?) ON CONFLICT (name) DO NOTHING',
  nameId: 'SELECT id FROM route_names WHERE name = ?',
};

/** Takes what a decision row needs at once: the caller may change its objects after recording. */
export function queueDecision(
  decision: RouteDecision,
  context: RouteDecisionContext,
  storeText: boolean,
): QueuedDecision {
  const createdAt = context.createdAt ?? new Date();
  if (!Number.isFinite(createdAt.getTime())) {
    throw new SwitchboardError('INVALID_INPUT', `createdAt is an invalid date for decision ${decision.id}`, {
      hint: 'pass a valid Date, or leave createdAt out to use the current time',
    });
  }
  const tags = context.tags === undefined || Object.keys(context.tags).length === 0 ? null : context.tags;
  return {
    id: decision.id,
    createdAt: createdAt.getTime(),
    requestHash: hash('sha256', context.normalizedText ?? context.requestText, 'buffer'),
    requestText: storeText ? redactSecrets(context.requestText) : null,
    skill: decision.skill,
    confidence: decision.confidence,
    method: decision.method,
    // An LLM tier's failure is quoted here; the ledger never stores a secret.
    reasoning: redactSecrets(decision.reasoning),
    candidates: decision.candidates.map(({ skill, score }) => ({ skill, score })),
    durationMs: decision.durationMs,
    costUsd: decision.costUsd,
    timings: { ...decision.timings },
    mode: context.mode,
    skillsHash: context.skillsHash ?? null,
    tags: tags === null ? null : JSON.stringify(tags),
  };
}

/**
 * A reasoning stored once in `route_names` and referred to by id: a rule's (`matched /…/ (origin)`),
 * the default's and a cache hit on a rule repeat from row to row and quote no request. A model's or an
 * LLM's reasoning carries scores or free text: it stays in its row, so that `db prune` removes it with
 * the decision.
 */
function repeatsAcrossRows(queued: QueuedDecision): boolean {
  if (queued.reasoning.length > 300) return false;
  return (
    queued.method === 'rules' ||
    queued.method === 'default' ||
    (queued.method === 'cache' && queued.reasoning.startsWith('cached (rules): '))
  );
}

const round = (value: number, places: number) => {
  const scale = 10 ** places;
  return Math.round(value * scale) / scale;
};

/**
 * Names by id and ids by name, shared by every statement of one ledger. A name another process added
 * since the last look is read from the table on demand.
 */
export class RouteNames {
  private readonly byName = new Map<string, number>();
  private readonly byId = new Map<number, string>();

  /** Gives every name an id, adding the new ones to the table. */
  async ensure(client: SqlClient, names: Iterable<string>): Promise<void> {
    for (const name of names) {
      if (this.byName.has(name)) continue;
      await client.run(DECISION_SQL.addName, [name]);
      const row = await client.get<{ id: number | string }>(DECISION_SQL.nameId, [name]);
      this.remember(Number(row?.id), name);
    }
  }

  /** `ensure` synchronously, inside a SQLite batch. */
  ensureNow(client: SyncSqlClient, names: Iterable<string>): void {
    for (const name of names) {
      if (this.byName.has(name)) continue;
      client.run(DECISION_SQL.addName, [name]);
      this.remember(Number(client.get<{ id: number }>(DECISION_SQL.nameId, [name])?.id), name);
    }
  }

  /** The id of a name `ensure` has seen. */
  readonly idOf = (name: string): number => {
    const id = this.byName.get(name);
    if (id === undefined) throw new Error(`route name ${name} has no id yet`);
    return id;
  };

  /** Makes sure every id of `rows` has its name, reading the table once if one is missing. */
  async load(client: SqlClient, rows: readonly DecisionRow[]): Promise<void> {
    const missing = rows.some(
      (row) =>
        nameIds(row).some((id) => !this.byId.has(id)) ||
        candidateIds(row.candidates).some((id) => !this.byId.has(id)),
    );
    if (!missing) return;
    for (const { id, name } of await client.all<{ id: number | string; name: string }>(
      DECISION_SQL.listNames,
    )) {
      this.remember(Number(id), name);
    }
  }

  name(id: number | string | null): string {
    if (typeof id === 'string' && !/^\d+$/.test(id)) return id;
    return this.byId.get(Number(id)) ?? `#${String(id)}`;
  }

  private remember(id: number, name: string): void {
    this.byName.set(name, id);
    this.byId.set(id, name);
  }
}

function nameIds(row: DecisionRow): number[] {
  return [row.skill, row.method, row.mode, row.skills_hash, row.reasoning_name]
    .filter(
      (value): value is number =>
        typeof value === 'number' || (typeof value === 'string' && /^\d+$/.test(value)),
    )
    .map(Number);
}

function candidateIds(candidates: string): number[] {
  if (!candidates.startsWith('[[')) return [];
  return (JSON.parse(candidates) as [number, number][]).map(([id]) => id);
}

/** The row of a queued decision; `id` resolves each name to its id. */
export function decisionRow(queued: QueuedDecision, id: (name: string) => number): Record<string, unknown> {
  const interned = repeatsAcrossRows(queued);
  return {
    id: queued.id,
    created_at: queued.createdAt,
    request_hash: queued.requestHash,
    request_text: queued.requestText,
    skill: id(queued.skill),
    confidence: queued.confidence,
    method: id(queued.method),
    reasoning: interned ? null : queued.reasoning,
    reasoning_name: interned ? id(queued.reasoning) : null,
    candidates: JSON.stringify(queued.candidates.map(({ skill, score }) => [id(skill), round(score, 4)])),
    duration_ms: queued.durationMs,
    cost_usd: queued.costUsd,
    timings: JSON.stringify(
      Object.fromEntries(Object.entries(queued.timings).map(([tier, ms]) => [tier, round(ms, 3)])),
    ),
    mode: id(queued.mode),
    skills_hash: queued.skillsHash === null ? null : id(queued.skillsHash),
    tags: queued.tags,
  };
}

/** The names a queued decision needs ids for. */
export function namesOf(queued: QueuedDecision): string[] {
  const names = [queued.skill, queued.method, queued.mode, ...queued.candidates.map((c) => c.skill)];
  if (queued.skillsHash !== null) names.push(queued.skillsHash);
  if (repeatsAcrossRows(queued)) names.push(queued.reasoning);
  return names;
}

/** A stored row as the decision it was. */
export function fromDecisionRow(row: DecisionRow, names: RouteNames): StoredRouteDecision {
  const candidates: RouteCandidate[] = row.candidates.startsWith('[[')
    ? (JSON.parse(row.candidates) as [number, number][]).map(([id, score]) => ({
        skill: names.name(id),
        score,
      }))
    : (JSON.parse(row.candidates) as RouteCandidate[]);
  const stored: StoredRouteDecision = {
    id: row.id,
    createdAt: new Date(Number(row.created_at)).toISOString(),
    requestHash: typeof row.request_hash === 'string' ? row.request_hash : row.request_hash.toString('hex'),
    skill: names.name(row.skill),
    confidence: row.confidence,
    method: names.name(row.method) as RouteMethod,
    reasoning: row.reasoning ?? names.name(row.reasoning_name),
    candidates,
    durationMs: row.duration_ms,
    costUsd: row.cost_usd,
    timings: JSON.parse(row.timings) as Record<string, number>,
    mode: names.name(row.mode),
    tags: row.tags === null ? {} : (JSON.parse(row.tags) as Record<string, string>),
  };
  if (row.request_text !== null) stored.requestText = row.request_text;
  if (row.skills_hash !== null) stored.skillsHash = names.name(row.skills_hash);
  return stored;
}

export type { DecisionRow };
