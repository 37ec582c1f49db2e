import { SwitchboardError } from '../core/errors.js';
import { afterCommittedWrite } from './write-seam.js';
import { redactDeep, redactSecrets } from '../core/secrets.js';
import { parseJsonOr } from '../core/safe-json.js';
import { idPrefixPattern, onlyMatch } from './id-prefix.js';
import { openDatabase, toStoreError, whileReachable } from './database.js';
import type { SqlClient, SqlDatabase } from './sql/sql-database.js';

/** A workflow run as recorded in the ledger (`workflow_runs`). */
export interface WorkflowRunRow {
  id: string;
  workflow: string;
  file: string;
  fileHash: string;
  runKey?: string;
  inputs: Record<string, unknown>;
  status: 'running' | 'waiting' | 'completed' | 'failed' | 'cancelled';
  currentStep?: string;
  output?: Record<string, unknown>;
  errorCode?: string;
  error?: string;
  costUsd: number;
  iterations: number;
  /** Limits raised on resume, over the file's. */
  limits: Record<string, number>;
  owner?: RunOwner;
  heartbeatAt?: number;
  parentRunId?: string;
  parentKey?: string;
  /** The W3C traceparent the run's spans continue under, in whichever process advances it. */
  traceContext?: string;
  createdAt: number;
  updatedAt: number;
  endedAt?: number;
}

/** The process advancing a run. */
export interface RunOwner {
  pid: number;
  host: string;
  token: string;
  /** The process's start time (ms), telling it from a later process with the same pid. */
  started?: number;
}

export type StepRowStatus = 'running' | 'completed' | 'failed' | 'waiting' | 'terminated';

/** One step execution (`workflow_steps`). */
export interface WorkflowStepRow {
  key: string;
  runId: string;
  seq: number;
  step: string;
  type: string;
  groupKey?: string;
  itemIndex?: number;
  itemKey?: string;
  visit: number;
  attempt: number;
  status: StepRowStatus;
  output?: unknown;
  costUsd: number;
  progress?: Record<string, unknown>;
  next?: string;
  errorCode?: string;
  error?: string;
  startedAt: number;
  endedAt?: number;
  /**
   * The job running this group member on a worker (its id), while one does: the fence of the member's
   * writes. Unset for steps the run's owner runs itself.
   */
  claim?: string;
  /** Where the member last ran as a job (`pid N on host`). */
  claimedBy?: string;
}

export interface StoredGateAnswer {
  step: string;
  visit?: number;
  choice: string;
  text?: string;
  answeredBy: string;
  answeredAt: number;
}

/** Guidance a person sent a run (`workflow_guidance`), and where it landed once a model turn took it. */
export interface StoredGuidance {
  /** The row's number, unique in the ledger. */
  id: number;
  runId: string;
  /** For this step's model turns only; undefined: the run's next model turn. */
  step?: string;
  text: string;
  sentBy: string;
  sentAt: number;
  delivered?: GuidanceLanding;
}

/** The model turn that took guidance: the step's name, its execution key and visit, the turn's number. */
export interface GuidanceLanding {
  step: string;
  key: string;
  visit: number;
  turn: number;
  at?: number;
}

export interface StoredWorkflowEvent {
  runId: string;
  seq: number;
  at: number;
  type: string;
  step?: string;
  key?: string;
  data?: Record<string, unknown>;
}

/** An event to append; `at` defaults to now. */
export type NewWorkflowEvent = Omit<StoredWorkflowEvent, 'runId' | 'seq' | 'at'>;

export interface NewRun {
  id: string;
  workflow: string;
  file: string;
  fileHash: string;
  runKey?: string;
  inputs: Record<string, unknown>;
  currentStep: string;
  parentRunId?: string;
  parentKey?: string;
  /** The W3C traceparent of the span recording the run (see WorkflowRunRow.traceContext). */
  traceContext?: string;
  /** The workflow's shape for the `run-start` event (`workflowGraph`). */
  graph?: unknown;
  /** The workflow file's text as the run started it, for the `run-start` event (the dashboard's YAML view). */
  source?: string;
}

/** What a step's start writes. */
export interface StepStart {
  key: string;
  step: string;
  type: string;
  visit: number;
  groupKey?: string;
  itemIndex?: number;
  itemKey?: string;
  /** A member job's runner (`pid N on host`), recorded on the row. */
  runner?: string;
}

/** What a step's end writes (the step row, and the run's pointer and counters), in one transaction. */
export interface StepEnd {
  key: string;
  status: Exclude<StepRowStatus, 'running'>;
  output?: unknown;
  costUsd: number;
  next?: string;
  errorCode?: string;
  error?: string;
  /** The run's next step (top-level steps only); undefined leaves it. */
  currentStep?: string;
  /** Counts toward `iterations` (not for group rows, not for waiting gates). */
  countsIteration: boolean;
}

export interface RunPatch {
  status?: WorkflowRunRow['status'];
  currentStep?: string | null;
  output?: Record<string, unknown> | null;
  errorCode?: string | null;
  error?: string | null;
  limits?: Record<string, number>;
  fileHash?: string;
  ended?: boolean;
}

export interface RunTableRow {
  id: string;
  workflow: string;
  file: string;
  file_hash: string;
  run_key: string | null;
  inputs: string;
  status: string;
  current_step: string | null;
  output: string | null;
  error_code: string | null;
  error: string | null;
  cost_usd: number;
  iterations: number;
  limits: string;
  owner_pid: number | null;
  owner_host: string | null;
  owner_token: string | null;
  owner_started: number | null;
  heartbeat_at: number | null;
  parent_run_id: string | null;
  parent_key: string | null;
  trace_context?: string | null;
  created_at: number;
  updated_at: number;
  ended_at: number | null;
}

