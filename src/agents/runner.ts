import { randomBytes } from 'node:crypto';
import { secretFolderList } from '../core/secrets.js';
import { withSpan } from '../observe/tracing.js';
import { sessionEventMessage, sessionObserver } from './session-events.js';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { SwitchboardError, isSwitchboardError, type ErrorCode } from '../core/errors.js';
import type { AgentInvocation, AgentOutcome } from './claude-agent.js';
import { claudeMcpConfig } from './mcp-servers.js';
import {
  attemptPrompt,
  DEFAULT_CONTEXT_TEMPLATE,
  loadContextTemplate,
  writeContextFiles,
  type AgentContext,
} from './context.js';
import { branchCommit, currentBranch, repositoryInfo, type RepositoryInfo } from './git.js';
import { agentEnvironment } from './environment.js';
import { MergeQueue, assertBaseCheckoutClean, mergeIntoBase, type MergeResult } from './merge.js';
import {
  hasCommit,
  openRemoteClone,
  pushBranch,
  remoteBranchCommit,
  remoteHeads,
  remoteLocation,
} from './remote.js';
import { mergeIntoRemote } from './remote-merge.js';
import { PROCESS_TAG_VARIABLE, killRunProcesses, runProcessTag } from './processes.js';
import { SANDBOX_VARIABLE } from '../confinement/sandbox.js';
import type { CommandSandbox, VerifyResult } from './verify.js';
import {
  describeRunner,
  isRunnerAlive,
  isRunnerHere,
  RUNNER_HEARTBEAT_MS,
  RUNNER_STALE_MS,
} from './runner-liveness.js';
import {
  commitChange,
  createWorktree,
  describeOutcome,
  judgeAttempt,
  runAgentAttempt,
  runSetup,
  verifyChange,
  type AgentFunction,
} from './phases.js';
import { AgentRunStore, type AgentPhase, type AgentRunRecord, type RunUpdate } from './run-store.js';
import {
  attemptSpend,
  checkAgentBudget,
  holdAgentAttempt,
  recordUnrecordedSpend,
  type AgentAttemptHold,
  type AgentSpending,
} from './agent-spend.js';
import type { BudgetRule } from '../invoke/budget.js';
import type { Ledger } from '../store/ledger.js';
import { runDirectory, toResult, transcriptPath, worktreePath } from './run-files.js';
import type { AgentTask, MergeMode } from './task.js';

export type { AgentFunction } from './phases.js';

/** How the runner reaches Claude Code. */
export type AgentConnection = NonNullable<AgentInvocation['connection']>;

/** A progress report: one per phase change and attempt, and periodically while the agent works. */
export interface AgentRunProgress {
  runId: string;
  taskId: string;
  phase: AgentPhase;
  attempt: number;
  costUsd: number;
  turns: number;
  elapsedMs: number;
  message: string;
  lastTool?: string;
}

/** Settings shared by `runAgentTask`, `runAgentTasks` and `resumeAgentRun`. */
export interface AgentRunnerOptions {
  /** Folder of the ledger, transcripts and worktrees. @default `.switchboard` in the current directory */
  stateDir?: string;
  /** How Claude Code is started and which API it talks to. */
  connection?: AgentConnection;
  /** Model for the agent when the task names none. */
  model?: string;
  /**
   * Spending caps (`budgets.rules` of switchboard.yaml): each attempt holds its cost cap against those
   * of provider `claude` before Claude Code starts, and is refused (`BUDGET_EXCEEDED`) when one is used
   * up. Every attempt's cost is recorded in the ledger either way. @default none
   */
  budgetRules?: readonly BudgetRule[];
  /**
   * First retry's delay (ms); doubles for each later retry.
   * @default 2000
   */
  retryDelayMs?: number;
  /** A template file for EXECUTION_CONTEXT.md. */
  contextTemplate?: string;
  abortSignal?: AbortSignal;
  onProgress?: (progress: AgentRunProgress) => void;
  /**
   * Told once per run when the setup or verify command ran unconfined because the sandbox is missing
   * (`SWITCHBOARD_AGENT_SANDBOX=auto` without `bwrap`). @default a `switchboard: warning:` line on stderr
   */
  onWarning?: (message: string) => void;
  /** Shared by runs that may merge into the same branch (`runAgentTasks` makes one). */
  mergeQueue?: MergeQueue;
  /**
   * Hands the merge of a run on a remote repository to a job queue (a worker's `switchboard.merges`)
   * once its commit is pushed, instead of merging in this process; the run stays in phase `merge`.
   */
  queueMerge?: (request: RemoteMergeJob) => Promise<void>;
  /** Test seams. */
  _internal?: { runAgent?: AgentFunction; cancelPollMs?: number };
}

/** A merge handed to a queue: the run, and the remote branch it merges into (one merge at a time per pair). */
export interface RemoteMergeJob {
  runId: string;
  remote: string;
  baseBranch: string;
}

export interface RunAgentTaskOptions extends AgentRunnerOptions {
  task: AgentTask;
  /**
   * Any directory inside the repository, or a remote: a URL (`file://`, `ssh://`, `https://`,
   * `user@host:path`) or the path of a bare repository, which the run clones under the state folder and
   * pushes to. @default the current directory
   */
  repo?: string;
  /** How the change reaches the base branch. @default the task's `merge`, else `no-ff` */
  merge?: MergeMode;
  /** Run id to use instead of a generated one. */
  runId?: string;
}

/** How a run ended. */
export interface AgentRunResult {
  id: string;
  taskId: string;
  ok: boolean;
  status: AgentRunRecord['status'];
  phase: AgentPhase;
  /** Set when the run did not succeed. */
  errorCode?: ErrorCode;
  error?: string;
  attempts: number;
  costUsd: number;
  turns: number;
  durationMs: number;
  branch: string;
  worktree: string;
  baseBranch: string;
  commit?: string;
  mergedCommit?: string;
  sessionId?: string;
  detail?: string;
  /** The run's commit is pushed and its merge was handed to the merge queue (`queueMerge`). */
  mergeQueued?: boolean;
  /** Merge mode `pr`: the pull request the run opened (or found open for its branch). */
  pullRequest?: { number: number; url: string };
}

/**
 * Runs one task: a worktree on a new branch, Claude Code in it, the verify command, a commit and a
 * merge into the base branch. Every step is recorded in the ledger before it happens, so a run
 * interrupted at any point can be resumed (`resumeAgentRun`).
 *
 * Bad input (a malformed task, a directory that is not a repository, an unknown base, a missing Claude
 * Code) throws before anything is recorded. Once the run exists, failures are returned in the result
 * (`ok: false`, `errorCode`), never thrown.
 */
export async function runAgentTask(options: RunAgentTaskOptions): Promise<AgentRunResult> {
  const stateDir = resolve(options.stateDir ?? '.switchboard');
  const prepared = await prepareAgentRun(options);
  await checkClaudeAvailable(options);
  const store = await AgentRunStore.open(stateDir);
  try {
    const runId = await insertQueuedRun(store, stateDir, prepared, process.pid);
    const repository = await openRunRepository(prepared.repo, stateDir, options.abortSignal);
    return await (await RunExecution.load(store, stateDir, repository, runId, options)).execute();
  } finally {
    await store.close();
  }
}

