import { idPrefixPattern, onlyMatch } from '../store/id-prefix.js';
import { openDatabase, toStoreError } from '../store/database.js';
import type { SqlDatabase } from '../store/sql/sql-database.js';
import { hostname } from 'node:os';
import { processStartTime } from './repo-lock.js';
import type { AgentTask, MergeMode } from './task.js';
import { redactSecrets } from '../core/secrets.js';

/** Where a run is. Recorded before each side effect, so a crashed run resumes from the right step. */
export const AGENT_PHASES = [
  'queued',
  'worktree',
  'agent',
  'verify',
  'merge',
  'done',
  'failed',
  'conflict',
] as const;
export type AgentPhase = (typeof AGENT_PHASES)[number];

export const AGENT_RUN_STATUSES = ['running', 'succeeded', 'failed', 'conflict', 'cancelled'] as const;
export type AgentRunStatus = (typeof AGENT_RUN_STATUSES)[number];

/** Settings of a run that resume needs besides the task. */
export interface StoredRunOptions {
  merge: MergeMode;
  /** Milliseconds of the first retry's backoff; doubles each retry. */
  retryDelayMs: number;
  model?: string;
  /** A template file for EXECUTION_CONTEXT.md, when the default one was overridden. */
  contextTemplate?: string;
}

/** An agent run as recorded in the ledger. */
export interface AgentRunRecord {
  id: string;
  taskId: string;
  title: string;
  repo: string;
  baseBranch: string;
  baseCommit: string;
  branch: string;
  worktree: string;
  phase: AgentPhase;
  status: AgentRunStatus;
  attempt: number;
  sessionId?: string;
  runnerPid?: number;
  /** When the runner process started (ms since the epoch, Linux), telling it from a later process with its pid. */
  runnerStarted?: number;
  /** The machine (host name) the runner runs on; absent for runs recorded before hosts were. */
  runnerHost?: string;
  /** When the runner last stamped the run (epoch ms), for telling a live runner elsewhere from a dead one. */
  heartbeatAt?: number;
  childPid?: number;
  costUsd: number;
  turns: number;
  commitSha?: string;
  mergedCommit?: string;
  errorCode?: string;
  error?: string;
  detail?: string;
  task: AgentTask;
  options: StoredRunOptions;
  createdAt: string;
  updatedAt: string;
  endedAt?: string;
  cleanedAt?: string;
}

export interface AgentRunEvent {
  runId: string;
  at: string;
  phase: string;
  kind: string;
  message: string;
  data?: unknown;
}

interface RunRow {
  id: string;
  task_id: string;
  title: string;
  repo: string;
  base_branch: string;
  base_commit: string;
  branch: string;
  worktree: string;
  phase: string;
  status: string;
  attempt: number;
  session_id: string | null;
  runner_pid: number | null;
  runner_host: string | null;
  heartbeat_at: number | null;
  runner_started: number | null;
  child_pid: number | null;
  cost_usd: number;
  turns: number;
  commit_sha: string | null;
  merged_commit: string | null;
  error_code: string | null;
  error: string | null;
  detail: string | null;
  task: string;
  options: string;
  created_at: number;
  updated_at: number;
  ended_at: number | null;
  cleaned_at: number | null;
}

/** Fields a runner may change on its run. */
export interface RunUpdate {
  phase?: AgentPhase;
  status?: AgentRunStatus;
  attempt?: number;
  sessionId?: string | null;
  runnerPid?: number | null;
  childPid?: number | null;
  costUsd?: number;
  turns?: number;
  commitSha?: string | null;
  mergedCommit?: string | null;
  errorCode?: string | null;
  error?: string | null;
  detail?: string | null;
  baseCommit?: string;
  /** Where the run's worktree is on the machine running it (a remote's runs move between machines). */
  worktree?: string;
  /** true stamps the end time; false clears it (a stopped run that is resumed). */
  ended?: boolean;
  cleaned?: boolean;
}

const COLUMN_BY_FIELD: Record<string, string> = {
  phase: 'phase',
  status: 'status',
  attempt: 'attempt',
  sessionId: 'session_id',
  runnerPid: 'runner_pid',
  childPid: 'child_pid',
  costUsd: 'cost_usd',
  turns: 'turns',
  commitSha: 'commit_sha',
  mergedCommit: 'merged_commit',
  errorCode: 'error_code',
  error: 'error',
  detail: 'detail',
  baseCommit: 'base_commit',
  worktree: 'worktree',
};

/**
 * The agent-run tables of the ledger, in the SQLite file or the PostgreSQL database the ledger uses.
 * Many runner processes (on many machines, on PostgreSQL) write here at once; every write is one short
 * statement. On SQLite each statement runs when the method is called, so the order of calls is the
 * order of writes.
 */