interface StepTableRow {
  key: string;
  run_id: string;
  seq: number;
  step: string;
  type: string;
  group_key: string | null;
  item_index: number | null;
  item_key: string | null;
  visit: number;
  attempt: number;
  status: string;
  output: string | null;
  cost_usd: number;
  progress: string | null;
  next_step: string | null;
  error_code: string | null;
  error: string | null;
  started_at: number;
  ended_at: number | null;
  claim_token: string | null;
  claimed_by: string | null;
}

/** A column's JSON value; text that is not JSON is kept as it is. */
function parseJson(text: string | null): unknown {
  return text === null ? undefined : parseJsonOr(text, text);
}

/**
 * JSON for the ledger: no secret is ever stored, whatever a step printed. Strings are redacted before
 * they are serialised (a secret holding `"` or `\` no longer matches once JSON escapes it), and the
 * JSON text again.
 */
function toJson(value: unknown): string | null {
  return value === undefined ? null : redactSecrets(JSON.stringify(redactDeep(value)));
}

export function runFromRow(row: RunTableRow): WorkflowRunRow {
  const run: WorkflowRunRow = {
    id: row.id,
    workflow: row.workflow,
    file: row.file,
    fileHash: row.file_hash,
    inputs: (parseJson(row.inputs) ?? {}) as Record<string, unknown>,
    status: row.status as WorkflowRunRow['status'],
    costUsd: row.cost_usd,
    iterations: row.iterations,
    limits: (parseJson(row.limits) ?? {}) as Record<string, number>,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
  if (row.run_key !== null) run.runKey = row.run_key;
  if (row.current_step !== null) run.currentStep = row.current_step;
  if (row.output !== null) run.output = parseJson(row.output) as Record<string, unknown>;
  if (row.error_code !== null) run.errorCode = row.error_code;
  if (row.error !== null) run.error = row.error;
  if (row.owner_token !== null && row.owner_pid !== null) {
    run.owner = { pid: row.owner_pid, host: row.owner_host ?? '', token: row.owner_token };
    if (row.owner_started !== null) run.owner.started = row.owner_started;
  }
  if (row.heartbeat_at !== null) run.heartbeatAt = row.heartbeat_at;
  if (row.parent_run_id !== null) run.parentRunId = row.parent_run_id;
  if (typeof row.trace_context === 'string') run.traceContext = row.trace_context;
  if (row.parent_key !== null) run.parentKey = row.parent_key;
  if (row.ended_at !== null) run.endedAt = row.ended_at;
  return run;
}

function stepFromRow(row: StepTableRow): WorkflowStepRow {
  const step: WorkflowStepRow = {
    key: row.key,
    runId: row.run_id,
    seq: row.seq,
    step: row.step,
    type: row.type,
    visit: row.visit,
    attempt: row.attempt,
    status: row.status as StepRowStatus,
    costUsd: row.cost_usd,
    startedAt: row.started_at,
  };
  if (row.group_key !== null) step.groupKey = row.group_key;
  if (row.item_index !== null) step.itemIndex = row.item_index;
  if (row.item_key !== null) step.itemKey = row.item_key;
  if (row.output !== null) step.output = parseJson(row.output);
  if (row.progress !== null) step.progress = parseJson(row.progress) as Record<string, unknown>;
  if (row.next_step !== null) step.next = row.next_step;
  if (row.error_code !== null) step.errorCode = row.error_code;
  if (row.error !== null) step.error = row.error;
  if (row.ended_at !== null) step.endedAt = row.ended_at;
  if (row.claim_token !== null) step.claim = row.claim_token;
  if (row.claimed_by !== null) step.claimedBy = row.claimed_by;
  return step;
}

/** Whether a run of this status takes no more model turns, so guidance sent it would never be read (a failed one may be resumed). */
export function takesNoGuidance(status: WorkflowRunRow['status']): boolean {
  return status === 'completed' || status === 'cancelled';
}

/**
 * The workflow tables of the ledger, in the SQLite file or the PostgreSQL database the ledger uses. Any
 * number of processes (on PostgreSQL, of machines) read and write here at once; every write of a run's
 * owner is fenced by its token inside the write's own transaction, so a process that lost the run
 * (another took it over) records nothing. Writes to one run take turns: `BEGIN IMMEDIATE` on SQLite, a
 * transaction-scoped advisory lock on the run's id on PostgreSQL (which also keeps its event numbers
 * gapless and unique). On SQLite each statement runs when the method is called, so the order of calls
 * is the order of writes.
 */
export class WorkflowStore {
  readonly path: string;
  private readonly database: SqlDatabase;
  private readonly now: () => number;

  private constructor(database: SqlDatabase, now: () => number) {
    this.path = database.location;
    this.database = database;
    this.now = now;
  }

  /**
   * Opens the ledger file (`path`), the one in `stateDir`, or the PostgreSQL database in `url` /
   * `SWITCHBOARD_DATABASE_URL`, creating and migrating it as `openLedger` does.
   */
  static async open(options: {
    path?: string;
    stateDir?: string;
    url?: string;
    now?: () => number;
  }): Promise<WorkflowStore> {
    if (options.path === ':memory:') {
      throw new SwitchboardError('INVALID_INPUT', 'workflows need a ledger file, not an in-memory ledger', {
        hint: 'open the ledger with a path or a state directory',
      });
    }
    const database = await openDatabase({
      ...(options.path === undefined ? {} : { path: options.path }),
      ...(options.stateDir === undefined ? {} : { stateDir: options.stateDir }),
      ...(options.url === undefined ? {} : { url: options.url }),
    });
    return new WorkflowStore(database, options.now ?? Date.now);
  }

  async close(): Promise<void> {
    await this.database.close();
  }

  /** Inserts a run, or returns the existing run holding the same `runKey` (nothing written then). */
  async createRun(run: NewRun): Promise<{ run: WorkflowRunRow; created: boolean }> {
    const lock = run.runKey === undefined ? run.id : `key:${run.runKey}`;
    return this.write(lock, 'record a workflow run', async (tx) => {
      if (run.runKey !== undefined) {
        const existing = await tx.get<RunTableRow>('SELECT * FROM workflow_runs WHERE run_key = ?', [
          run.runKey,
        ]);
        if (existing !== undefined) return { run: runFromRow(existing), created: false };
      }
      if ((await tx.get('SELECT 1 AS found FROM workflow_runs WHERE id = ?', [run.id])) !== undefined) {
        throw new SwitchboardError('INVALID_INPUT', `workflow run ${run.id} already exists`, {
          hint: `continue it with \`switchboard workflow resume ${run.id}\`, or choose another run id`,
        });
      }
      const now = this.now();
      await tx.run(
        `INSERT INTO workflow_runs (id, workflow, file, file_hash, run_key, inputs, status, current_step,
             parent_run_id, parent_key, trace_context, created_at, updated_at)
           VALUES (@id, @workflow, @file, @file_hash, @run_key, @inputs, 'running', @current_step,
             @parent_run_id, @parent_key, @trace_context, @now, @now)`,
        {
          id: run.id,
          workflow: run.workflow,
          file: run.file,
          file_hash: run.fileHash,
          run_key: run.runKey ?? null,
          inputs: toJson(run.inputs),
          current_step: run.currentStep,
          parent_run_id: run.parentRunId ?? null,
          parent_key: run.parentKey ?? null,
          trace_context: run.traceContext ?? null,
          now,
        },
      );
      await this.insertEvent(tx, run.id, {
        type: 'run-start',
        data: {
          workflow: run.workflow,
          inputs: run.inputs,
          ...(run.graph === undefined ? {} : { graph: run.graph }),
          // Nested, so the event's one-line forms (`logs`, a run's lines on stderr) leave the file out.
          ...(run.source === undefined ? {} : { workflowFile: { text: run.source } }),
        },
      });
      const created = await readRun(tx, run.id);
      if (created === undefined)
        throw new SwitchboardError('RUN_NOT_FOUND', `there is no workflow run ${run.id}`);
      return { run: created, created: true };
    });
  }

  /**
   * Records the trace context of a run that has none yet (started before tracing was on): the first
   * process to trace it names the trace every later process continues. A run that has one keeps it.
   */
  async setTraceContext(runId: string, traceContext: string): Promise<void> {
    await this.write(runId, "record a workflow run's trace context", async (tx) => {
      await tx.run('UPDATE workflow_runs SET trace_context = ? WHERE id = ? AND trace_context IS NULL', [
        traceContext,
        runId,
      ]);
    });
  }

  async getRun(id: string): Promise<WorkflowRunRow | undefined> {
    return this.read('read a workflow run', () => readRun(this.database, id));
  }

  /** The run with this id, or the only one whose id starts with it. */
  async findRun(idOrPrefix: string): Promise<WorkflowRunRow | undefined> {
    const exact = await this.getRun(idOrPrefix);
    if (exact !== undefined) return exact;
    const rows = await this.read('read workflow runs', () =>
      this.database.all<RunTableRow>("SELECT * FROM workflow_runs WHERE id LIKE ? ESCAPE '\\' LIMIT 2", [
        idPrefixPattern(idOrPrefix),
      ]),
    );
    const only = onlyMatch(rows);
    return only === undefined ? undefined : runFromRow(only);
  }

  /** Top-level runs (not sub-workflows), newest first. */
  async listRuns(limit: number): Promise<WorkflowRunRow[]> {
    const rows = await this.read('read workflow runs', () =>
      this.database.all<RunTableRow>(
        'SELECT * FROM workflow_runs WHERE parent_run_id IS NULL ORDER BY created_at DESC, rowid DESC LIMIT ?',
        [limit],
      ),
    );
    return rows.map(runFromRow);
  }

  /** A child run started by the parent's step `parentKey`, if any. */
  async findChildRun(parentRunId: string, parentKey: string): Promise<WorkflowRunRow | undefined> {
    const row = await this.read('read a workflow run', () =>
      this.database.get<RunTableRow>(
        'SELECT * FROM workflow_runs WHERE parent_run_id = ? AND parent_key = ?',
        [parentRunId, parentKey],
      ),
    );
    return row === undefined ? undefined : runFromRow(row);
  }

  /** Sub-workflow runs started by this run. */
  async listChildRuns(parentRunId: string): Promise<WorkflowRunRow[]> {
    const rows = await this.read('read workflow runs', () =>
      this.database.all<RunTableRow>(
        'SELECT * FROM workflow_runs WHERE parent_run_id = ? ORDER BY created_at, rowid',
        [parentRunId],
      ),
    );
    return rows.map(runFromRow);
  }

  /**
   * Takes the run for `owner` if its recorded owner token is still `expectedToken` (compare and swap):
   * of two processes that both judged the previous owner gone, one wins.
   */
  async claimRun(id: string, expectedToken: string | undefined, owner: RunOwner): Promise<boolean> {
    return this.write(id, 'claim a workflow run', async (tx) => {
      const now = this.now();
      const result = await tx.run(
        `UPDATE workflow_runs SET owner_pid = @pid, owner_host = @host, owner_token = @token,
             owner_started = @started, heartbeat_at = @now, updated_at = @now
           WHERE id = @id AND owner_token IS NOT DISTINCT FROM @expected`,
        {
          id,
          pid: owner.pid,
          host: owner.host,
          token: owner.token,
          started: owner.started ?? null,
          expected: expectedToken ?? null,
          now,
        },
      );
      return result.changes === 1;
    });
  }

  /** Stamps the owner's heartbeat; false when the token no longer owns the run. */
  async heartbeat(id: string, token: string): Promise<boolean> {
    return this.write(id, 'stamp a workflow heartbeat', async (tx) => {
      const result = await tx.run(
        'UPDATE workflow_runs SET heartbeat_at = ? WHERE id = ? AND owner_token = ?',
        [this.now(), id, token],
      );
      return result.changes === 1;
    });
  }

  /** Lets go of the run (only if this token still owns it). */
  async releaseRun(id: string, token: string): Promise<void> {
    await this.write(id, 'release a workflow run', (tx) =>
      tx.run(
        `UPDATE workflow_runs SET owner_pid = NULL, owner_host = NULL, owner_token = NULL, owner_started = NULL,
             heartbeat_at = NULL WHERE id = ? AND owner_token = ?`,
        [id, token],
      ),
    );
  }

  /**
   * Starts (or restarts) a step execution: a new row with attempt 1, or the interrupted row's attempt
   * plus one (a parked gate keeps its attempt). Returns the row as it was before, if there was one.
   */
  async startStep(
    runId: string,
    token: string,
    start: StepStart,
    event?: NewWorkflowEvent,
  ): Promise<{ row: WorkflowStepRow; before?: WorkflowStepRow }> {
    const fence = { runId, token, stepKey: start.key };
    return this.fenced(fence, 'start a workflow step', async (tx) => {
      const now = this.now();
      const existing = await tx.get<StepTableRow>('SELECT * FROM workflow_steps WHERE key = ?', [start.key]);
      if (existing === undefined) {
        const next = await tx.get<{ seq: number }>(
          'SELECT coalesce(max(seq), 0) + 1 AS seq FROM workflow_steps WHERE run_id = ?',
          [runId],
        );
        await tx.run(
          `INSERT INTO workflow_steps (key, run_id, seq, step, type, group_key, item_index, item_key, visit, attempt,
               status, started_at)
             VALUES (@key, @run_id, @seq, @step, @type, @group_key, @item_index, @item_key, @visit, 1, 'running', @now)`,
          {
            key: start.key,
            run_id: runId,
            seq: next!.seq,
            step: start.step,
            type: start.type,
            group_key: start.groupKey ?? null,
            item_index: start.itemIndex ?? null,
            item_key: start.itemKey ?? null,
            visit: start.visit,
            now,
          },
        );
      } else {
        const attempt = existing.status === 'waiting' ? existing.attempt : existing.attempt + 1;
        await tx.run(
          `UPDATE workflow_steps SET status = 'running', attempt = ?, started_at = ?, ended_at = NULL,
               error_code = NULL, error = NULL WHERE key = ?`,
          [attempt, now, start.key],
        );
      }
      if (start.runner !== undefined) {
        await tx.run('UPDATE workflow_steps SET claimed_by = ? WHERE key = ?', [start.runner, start.key]);
      }
      const row = stepFromRow(
        (await tx.get<StepTableRow>('SELECT * FROM workflow_steps WHERE key = ?', [start.key]))!,
      );
      if (event !== undefined)
        await this.insertEvent(tx, runId, { ...event, data: { ...event.data, attempt: row.attempt } });
      return existing === undefined ? { row } : { row, before: stepFromRow(existing) };
    });
  }

  /**
   * Hands a group member to a job (fenced by the run owner's token): its row, created now if it has none
   * (attempt 0: queued, not yet started), carries `claim`, the job's id, from here on the only token its
   * writes are accepted with besides the owner's. A completed member is left as it is (returns false).
   */
  async dispatchMember(runId: string, token: string, start: StepStart, claim: string): Promise<boolean> {
    return this.fenced({ runId, token }, 'queue a workflow group member', async (tx) => {
      const existing = await tx.get<StepTableRow>('SELECT * FROM workflow_steps WHERE key = ?', [start.key]);
      if (existing?.status === 'completed' || existing?.status === 'terminated') return false;
      if (existing === undefined) {
        const next = await tx.get<{ seq: number }>(
          'SELECT coalesce(max(seq), 0) + 1 AS seq FROM workflow_steps WHERE run_id = ?',
          [runId],
        );
        await tx.run(
          `INSERT INTO workflow_steps (key, run_id, seq, step, type, group_key, item_index, item_key, visit, attempt,
               status, started_at, claim_token)
             VALUES (@key, @run_id, @seq, @step, @type, @group_key, @item_index, @item_key, @visit, 0, 'running', @now,
               @claim)`,
          {
            key: start.key,
            run_id: runId,
            seq: next!.seq,
            step: start.step,
            type: start.type,
            group_key: start.groupKey ?? null,
            item_index: start.itemIndex ?? null,
            item_key: start.itemKey ?? null,
            visit: start.visit,
            now: this.now(),
            claim,
          },
        );
      } else {
        // A failed or interrupted member queued again keeps its attempts; its old job is fenced out.
        await tx.run(
          `UPDATE workflow_steps SET status = 'running', claim_token = ?, ended_at = NULL, error_code = NULL,
               error = NULL WHERE key = ?`,
          [claim, start.key],
        );
      }
      return true;
    });
  }

  /**
   * Ends a queued member as failed without its job (fail_fast stopped it, or its job failed for good),
   * fenced by the owner's token and only while the row still carries `claim`: false when the member
   * ended first. Its job, if it still runs, is fenced out from here on.
   */
  async abandonMember(
    runId: string,
    token: string,
    key: string,
    claim: string,
    error: { code: string; message: string },
    event: NewWorkflowEvent,
  ): Promise<boolean> {
    return this.fenced({ runId, token }, 'record a workflow step', async (tx) => {
      const result = await tx.run(
        `UPDATE workflow_steps SET status = 'failed', error_code = ?, error = ?, ended_at = ?, claim_token = NULL
           WHERE key = ? AND claim_token = ? AND status = 'running'`,
        [error.code, redactSecrets(error.message), this.now(), key, claim],
      );
      if (result.changes === 1) await this.insertEvent(tx, runId, event);
      return result.changes === 1;
    });
  }

  /** Appends an event of a group member's step, fenced by the member's claim (or the owner's token). */
  async appendMemberEvent(runId: string, token: string, key: string, event: NewWorkflowEvent): Promise<void> {
    await this.fenced({ runId, token, stepKey: key }, 'record a workflow event', (tx) =>
      this.insertEvent(tx, runId, event),
    );
  }

  /** Persists an execution's progress notes before an outside effect (fenced). */
  async recordProgress(
    runId: string,
    token: string,
    key: string,
    notes: Record<string, unknown>,
  ): Promise<void> {
    await this.fenced({ runId, token, stepKey: key }, 'record workflow step progress', (tx) =>
      tx.run('UPDATE workflow_steps SET progress = ? WHERE key = ?', [toJson(notes), key]),
    );
  }

  /**
   * Ends a step execution: its row (status, output, cost, route taken), the run's pointer, counters and
   * cost, and the event, in one transaction fenced by the owner token.
   */
  async endStep(runId: string, token: string, end: StepEnd, event: NewWorkflowEvent): Promise<void> {
    await this.fenced({ runId, token, stepKey: end.key }, 'record a workflow step', async (tx) => {
      const now = this.now();
      const before = await tx.get<{ counted: number; cost_usd: number }>(
        'SELECT counted, cost_usd FROM workflow_steps WHERE key = ?',
        [end.key],
      );
      if (before === undefined) {
        throw new SwitchboardError('INTERNAL', `workflow step ${end.key} was never started`);
      }
      await tx.run(
        `UPDATE workflow_steps SET status = @status, output = @output, cost_usd = @cost, next_step = @next,
             error_code = @error_code, error = @error, ended_at = @now, claim_token = NULL,
             counted = CASE WHEN counted > @counts THEN counted ELSE @counts END WHERE key = @key`,
        {
          key: end.key,
          status: end.status,
          output: toJson(end.output),
          cost: end.costUsd,
          next: end.next ?? null,
          error_code: end.errorCode ?? null,
          error: end.error === undefined ? null : redactSecrets(end.error),
          counts: end.countsIteration ? 1 : 0,
          now,
        },
      );
      // A rerun execution (an interrupted or failed one) counts once, and its new cost replaces its old one.
      const iterations = end.countsIteration && before.counted === 0 ? 1 : 0;
      const costDelta = end.costUsd - before.cost_usd;
      await tx.run(
        `UPDATE workflow_runs SET iterations = iterations + @iterations, cost_usd = cost_usd + @cost,
             current_step = CASE WHEN @set_current = 1 THEN @current ELSE current_step END, updated_at = @now
           WHERE id = @id`,
        {
          id: runId,
          iterations,
          cost: costDelta,
          set_current: end.currentStep === undefined ? 0 : 1,
          current: end.currentStep ?? null,
          now,
        },
      );
      await this.insertEvent(tx, runId, event);
    });
  }

  /** Changes the run (status, pointer, output, error, limits), with an event, fenced by the owner token. */
  async updateRun(runId: string, token: string, patch: RunPatch, event?: NewWorkflowEvent): Promise<void> {
    await this.fenced({ runId, token }, 'update a workflow run', async (tx) => {
      await this.applyPatch(tx, runId, patch);
      if (event !== undefined) await this.insertEvent(tx, runId, event);
    });
  }

  /**
   * Marks a run cancelled from any process (no owner token needed): the owner notices at its next poll.
   * Returns false when the run had already ended.
   */
  async cancelRun(runId: string, event: NewWorkflowEvent): Promise<boolean> {
    return this.write(runId, 'cancel a workflow run', async (tx) => {
      const result = await tx.run(
        `UPDATE workflow_runs SET status = 'cancelled', error_code = 'WORKFLOW_CANCELLED', error = 'the run was cancelled',
             ended_at = ?, updated_at = ? WHERE id = ? AND status IN ('running', 'waiting', 'failed')`,
        [this.now(), this.now(), runId],
      );
      if (result.changes === 1) await this.insertEvent(tx, runId, event);
      return result.changes === 1;
    });
  }

  async steps(runId: string): Promise<WorkflowStepRow[]> {
    const rows = await this.read('read workflow steps', () =>
      this.database.all<StepTableRow>('SELECT * FROM workflow_steps WHERE run_id = ? ORDER BY seq', [runId]),
    );
    return rows.map(stepFromRow);
  }

  async getStep(key: string): Promise<WorkflowStepRow | undefined> {
    const row = await this.read('read a workflow step', () =>
      this.database.get<StepTableRow>('SELECT * FROM workflow_steps WHERE key = ?', [key]),
    );
    return row === undefined ? undefined : stepFromRow(row);
  }

  /**
   * Records a gate answer from any process unless the gate already has one: the first answer committed
   * wins, and a later one is not written. `visit` undefined: for the next time the run reaches the gate.
   * An answer is already there when the gate has one for this visit, one waiting for the next visit, or
   * (for an ended run, which will not reach the gate again) any answer at all. Returns the answer that
   * was there (nothing recorded), or undefined when this one was recorded.
   *
   * The check and the insert share one transaction holding the run's write lock (every write to the run
   * takes it, in any process), so of two answers racing for a gate exactly one is recorded.
   */
  async recordGateAnswer(runId: string, answer: StoredGateAnswer): Promise<StoredGateAnswer | undefined> {
    return this.write(runId, 'record a gate answer', async (tx) => {
      const ended = await tx.get<{ found: number }>(
        "SELECT 1 AS found FROM workflow_runs WHERE id = ? AND status IN ('completed', 'cancelled')",
        [runId],
      );
      const earlier = await tx.get<GateRow>(
        `SELECT ${GATE_COLUMNS} FROM workflow_gates
           WHERE run_id = ? AND step = ? AND (visit IS NULL OR visit = ? OR ? = 1)
           ORDER BY rowid LIMIT 1`,
        [runId, answer.step, answer.visit ?? -1, ended === undefined ? 0 : 1],
      );
      if (earlier !== undefined) return gateAnswerFromRow(earlier, earlier.visit ?? undefined);
      await tx.run(
        `INSERT INTO workflow_gates (run_id, step, visit, choice, text, answered_by, answered_at)
           VALUES (?, ?, ?, ?, ?, ?, ?)`,
        [
          runId,
          answer.step,
          answer.visit ?? null,
          answer.choice,
          answer.text === undefined ? null : redactSecrets(answer.text),
          answer.answeredBy,
          answer.answeredAt,
        ],
      );
      await this.insertEvent(tx, runId, {
        type: 'gate-answer',
        step: answer.step,
        data: {
          choice: answer.choice,
          answeredBy: answer.answeredBy,
          ...(answer.visit === undefined ? {} : { visit: answer.visit }),
        },
      });
      return undefined;
    });
  }

  /** The latest answer recorded for any gate of the run, for telling a late answerer who came first. */
  async lastGateAnswer(runId: string): Promise<StoredGateAnswer | undefined> {
    const row = await this.read('read a gate answer', () =>
      this.database.get<GateRow>(
        `SELECT ${GATE_COLUMNS} FROM workflow_gates WHERE run_id = ? ORDER BY rowid DESC LIMIT 1`,
        [runId],
      ),
    );
    return row === undefined ? undefined : gateAnswerFromRow(row, row.visit ?? undefined);
  }

  /**
   * The answer for a gate's execution: the one recorded for this visit, else the oldest recorded before
   * the run reached the gate (then bound to this visit, so it answers exactly one execution). With
   * `fallback` (a gate whose timeout expired), records it for this visit when there is none, in the same
   * transaction: an answer committed at the last moment wins over the default, never both.
   */
  async takeGateAnswer(
    runId: string,
    step: string,
    visit: number,
    fallback?: StoredGateAnswer,
  ): Promise<StoredGateAnswer | undefined> {
    return this.write(runId, 'read a gate answer', async (tx) => {
      let row = await tx.get<GateRow>(
        `SELECT ${GATE_COLUMNS} FROM workflow_gates WHERE run_id = ? AND step = ? AND visit = ? ORDER BY rowid LIMIT 1`,
        [runId, step, visit],
      );
      if (row === undefined) {
        row = await tx.get<GateRow>(
          `SELECT ${GATE_COLUMNS} FROM workflow_gates WHERE run_id = ? AND step = ? AND visit IS NULL ORDER BY rowid LIMIT 1`,
          [runId, step],
        );
        if (row !== undefined) {
          await tx.run('UPDATE workflow_gates SET visit = ? WHERE rowid = ?', [visit, row.gate_row]);
        }
      }
      if (row !== undefined) return gateAnswerFromRow(row, visit);
      if (fallback === undefined) return undefined;
      await tx.run(
        `INSERT INTO workflow_gates (run_id, step, visit, choice, text, answered_by, answered_at)
           VALUES (?, ?, ?, ?, NULL, ?, ?)`,
        [runId, step, visit, fallback.choice, fallback.answeredBy, fallback.answeredAt],
      );
      return { ...fallback, step, visit };
    });
  }

  /**
   * Records guidance for the run from any process, unless the run has ended (completed or cancelled: no
   * model turn will take it), checked in the same transaction as the insert. Returns the row, or the
   * status of the ended run (nothing recorded).
   */
  async recordGuidance(
    runId: string,
    guidance: { step?: string; text: string; sentBy: string; sentAt: number },
  ): Promise<{ recorded: StoredGuidance } | { ended: WorkflowRunRow['status'] }> {
    return this.write(runId, 'record guidance', async (tx) => {
      const run = await tx.get<{ status: WorkflowRunRow['status'] }>(
        'SELECT status FROM workflow_runs WHERE id = ?',
        [runId],
      );
      if (run === undefined || takesNoGuidance(run.status)) return { ended: run?.status ?? 'cancelled' };
      const text = redactSecrets(guidance.text);
      await tx.run(
        'INSERT INTO workflow_guidance (run_id, step, text, sent_by, sent_at) VALUES (?, ?, ?, ?, ?)',
        [runId, guidance.step ?? null, text, guidance.sentBy, guidance.sentAt],
      );
      const row = (await tx.get<GuidanceRow>(
        `SELECT ${GUIDANCE_COLUMNS} FROM workflow_guidance WHERE run_id = ? ORDER BY rowid DESC LIMIT 1`,
        [runId],
      ))!;
      const recorded = guidanceFromRow(row);
      await this.insertEvent(tx, runId, {
        type: 'guidance-sent',
        ...(recorded.step === undefined ? {} : { step: recorded.step }),
        data: { id: recorded.id, text: recorded.text, sentBy: recorded.sentBy },
      });
      return { recorded };
    });
  }

  /**
   * Takes the run's undelivered guidance for a model turn of `landing.step` (rows for that step, and
   * rows for no step), oldest first, marking each delivered there with a `guidance-delivered` event, in
   * one transaction: of two turns asking at once, each row goes to exactly one.
   */
  async takeGuidance(
    runId: string,
    landing: GuidanceLanding,
    via?: { step: string; runId: string },
  ): Promise<StoredGuidance[]> {
    // Sent to a run that started this sub-workflow: rows for its step that did, or for no step.
    const forStep = via?.step ?? landing.step;
    // Asked before every model turn and every half second of a Claude Code step: a read first, so
    // the run's write lock is taken only when there is something to take.
    const waiting = await this.read('read guidance', () =>
      this.database.get<{ found: number }>(
        `SELECT 1 AS found FROM workflow_guidance
           WHERE run_id = ? AND delivered_at IS NULL AND (step IS NULL OR step = ?) LIMIT 1`,
        [runId, forStep],
      ),
    );
    if (waiting === undefined) return [];
    return this.write(runId, 'take guidance', async (tx) => {
      const rows = await tx.all<GuidanceRow>(
        `SELECT ${GUIDANCE_COLUMNS} FROM workflow_guidance
           WHERE run_id = ? AND delivered_at IS NULL AND (step IS NULL OR step = ?) ORDER BY rowid`,
        [runId, forStep],
      );
      const at = this.now();
      const taken: StoredGuidance[] = [];
      for (const row of rows) {
        await tx.run(
          `UPDATE workflow_guidance SET delivered_step = ?, delivered_key = ?, delivered_visit = ?,
               delivered_turn = ?, delivered_at = ? WHERE rowid = ?`,
          [landing.step, landing.key, landing.visit, landing.turn, at, row.guidance_row],
        );
        const guidance = { ...guidanceFromRow(row), delivered: { ...landing, at } };
        taken.push(guidance);
        await this.insertEvent(tx, runId, {
          type: 'guidance-delivered',
          step: forStep,
          ...(via === undefined ? { key: landing.key } : {}),
          data: {
            id: guidance.id,
            ...(via === undefined ? {} : { run: via.runId, runStep: landing.step, runKey: landing.key }),
            visit: landing.visit,
            turn: landing.turn,
            sentBy: guidance.sentBy,
            sentAt: new Date(guidance.sentAt).toISOString(),
          },
        });
      }
      return taken;
    });
  }

  /** The run's guidance, delivered or not, oldest first. */
  async guidance(runId: string): Promise<StoredGuidance[]> {
    const rows = await this.read('read guidance', () =>
      this.database.all<GuidanceRow>(
        `SELECT ${GUIDANCE_COLUMNS} FROM workflow_guidance WHERE run_id = ? ORDER BY rowid`,
        [runId],
      ),
    );
    return rows.map(guidanceFromRow);
  }

  /** Appends an event outside an owner's writes (a gate answer, a refused resume). */
  async appendEvent(runId: string, event: NewWorkflowEvent): Promise<void> {
    await this.write(runId, 'record a workflow event', (tx) => this.insertEvent(tx, runId, event));
  }

  /** The run's events after `afterSeq`, oldest first; at most `limit` of them when given. */
  async events(runId: string, afterSeq = 0, limit?: number): Promise<StoredWorkflowEvent[]> {
    return this.eventRows(
      `SELECT * FROM workflow_events WHERE run_id = ? AND seq > ? ORDER BY seq${limit === undefined ? '' : ' LIMIT ?'}`,
      limit === undefined ? [runId, afterSeq] : [runId, afterSeq, limit],
    );
  }

  /** The run's events of one type, oldest first: read by type, not the whole log read and sifted. */
  async eventsOfType(runId: string, type: string): Promise<StoredWorkflowEvent[]> {
    return this.eventRows('SELECT * FROM workflow_events WHERE run_id = ? AND type = ? ORDER BY seq', [
      runId,
      type,
    ]);
  }

  private async eventRows(sql: string, values: unknown[]): Promise<StoredWorkflowEvent[]> {
    const rows = await this.read('read workflow events', () =>
      this.database.all<{
        run_id: string;
        seq: number;
        at: number;
        type: string;
        step: string | null;
        key: string | null;
        data: string | null;
      }>(sql, values),
    );
    return rows.map((row) => {
      const event: StoredWorkflowEvent = { runId: row.run_id, seq: row.seq, at: row.at, type: row.type };
      if (row.step !== null) event.step = row.step;
      if (row.key !== null) event.key = row.key;
      if (row.data !== null) event.data = parseJson(row.data) as Record<string, unknown>;
      return event;
    });
  }

  /** The latest event's sequence number (0 when none), for `onEvent` listeners. */
  async lastEventSeq(runId: string): Promise<number> {
    const row = await this.read('read workflow events', () =>
      this.database.get<{ seq: number }>(
        'SELECT coalesce(max(seq), 0) AS seq FROM workflow_events WHERE run_id = ?',
        [runId],
      ),
    );
    return row?.seq ?? 0;
  }

  private async insertEvent(tx: SqlClient, runId: string, event: NewWorkflowEvent): Promise<void> {
    await tx.run(
      `INSERT INTO workflow_events (run_id, seq, at, type, step, key, data)
         VALUES (@run_id, (SELECT coalesce(max(seq), 0) + 1 FROM workflow_events WHERE run_id = @run_id),
           @at, @type, @step, @key, @data)`,
      {
        run_id: runId,
        at: this.now(),
        type: event.type,
        step: event.step ?? null,
        key: event.key ?? null,
        data: toJson(event.data),
      },
    );
  }

  private async applyPatch(tx: SqlClient, runId: string, patch: RunPatch): Promise<void> {
    const assignments = ['updated_at = @now'];
    const values: Record<string, unknown> = { id: runId, now: this.now() };
    const set = (column: string, value: unknown) => {
      assignments.push(`${column} = @${column}`);
      values[column] = value;
    };
    if (patch.status !== undefined) set('status', patch.status);
    if (patch.currentStep !== undefined) set('current_step', patch.currentStep);
    if (patch.output !== undefined) set('output', patch.output === null ? null : toJson(patch.output));
    if (patch.errorCode !== undefined) set('error_code', patch.errorCode);
    if (patch.error !== undefined) set('error', patch.error === null ? null : redactSecrets(patch.error));
    if (patch.limits !== undefined) set('limits', JSON.stringify(patch.limits));
    if (patch.fileHash !== undefined) set('file_hash', patch.fileHash);
    if (patch.ended === true) assignments.push('ended_at = @now');
    if (patch.ended === false) assignments.push('ended_at = NULL');
    await tx.run(`UPDATE workflow_runs SET ${assignments.join(', ')} WHERE id = @id`, values);
  }

  /**
   * Runs `action` in the run's write transaction after checking the token still owns the run, or, for a
   * write to one step row (`stepKey`), holds that row's claim while the run is running (a group member's
   * job on a worker); otherwise throws WORKFLOW_LOST and writes nothing.
   */
  private fenced<T>(fence: WriteFence, what: string, action: (tx: SqlClient) => Promise<T>): Promise<T> {
    const { runId, token, stepKey } = fence;
    return this.write(runId, what, async (tx) => {
      const row = await tx.get<{
        owner_token: string | null;
        owner_pid: number | null;
        owner_host: string | null;
        status: string;
      }>('SELECT owner_token, owner_pid, owner_host, status FROM workflow_runs WHERE id = ?', [runId]);
      if (row !== undefined && row.owner_token === token) return action(tx);
      if (stepKey !== undefined) {
        const step = await tx.get<{ claim_token: string | null }>(
          'SELECT claim_token FROM workflow_steps WHERE key = ? AND run_id = ?',
          [stepKey, runId],
        );
        if (step?.claim_token === token && row?.status === 'running') return action(tx);
        if (step?.claim_token != null) {
          throw new SwitchboardError(
            'WORKFLOW_LOST',
            `this process no longer runs ${stepKey.slice(runId.length + 1)} of workflow run ${runId}; nothing was recorded`,
            { hint: `see where it is with \`switchboard workflow status ${runId}\``, retryable: false },
          );
        }
      }
      const now = row?.owner_token == null ? 'no process' : `pid ${row.owner_pid} on ${row.owner_host}`;
      throw new SwitchboardError(
        'WORKFLOW_LOST',
        `this process lost workflow run ${runId} (${now} holds it now); nothing was recorded`,
        {
          hint: `see where it is with \`switchboard workflow status ${runId}\``,
          retryable: false,
        },
      );
    });
  }

  /**
   * One transaction, taking turns with every other write to the same run (in any process). On
   * PostgreSQL a write the server could not take (restarting, unreachable) is tried again for up to
   * `RECONNECT_FOR_MS` (see `whileReachable`): a step that finished while the database was away is recorded when it comes back
   * instead of failing the run and running again. Each write re-checks its fence, so one retried after a
   * takeover records nothing, and the step and run writes are safe to apply twice (a commit whose answer
   * was lost): they set values, and count costs and iterations as differences from the row.
   */
  private async write<T>(runId: string, what: string, action: (tx: SqlClient) => Promise<T>): Promise<T> {
    const once = () =>
      this.guard(what, () => this.database.transaction(action, { lockKey: `workflow-run:${runId}` }));
    const result = this.database.dialect === 'postgres' ? await whileReachable(once) : await once();
    afterCommittedWrite();
    return result;
  }

  /** A read, which on PostgreSQL rides out a restart as `write` does (the engine reads between its writes). */
  private read<T>(what: string, action: () => Promise<T>): Promise<T> {
    const once = () => this.guard(what, action);
    return this.database.dialect === 'postgres' ? whileReachable(once) : once();
  }

  private async guard<T>(what: string, action: () => Promise<T>): Promise<T> {
    try {
      return await action();
    } catch (error) {
      throw toStoreError(error, this.path, `cannot ${what} in`);
    }
  }
}

/** Who may write: the run's owner token, or a member job's claim on the step row `stepKey`. */
interface WriteFence {
  runId: string;
  token: string;
  stepKey?: string;
}

/** The run row, read at once (inside a transaction, or behind `getRun`). */
async function readRun(client: SqlClient, id: string): Promise<WorkflowRunRow | undefined> {
  const row = await client.get<RunTableRow>('SELECT * FROM workflow_runs WHERE id = ?', [id]);
  return row === undefined ? undefined : runFromRow(row);
}

type GateRow = {
  gate_row: number;
  step: string;
  visit: number | null;
  choice: string;
  text: string | null;
  answered_by: string;
  answered_at: number;
};
const GATE_COLUMNS = 'rowid AS gate_row, step, visit, choice, text, answered_by, answered_at';

function gateAnswerFromRow(row: GateRow, visit: number | undefined): StoredGateAnswer {
  const answer: StoredGateAnswer = {
    step: row.step,
    choice: row.choice,
    answeredBy: row.answered_by,
    answeredAt: Number(row.answered_at),
  };
  if (visit !== undefined) answer.visit = visit;
  if (row.text !== null) answer.text = row.text;
  return answer;
}

type GuidanceRow = {
  guidance_row: number;
  run_id: string;
  step: string | null;
  text: string;
  sent_by: string;
  sent_at: number;
  delivered_step: string | null;
  delivered_key: string | null;
  delivered_visit: number | null;
  delivered_turn: number | null;
  delivered_at: number | null;
};
const GUIDANCE_COLUMNS =
  'rowid AS guidance_row, run_id, step, text, sent_by, sent_at, delivered_step, delivered_key, delivered_visit, delivered_turn, delivered_at';

function guidanceFromRow(row: GuidanceRow): StoredGuidance {
  const guidance: StoredGuidance = {
    id: Number(row.guidance_row),
    runId: row.run_id,
    text: row.text,
    sentBy: row.sent_by,
    sentAt: Number(row.sent_at),
  };
  if (row.step !== null) guidance.step = row.step;
  if (row.delivered_at !== null) {
    guidance.delivered = {
      step: row.delivered_step ?? '',
      key: row.delivered_key ?? '',
      visit: Number(row.delivered_visit ?? 0),
      turn: Number(row.delivered_turn ?? 0),
      at: Number(row.delivered_at),
    };
  }
  return guidance;
}