/** A task checked against its repository, ready to be recorded as a run. */
interface PreparedRun {
  task: AgentTask;
  /** As recorded: the main worktree's path, or the remote. */
  repo: string;
  baseBranch: string;
  baseCommit: string;
  runId: string;
  storedOptions: AgentRunRecord['options'];
}

/** Checks a task against its repository (base branch, clean checkout, context template); records nothing. */
async function prepareAgentRun(options: RunAgentTaskOptions): Promise<PreparedRun> {
  const { task } = options;
  const merge = options.merge ?? task.merge ?? 'no-ff';
  const remote = await remoteLocation(options.repo ?? process.cwd());
  const { repo, baseBranch, baseCommit } =
    remote === undefined
      ? await localBase(options.repo ?? process.cwd(), task, merge)
      : await remoteBase(remote, task);
  if (options.contextTemplate !== undefined) loadContextTemplate(options.contextTemplate);
  // Checked before anything is recorded: a run that could never open its pull request must not pay an agent.
  if (merge === 'pr') await (await import('./pull-request.js')).pullRequestTarget(task, repo, remote);
  const storedOptions: AgentRunRecord['options'] = {
    merge,
    retryDelayMs: options.retryDelayMs ?? 2000,
  };
  const model = task.model ?? options.model;
  if (model !== undefined) storedOptions.model = model;
  if (options.contextTemplate !== undefined) storedOptions.contextTemplate = resolve(options.contextTemplate);
  const runId = options.runId ?? `${task.id}-${randomBytes(3).toString('hex')}`;
  return { task, repo, baseBranch, baseCommit, runId, storedOptions };
}

type RunBase = Pick<PreparedRun, 'repo' | 'baseBranch' | 'baseCommit'>;

/** The base of a run in a local repository: its checked-out branch unless the task names one. */
async function localBase(directory: string, task: AgentTask, merge: MergeMode): Promise<RunBase> {
  const repository = await repositoryInfo(directory);
  const baseBranch = task.base ?? (await currentBranch(repository.root));
  if (baseBranch === undefined) {
    throw new SwitchboardError(
      'UNKNOWN_BASE',
      `${repository.root} has no branch checked out (detached HEAD)`,
      {
        hint: 'give the task a `base` branch, or pass --base BRANCH',
      },
    );
  }
  const baseCommit = await branchCommit(repository.root, baseBranch);
  if (baseCommit === undefined) {
    throw new SwitchboardError('UNKNOWN_BASE', `there is no branch "${baseBranch}" in ${repository.root}`, {
      hint: 'set `base` to an existing local branch (see `git branch`), or create it first',
    });
  }
  await assertBaseCheckoutClean({ repository, baseBranch, mode: merge });
  return { repo: repository.root, baseBranch, baseCommit };
}

/** The base of a run on a remote: the remote's default branch unless the task names one, read without cloning. */
async function remoteBase(remote: string, task: AgentTask): Promise<RunBase> {
  const heads = await remoteHeads(remote);
  const baseBranch = task.base ?? heads.head;
  const baseCommit = baseBranch === undefined ? undefined : heads.branches.get(baseBranch);
  if (baseBranch === undefined || baseCommit === undefined) {
    throw new SwitchboardError(
      'UNKNOWN_BASE',
      baseBranch === undefined
        ? `the remote ${remote} has no default branch`
        : `the remote ${remote} has no branch "${baseBranch}"`,
      { hint: 'set `base` to a branch the remote has (see `git ls-remote --heads URL`), or push it first' },
    );
  }
  return { repo: remote, baseBranch, baseCommit };
}

/** The repository a run works in on this machine: the recorded one, or this machine's clone of its remote. */
interface RunRepository {
  info: RepositoryInfo;
  /** Set for a run on a remote: its URL or bare repository path. */
  remote?: string;
}

/** Opens the recorded repository; a remote's clone is made or fetched now. */
async function openRunRepository(
  repo: string,
  stateDir: string,
  abortSignal?: AbortSignal,
): Promise<RunRepository> {
  const remote = await remoteLocation(repo);
  if (remote === undefined) return { info: await repositoryInfo(repo) };
  return { info: await openRemoteClone(stateDir, remote, abortSignal), remote };
}

/** Records a prepared run in phase `queued`, held by `runnerPid` (none: it waits for a worker). */
async function insertQueuedRun(
  store: AgentRunStore,
  stateDir: string,
  { task, repo, baseBranch, baseCommit, runId, storedOptions }: PreparedRun,
  runnerPid: number | undefined,
): Promise<string> {
  const record: AgentRunRecord = {
    id: runId,
    taskId: task.id,
    title: task.title,
    repo,
    baseBranch,
    baseCommit,
    branch: `agent/${runId}`,
    worktree: worktreePath(stateDir, runId),
    phase: 'queued',
    status: 'running',
    attempt: 0,
    costUsd: 0,
    turns: 0,
    task,
    options: storedOptions,
    createdAt: '',
    updatedAt: '',
  };
  if (runnerPid !== undefined) record.runnerPid = runnerPid;
  await store.insert(record);
  await store.addEvent(
    runId,
    'queued',
    'phase',
    `queued: ${task.title} (base ${baseBranch} at ${baseCommit.slice(0, 12)})`,
  );
  return runId;
}

/** What `recordAgentRun` needs: `runAgentTask`'s options without the runner's own. */
export type RecordAgentRunOptions = Pick<
  RunAgentTaskOptions,
  'task' | 'repo' | 'merge' | 'runId' | 'stateDir' | 'model' | 'retryDelayMs' | 'contextTemplate'
>;

/**
 * Checks a task as `runAgentTask` does and records it as a `queued` run with no runner, for a worker
 * (`executeAgentRun`) to pick up; `store` is the database the workers share. Returns the run id.
 */
export async function recordAgentRun(store: AgentRunStore, options: RecordAgentRunOptions): Promise<string> {
  const stateDir = resolve(options.stateDir ?? '.switchboard');
  return await insertQueuedRun(store, stateDir, await prepareAgentRun(options), undefined);
}

export interface ExecuteAgentRunOptions extends AgentRunnerOptions {
  runId: string;
  /** The PostgreSQL database holding the run. @default `SWITCHBOARD_DATABASE_URL`, else the SQLite ledger */
  url?: string;
  /**
   * Stops the run without ending it (a worker that stops or lost its job): the agent and verify
   * command are killed, the run keeps its recorded phase, and the next `executeAgentRun` resumes it.
   */
  releaseSignal?: AbortSignal;
  /** Only merge (a merge job): a run that is not in its merge phase is returned as it is. */
  onlyMerge?: boolean;
}

/**
 * Drives a recorded run from its phase to an end, taking it over from whichever runner held it: the
 * job queue decided this process runs it (a queued run, or one whose worker died or let go). A run
 * that has ended is returned as it is. Returns `status: 'running'` when `releaseSignal` stopped it.
 */
