import type { Job, PgBoss } from 'pg-boss';
import type { WorkerSettings } from '../core/config.js';
import { isSwitchboardError } from '../core/errors.js';
import { redactSecrets } from '../core/secrets.js';
import { MergeQueue } from '../agents/merge.js';
import type { AgentRunnerOptions } from '../agents/runner.js';
import { AgentRunStore } from '../agents/run-store.js';
import { startBoss } from './boss.js';
import { DatabaseWatch } from './database-watch.js';
import { describePostgresUrl } from '../store/sql/postgres-database.js';
import {
  DEAD_LETTER_QUEUE,
  MAX_EXPIRY_SECONDS,
  MEMBER_QUEUE,
  MERGE_QUEUE,
  WORKFLOW_QUEUE,
  type AgentJobData,
  type MemberJobData,
  type MergeJobData,
  type WorkflowJobData,
  type WorkflowJobOptions,
} from './queues.js';
import type { WorkflowMemberJobs } from '../workflows/api-types.js';
import { WorkerMetrics, type JobOutcome, type QueueDepth } from './worker-metrics.js';
import type { WorkflowJobRunnerOptions } from './workflow-job.js';

export interface StartWorkerOptions {
  /** The PostgreSQL database the workers share. */
  url: string;
  settings: WorkerSettings;
  /** pg-boss queue names to take jobs from (the agent and workflow queues). */
  queues: readonly string[];
  /** How runs are driven on this machine: state folder, Claude Code connection, model. */
  runner: AgentRunnerOptions;
  /** How workflow runs are advanced on this machine; required when `queues` has the workflow queue. */
  workflows?: WorkflowJobRunnerOptions;
  /** One line per job and per background error (stderr in the CLI). */
  log?: (line: string) => void;
}

/** What `/healthz` answers. */
export interface WorkerHealth {
  ok: boolean;
  state: 'running' | 'draining' | 'stopped';
  queues: string[];
  active: number;
}

/**
 * A `switchboard worker`: takes jobs from the shared queues, `concurrency` at a time, and drives each
 * job's agent run to its end, or advances its workflow run until it ends or parks at a gate. pg-boss keeps each job's heartbeat while it runs; a worker that dies
 * (even `kill -9`) stops beating and its job goes to another worker, which resumes the run from its
 * recorded phase.
 */
export class SwitchboardWorker {
  readonly metrics: WorkerMetrics;
  private state: WorkerHealth['state'] = 'running';
  /** Release switches of the runs in progress: pulling one hands its run back to the queue. */
  private readonly running = new Set<AbortController>();
  /** This worker's runs merging into one branch wait for each other here (other processes, on the repository's lock). */
  private readonly mergeQueue = new MergeQueue();
  private readonly boss: PgBoss;
  private readonly store: AgentRunStore;
  private readonly options: StartWorkerOptions;
  private readonly watch: DatabaseWatch;

  private constructor(boss: PgBoss, store: AgentRunStore, options: StartWorkerOptions, watch: DatabaseWatch) {
    this.boss = boss;
    this.store = store;
    this.options = options;
    this.watch = watch;
    this.metrics = new WorkerMetrics(options.queues, (queue) => this.depth(queue));
  }

  /**
   * Connects (checking the database is Switchboard's), starts pg-boss with supervision on and begins
   * taking jobs.
   *
   * @throws SwitchboardError `DATABASE_UNREACHABLE`, `DATABASE_AUTH`, `DATABASE_FOREIGN`
   */
  static async start(options: StartWorkerOptions): Promise<SwitchboardWorker> {
    const stateDir = options.runner.stateDir ?? '.switchboard';
    // Held for the worker's life: every run's store shares this pool instead of connecting anew.
    const store = await AgentRunStore.open(stateDir, { url: options.url });
    const log = options.log ?? (() => undefined);
    let boss: PgBoss | undefined;
    const watch = new DatabaseWatch({
      location: describePostgresUrl(options.url),
      probe: () => (boss === undefined ? Promise.resolve() : boss.getDb().executeSql('SELECT 1')),
      log,
    });
    try {
      boss = await startBoss({
        url: options.url,
        settings: options.settings,
        supervise: true,
        // Every poll of every queue fails while the database is away: one line for the outage, not each.
        onError: (message, error) => {
          if (!watch.report(error, message)) log(`pg-boss: ${message}`);
        },
      });
    } catch (error) {
      await store.close();
      throw error;
    }
    watch.start();
    const worker = new SwitchboardWorker(boss, store, options, watch);
    for (const queue of options.queues) {
      await boss.work<AgentJobData | WorkflowJobData | MergeJobData>(
        queue,
        {
          localConcurrency: options.settings.concurrency,
          pollingIntervalSeconds: options.settings.pollingIntervalSeconds,
          batchSize: 1,
        },
        async (jobs) => {
          for (const job of jobs) await worker.handle(queue, job);
        },
      );
    }
    return worker;
  }

