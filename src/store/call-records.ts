import { columnArrays, unnestInsert } from './sql/unnest-batch.js';
import { hash } from 'node:crypto';
import type { TokenUsage } from '../core/call-types.js';
import { percentile } from '../core/percentile.js';
import { redactSecrets } from '../core/secrets.js';
import type { SqlDialect } from './sql/sql-database.js';

/** One call attempt as the ledger keeps it. */
export interface CallAttemptRecord {
  id: string;
  callId: string;
  attempt: number;
  createdAt: number;
  provider: string;
  spec: string;
  modelRequested: string;
  modelUsed?: string;
  success: boolean;
  errorCode?: string;
  durationMs: number;
  usage?: TokenUsage;
  costUsd: number | null;
  sessionId?: string;
  /** sha256 of the prompt; computed from `promptText` when absent (off the call's path, at write time). */
  promptHash?: string;
  /** Stored only when the ledger stores text. */
  promptText?: string;
  tags?: Record<string, string>;
  /** The circuit breaker's key (the spec plus its endpoint) when it differs from `spec`. */
  cooldownKey?: string;
}

export interface ProviderModelStats {
  provider: string;
  model: string;
  attempts: number;
  successes: number;
  successRate: number;
  p50Ms: number;
  p95Ms: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** Sum of known costs; attempts with an unknown cost are counted in `unpricedAttempts`. */
  costUsd: number;
  unpricedAttempts: number;
}

export interface CallStats {
  calls: number;
  attempts: number;
  /** Attempts beyond the first of each call: retries, re-asks and fallbacks. */
  retries: number;
  /** Share of calls that tried more than one provider spec. */
  fallbackRate: number;
  successfulCalls: number;
  successRate: number;
  p50Ms: number;
  p95Ms: number;
  costUsd: number;
  byProviderModel: ProviderModelStats[];
  errorCodes: Record<string, number>;
  /** Agent attempts (Claude Code runs of `agent run` and workflow git steps): counted apart from calls. */
  agents: AgentSpendStats;
  /** Gateway requests by the virtual key (or the server token) they came with, most spent first. */
  byKey: KeyStats[];
}

/** What one gateway key spent: its requests (calls), attempts, tokens and known cost. */
export interface KeyStats {
  /** The key's id (`switchboard.key` tag); `server-token` for the server's own token. */
  key: string;
  name: string;
  calls: number;
  attempts: number;
  successfulCalls: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  costUsd: number;
}

/** The tag every gateway attempt carries: the key it came with. */
export const KEY_TAG = 'switchboard.key';
/** The key's name beside its id, for people reading the ledger. */
export const KEY_NAME_TAG = 'switchboard.key_name';

/** What agent attempts spent: rows of spec `agent:<model>`, one per attempt, under provider `claude`. */
export interface AgentSpendStats {
  /** Agent runs (or workflow steps) with an attempt in range. */
  runs: number;
  attempts: number;
  costUsd: number;
}

/** The spec prefix of an agent attempt's row (`agents/agent-spend.ts`). */
export const AGENT_SPEC_PREFIX = 'agent:';

export interface AttemptRow {
  call_id: string;
  spec: string;
  provider: string;
  model_requested: string;
  success: number;
  error_code: string | null;
  duration_ms: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  cost_usd: number | null;
  /** JSON object of the attempt's tags. */
  tags?: string | null;
}

/** A provider's circuit breaker as the ledger keeps it, shared by every process. */
export interface CooldownRecord {
  spec: string;
  /** Epoch milliseconds when the open breaker half-opens; 0 once it closed again. */
  until: number;
  /** Failed requests that opened it (1 when a probe failed and it opened again). */
  failures: number;
  /** The last error code. */
  reason: string;
  /** When the breaker changed state (opened, closed), on the clock of the process that changed it. */
  updatedAt?: number;
}