export async function executeAgentRun(options: ExecuteAgentRunOptions): Promise<AgentRunResult> {
  const stateDir = resolve(options.stateDir ?? '.switchboard');
  const store = await AgentRunStore.open(stateDir, options.url === undefined ? {} : { url: options.url });
  try {
    const run = await store.get(options.runId);
    if (run === undefined) {
      throw new SwitchboardError('RUN_NOT_FOUND', `there is no agent run ${options.runId} in ${store.path}`, {
        hint: 'the job names a run its database does not hold; enqueue the task again',
      });
    }
    if (run.endedAt !== undefined || run.status !== 'running') return toResult(run);
    if (options.onlyMerge === true && run.phase !== 'merge') return toResult(run);
    if (!(await store.claim(run.id, run, process.pid))) {
      throw new SwitchboardError('INVALID_INPUT', `agent run ${run.id} was picked up by another process`, {
        hint: 'watch it with `switchboard agent show`',
        details: { claimed: true },
      });
    }
    // A merge needs git only: a worker serving just the merge queue may have no Claude Code.
    if (run.phase !== 'merge') await checkClaudeAvailable(options);
    const resumed = run.runnerPid !== undefined || run.phase !== 'queued';
    if (resumed) {
      // A runner of this machine that died may have left its agent running: it must not race this one.
      // Found by the run's tag only: the recorded child pid may be another machine's, and here some
      // unrelated process's.
      killRunProcesses(undefined, run.id);
      // Claude Code keeps a session in the config folder of the machine that ran it; a worker elsewhere
      // cannot resume it. The next attempt starts a new session, told the previous one was interrupted.
      if (run.sessionId !== undefined) await store.update(run.id, { sessionId: null });
      await store.addEvent(
        run.id,
        run.phase,
        'resume',
        `resumed in phase ${run.phase} by pid ${process.pid}`,
        {
          previousRunnerPid: run.runnerPid,
        },
      );
    }
    const repository = await openRunRepository(run.repo, stateDir, options.releaseSignal);
    const runOptions =
      options.model === undefined && run.options.model !== undefined
        ? { ...options, model: run.options.model }
        : options;
    return await (
      await RunExecution.load(store, stateDir, repository, run.id, runOptions, resumed)
    ).execute();
  } finally {
    await store.close();
  }
}

export interface ResumeAgentRunOptions extends AgentRunnerOptions {
  runId: string;
}

/**
 * Picks a run up where it stopped: after a crash of its runner (even `kill -9`), or after a merge
 * conflict (the merge is tried again). Refuses a run whose runner is still alive, or that has ended.
 */
export async function resumeAgentRun(options: ResumeAgentRunOptions): Promise<AgentRunResult> {
  const stateDir = resolve(options.stateDir ?? '.switchboard');
  const store = await AgentRunStore.open(stateDir);
  try {
    const run = await store.find(options.runId);
    if (run === undefined) {
      throw new SwitchboardError('RUN_NOT_FOUND', `there is no agent run ${options.runId} in ${store.path}`, {
        hint: 'list runs with `switchboard agent ls` (in the same folder, or with the same --state-dir)',
      });
    }
    if (run.status !== 'running' && run.status !== 'conflict') {
      throw new SwitchboardError('INVALID_INPUT', `agent run ${run.id} has ended (${run.status})`, {
        hint: 'only an interrupted run, or one that stopped on a conflict, can be resumed; start a new run instead',
      });
    }
    const ours = run.runnerPid === process.pid && isRunnerHere(run);
    if (!ours && isRunnerAlive(run)) {
      throw new SwitchboardError(
        'INVALID_INPUT',
        `agent run ${run.id} is still running (runner ${describeRunner(run)})`,
        {
          hint: isRunnerHere(run)
            ? 'wait for it, or stop it with `switchboard agent cancel`'
            : `wait for it, or stop it with \`switchboard agent cancel\`; a runner elsewhere that stops stamping the run for ${RUNNER_STALE_MS / 1000} s is taken for gone`,
        },
      );
    }
    // Before the claim: a refused resume leaves the run as it was, to be resumed once the checkout is clean.
    // A remote's base has no checkout to be dirty.
    if ((await remoteLocation(run.repo)) === undefined) {
      await assertBaseCheckoutClean({
        repository: await repositoryInfo(run.repo),
        baseBranch: run.baseBranch,
        mode: run.options.merge,
        runId: run.id,
      });
    }
    if (!(await store.claim(run.id, run, process.pid))) {
      throw new SwitchboardError('INVALID_INPUT', `agent run ${run.id} was picked up by another process`, {
        hint: 'watch it with `switchboard agent show`',
      });
    }
    await checkClaudeAvailable(options);
    // The agent of a crashed runner may still be running; it must not race the resumed one. A child pid
    // recorded on another machine is not this machine's to signal: only the run's tagged processes are.
    killRunProcesses(isRunnerHere(run) ? run.childPid : undefined, run.id);
    const repository = await openRunRepository(run.repo, stateDir, options.abortSignal);
    if (run.status === 'conflict') {
      await store.update(run.id, {
        status: 'running',
        phase: 'merge',
        errorCode: null,
        error: null,
        ended: false,
      });
    }
    await store.addEvent(run.id, run.phase, 'resume', `resumed in phase ${run.phase} by pid ${process.pid}`, {
      previousRunnerPid: run.runnerPid,
    });
    const runOptions =
      options.model === undefined && run.options.model !== undefined
        ? { ...options, model: run.options.model }
        : options;
    return await (await RunExecution.load(store, stateDir, repository, run.id, runOptions, true)).execute();
  } finally {
    await store.close();
  }
}

async function checkClaudeAvailable(options: AgentRunnerOptions): Promise<void> {
  if (options._internal?.runAgent !== undefined) return;
  const { resolveClaudeExecutable } = await import('../providers/claude-code/executable.js');
  resolveClaudeExecutable(options.connection?.executable ?? process.env['SWITCHBOARD_CLAUDE_PATH']);
}

class RunFinished extends Error {}

/** One run being driven from its recorded phase to an end. */
class RunExecution {
  private run: AgentRunRecord;
  private readonly started = Date.now();
  private readonly deadline: number;
  private readonly abort = new AbortController();
  private readonly signal: AbortSignal;
  /** See `ExecuteAgentRunOptions.releaseSignal`. */
  private readonly releaseSignal: AbortSignal | undefined;
  private readonly template: string;

  private readonly store: AgentRunStore;
  private readonly stateDir: string;
  /** The repository the worktree is made in: the user's, or this machine's clone of the run's remote. */
  private readonly repository: RepositoryInfo;
  /** The run's remote, when it has one: the effect point is then a push to it. */
  private readonly remote: string | undefined;
  private readonly options: AgentRunnerOptions;
  private readonly resumed: boolean;
  /** Set once the merge was handed to the merge queue. */
  private mergeQueued = false;
  /** A resumed run's worktree was made anew here: the interrupted attempt's files stayed on another machine. */
  private worktreeRemade = false;
  /** The tail of the run's writes (settled, never rejected): see `serially`. */
  private writes: Promise<unknown> = Promise.resolve();
  /** Another process claimed the run (a worker took it over): this runner writes nothing more. */
  private lost = false;
  /** The user was told that setup or verify ran outside the sandbox: once per run is enough. */
  private unconfinedWarned = false;
  /** The ledger the attempts' spending is held and recorded in, opened at the first need. */
  private spending: AgentSpending | undefined;