export class AgentRunStore {
  readonly path: string;
  private readonly database: SqlDatabase;

  private constructor(database: SqlDatabase) {
    this.path = database.location;
    this.database = database;
  }

  /**
   * Opens the ledger in `stateDir` (or the PostgreSQL database in `SWITCHBOARD_DATABASE_URL`),
   * creating and migrating it as `openLedger` does.
   */
  static async open(stateDir: string, options: { url?: string } = {}): Promise<AgentRunStore> {
    return new AgentRunStore(await openDatabase({ stateDir, ...options }));
  }

  async close(): Promise<void> {
    await this.database.close();
  }

  async insert(run: AgentRunRecord): Promise<void> {
    await this.guard('record an agent run', () =>
      this.database.run(
        `INSERT INTO agent_runs (id, task_id, title, repo, base_branch, base_commit, branch, worktree, phase,
            status, attempt, runner_pid, runner_started, runner_host, heartbeat_at, cost_usd, turns, task, options,
            created_at, updated_at)
           VALUES (@id, @task_id, @title, @repo, @base_branch, @base_commit, @branch, @worktree, @phase,
            @status, @attempt, @runner_pid, @runner_started, @runner_host, @heartbeat_at, 0, 0, @task, @options,
            @now, @now)`,
        {
          id: run.id,
          task_id: run.taskId,
          title: run.title,
          repo: run.repo,
          base_branch: run.baseBranch,
          base_commit: run.baseCommit,
          branch: run.branch,
          worktree: run.worktree,
          phase: run.phase,
          status: run.status,
          attempt: run.attempt,
          runner_pid: run.runnerPid ?? null,
          runner_started: run.runnerPid === undefined ? null : (processStartTime(run.runnerPid) ?? null),
          runner_host: run.runnerPid === undefined ? null : hostname(),
          heartbeat_at: run.runnerPid === undefined ? null : Date.now(),
          task: JSON.stringify(run.task),
          options: JSON.stringify(run.options),
          now: Date.now(),
        },
      ),
    );
  }

  /**
   * Writes `update`; with `runner`, only while that runner (pid on this machine) still holds the run,
   * so a runner that another process took the run from writes nothing more. Says whether it wrote.
   */
  async update(id: string, update: RunUpdate, runner?: { pid: number }): Promise<boolean> {
    const assignments: string[] = ['updated_at = @now'];
    const values: Record<string, unknown> = { id, now: Date.now() };
    for (const [field, value] of Object.entries(update)) {
      const column = COLUMN_BY_FIELD[field];
      if (column === undefined || value === undefined) continue;
      assignments.push(`${column} = @${column}`);
      // Error and detail texts quote agents, tools and servers: the ledger never stores a secret.
      values[column] = typeof value === 'string' ? redactSecrets(value) : value;
    }
    // A run let go of has no runner anywhere.
    if (update.runnerPid === null) assignments.push('runner_host = NULL', 'heartbeat_at = NULL');
    if (update.ended === true) assignments.push('ended_at = @now');
    // A resumed conflict is running again: it must be able to end (and be cancelled) once more.
    if (update.ended === false) assignments.push('ended_at = NULL');
    if (update.cleaned === true) assignments.push('cleaned_at = @now');
    let where = 'id = @id';
    if (runner !== undefined) {
      where += ' AND runner_pid = @fence_pid AND runner_host = @fence_host';
      values['fence_pid'] = runner.pid;
      values['fence_host'] = hostname();
    }
    const result = await this.guard('update an agent run', () =>
      this.database.run(`UPDATE agent_runs SET ${assignments.join(', ')} WHERE ${where}`, values),
    );
    return result.changes === 1;
  }

  /**
   * Takes a run over for this process when its recorded runner is still `expected` (compare and swap
   * on the pid and the host, as read), so two `resume` commands or workers cannot both pick it up —
   * even on machines whose processes share pids, as containers' do.
   */
  async claim(
    id: string,
    expected: Pick<AgentRunRecord, 'runnerPid' | 'runnerHost'>,
    pid: number,
  ): Promise<boolean> {
    return this.guard('claim an agent run', async () => {
      const result = await this.database.run(
        `UPDATE agent_runs SET runner_pid = @pid, runner_started = @started, runner_host = @host,
           heartbeat_at = @now, updated_at = @now
         WHERE id = @id AND runner_pid IS NOT DISTINCT FROM @expected
           AND runner_host IS NOT DISTINCT FROM @expected_host AND status IN ('running', 'conflict')`,
        {
          id,
          pid,
          started: processStartTime(pid) ?? null,
          host: hostname(),
          expected: expected.runnerPid ?? null,
          expected_host: expected.runnerHost ?? null,
          now: Date.now(),
        },
      );
      return result.changes === 1;
    });
  }

