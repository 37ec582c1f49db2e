import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { loadPromClient } from '../core/lazy-packages.js';

/** Job run times, in seconds: agent runs take from seconds to hours. */
export const JOB_DURATION_BUCKETS: readonly number[] = [
  1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14_400,
];

/** How a job ended on this worker, as a bounded label value. */
export type JobOutcome = 'completed' | 'failed' | 'released';

/** Counts of a queue's jobs in the shared database, as `switchboard_queue_jobs{state}` reports them. */
export interface QueueDepth {
  queued: number;
  active: number;
  failed: number;
}

/**
 * A worker's Prometheus metrics, in a registry of its own: jobs it ran by queue and outcome, the ones
 * running now, their run time, and the depth of each queue read from the database at scrape time.
 */
export class WorkerMetrics {
  readonly registry: Registry;
  private readonly jobs: Counter<'queue' | 'outcome'>;
  private readonly active: Gauge<'queue'>;
  private readonly duration: Histogram<'queue' | 'outcome'>;

  constructor(queues: readonly string[], readDepth: (queue: string) => Promise<QueueDepth | undefined>) {
    const prometheus = loadPromClient();
    this.registry = new prometheus.Registry();
    const registers = [this.registry];
    this.jobs = new prometheus.Counter({
      name: 'switchboard_worker_jobs_total',
      help: 'Jobs this worker finished, by queue and outcome (completed, failed, released)',
      labelNames: ['queue', 'outcome'],
      registers,
    });
    this.active = new prometheus.Gauge({
      name: 'switchboard_worker_jobs_active',
      help: 'Jobs this worker is running now',
      labelNames: ['queue'],
      registers,
    });
    this.duration = new prometheus.Histogram({
      name: 'switchboard_worker_job_duration_seconds',
      help: 'Time from a job reaching this worker to its end',
      labelNames: ['queue', 'outcome'],
      buckets: [...JOB_DURATION_BUCKETS],
      registers,
    });
    new prometheus.Gauge({
      name: 'switchboard_queue_jobs',
      help: 'Jobs in the shared queue by state (queued, active, failed), read from the database at scrape time',
      labelNames: ['queue', 'state'],
      registers,
      async collect() {
        for (const queue of queues) {
          const depth = await readDepth(queue).catch(() => undefined);
          if (depth === undefined) continue;
          for (const state of ['queued', 'active', 'failed'] as const)
            this.set({ queue, state }, depth[state]);
        }
      },
    });
    for (const queue of queues) {
      this.active.set({ queue }, 0);
      for (const outcome of ['completed', 'failed', 'released'] as const)
        this.jobs.inc({ queue, outcome }, 0);
    }
  }

  started(queue: string): void {
    this.active.inc({ queue });
  }

  ended(queue: string, outcome: JobOutcome, seconds: number): void {
    this.active.dec({ queue });
    this.jobs.inc({ queue, outcome });
    this.duration.observe({ queue, outcome }, seconds);
  }
}