  /** Reads the run as recorded, to drive it from its phase. */
  static async load(
    store: AgentRunStore,
    stateDir: string,
    repository: RunRepository,
    runId: string,
    options: AgentRunnerOptions,
    resumed = false,
  ): Promise<RunExecution> {
    const run = await store.get(runId);
    if (run === undefined) throw new SwitchboardError('RUN_NOT_FOUND', `agent run ${runId} vanished`);
    return new RunExecution(store, stateDir, repository, run, options, resumed);
  }

  private constructor(
    store: AgentRunStore,
    stateDir: string,
    repository: RunRepository,
    run: AgentRunRecord,
    options: AgentRunnerOptions,
    resumed: boolean,
  ) {
    this.store = store;
    this.stateDir = stateDir;
    this.repository = repository.info;
    this.remote = repository.remote;
    this.options = options;
    this.resumed = resumed;
    this.run = run;
    this.deadline = this.started + run.task.limits.wallClockMs;
    const release = (options as ExecuteAgentRunOptions).releaseSignal;
    this.releaseSignal = release;
    const signals = [options.abortSignal, release, this.abort.signal].filter(
      (signal): signal is AbortSignal => signal !== undefined,
    );
    this.signal = signals.length === 1 ? this.abort.signal : AbortSignal.any(signals);
    const templateFile = run.options.contextTemplate;
    this.template = templateFile === undefined ? DEFAULT_CONTEXT_TEMPLATE : loadContextTemplate(templateFile);
  }

  /**
   * Drives the run to an end, a release or a cancel.
   *
   * @throws SwitchboardError (`details.claimed`) when another process claimed the run meanwhile
   */
  execute(): Promise<AgentRunResult> {
    return withSpan(
      `invoke_agent ${this.run.taskId}`,
      {
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.provider.name': 'anthropic',
        'gen_ai.agent.id': this.run.id,
        'gen_ai.agent.name': this.run.taskId,
        'switchboard.agent.run.id': this.run.id,
        'switchboard.agent.phase': this.run.phase,
      },
      async (span) => {
        const result = await this.executeUntraced();
        span.set({
          'switchboard.agent.status': result.status,
          'switchboard.agent.turns': result.turns,
          'switchboard.cost_usd': result.costUsd,
        });
        if (!result.ok && result.errorCode !== undefined)
          span.fail({ code: result.errorCode, message: result.error ?? result.errorCode });
        return result;
      },
    );
  }

  private async executeUntraced(): Promise<AgentRunResult> {
    const result = await this.drive();
    // Once its merge is queued the run is the merge job's: a claim by it is the hand-over, not a loss.
    if (this.lost && !this.mergeQueued) {
      throw new SwitchboardError(
        'INVALID_INPUT',
        `agent run ${this.run.id} was picked up by another process`,
        {
          hint: 'watch it with `switchboard agent show`',
          details: { claimed: true },
        },
      );
    }
    return result;
  }

  private async drive(): Promise<AgentRunResult> {
    // `cancel` from another process marks the run; the runner notices here and stops its children.
    // One read at a time; a read that fails (the ledger locked past its busy timeout) is tried again
    // at the next tick rather than ending the process.
    // Every few polls it also stamps the run's heartbeat, which tells other machines this runner lives.
    let reading: Promise<void> | undefined;
    let lastBeat = Date.now();
    const poll = setInterval(() => {
      const beat = Date.now() - lastBeat >= RUNNER_HEARTBEAT_MS;
      if (beat) lastBeat = Date.now();
      reading ??= (beat ? this.store.heartbeat(this.run.id, process.pid) : Promise.resolve(true))
        .then(() => this.store.get(this.run.id))
        .then(
          (current) => {
            reading = undefined;
            if (current !== undefined && this.takenOver(current)) this.loseRun();
            else if (current?.status === 'cancelled') this.abort.abort(new Error('cancelled'));
          },
          () => {
            reading = undefined;
          },
        );
    }, this.options._internal?.cancelPollMs ?? 500);
    poll.unref();
    try {
      if (this.remote !== undefined) await this.settleOnThisMachine();
      for (;;) {
        this.signal.throwIfAborted();
        switch (this.run.phase) {
          case 'queued':
            // A budget already spent refuses the run before its worktree, setup or agent.
            await this.withinBudget(checkAgentBudget);
            await this.setPhase('worktree', 'creating the worktree');
            break;
          case 'worktree':
            await this.ensureWorktree();
            await this.setupWorktree();
            await this.setPhase('agent', 'starting the agent');
            break;
          case 'agent':
            await this.agentPhase();
            break;
          case 'verify':
            await this.verifyPhase();
            break;
          case 'merge':
            await this.mergePhase();
            break;
          default:
            return await this.result();
        }
      }
    } catch (error) {
      if (!(error instanceof RunFinished)) await this.fail(error);
      return await this.result();
    } finally {
      clearInterval(poll);
      await reading;
      await this.spending?.ledger.close();
      if (this.run.endedAt !== undefined) rmSync(this.claudeConfigDir(), { recursive: true, force: true });
      await this.update({ childPid: null }).catch((error: unknown) => {
        if (!(error instanceof RunFinished)) throw error;
      });
    }
  }

  /** The run's CLAUDE_CONFIG_DIR: beside its transcripts, outside the worktree, kept across attempts for `resume`. */
  private claudeConfigDir(): string {
    return join(runDirectory(this.stateDir, this.run.id), 'claude');
  }

  /** Whether another process now holds the run (it claimed it while this runner still worked on it). */
  private takenOver(current: AgentRunRecord): boolean {
    if (current.runnerPid === undefined || current.endedAt !== undefined) return false;
    return current.runnerPid !== process.pid || (current.runnerHost ?? hostname()) !== hostname();
  }

  /** Stops the run's work here without another write: the process that claimed it carries on. */
  private loseRun(): void {
    if (this.lost) return;
    this.lost = true;
    this.abort.abort(new Error('taken over by another process'));
  }

  // ---- phases ------------------------------------------------------------------------------------

  private async ensureWorktree(): Promise<'created' | 'existing'> {
    const { branch, worktree, baseCommit } = this.run;
    // Made before a crash, a worktree is kept with whatever is in it.
    const made = await createWorktree({
      repository: this.repository,
      stateDir: this.stateDir,
      branch,
      worktree,
      baseCommit,
      abortSignal: this.signal,
    });
    await this.event('worktree', `worktree ${worktree} on branch ${branch}`);
    return made;
  }

