import { parseJsonOr } from '../../core/safe-json.js';
import { startOfDay, startOfMonth } from '../../invoke/budget.js';
import type { AttemptRow as StatsAttemptRow } from '../../store/call-records.js';
import type { SqlClient } from '../../store/sql/sql-database.js';
import { runFromRow, type RunTableRow } from '../../store/workflow-records.js';
import { runOwner } from '../../workflows/run-lock.js';
import type {
  CallDetail,
  CostReport,
  RoutingReport,
  RunKind,
  RunList,
  RunSummary,
  SpendRow,
} from './api-types.js';

// The dashboard's reads of the ledger: one SQL text for SQLite and PostgreSQL each, every list bounded
// and paged on the server, every filter a bound parameter.

const DAY_MS = 86_400_000;
/** Longest a call may run: its attempts are found within this much of its first. */
const CALL_SPAN_MS = 60 * 60_000;

/** The runs list's filters, checked (see `parseRunQuery`). */
export interface RunFilter {
  kind?: RunKind;
  status?: string;
  name?: string;
  tag?: { key: string; value: string };
  host?: string;
  since?: number;
  until?: number;
  /** Rows started before this (ms), or at it with a smaller id. */
  before?: { at: number; id: string };
  limit: number;
}

/** `a%b_c` → `a\%b\_c`: a LIKE pattern that matches the text itself. */
function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, (char) => `\\${char}`);
}