/** The columns of a call attempt with their PostgreSQL types, for the batched insert. */
const ATTEMPT_COLUMNS: readonly (readonly [string, string])[] = [
  ['id', 'TEXT'],
  ['call_id', 'TEXT'],
  ['attempt', 'BIGINT'],
  ['created_at', 'BIGINT'],
  ['provider', 'TEXT'],
  ['spec', 'TEXT'],
  ['model_requested', 'TEXT'],
  ['model_used', 'TEXT'],
  ['success', 'BIGINT'],
  ['error_code', 'TEXT'],
  ['duration_ms', 'DOUBLE PRECISION'],
  ['input_tokens', 'BIGINT'],
  ['output_tokens', 'BIGINT'],
  ['cache_read_tokens', 'BIGINT'],
  ['cache_write_tokens', 'BIGINT'],
  ['cost_usd', 'DOUBLE PRECISION'],
  ['session_id', 'TEXT'],
  ['prompt_hash', 'TEXT'],
  ['prompt_text', 'TEXT'],
  ['tags', 'TEXT'],
  ['cooldown_key', 'TEXT'],
];

/** Rows as `insertCallAttemptsBatch` takes them: one array of values per column. */
export function attemptColumns(rows: readonly Record<string, unknown>[]): Record<string, unknown[]> {
  return columnArrays(ATTEMPT_COLUMNS, rows);
}

/** The call-attempt and cooldown statements, in the SQL both backends share but for the tag filter. */
export function callSql(dialect: SqlDialect) {
  return {
    insertCallAttempt:
      'INSERT INTO call_attempts (id, call_id, attempt, created_at, provider, spec, model_requested, model_used, success, ' +
      'error_code, duration_ms, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, session_id, ' +
      'prompt_hash, prompt_text, tags, cooldown_key) VALUES (@id, @call_id, @attempt, @created_at, @provider, @spec, ' +
      '@model_requested, @model_used, @success, @error_code, @duration_ms, @input_tokens, @output_tokens, ' +
      '@cache_read_tokens, @cache_write_tokens, @cost_usd, @session_id, @prompt_hash, @prompt_text, @tags, @cooldown_key) ' +
      // A settle written again after a failure may find its row there already.
      'ON CONFLICT (id) DO NOTHING',
    // PostgreSQL takes a whole batch as one statement, a column per array (one round trip, not one per row).
    // A batch written again after a later statement of its write failed finds its attempts there already.
    insertCallAttemptsBatch: unnestInsert('call_attempts', ATTEMPT_COLUMNS, 'ON CONFLICT (id) DO NOTHING'),
    selectAttemptsSince:
      'SELECT call_id, spec, provider, model_requested, success, error_code, duration_ms, input_tokens, output_tokens, ' +
      'cache_read_tokens, cache_write_tokens, cost_usd, tags FROM call_attempts WHERE created_at >= ? ORDER BY created_at, rowid',
    spendSince:
      'SELECT sum(cost_usd) AS total FROM call_attempts WHERE created_at >= @since ' +
      `AND (CAST(@provider AS TEXT) IS NULL OR provider = @provider) AND ${tagFilter(dialect)}`,
    upsertCooldown:
      'INSERT INTO provider_cooldowns (spec, until, failures, reason, updated_at) VALUES (@spec, @until, @failures, @reason, @updated_at) ' +
      'ON CONFLICT (spec) DO UPDATE SET until = excluded.until, failures = excluded.failures, reason = excluded.reason, updated_at = excluded.updated_at',
    selectCooldown: 'SELECT spec, until, failures, reason, updated_at FROM provider_cooldowns WHERE spec = ?',
    selectActiveCooldowns:
      'SELECT spec, until, failures, reason, updated_at FROM provider_cooldowns WHERE until > ? ORDER BY until',
    // One row per request and outcome: retries of one request count once.
    selectRecentRequests:
      'SELECT call_id, error_code, max(success) AS success FROM call_attempts ' +
      'WHERE created_at >= @since AND COALESCE(cooldown_key, spec) = @spec ' +
      'GROUP BY call_id, error_code ORDER BY max(created_at) DESC, call_id LIMIT @limit',
  };
}