  /**
   * A run on a remote may come to this machine in any phase, from a runner elsewhere whose worktree and
   * unpushed commits are not here. Its worktree path becomes this machine's; a run not started yet starts
   * from the remote base as fetched now; a run in its agent or verify phase gets a worktree here (set up
   * anew, the attempt redone); a run whose recorded commit is neither here nor pushed starts over from its
   * worktree. A pushed commit is adopted: the agent does not run again.
   */
  private async settleOnThisMachine(): Promise<void> {
    const local = worktreePath(this.stateDir, this.run.id);
    if (this.run.worktree !== local) await this.update({ worktree: local });
    const { phase, commitSha, baseBranch } = this.run;
    if (phase === 'queued') {
      const tip = await remoteBranchCommit(this.repository.root, baseBranch);
      if (tip !== undefined && tip !== this.run.baseCommit) await this.update({ baseCommit: tip });
      return;
    }
    const lost =
      phase === 'merge' &&
      (commitSha === undefined ? !existsSync(local) : !(await hasCommit(this.repository.root, commitSha)));
    if (lost) {
      await this.update({ commitSha: null });
      await this.setPhase(
        'worktree',
        'the run’s commit was made on a machine that is gone, unpushed: starting over',
      );
      return;
    }
    if ((phase === 'agent' || phase === 'verify') && (await this.ensureWorktree()) === 'created') {
      this.worktreeRemade = true;
      await this.setupWorktree();
      if (phase === 'verify') await this.setPhase('agent', 'the worktree was made anew on this machine');
    }
  }

  /** The task's setup command, once per new worktree; a failure ends the run (the agent never starts). */
  private async setupWorktree(): Promise<void> {
    const { setup } = this.run.task;
    if (setup === undefined) return;
    await this.event('setup', `setting up: ${setup.command}`);
    const { result, failure } = await runSetup({
      command: setup.command,
      timeoutMs: setup.timeoutMs,
      worktree: this.run.worktree,
      baseCommit: this.run.baseCommit,
      env: this.commandEnvironment(),
      sandbox: this.commandSandbox(),
      abortSignal: this.signal,
      onSpawn: (pid) => this.updateSoon({ childPid: pid }),
    });
    await this.update({ childPid: null });
    await this.stopIfCancelled();
    this.warnIfUnconfined('setup', result.sandbox);
    mkdirSync(runDirectory(this.stateDir, this.run.id), { recursive: true });
    writeFileSync(join(runDirectory(this.stateDir, this.run.id), 'setup.log'), result.outputTail);
    if (failure !== undefined) {
      if (!result.passed) await this.update({ detail: result.outputTail.slice(-3000) });
      await this.finish('failed', 'failed', 'SETUP_FAILED', failure);
    }
    await this.event('setup', `setup passed in ${result.durationMs} ms`, { sandbox: result.sandbox });
  }

  /**
   * What the run's commands must not see: the checkout (its `.env`), the folder Switchboard loaded `.env`
   * from, the ledger and other runs' folders.
   */
  private hiddenDirectories(): string[] {
    return [this.repository.root, this.stateDir, ...secretFolderList()];
  }

  /** Where setup and verify run: hidden as the agent's commands, reading the repository's git folder. */
  private commandSandbox(): CommandSandbox {
    return { hiddenDirectories: this.hiddenDirectories(), gitDirectory: this.repository.commonDir };
  }

  /** Says once per run that a command ran unconfined for want of `bwrap`; `off` was the user's choice. */
  private warnIfUnconfined(command: 'setup' | 'verify', sandbox: VerifyResult['sandbox']): void {
    if (sandbox === undefined || sandbox.enabled || this.unconfinedWarned) return;
    if (process.env[SANDBOX_VARIABLE] === 'off') return;
    this.unconfinedWarned = true;
    const warn =
      this.options.onWarning ??
      ((message: string) => process.stderr.write(`switchboard: warning: ${message}\n`));
    warn(
      `run ${this.run.id}: the ${command} command ran outside the sandbox (${sandbox.reason ?? 'unavailable'}), with your user's access; install bubblewrap (apt-get install bubblewrap) or set ${SANDBOX_VARIABLE}=required`,
    );
  }

  /** The environment of commands the runner starts in the worktree: no foreign credentials, the run's tag. */
  private commandEnvironment(): Record<string, string> {
    return {
      ...agentEnvironment(process.env, this.run.task.passEnvironment),
      [PROCESS_TAG_VARIABLE]: runProcessTag(this.run.id),
    };
  }

  private async agentPhase(): Promise<void> {
    // A resumed run redoes the attempt its runner was in; otherwise this is the next attempt.
    const interrupted = this.resumed && this.run.attempt > 0 && !(await this.attemptEnded());
    const attempt = interrupted ? this.run.attempt : this.run.attempt + 1;
    const { remainingBudget, remainingTime } = await this.checkAttemptLimits(attempt);
    // Before the attempt is counted: a refused one never started.
    const hold = await this.withinBudget(async (spending) => {
      await recordUnrecordedSpend(spending, this.run.costUsd, this.run.attempt, this.model());
      return holdAgentAttempt(spending, {
        attempt,
        model: this.model(),
        capUsd: remainingBudget,
        timeoutMs: remainingTime,
      });
    });
    try {
      await this.runAttempt(attempt, interrupted, hold, remainingTime);
    } finally {
      await hold.release();
    }
  }

  /** One attempt, its budget held: Claude Code in the worktree, then what its outcome means for the run. */
  private async runAttempt(
    attempt: number,
    interrupted: boolean,
    hold: AgentAttemptHold,
    remainingTime: number,
  ): Promise<void> {
    let feedback = this.run.detail;
    if (interrupted) {
      const files = this.worktreeRemade
        ? 'It ran on another machine: files it wrote are not here, so do the whole task.'
        : 'Files it wrote are still in the working directory; check them and finish the task.';
      feedback = `The previous attempt was interrupted (its runner stopped). ${files}${feedback === undefined ? '' : `\n\nBefore that:\n${feedback}`}`;
    }
    const sessionId =
      this.run.sessionId ?? (interrupted ? sessionFromTranscript(this.transcript(attempt)) : undefined);
    await this.update({ attempt, detail: null });
    await this.attemptStarted(attempt);
    const context: AgentContext = {
      runId: this.run.id,
      task: this.run.task,
      worktree: this.run.worktree,
      branch: this.run.branch,
      baseBranch: this.run.baseBranch,
      baseCommit: this.run.baseCommit,
      attempt,
    };
    if (feedback !== undefined) context.feedback = feedback;
    writeContextFiles(context, this.template);
    mkdirSync(runDirectory(this.stateDir, this.run.id), { recursive: true });

    const costBefore = this.run.costUsd;
    const turnsBefore = this.run.turns;
    const invocation = this.invocation(context, sessionId, hold.capUsd, remainingTime);
    const outcome = await runAgentAttempt(invocation, this.options._internal?.runAgent);
    await hold.settle(attemptSpend(outcome));
    const update: RunUpdate = {
      childPid: null,
      costUsd: costBefore + outcome.costUsd,
      turns: turnsBefore + outcome.turns,
    };
    if (outcome.sessionId !== undefined) update.sessionId = outcome.sessionId;
    await this.update(update);
    // A released attempt is not over: left without its end, the next runner redoes it in its session.
    if (this.releaseSignal?.aborted === true) await this.throwAborted();
    await this.attemptEnd(attempt, outcome, invocation.transcriptPath);
    await this.stopIfCancelled();

    const verdict = await judgeAttempt(outcome, this.run.worktree, this.run.baseCommit);
    switch (verdict.kind) {
      case 'final':
        await this.finish('failed', 'failed', verdict.code, budgetNote(verdict, hold));
        break;
      case 'api':
        // The worktree keeps what the agent wrote.
        await this.update({ detail: describeOutcome(outcome) });
        await this.finish('failed', 'failed', verdict.code, verdict.message);
        break;
      case 'retry':
        await this.retryOrFail(verdict.code, verdict.failure);
        break;
      default:
        await this.setPhase(
          'verify',
          this.run.task.verify === undefined ? 'checking the change' : `verifying: ${this.run.task.verify}`,
        );
    }
  }