  health(): WorkerHealth {
    return {
      ok: this.state === 'running',
      state: this.state,
      queues: [...this.options.queues],
      active: this.running.size,
    };
  }

  /**
   * Stops taking jobs, lets the running ones finish for up to `graceMs` (or until `hurry` aborts), then
   * releases what is still running: each of those runs stops where it is, keeps its recorded phase,
   * and its job goes back to the queue for another worker to resume.
   */
  async drain(graceMs: number, hurry?: AbortSignal): Promise<void> {
    if (this.state !== 'running') return;
    this.state = 'draining';
    await Promise.all(this.options.queues.map((queue) => this.boss.offWork(queue, { wait: false })));
    await this.waitForIdle(graceMs, hurry);
    if (this.running.size > 0) {
      for (const release of this.running) release.abort(new Error('the worker is stopping'));
      // Released runs kill their agents and return at once; the bound only guards against a stuck one.
      await this.waitForIdle(60_000);
    }
    this.watch.stop();
    await this.boss.stop({ graceful: true, timeout: 1000 });
    await this.store.close();
    this.state = 'stopped';
  }

  private async handle(
    queue: string,
    job: Job<AgentJobData | WorkflowJobData | MergeJobData>,
  ): Promise<void> {
    const started = Date.now();
    const release = new AbortController();
    const runId = typeof job.data?.runId === 'string' ? job.data.runId : '?';
    const onLost = (): void => {
      // A workflow run is fenced by its run lock, not by the job. pg-boss takes a job back when its
      // heartbeat went unheard (a database outage longer than heartbeat_seconds does that to every
      // running job); letting go of the run here would throw away a step that finished while the
      // database was away, and run it again. The run goes on under its lock; the job's retry waits for
      // this process to end it or let it go.
      if (queue === WORKFLOW_QUEUE) {
        this.options.log?.(
          `switchboard: pg-boss took back job ${queue} ${runId}; this worker still holds the run and goes on advancing it`,
        );
        return;
      }
      release.abort(job.signal.reason);
    };
    job.signal.addEventListener('abort', onLost, { once: true });
    this.running.add(release);
    this.metrics.started(queue);
    let outcome: JobOutcome = 'failed';
    let label = 'error';
    try {
      const settled =
        queue === WORKFLOW_QUEUE
          ? await this.runWorkflowJob(job as Job<WorkflowJobData>, release.signal)
          : queue === MEMBER_QUEUE
            ? await this.runMemberJob(job as Job<MemberJobData>, release.signal)
            : queue === MERGE_QUEUE
              ? await this.runMergeJob(job as Job<MergeJobData>, release.signal)
              : await this.runJob(job as Job<AgentJobData>, release.signal);
      outcome = settled.outcome;
      label = settled.label;
      // Thrown, so pg-boss fails the attempt (fenced by its retry count) and another worker resumes.
      if (settled.outcome !== 'completed') throw new Error(settled.label);
    } finally {
      job.signal.removeEventListener('abort', onLost);
      this.running.delete(release);
      const seconds = (Date.now() - started) / 1000;
      this.metrics.ended(queue, outcome, seconds);
      this.options.log?.(`job ${queue} ${runId} ${label} ${seconds.toFixed(1)}s`);
    }
  }