/**
 * A `key=value` tag filter over a JSON `tags` column, as the parameters `@tag_key` and `@tag_value`
 * (both null: no filter). JSON access is the one thing the two dialects spell differently.
 */
export function tagFilter(dialect: SqlDialect): string {
  return dialect === 'postgres'
    ? '(CAST(@tag_key AS TEXT) IS NULL OR (CAST(tags AS JSONB) ->> CAST(@tag_key AS TEXT)) = CAST(@tag_value AS TEXT))'
    : // The key quoted in the path: `$.switchboard.key` would look for `key` inside `switchboard`.
      "(@tag_key IS NULL OR json_extract(tags, '$.\"' || @tag_key || '\"') = @tag_value)";
}

/** The parameters of `tagFilter` for a `key=value` filter (or none). */
export function tagParams(tag: string | undefined): { tag_key: string | null; tag_value: string | null } {
  if (tag === undefined) return { tag_key: null, tag_value: null };
  const split = tag.indexOf('=');
  // Without `=`, as before: an empty key, which matches nothing.
  return split === -1
    ? { tag_key: '', tag_value: tag }
    : { tag_key: tag.slice(0, split), tag_value: tag.slice(split + 1) };
}

export function callAttemptRow(record: CallAttemptRecord, storeText: boolean): Record<string, unknown> {
  return {
    id: record.id,
    call_id: record.callId,
    attempt: record.attempt,
    created_at: record.createdAt,
    provider: record.provider,
    spec: record.spec,
    model_requested: record.modelRequested,
    model_used: record.modelUsed ?? null,
    success: record.success ? 1 : 0,
    error_code: record.errorCode ?? null,
    duration_ms: record.durationMs,
    input_tokens: record.usage?.inputTokens ?? 0,
    output_tokens: record.usage?.outputTokens ?? 0,
    cache_read_tokens: record.usage?.cacheReadTokens ?? 0,
    cache_write_tokens: record.usage?.cacheWriteTokens ?? 0,
    cost_usd: record.costUsd,
    session_id: record.sessionId ?? null,
    prompt_hash: record.promptHash ?? hashText(record.promptText ?? ''),
    prompt_text: storeText && record.promptText !== undefined ? redactSecrets(record.promptText) : null,
    tags: JSON.stringify(record.tags ?? {}),
    cooldown_key: record.cooldownKey ?? null,
  };
}

/** Aggregates attempts: a call succeeded when any of its attempts did. Agent attempts are summed apart. */
export function summariseCalls(rows: readonly AttemptRow[]): CallStats {
  const agentRows = rows.filter((row) => row.spec.startsWith(AGENT_SPEC_PREFIX));
  const agents: AgentSpendStats = {
    runs: new Set(agentRows.map((row) => row.call_id)).size,
    attempts: agentRows.length,
    costUsd: agentRows.reduce((total, row) => total + (row.cost_usd ?? 0), 0),
  };
  const callRows = rows.filter((row) => !row.spec.startsWith(AGENT_SPEC_PREFIX));
  return { ...summariseCallRows(callRows), agents, byKey: summariseKeys(callRows) };
}

/** Gateway attempts grouped by the key tag they carry (rows without one are not gateway requests). */
function summariseKeys(rows: readonly AttemptRow[]): KeyStats[] {
  const byKey = new Map<string, KeyStats & { callIds: Set<string>; succeeded: Set<string> }>();
  for (const row of rows) {
    if (row.tags === undefined || row.tags === null || !row.tags.includes(KEY_TAG)) continue;
    let tags: Record<string, unknown>;
    try {
      tags = JSON.parse(row.tags) as Record<string, unknown>;
    } catch {
      continue;
    }
    const key = tags[KEY_TAG];
    if (typeof key !== 'string') continue;
    let entry = byKey.get(key);
    if (entry === undefined) {
      const name = tags[KEY_NAME_TAG];
      entry = {
        key,
        name: typeof name === 'string' ? name : key,
        calls: 0,
        attempts: 0,
        successfulCalls: 0,
        inputTokens: 0,
        outputTokens: 0,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        costUsd: 0,
        callIds: new Set(),
        succeeded: new Set(),
      };
      byKey.set(key, entry);
    }
    entry.attempts += 1;
    entry.callIds.add(row.call_id);
    if (row.success === 1) entry.succeeded.add(row.call_id);
    entry.inputTokens += row.input_tokens;
    entry.outputTokens += row.output_tokens;
    entry.cacheReadTokens += row.cache_read_tokens;
    entry.cacheWriteTokens += row.cache_write_tokens;
    entry.costUsd += row.cost_usd ?? 0;
  }
  return [...byKey.values()]
    .map(({ callIds, succeeded, ...entry }) => ({
      ...entry,
      calls: callIds.size,
      successfulCalls: succeeded.size,
    }))
    .sort((a, b) => b.costUsd - a.costUsd || b.calls - a.calls);
}