  /** The model the agent runs: the task's, else the runner's, else Claude Code's default. */
  private model(): string | undefined {
    return this.run.task.model ?? this.options.model ?? this.run.options.model;
  }

  /**
   * Runs `action` with the ledger the attempts' spending goes to (opened the first time); a budget
   * that refuses ends the run with `BUDGET_EXCEEDED`.
   */
  private async withinBudget<T>(action: (spending: AgentSpending) => Promise<T>): Promise<T> {
    if (this.spending === undefined) {
      const { openLedger } = await import('../store/ledger.js');
      const url = (this.options as ExecuteAgentRunOptions).url;
      const ledger: Ledger = openLedger({ stateDir: this.stateDir, ...(url === undefined ? {} : { url }) });
      this.spending = {
        ledger,
        rules: this.options.budgetRules ?? [],
        callId: this.run.id,
        tags: { agent_run: this.run.id, agent_task: this.run.taskId },
        runTag: `agent_run=${this.run.id}`,
        since: Date.parse(this.run.createdAt),
      };
    }
    try {
      return await action(this.spending);
    } catch (error) {
      if (!isSwitchboardError(error) || error.code !== 'BUDGET_EXCEEDED') throw error;
      const hint = error.hint === undefined ? '' : `; ${error.hint}`;
      return await this.finish('failed', 'failed', 'BUDGET_EXCEEDED', `${error.message}${hint}`);
    }
  }

  /** Ends the run when no attempt, budget or time is left for `attempt`; otherwise what is left. */
  private async checkAttemptLimits(
    attempt: number,
  ): Promise<{ remainingBudget: number; remainingTime: number }> {
    const { limits } = this.run.task;
    if (attempt > limits.maxAttempts) {
      await this.finish(
        'failed',
        'failed',
        this.run.errorCode === undefined ? 'AGENT_FAILED' : (this.run.errorCode as ErrorCode),
        this.run.error ?? 'no attempts left',
      );
    }
    const remainingBudget = limits.maxCostUsd - this.run.costUsd;
    if (remainingBudget <= 0) {
      await this.finish(
        'failed',
        'failed',
        'BUDGET_EXCEEDED',
        `the run has spent $${this.run.costUsd.toFixed(4)} of its $${limits.maxCostUsd} cap`,
      );
    }
    const remainingTime = this.deadline - Date.now();
    if (remainingTime <= 0)
      await this.finish('failed', 'failed', 'TIMEOUT', 'the run reached its wall-clock limit');
    return { remainingBudget, remainingTime };
  }

  /** What Claude Code is started with for one attempt: the task's tools and limits, the run's bookkeeping. */
  private invocation(
    context: AgentContext,
    sessionId: string | undefined,
    remainingBudget: number,
    remainingTime: number,
  ): AgentInvocation {
    const { task } = this.run;
    const costBefore = this.run.costUsd;
    const turnsBefore = this.run.turns;
    let lastProgressWrite = 0;
    // The session's turns, tool calls and results, as the run's events (written in order, not awaited).
    const observe = sessionObserver((event) => {
      if (this.lost) return;
      const { id, phase } = this.run;
      void this.serially(() =>
        this.store.addEvent(id, phase, event.type, sessionEventMessage(event), event.data),
      ).catch(() => undefined);
    });
    const invocation: AgentInvocation = {
      cwd: this.run.worktree,
      prompt: attemptPrompt(context, sessionId !== undefined),
      appendSystemPrompt: [
        `You are working on task ${task.id} in the git worktree ${this.run.worktree}. Only change files inside it; do not commit, the runner does.`,
        task.instructions ?? '',
      ]
        .filter(Boolean)
        .join('\n'),
      allowedTools: task.tools,
      maxTurns: task.limits.maxTurns,
      maxCostUsd: remainingBudget,
      idleTimeoutMs: task.limits.idleTimeoutMs,
      wallClockMs: remainingTime,
      transcriptPath: this.transcript(context.attempt),
      abortSignal: this.signal,
      processTag: runProcessTag(this.run.id),
      passEnvironment: task.passEnvironment,
      // The checkout's `.env`, the ledger and other runs' folders: not for the agent's commands.
      hiddenDirectories: this.hiddenDirectories(),
      gitDirectory: this.repository.commonDir,
      onSpawn: (pid) => this.updateSoon({ childPid: pid }),
      onMessage: observe,
      onProgress: (progress) => {
        const now = Date.now();
        if (now - lastProgressWrite >= 500) {
          lastProgressWrite = now;
          this.updateSoon({ costUsd: costBefore + progress.costUsd, turns: turnsBefore + progress.turns });
        }
        this.report(
          `agent working${progress.lastTool === undefined ? '' : ` (${progress.lastTool})`}`,
          progress.lastTool,
        );
      },
    };
    if (task.mcpServers !== undefined) {
      // Expanded here, in the runner's environment: the recorded task keeps only `${VAR}`.
      const mcp = claudeMcpConfig(task.mcpServers);
      invocation.mcpServers = mcp.servers;
      invocation.allowedTools = [...task.tools, ...mcp.tools];
    }
    if (sessionId !== undefined) invocation.resumeSessionId = sessionId;
    const model = this.model();
    if (model !== undefined) invocation.model = model;
    // Claude Code's config and session logs live in the run's own folder (removed when the run ends),
    // not in the user's ~/.claude, unless the caller chose a folder.
    invocation.connection = {
      ...this.options.connection,
      configDir: this.options.connection?.configDir ?? this.claudeConfigDir(),
    };
    return invocation;
  }

  private async attemptEnd(attempt: number, outcome: AgentOutcome, transcript: string): Promise<void> {
    await this.event(
      'attempt-end',
      `attempt ${attempt}: ${outcome.status}${outcome.subtype === undefined ? '' : ` (${outcome.subtype})`}, $${outcome.costUsd.toFixed(4)}, ${outcome.turns} turns`,
      {
        attempt,
        status: outcome.status,
        subtype: outcome.subtype,
        isError: outcome.isError,
        costUsd: outcome.costUsd,
        turns: outcome.turns,
        durationMs: outcome.durationMs,
        denied: outcome.denied,
        sandbox: outcome.sandbox,
        error: outcome.error,
        resultText: outcome.resultText?.slice(0, 2000),
        transcript,
      },
    );
  }