/** A tag as `call()` stores it inside the JSON of `tags`, as a LIKE pattern. */
function tagPattern(key: string, value: string): string {
  return `%${likeLiteral(JSON.stringify(key))}:${likeLiteral(JSON.stringify(value))}%`;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** `created_at < at OR (created_at = at AND id < id)`: keyset paging, newest first. */
function pageBefore(
  filter: RunFilter,
  atColumn: string,
  idColumn: string,
  where: string[],
  params: unknown[],
) {
  if (filter.since !== undefined) {
    where.push(`${atColumn} >= ?`);
    params.push(filter.since);
  }
  if (filter.until !== undefined) {
    where.push(`${atColumn} < ?`);
    params.push(filter.until);
  }
  if (filter.before !== undefined) {
    where.push(`(${atColumn} < ? OR (${atColumn} = ? AND ${idColumn} < ?))`);
    params.push(filter.before.at, filter.before.at, filter.before.id);
  }
}

export function workflowSummary(row: RunTableRow, now = Date.now()): RunSummary {
  const run = runFromRow(row);
  // A dead owner (kill -9) leaves `running` behind: the run is interrupted until someone resumes it.
  const interrupted = run.status === 'running' && runOwner(run) === undefined;
  const summary: RunSummary = {
    kind: 'workflow',
    id: run.id,
    name: run.workflow,
    status: interrupted ? 'interrupted' : run.status,
    startedAt: iso(run.createdAt),
    durationMs: (run.endedAt ?? (interrupted ? run.updatedAt : now)) - run.createdAt,
    costUsd: run.costUsd,
  };
  if (run.endedAt !== undefined) summary.endedAt = iso(run.endedAt);
  if (run.status === 'waiting' && run.currentStep !== undefined) summary.waitingGate = run.currentStep;
  if (row.owner_host !== null) summary.host = row.owner_host;
  if (run.parentRunId !== undefined) {
    summary.parentRunId = run.parentRunId;
    summary.parentKind = 'workflow';
  }
  if (run.currentStep !== undefined && run.currentStep !== '$end') summary.step = run.currentStep;
  return summary;
}

interface AgentRow {
  id: string;
  title: string;
  phase: string;
  status: string;
  cost_usd: number;
  runner_host: string | null;
  created_at: number;
  updated_at: number;
  ended_at: number | null;
}

export function agentSummary(row: AgentRow, now = Date.now()): RunSummary {
  const summary: RunSummary = {
    kind: 'agent',
    id: row.id,
    name: row.title,
    status: row.status,
    startedAt: iso(row.created_at),
    durationMs: (row.ended_at ?? (row.status === 'running' ? now : row.updated_at)) - row.created_at,
    costUsd: row.cost_usd,
    step: row.phase,
  };
  if (row.ended_at !== null) summary.endedAt = iso(row.ended_at);
  if (row.runner_host !== null) summary.host = row.runner_host;
  return summary;
}

/** A call attempt's row with what the dashboard reads beyond what the stats read. */
interface AttemptRow extends StatsAttemptRow {
  attempt: number;
  created_at: number;
  model_used: string | null;
  tags: string;
}

function tagsOf(text: string): Record<string, string> {
  const value = parseJsonOr(text, {});
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
  return Object.fromEntries(
    Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}

/** A call from its attempts, oldest first. */
function callSummary(attempts: readonly AttemptRow[]): RunSummary {
  const first = attempts[0] as AttemptRow;
  const last = attempts.at(-1) as AttemptRow;
  const tags = tagsOf(first.tags);
  const end = Math.max(...attempts.map((attempt) => attempt.created_at + attempt.duration_ms));
  const summary: RunSummary = {
    kind: 'call',
    id: first.call_id,
    name: last.spec,
    status: last.success === 1 ? 'succeeded' : 'failed',
    startedAt: iso(first.created_at),
    endedAt: iso(end),
    durationMs: end - first.created_at,
    tags,
  };
  // A call none of whose attempts had a price (a model the price table lacks) has no cost, not $0.
  const priced = attempts.filter((attempt) => attempt.cost_usd !== null);
  if (priced.length > 0) summary.costUsd = priced.reduce((sum, attempt) => sum + (attempt.cost_usd ?? 0), 0);
  if (tags.workflow_run !== undefined) {
    summary.parentRunId = tags.workflow_run;
    summary.parentKind = 'workflow';
  } else if (tags.agent_run !== undefined) {
    summary.parentRunId = tags.agent_run;
    summary.parentKind = 'agent';
  }
  return summary;
}

const AGENT_COLUMNS = 'id, title, phase, status, cost_usd, runner_host, created_at, updated_at, ended_at';

/** A route decision's skill (`s.name`) and method (`m.name`): the rows hold ids into route_names. */
const NAMED = 'JOIN route_names s ON s.id = d.skill JOIN route_names m ON m.id = d.method';

export class DashboardQueries {
  private readonly db: SqlClient;

  constructor(db: SqlClient) {
    this.db = db;
  }

  /** Newest first across the kinds asked for; `next` continues after the last row. */
  async listRuns(filter: RunFilter): Promise<RunList> {
    const kinds: RunKind[] = filter.kind === undefined ? ['workflow', 'agent', 'call'] : [filter.kind];
    const tagged = filter.tag === undefined ? undefined : await this.runsWithTag(filter);
    const pages = await Promise.all(
      kinds.map((kind) => {
        if (kind === 'workflow') return this.workflowPage(filter, tagged);
        if (kind === 'agent') return this.agentPage(filter, tagged);
        return this.callPage(filter);
      }),
    );
    const rows = pages
      .flat()
      .sort((a, b) => b.startedAt.localeCompare(a.startedAt) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    const runs = rows.slice(0, filter.limit);
    const last = runs.at(-1);
    const more = rows.length > filter.limit || pages.some((page) => page.length >= filter.limit);
    const list: RunList = { runs };
    if (more && last !== undefined) list.next = `${Date.parse(last.startedAt)}.${last.id}`;
    return list;
  }

  private async workflowPage(filter: RunFilter, tagged: Set<string> | undefined): Promise<RunSummary[]> {
    if (tagged !== undefined && tagged.size === 0) return [];
    const where: string[] = [];
    const params: unknown[] = [];
    pageBefore(filter, 'created_at', 'id', where, params);
    const status = filter.status === 'interrupted' ? 'running' : filter.status;
    if (status !== undefined) {
      where.push('status = ?');
      params.push(status);
    }
    if (filter.name !== undefined) {
      where.push('workflow = ?');
      params.push(filter.name);
    }
    if (filter.host !== undefined) {
      where.push('owner_host = ?');
      params.push(filter.host);
    }
    if (tagged !== undefined) {
      where.push(`id IN (${[...tagged].map(() => '?').join(', ')})`);
      params.push(...tagged);
    }
    const rows = await this.db.all<RunTableRow>(
      `SELECT * FROM workflow_runs ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`}
        ORDER BY created_at DESC, id DESC LIMIT ?`,
      [...params, filter.limit + 1],
    );
    const summaries = rows.map((row) => workflowSummary(row));
    if (filter.status === 'interrupted') return summaries.filter((run) => run.status === 'interrupted');
    if (filter.status === 'running') return summaries.filter((run) => run.status === 'running');
    return summaries;
  }

  private async agentPage(filter: RunFilter, tagged: Set<string> | undefined): Promise<RunSummary[]> {
    if (tagged !== undefined && tagged.size === 0) return [];
    const where: string[] = [];
    const params: unknown[] = [];
    pageBefore(filter, 'created_at', 'id', where, params);
    if (filter.status !== undefined) {
      where.push('status = ?');
      params.push(filter.status);
    }
    if (filter.name !== undefined) {
      where.push('(title = ? OR task_id = ?)');
      params.push(filter.name, filter.name);
    }
    if (filter.host !== undefined) {
      where.push('runner_host = ?');
      params.push(filter.host);
    }
    if (tagged !== undefined) {
      where.push(`id IN (${[...tagged].map(() => '?').join(', ')})`);
      params.push(...tagged);
    }
    const rows = await this.db.all<AgentRow>(
      `SELECT ${AGENT_COLUMNS} FROM agent_runs ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`}
        ORDER BY created_at DESC, id DESC LIMIT ?`,
      [...params, filter.limit + 1],
    );
    return rows.map((row) => agentSummary(row));
  }

  /**
   * Calls made on their own: a workflow step's or an agent run's calls are shown in that run. A call
   * is listed by its first attempt (found through the time index) and summed over its attempts.
   */
  private async callPage(filter: RunFilter): Promise<RunSummary[]> {
    // No host is recorded for a call.
    if (filter.host !== undefined) return [];
    const where = ['attempt = 1', `tags NOT LIKE '%"workflow_run"%'`, `tags NOT LIKE '%"agent_run"%'`];
    const params: unknown[] = [];
    pageBefore(filter, 'created_at', 'call_id', where, params);
    if (filter.name !== undefined) {
      where.push('spec = ?');
      params.push(filter.name);
    }
    if (filter.tag !== undefined) {
      where.push(`tags LIKE ? ESCAPE '\\'`);
      params.push(tagPattern(filter.tag.key, filter.tag.value));
    }
    const firsts = await this.db.all<{ call_id: string; created_at: number }>(
      `SELECT call_id, created_at FROM call_attempts WHERE ${where.join(' AND ')}
        ORDER BY created_at DESC, call_id DESC LIMIT ?`,
      [...params, filter.limit + 1],
    );
    if (firsts.length === 0) return [];
    const attempts = await this.callAttempts(
      firsts.map((row) => row.call_id),
      Math.min(...firsts.map((row) => row.created_at)),
      Math.max(...firsts.map((row) => row.created_at)),
    );
    const summaries = firsts
      .map((row) => attempts.get(row.call_id))
      .filter((rows): rows is AttemptRow[] => rows !== undefined)
      .map(callSummary);
    if (filter.status === undefined) return summaries;
    return summaries.filter((call) => call.status === filter.status);
  }

  private async callAttempts(
    ids: readonly string[],
    from: number,
    to: number,
  ): Promise<Map<string, AttemptRow[]>> {
    const rows = await this.db.all<AttemptRow>(
      `SELECT * FROM call_attempts WHERE created_at >= ? AND created_at <= ?
        AND call_id IN (${ids.map(() => '?').join(', ')}) ORDER BY created_at, attempt`,
      [from, to + CALL_SPAN_MS, ...ids],
    );
    const byCall = new Map<string, AttemptRow[]>();
    for (const row of rows) byCall.set(row.call_id, [...(byCall.get(row.call_id) ?? []), row]);
    return byCall;
  }

  /** Workflow and agent runs whose calls carry the tag (among the latest 10,000 such calls). */
  private async runsWithTag(filter: RunFilter): Promise<Set<string>> {
    const tag = filter.tag as { key: string; value: string };
    const rows = await this.db.all<{ tags: string }>(
      `SELECT DISTINCT tags FROM (SELECT tags FROM call_attempts WHERE tags LIKE ? ESCAPE '\\'
        ORDER BY created_at DESC LIMIT 10000) AS tagged`,
      [tagPattern(tag.key, tag.value)],
    );
    const ids = new Set<string>();
    if (tag.key === 'workflow_run' || tag.key === 'agent_run') ids.add(tag.value);
    for (const row of rows) {
      const tags = tagsOf(row.tags);
      if (tags.workflow_run !== undefined) ids.add(tags.workflow_run);
      if (tags.agent_run !== undefined) ids.add(tags.agent_run);
    }
    return ids;
  }

  async workflowRow(id: string): Promise<RunTableRow | undefined> {
    return this.db.get<RunTableRow>('SELECT * FROM workflow_runs WHERE id = ?', [id]);
  }

  /** The `data` of the run's `run-start` event: its workflow, inputs and graph. */
  async runStart(id: string): Promise<Record<string, unknown> | undefined> {
    const row = await this.db.get<{ data: string | null }>(
      "SELECT data FROM workflow_events WHERE run_id = ? AND type = 'run-start' ORDER BY seq LIMIT 1",
      [id],
    );
    const data = row?.data == null ? undefined : parseJsonOr(row.data, undefined);
    return typeof data === 'object' && data !== null ? (data as Record<string, unknown>) : undefined;
  }

  async childRuns(id: string): Promise<RunSummary[]> {
    const rows = await this.db.all<RunTableRow>(
      'SELECT * FROM workflow_runs WHERE parent_run_id = ? ORDER BY created_at LIMIT 500',
      [id],
    );
    return rows.map((row) => workflowSummary(row));
  }

  async agentRow(id: string): Promise<AgentRow | undefined> {
    return this.db.get<AgentRow>(`SELECT ${AGENT_COLUMNS} FROM agent_runs WHERE id = ?`, [id]);
  }

  /** Workflow and agent runs whose rows changed at or after `since` (ms), at most 200, latest first. */
  async changedRuns(since: number): Promise<{ runs: RunSummary[]; updatedAt: Map<string, number> }> {
    const [workflows, agents] = await Promise.all([
      this.db.all<RunTableRow>(
        'SELECT * FROM workflow_runs WHERE updated_at >= ? ORDER BY updated_at DESC LIMIT 200',
        [since],
      ),
      this.db.all<AgentRow>(
        `SELECT ${AGENT_COLUMNS} FROM agent_runs WHERE updated_at >= ? ORDER BY updated_at DESC LIMIT 200`,
        [since],
      ),
    ]);
    const updatedAt = new Map<string, number>();
    for (const row of [...workflows, ...agents]) updatedAt.set(row.id, row.updated_at);
    return {
      runs: [...workflows.map((row) => workflowSummary(row)), ...agents.map((row) => agentSummary(row))],
      updatedAt,
    };
  }

  /** An agent run's events after the first `skip`, oldest first, at most `limit`. */
  async agentEvents(
    id: string,
    skip: number,
    limit: number,
  ): Promise<Array<{ at: number; phase: string; kind: string; message: string; data: string | null }>> {
    return this.db.all(
      'SELECT at, phase, kind, message, data FROM agent_run_events WHERE run_id = ? ORDER BY at, rowid LIMIT ? OFFSET ?',
      [id, limit, skip],
    );
  }

  async callDetail(id: string): Promise<CallDetail | undefined> {
    const rows = await this.db.all<AttemptRow>(
      'SELECT * FROM call_attempts WHERE call_id = ? ORDER BY attempt LIMIT 100',
      [id],
    );
    if (rows.length === 0) return undefined;
    return {
      summary: callSummary(rows),
      attempts: rows.map((row) => {
        const attempt: CallDetail['attempts'][number] = {
          attempt: row.attempt,
          at: iso(row.created_at),
          provider: row.provider,
          spec: row.spec,
          modelRequested: row.model_requested,
          success: row.success === 1,
          durationMs: row.duration_ms,
          inputTokens: row.input_tokens,
          outputTokens: row.output_tokens,
          cacheReadTokens: row.cache_read_tokens,
          cacheWriteTokens: row.cache_write_tokens,
        };
        if (row.model_used !== null) attempt.modelUsed = row.model_used;
        if (row.error_code !== null) attempt.errorCode = row.error_code;
        if (row.cost_usd !== null) attempt.costUsd = row.cost_usd;
        return attempt;
      }),
    };
  }

  async costs(
    since: number,
    until: number,
    budgets: ReadonlyArray<{ provider?: string; tag?: string; dailyUsd?: number; monthlyUsd?: number }>,
    now = Date.now(),
  ): Promise<CostReport> {
    const range = [since, until];
    const grouped = async (column: string): Promise<SpendRow[]> =>
      (
        await this.db.all<{ key: string; cost: number | null; calls: number }>(
          `SELECT ${column} AS key, sum(cost_usd) AS cost, count(*) AS calls FROM call_attempts
            WHERE created_at >= ? AND created_at < ? GROUP BY ${column}`,
          range,
        )
      )
        .map((row) => ({ key: row.key, costUsd: Number(row.cost ?? 0), calls: Number(row.calls) }))
        .sort((a, b) => b.costUsd - a.costUsd);
    const [byProvider, byModel, byTags, days] = await Promise.all([
      grouped('provider'),
      grouped('coalesce(model_used, model_requested)'),
      grouped('tags'),
      this.db.all<{ day: number; provider: string; cost: number | null }>(
        `SELECT (created_at / ${DAY_MS}) AS day, provider, sum(cost_usd) AS cost FROM call_attempts
          WHERE created_at >= ? AND created_at < ? GROUP BY (created_at / ${DAY_MS}), provider`,
        range,
      ),
    ]);
    const byTag = new Map<string, SpendRow>();
    const byRun = new Map<string, SpendRow>();
    const add = (into: Map<string, SpendRow>, key: string, row: SpendRow) => {
      const total = into.get(key) ?? { key, costUsd: 0, calls: 0 };
      total.costUsd += row.costUsd;
      total.calls += row.calls;
      into.set(key, total);
    };
    for (const row of byTags) {
      const tags = tagsOf(row.key);
      for (const [key, value] of Object.entries(tags)) {
        // Per-step and per-task keys name one execution each: too many to chart, shown in the run.
        if (key === 'workflow_step' || key === 'workflow_agent_step' || key === 'agent_task') continue;
        add(byTag, `${key}=${value}`, row);
      }
      if (tags.workflow_run !== undefined) add(byRun, tags.workflow_run, row);
    }
    const byWorkflow = await this.spendByWorkflow(byRun, add);
    const dayRows = new Map<number, CostReport['byDay'][number]>();
    for (const row of days) {
      const day = Number(row.day);
      const entry = dayRows.get(day) ?? { day: iso(day * DAY_MS).slice(0, 10), costUsd: 0, byProvider: {} };
      const cost = Number(row.cost ?? 0);
      entry.costUsd += cost;
      entry.byProvider[row.provider] = (entry.byProvider[row.provider] ?? 0) + cost;
      dayRows.set(day, entry);
    }
    return {
      since: iso(since),
      until: iso(until),
      totalUsd: byProvider.reduce((sum, row) => sum + row.costUsd, 0),
      calls: byProvider.reduce((sum, row) => sum + row.calls, 0),
      byProvider,
      byModel,
      byTag: [...byTag.values()].sort((a, b) => b.costUsd - a.costUsd).slice(0, 100),
      byWorkflow,
      byDay: [...dayRows.entries()].sort((a, b) => a[0] - b[0]).map(([, entry]) => entry),
      budgets: await this.budgetUse(budgets, now),
    };
  }

  private async spendByWorkflow(
    byRun: Map<string, SpendRow>,
    add: (into: Map<string, SpendRow>, key: string, row: SpendRow) => void,
  ): Promise<SpendRow[]> {
    const ids = [...byRun.keys()];
    const names = new Map<string, string>();
    for (let start = 0; start < ids.length; start += 500) {
      const chunk = ids.slice(start, start + 500);
      const rows = await this.db.all<{ id: string; workflow: string }>(
        `SELECT id, workflow FROM workflow_runs WHERE id IN (${chunk.map(() => '?').join(', ')})`,
        chunk,
      );
      for (const row of rows) names.set(row.id, row.workflow);
    }
    const byWorkflow = new Map<string, SpendRow>();
    for (const [id, row] of byRun) add(byWorkflow, names.get(id) ?? '(run not found)', row);
    return [...byWorkflow.values()].sort((a, b) => b.costUsd - a.costUsd);
  }

  private async budgetUse(
    budgets: ReadonlyArray<{ provider?: string; tag?: string; dailyUsd?: number; monthlyUsd?: number }>,
    now: number,
  ): Promise<CostReport['budgets']> {
    const use: CostReport['budgets'] = [];
    for (const rule of budgets) {
      const scope = [rule.provider ?? 'all providers', rule.tag === undefined ? undefined : `tag ${rule.tag}`]
        .filter(Boolean)
        .join(', ');
      for (const [window, limitUsd, start] of [
        ['day', rule.dailyUsd, startOfDay(now)],
        ['month', rule.monthlyUsd, startOfMonth(now)],
      ] as const) {
        if (limitUsd === undefined) continue;
        const where = ['created_at >= ?'];
        const params: unknown[] = [start];
        if (rule.provider !== undefined) {
          where.push('provider = ?');
          params.push(rule.provider);
        }
        const [key, value] = (rule.tag ?? '').split('=', 2);
        if (rule.tag !== undefined && key !== undefined && value !== undefined) {
          where.push(`tags LIKE ? ESCAPE '\\'`);
          params.push(tagPattern(key, value));
        }
        const row = await this.db.get<{ cost: number | null }>(
          `SELECT sum(cost_usd) AS cost FROM call_attempts WHERE ${where.join(' AND ')}`,
          params,
        );
        use.push({ name: scope, window, limitUsd, spentUsd: Number(row?.cost ?? 0) });
      }
    }
    return use;
  }

  async routing(since: number, until: number, lowConfidenceBelow: number): Promise<RoutingReport> {
    const range = [since, until];
    const [totals, days, skills, low, feedback] = await Promise.all([
      this.db.all<{ method: string; decisions: number; abstained: number }>(
        `SELECT m.name AS method, count(*) AS decisions, sum(CASE WHEN s.name = 'none' THEN 1 ELSE 0 END) AS abstained
          FROM route_decisions d ${NAMED} WHERE d.created_at >= ? AND d.created_at < ? GROUP BY m.name`,
        range,
      ),
      this.db.all<{ day: number; method: string; decisions: number; abstained: number }>(
        `SELECT (d.created_at / ${DAY_MS}) AS day, m.name AS method, count(*) AS decisions,
            sum(CASE WHEN s.name = 'none' THEN 1 ELSE 0 END) AS abstained
          FROM route_decisions d ${NAMED} WHERE d.created_at >= ? AND d.created_at < ?
          GROUP BY (d.created_at / ${DAY_MS}), m.name`,
        range,
      ),
      this.db.all<{ skill: string; decisions: number }>(
        `SELECT s.name AS skill, count(*) AS decisions FROM route_decisions d ${NAMED}
          WHERE d.created_at >= ? AND d.created_at < ? GROUP BY s.name ORDER BY count(*) DESC LIMIT 50`,
        range,
      ),
      this.db.all<{
        id: string;
        created_at: number;
        skill: string;
        confidence: number;
        method: string;
        request_text: string | null;
      }>(
        `SELECT d.id, d.created_at, s.name AS skill, d.confidence, m.name AS method, d.request_text
          FROM route_decisions d ${NAMED}
          WHERE d.created_at >= ? AND d.created_at < ? AND d.confidence < ? ORDER BY d.created_at DESC LIMIT 50`,
        [...range, lowConfidenceBelow],
      ),
      this.db.all<{ decision_id: string; skill: string; created_at: number; chosen: string | null }>(
        `SELECT f.decision_id, f.skill, f.created_at, s.name AS chosen FROM route_feedback f
          LEFT JOIN route_decisions d ON d.id = f.decision_id LEFT JOIN route_names s ON s.id = d.skill
          WHERE f.created_at >= ? AND f.created_at < ? ORDER BY f.created_at DESC LIMIT 50`,
        range,
      ),
    ]);
    const decisions = totals.reduce((sum, row) => sum + Number(row.decisions), 0);
    const abstained = totals.reduce((sum, row) => sum + Number(row.abstained), 0);
    const byDay = new Map<number, RoutingReport['byDay'][number]>();
    for (const row of days) {
      const day = Number(row.day);
      const entry = byDay.get(day) ?? {
        day: iso(day * DAY_MS).slice(0, 10),
        decisions: 0,
        abstained: 0,
        byMethod: {},
      };
      entry.decisions += Number(row.decisions);
      entry.abstained += Number(row.abstained);
      entry.byMethod[row.method] = Number(row.decisions);
      byDay.set(day, entry);
    }
    return {
      since: iso(since),
      until: iso(until),
      decisions,
      abstainRate: decisions === 0 ? 0 : abstained / decisions,
      tierMix: Object.fromEntries(totals.map((row) => [row.method, Number(row.decisions)])),
      bySkill: skills.map((row) => ({ skill: row.skill, decisions: Number(row.decisions) })),
      byDay: [...byDay.entries()].sort((a, b) => a[0] - b[0]).map(([, entry]) => entry),
      lowConfidence: low.map((row) => ({
        id: row.id,
        at: iso(row.created_at),
        skill: row.skill,
        confidence: row.confidence,
        method: row.method,
        ...(row.request_text === null ? {} : { text: row.request_text }),
      })),
      lowConfidenceBelow,
      feedback: feedback.map((row) => ({
        decisionId: row.decision_id,
        corrected: row.skill,
        at: iso(row.created_at),
        ...(row.chosen === null ? {} : { chosen: row.chosen }),
      })),
    };
  }
}