function summariseCallRows(rows: readonly AttemptRow[]): Omit<CallStats, 'agents' | 'byKey'> {
  const callOutcome = new Map<string, { success: boolean; durationMs: number; specs: Set<string> }>();
  const groups = new Map<string, AttemptRow[]>();
  const errorCodes: Record<string, number> = {};
  for (const row of rows) {
    const outcome = callOutcome.get(row.call_id) ?? {
      success: false,
      durationMs: 0,
      specs: new Set<string>(),
    };
    outcome.success ||= row.success === 1;
    outcome.durationMs += row.duration_ms;
    outcome.specs.add(row.spec);
    callOutcome.set(row.call_id, outcome);
    const key = `${row.provider}\u0000${row.model_requested}`;
    groups.set(key, [...(groups.get(key) ?? []), row]);
    if (row.error_code !== null) errorCodes[row.error_code] = (errorCodes[row.error_code] ?? 0) + 1;
  }
  const callDurations = [...callOutcome.values()].map((call) => call.durationMs).sort((a, b) => a - b);
  const successfulCalls = [...callOutcome.values()].filter((call) => call.success).length;
  const byProviderModel = [...groups.values()].map((group): ProviderModelStats => {
    const durations = group.map((row) => row.duration_ms).sort((a, b) => a - b);
    const successes = group.filter((row) => row.success === 1).length;
    const sum = (pick: (row: AttemptRow) => number) => group.reduce((total, row) => total + pick(row), 0);
    const first = group[0] as AttemptRow;
    return {
      provider: first.provider,
      model: first.model_requested,
      attempts: group.length,
      successes,
      successRate: successes / group.length,
      p50Ms: percentile(durations, 50),
      p95Ms: percentile(durations, 95),
      inputTokens: sum((row) => row.input_tokens),
      outputTokens: sum((row) => row.output_tokens),
      cacheReadTokens: sum((row) => row.cache_read_tokens),
      cacheWriteTokens: sum((row) => row.cache_write_tokens),
      costUsd: sum((row) => row.cost_usd ?? 0),
      unpricedAttempts: group.filter((row) => row.cost_usd === null && row.success === 1).length,
    };
  });
  byProviderModel.sort((a, b) => b.attempts - a.attempts);
  const fallbacks = [...callOutcome.values()].filter((call) => call.specs.size > 1).length;
  return {
    calls: callOutcome.size,
    attempts: rows.length,
    retries: rows.length - callOutcome.size,
    fallbackRate: callOutcome.size === 0 ? 0 : fallbacks / callOutcome.size,
    successfulCalls,
    successRate: callOutcome.size === 0 ? 0 : successfulCalls / callOutcome.size,
    p50Ms: callDurations.length === 0 ? 0 : percentile(callDurations, 50),
    p95Ms: callDurations.length === 0 ? 0 : percentile(callDurations, 95),
    costUsd: byProviderModel.reduce((total, group) => total + group.costUsd, 0),
    byProviderModel,
    errorCodes,
  };
}

/** sha256 of the UTF-8 text, as lowercase hex. */
export function hashText(text: string): string {
  // One-shot `hash`: a third of createHash's cost, once per recorded attempt.
  return hash('sha256', text, 'hex');
}