  private async verifyPhase(): Promise<void> {
    const { task } = this.run;
    const checked = await verifyChange({
      worktree: this.run.worktree,
      baseCommit: this.run.baseCommit,
      ...(task.verify === undefined ? {} : { command: task.verify }),
      timeoutMs: task.limits.verifyTimeoutMs,
      abortSignal: this.signal,
      env: this.commandEnvironment(),
      sandbox: this.commandSandbox(),
      onSpawn: (pid) => this.updateSoon({ childPid: pid }),
    });
    const { verify } = checked;
    if (verify !== undefined) {
      await this.update({ childPid: null });
      await this.stopIfCancelled();
      this.warnIfUnconfined('verify', verify.sandbox);
      writeFileSync(
        join(runDirectory(this.stateDir, this.run.id), `verify-${this.run.attempt}.log`),
        verify.outputTail,
      );
      await this.event(
        'verify',
        `verify ${verify.passed ? 'passed' : verify.timedOut ? 'timed out' : `failed (exit ${verify.exitCode ?? '?'})`} in ${verify.durationMs} ms`,
        {
          attempt: this.run.attempt,
          passed: verify.passed,
          exitCode: verify.exitCode,
          timedOut: verify.timedOut,
          durationMs: verify.durationMs,
          outputTail: verify.outputTail.slice(-2000),
          sandbox: verify.sandbox,
        },
      );
    }
    if (checked.passed) {
      await this.setPhase('merge', 'committing and merging');
      return;
    }
    await this.retryOrFail(checked.code ?? 'VERIFY_FAILED', checked.failure ?? 'verify failed');
  }

  private async mergePhase(): Promise<void> {
    if (this.run.options.merge === 'pr') return await this.pullRequestPhase();
    if (this.remote !== undefined) return await this.remoteMergePhase(this.remote);
    const commit = this.run.commitSha ?? (await this.commit());
    const mode = this.run.options.merge;
    const queue = this.options.mergeQueue ?? new MergeQueue();
    const request = {
      repo: this.repository.root,
      commonDir: this.repository.commonDir,
      baseBranch: this.run.baseBranch,
      branch: this.run.branch,
      commit,
      mode,
      message: `Merge ${this.run.branch}: ${this.run.task.title}\n\nswitchboard agent run ${this.run.id}`,
      abortSignal: this.signal,
    };
    const merged = await queue.run(`${this.repository.commonDir}\0${this.run.baseBranch}`, () =>
      mergeIntoBase(request),
    );
    await this.recordMerge(merged);
  }

  /**
   * The effect point of a run on a remote is the push of its commit as the run's branch. The merge into
   * the base then goes to the merge queue when there is one (a worker), else runs here, pushing the base
   * leased on what was fetched.
   */
  private async remoteMergePhase(remote: string): Promise<void> {
    const commit = this.run.commitSha ?? (await this.commit());
    const { branch, baseBranch } = this.run;
    const mode = this.run.options.merge;
    if ((await pushBranch(this.repository, remote, branch, commit)) === 'pushed')
      await this.event('push', `pushed ${commit.slice(0, 12)} to ${remote} as ${branch}`, { commit, remote });
    if (mode !== 'branch' && this.options.queueMerge !== undefined) {
      await this.event('merge-queued', `merge into ${baseBranch} of ${remote} queued`);
      await this.options.queueMerge({ runId: this.run.id, remote, baseBranch });
      this.mergeQueued = true;
      throw new RunFinished();
    }
    const queue = this.options.mergeQueue ?? new MergeQueue();
    const merged = await queue.run(`${remote}\0${baseBranch}`, () =>
      mergeIntoRemote({
        clone: this.repository,
        url: remote,
        baseBranch,
        branch,
        commit,
        mode,
        message: `Merge ${branch}: ${this.run.task.title}\n\nswitchboard agent run ${this.run.id}`,
        abortSignal: this.signal,
      }),
    );
    await this.recordMerge(merged);
  }

  /**
   * Merge mode `pr`: push the branch, open (or find) its pull request, comment on the issue. A failure
   * to reach the remote or GitHub leaves the run waiting like a conflict: `agent resume` tries again
   * without running the agent.
   */
  private async pullRequestPhase(): Promise<never> {
    const commit = this.run.commitSha ?? (await this.commit());
    const { deliverPullRequest } = await import('./pull-request-phase.js');
    let pullRequest: { number: number; url: string };
    try {
      pullRequest = await deliverPullRequest({
        run: this.run,
        commit,
        repositoryRoot: this.repository.root,
        remote: this.remote,
        event: (kind, message, data) => this.event(kind, message, data),
      });
    } catch (error) {
      if (!isSwitchboardError(error) || this.signal.aborted) throw error;
      return await this.finish(
        'conflict',
        'conflict',
        error.code,
        `${error.message}; the change is committed on branch ${this.run.branch} until \`switchboard agent resume ${this.run.id}\` delivers it`,
      );
    }
    await this.update({ phase: 'done', status: 'succeeded', ended: true, errorCode: null, error: null });
    await this.event(
      'done',
      `pull request #${pullRequest.number} for ${this.run.branch}: ${pullRequest.url}`,
    );
    throw new RunFinished();
  }

  /** Records how the merge went and ends the run. */
  private async recordMerge(merged: MergeResult): Promise<never> {
    switch (merged.kind) {
      case 'branch-left':
        await this.update({ phase: 'done', status: 'succeeded', ended: true, errorCode: null, error: null });
        await this.event('done', `change left on branch ${this.run.branch} for a pull request`);
        break;
      case 'conflict':
        await this.update({ detail: merged.output });
        await this.finish(
          'conflict',
          'conflict',
          'MERGE_CONFLICT',
          `the change conflicts with ${this.run.baseBranch}, which was left unmoved; the change is on branch ${this.run.branch}`,
        );
        break;
      case 'dirty':
        // Like a conflict, the run waits for the user: `resume` merges the commit once the checkout is clean.
        await this.update({ detail: merged.output });
        await this.finish(
          'conflict',
          'conflict',
          'DIRTY_CHECKOUT',
          `${merged.checkout} has ${this.run.baseBranch} checked out with uncommitted changes; nothing was merged and the change is on branch ${this.run.branch} until \`switchboard agent resume ${this.run.id}\` once the checkout is clean`,
        );
        break;
      default:
        await this.update({
          phase: 'done',
          status: 'succeeded',
          mergedCommit: merged.commit,
          ended: true,
          errorCode: null,
          error: null,
        });
        await this.event(
          'done',
          `${merged.kind === 'already-merged' ? 'already in' : merged.kind === 'fast-forward' ? 'fast-forwarded' : 'merged into'} ${this.run.baseBranch} at ${merged.commit.slice(0, 12)}`,
          merged,
        );
    }
    throw new RunFinished();
  }

  // ---- steps -------------------------------------------------------------------------------------

  /** Commits the agent's change (without the context files) and records the commit. */
  private async commit(): Promise<string> {
    const { worktree, task } = this.run;
    const head = await commitChange({
      worktree,
      base: this.run.baseCommit,
      subject: `feat(${task.id}): ${task.title}`,
      body: `${task.description.trim() === '' ? '' : `${task.description.trim()}\n\n`}Switchboard-Run: ${this.run.id}`,
    });
    if (head === this.run.baseCommit) {
      await this.finish('failed', 'failed', 'AGENT_FAILED', 'there is nothing to commit');
    }
    await this.update({ commitSha: head });
    await this.event('commit', `committed ${head.slice(0, 12)} on ${this.run.branch}`, { commit: head });
    return head;
  }