  /**
   * Drives the job's run. The run's own ending (succeeded, failed, conflict, cancelled) completes the
   * job: the run row says how it went. Only what another attempt could mend fails it: the database or
   * Claude Code out of reach, a release.
   */
  private async runJob(
    job: Job<AgentJobData>,
    releaseSignal: AbortSignal,
  ): Promise<{ outcome: JobOutcome; label: string }> {
    const data = job.data;
    if (typeof data?.runId !== 'string') return { outcome: 'completed', label: 'malformed-job' };
    const { executeAgentRun } = await import('../agents/runner.js');
    const runner: AgentRunnerOptions = {
      ...this.options.runner,
      mergeQueue: this.mergeQueue,
      // A run on a remote merges through the merge queue: one merge at a time per branch, on any worker.
      queueMerge: async (request) => {
        const { sendMergeJob } = await import('./merge-job.js');
        await sendMergeJob(this.boss, this.options.settings, request);
      },
    };
    const baseUrl = data.options?.baseUrl;
    if (typeof baseUrl === 'string') runner.connection = { ...runner.connection, baseUrl };
    try {
      const result = await executeAgentRun({
        ...runner,
        url: this.options.url,
        runId: data.runId,
        releaseSignal,
      });
      if (result.mergeQueued === true) return { outcome: 'completed', label: 'merge-queued' };
      if (result.status === 'running') return { outcome: 'released', label: 'released' };
      return { outcome: 'completed', label: result.status };
    } catch (error) {
      if (
        isSwitchboardError(error) &&
        (error.code === 'RUN_NOT_FOUND' || error.details?.['claimed'] === true)
      )
        return { outcome: 'completed', label: error.code === 'RUN_NOT_FOUND' ? 'run-not-found' : 'taken' };
      const code = isSwitchboardError(error) ? error.code : 'INTERNAL';
      const message = error instanceof Error ? error.message : String(error);
      return { outcome: 'failed', label: `error ${code}: ${redactSecrets(message.split('\n', 1)[0] ?? '')}` };
    }
  }

  /** Merges the job's run into its remote's base branch (see `runMergeJob`). */
  private async runMergeJob(
    job: Job<MergeJobData>,
    releaseSignal: AbortSignal,
  ): Promise<{ outcome: JobOutcome; label: string }> {
    const { runMergeJob } = await import('./merge-job.js');
    return runMergeJob(job, { ...this.options.runner, url: this.options.url }, releaseSignal);
  }

  /** Advances the job's workflow run (see `runWorkflowJob`). */
  private async runWorkflowJob(
    job: Job<WorkflowJobData>,
    releaseSignal: AbortSignal,
  ): Promise<{ outcome: JobOutcome; label: string }> {
    const runner = this.options.workflows;
    if (runner === undefined) return { outcome: 'failed', label: 'error: this worker cannot run workflows' };
    const { runWorkflowJob } = await import('./workflow-job.js');
    return runWorkflowJob(
      job,
      {
        stateDir: this.options.runner.stateDir ?? '.switchboard',
        ...runner,
        databaseBackAt: () => this.watch.backAt(),
        memberJobs: (options) => this.memberJobs(options),
      },
      releaseSignal,
      this.options.log,
    );
  }

  /** Runs one group member of a run some worker coordinates (see `runMemberJob`). */
  private async runMemberJob(
    job: Job<MemberJobData>,
    releaseSignal: AbortSignal,
  ): Promise<{ outcome: JobOutcome; label: string }> {
    const runner = this.options.workflows;
    if (runner === undefined) return { outcome: 'failed', label: 'error: this worker cannot run workflows' };
    const { runMemberJob } = await import('./member-job.js');
    return runMemberJob(
      job,
      { stateDir: this.options.runner.stateDir ?? '.switchboard', ...runner },
      releaseSignal,
    );
  }

  /** The member queue as a coordinating run sees it: each job sent under its member's claim. */
  private memberJobs(options: WorkflowJobOptions): WorkflowMemberJobs {
    const settings = this.options.settings;
    return {
      send: async (member, claim) => {
        const data: MemberJobData = { runId: member.runId, member, options };
        const id = await this.boss.send(MEMBER_QUEUE, data, {
          id: claim,
          // A hard cap only: the heartbeat finds a dead worker sooner.
          expireInSeconds: MAX_EXPIRY_SECONDS,
          heartbeatSeconds: settings.heartbeatSeconds,
          retryLimit: settings.retryLimit,
          deadLetter: DEAD_LETTER_QUEUE,
        });
        if (id === null) throw new Error(`the queue refused the job of ${member.groupKey}/${member.member}`);
      },
      state: async (claim) => (await this.boss.getJobById(MEMBER_QUEUE, claim))?.state,
    };
  }

  private async depth(queue: string): Promise<QueueDepth | undefined> {
    const found = await this.boss.getQueue(queue);
    if (found === null) return undefined;
    return { queued: found.queuedCount, active: found.activeCount, failed: found.failedCount };
  }

  private async waitForIdle(withinMs: number, hurry?: AbortSignal): Promise<void> {
    const deadline = Date.now() + withinMs;
    while (this.running.size > 0 && Date.now() < deadline && hurry?.aborted !== true) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