  /** Stamps the run as alive, if `pid` on this machine still runs it; false when it does not. */
  async heartbeat(id: string, pid: number): Promise<boolean> {
    return this.guard('stamp an agent run', async () => {
      const result = await this.database.run(
        'UPDATE agent_runs SET heartbeat_at = ? WHERE id = ? AND runner_pid = ? AND runner_host = ?',
        [Date.now(), id, pid, hostname()],
      );
      return result.changes === 1;
    });
  }

  async get(id: string): Promise<AgentRunRecord | undefined> {
    const row = await this.guard('read an agent run', () =>
      this.database.get<RunRow>('SELECT * FROM agent_runs WHERE id = ?', [id]),
    );
    return row === undefined ? undefined : fromRow(row);
  }

  /** The run with this id, or the only one whose id starts with it. */
  async find(idOrPrefix: string): Promise<AgentRunRecord | undefined> {
    const exact = await this.get(idOrPrefix);
    if (exact !== undefined) return exact;
    const rows = await this.guard('read agent runs', () =>
      this.database.all<RunRow>("SELECT * FROM agent_runs WHERE id LIKE ? ESCAPE '\\' LIMIT 2", [
        idPrefixPattern(idOrPrefix),
      ]),
    );
    const only = onlyMatch(rows);
    return only === undefined ? undefined : fromRow(only);
  }

  async list(options: { repo?: string; limit?: number } = {}): Promise<AgentRunRecord[]> {
    const rows = await this.guard('read agent runs', () =>
      this.database.all<RunRow>(
        'SELECT * FROM agent_runs WHERE (CAST(@repo AS TEXT) IS NULL OR repo = @repo) ' +
          'ORDER BY created_at DESC, rowid DESC LIMIT @limit',
        { repo: options.repo ?? null, limit: options.limit ?? 1000 },
      ),
    );
    return rows.map(fromRow);
  }

  async addEvent(runId: string, phase: string, kind: string, message: string, data?: unknown): Promise<void> {
    await this.guard('record an agent run event', () =>
      this.database.run(
        'INSERT INTO agent_run_events (run_id, at, phase, kind, message, data) VALUES (?, ?, ?, ?, ?, ?)',
        [
          runId,
          Date.now(),
          phase,
          kind,
          redactSecrets(message),
          data === undefined ? null : redactSecrets(JSON.stringify(data)),
        ],
      ),
    );
  }

  async events(runId: string): Promise<AgentRunEvent[]> {
    const rows = await this.guard('read agent run events', () =>
      this.database.all<{
        run_id: string;
        at: number;
        phase: string;
        kind: string;
        message: string;
        data: string | null;
      }>('SELECT * FROM agent_run_events WHERE run_id = ? ORDER BY at, rowid', [runId]),
    );
    return rows.map((row) => {
      const event: AgentRunEvent = {
        runId: row.run_id,
        at: new Date(row.at).toISOString(),
        phase: row.phase,
        kind: row.kind,
        message: row.message,
      };
      if (row.data !== null) event.data = safeJson(row.data);
      return event;
    });
  }

  private async guard<T>(what: string, action: () => Promise<T>): Promise<T> {
    try {
      return await action();
    } catch (error) {
      throw toStoreError(error, this.path, `cannot ${what} in`);
    }
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function fromRow(row: RunRow): AgentRunRecord {
  const record: AgentRunRecord = {
    id: row.id,
    taskId: row.task_id,
    title: row.title,
    repo: row.repo,
    baseBranch: row.base_branch,
    baseCommit: row.base_commit,
    branch: row.branch,
    worktree: row.worktree,
    phase: row.phase as AgentPhase,
    status: row.status as AgentRunStatus,
    attempt: row.attempt,
    costUsd: row.cost_usd,
    turns: row.turns,
    task: safeJson(row.task) as AgentTask,
    options: safeJson(row.options) as StoredRunOptions,
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
  if (row.session_id !== null) record.sessionId = row.session_id;
  if (row.runner_pid !== null) record.runnerPid = row.runner_pid;
  if (row.runner_started !== null) record.runnerStarted = row.runner_started;
  if (row.runner_host !== null) record.runnerHost = row.runner_host;
  if (row.heartbeat_at !== null) record.heartbeatAt = row.heartbeat_at;
  if (row.child_pid !== null) record.childPid = row.child_pid;
  if (row.commit_sha !== null) record.commitSha = row.commit_sha;
  if (row.merged_commit !== null) record.mergedCommit = row.merged_commit;
  if (row.error_code !== null) record.errorCode = row.error_code;
  if (row.error !== null) record.error = row.error;
  if (row.detail !== null) record.detail = row.detail;
  if (row.ended_at !== null) record.endedAt = new Date(row.ended_at).toISOString();
  if (row.cleaned_at !== null) record.cleanedAt = new Date(row.cleaned_at).toISOString();
  return record;
}