  private async retryOrFail(code: ErrorCode, failure: string): Promise<void> {
    await this.stopIfCancelled();
    const { task } = this.run;
    await this.update({ detail: failure, errorCode: code, error: firstLineOf(failure) });
    if (this.run.attempt >= task.limits.maxAttempts) {
      await this.finish(
        'failed',
        'failed',
        code,
        `${firstLineOf(failure)} (after ${this.run.attempt} attempt${this.run.attempt === 1 ? '' : 's'})`,
      );
    }
    const backoff = this.run.options.retryDelayMs * 2 ** Math.max(0, this.run.attempt - 1);
    const delay = Math.min(backoff, Math.max(0, this.deadline - Date.now()));
    await this.event('retry', `attempt ${this.run.attempt} failed (${code}); retrying in ${delay} ms`, {
      code,
      delayMs: delay,
    });
    await this.setPhase('agent', `retrying after ${code}`);
    await sleep(delay, this.signal);
  }

  // ---- bookkeeping -------------------------------------------------------------------------------

  private transcript(attempt: number): string {
    return transcriptPath(this.stateDir, this.run.id, attempt);
  }

  private async attemptStarted(attempt: number): Promise<void> {
    await this.event('attempt-start', `attempt ${attempt} of ${this.run.task.limits.maxAttempts}`, {
      attempt,
    });
  }

  /** Whether the last recorded attempt has an `attempt-end` event (false after a crash mid-attempt). */
  private async attemptEnded(): Promise<boolean> {
    const events = await this.store.events(this.run.id);
    const last = events
      .filter((event) => event.kind === 'attempt-start' || event.kind === 'attempt-end')
      .at(-1);
    return last === undefined || last.kind === 'attempt-end';
  }

  /**
   * Runs the run's writes one after another in the order they were asked for, so that a write a
   * callback cannot wait for (a spawned pid, progress) neither overtakes nor trails the awaited ones.
   */
  private serially<T>(write: () => Promise<T>): Promise<T> {
    const next = this.writes.then(write);
    this.writes = next.catch(() => undefined);
    return next;
  }

  /** Writes `update` while this runner holds the run; once another process claimed it, stops the run here. */
  private update(update: RunUpdate): Promise<void> {
    return this.serially(async () => {
      if (this.lost || !(await this.store.update(this.run.id, update, { pid: process.pid }))) {
        this.loseRun();
        throw new RunFinished();
      }
      const fresh = await this.store.get(this.run.id);
      if (fresh !== undefined) this.run = fresh;
    });
  }

  /**
   * An update from a callback that cannot wait (the agent session and the verify command call theirs
   * synchronously). It is queued behind the run's other writes; a failure is bookkeeping lost, as the
   * agent session ignores a throwing callback, and the next awaited write meets a broken ledger itself.
   */
  private updateSoon(update: RunUpdate): void {
    this.update(update).catch(() => undefined);
  }

  private async setPhase(phase: AgentPhase, message: string): Promise<void> {
    await this.update({ phase });
    await this.event('phase', message);
  }

  private async event(kind: string, message: string, data?: unknown): Promise<void> {
    if (this.lost) return;
    const { id, phase } = this.run;
    await this.serially(() => this.store.addEvent(id, phase, kind, message, data));
    this.report(message);
  }

  private report(message: string, lastTool?: string): void {
    if (this.options.onProgress === undefined) return;
    const progress: AgentRunProgress = {
      runId: this.run.id,
      taskId: this.run.taskId,
      phase: this.run.phase,
      attempt: this.run.attempt,
      costUsd: this.run.costUsd,
      turns: this.run.turns,
      elapsedMs: Date.now() - Date.parse(this.run.createdAt),
      message,
    };
    if (lastTool !== undefined) progress.lastTool = lastTool;
    this.options.onProgress(progress);
  }

  /** Ends the run (unless `cancel` already did) and stops the phase loop. */
  private async finish(
    phase: AgentPhase,
    status: AgentRunRecord['status'],
    code: ErrorCode,
    message: string,
  ): Promise<never> {
    // A cancelled run, or one another runner already finished, keeps what was recorded.
    const current = await this.serially(() => this.store.get(this.run.id));
    if (current !== undefined && (current.status === 'cancelled' || current.endedAt !== undefined)) {
      this.run = current;
      throw new RunFinished();
    }
    if (status === 'failed' && this.run.task.issue !== undefined) {
      const { reportFailureToIssue } = await import('./pull-request-phase.js');
      await reportFailureToIssue({
        run: this.run,
        code,
        message,
        event: (kind, text, data) => this.event(kind, text, data),
      });
    }
    await this.update({ phase, status, errorCode: code, error: message, ended: true, childPid: null });
    await this.event(phase === 'conflict' ? 'conflict' : 'error', message, { code });
    throw new RunFinished();
  }

  /**
   * `cancel` may kill the agent before this runner's poll notices: an agent that died that way must
   * end the run as cancelled, not be retried or recorded as a failure.
   */
  private async stopIfCancelled(): Promise<void> {
    if (this.signal.aborted || (await this.store.get(this.run.id))?.status === 'cancelled')
      await this.throwAborted();
  }

  private async throwAborted(): Promise<never> {
    if (this.lost) throw new RunFinished();
    if (this.releaseSignal?.aborted === true && !this.abort.signal.aborted) {
      // Released, not cancelled: the run keeps its phase for the next runner, and this one writes no more.
      await this.event('release', `released in phase ${this.run.phase} by pid ${process.pid}`);
      throw new RunFinished();
    }
    return await this.finish('failed', 'cancelled', 'ABORTED', 'the run was cancelled');
  }

  private async fail(error: unknown): Promise<void> {
    if (this.signal.aborted) {
      try {
        await this.throwAborted();
      } catch {
        return;
      }
    }
    const code: ErrorCode = isSwitchboardError(error) ? error.code : 'INTERNAL';
    const message = error instanceof Error ? error.message : String(error);
    try {
      await this.finish('failed', 'failed', code, message);
    } catch {
      // RunFinished.
    }
  }

  private async result(): Promise<AgentRunResult> {
    await this.writes;
    const run = (await this.store.get(this.run.id)) ?? this.run;
    const result = toResult(run);
    if (this.mergeQueued && run.status === 'running') result.mergeQueued = true;
    if (run.options.merge === 'pr') {
      const { recordedPullRequest } = await import('./pull-request-phase.js');
      const pullRequest = recordedPullRequest(await this.store.events(run.id));
      if (pullRequest !== undefined)
        result.pullRequest = { number: pullRequest.number, url: pullRequest.url };
    }
    return result;
  }
}

/** A cost cap lowered to what the budgets had left says so: the task's own cap was not what stopped it. */
function budgetNote(verdict: { code: ErrorCode; message: string }, hold: AgentAttemptHold): string {
  if (verdict.code !== 'BUDGET_EXCEEDED' || !hold.lowered) return verdict.message;
  return `${verdict.message}; that cap was what the budgets in switchboard.yaml had left (\`switchboard stats\`)`;
}

function firstLineOf(text: string): string {
  return text.trim().split('\n', 1)[0] ?? '';
}

/** The session id recorded in a transcript, so an attempt cut off by a crash can be resumed. */
export function sessionFromTranscript(file: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const match = /"session_id"\s*:\s*"([0-9a-f-]{8,})"/i.exec(text);
  return match?.[1];
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
