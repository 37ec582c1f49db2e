import type { PgBoss } from 'pg-boss';
import type { WorkerSettings } from '../core/config.js';
import { SwitchboardError } from '../core/errors.js';
import { redactSecrets } from '../core/secrets.js';
import { describePostgresUrl } from '../store/sql/postgres-database.js';
import { AGENT_QUEUE, DEAD_LETTER_QUEUE, MEMBER_QUEUE, MERGE_QUEUE, WORKFLOW_QUEUE } from './queues.js';

export interface StartBossOptions {
  url: string;
  settings: WorkerSettings;
  /**
   * Whether this instance sweeps the queues for jobs of dead workers. Every worker does; a process that
   * only sends jobs does not.
   */
  supervise: boolean;
  /** Where pg-boss's background errors go (a lost connection it will retry): one line each, and the error. */
  onError?: (message: string, error: unknown) => void;
}

/**
 * A started pg-boss on the workers' database, with the agent, workflow and dead-letter queues in place. pg-boss
 * keeps its tables in a schema of its own (`pgboss`), beside ours. Call after the database was opened
 * through the store (which checks it is ours and reports a bad URL), so a failure here is rare.
 */
export async function startBoss({ url, settings, supervise, onError }: StartBossOptions): Promise<PgBoss> {
  // ESM and a few hundred modules: loaded only by the commands that use the queue.
  const { PgBoss } = await import('pg-boss');
  const boss = new PgBoss({
    connectionString: url,
    application_name: 'switchboard-worker',
    supervise,
    schedule: false,
    superviseIntervalSeconds: settings.superviseIntervalSeconds,
    monitorIntervalSeconds: settings.monitorIntervalSeconds,
  });
  // Without a listener an `error` event would end the process; pg-boss retries on its own.
  boss.on('error', (error: unknown) => {
    onError?.(redactSecrets(bossErrorText(error)), error);
  });
  try {
    await boss.start();
    await boss.createQueue(DEAD_LETTER_QUEUE);
    await boss.createQueue(AGENT_QUEUE, {
      deadLetter: DEAD_LETTER_QUEUE,
      retryLimit: settings.retryLimit,
      heartbeatSeconds: settings.heartbeatSeconds,
    });
    // One active job per run (singletonKey = run id): two workers never advance the same run at once.
    await boss.createQueue(WORKFLOW_QUEUE, {
      policy: 'singleton',
      deadLetter: DEAD_LETTER_QUEUE,
      retryLimit: settings.retryLimit,
      heartbeatSeconds: settings.heartbeatSeconds,
    });
    // Group members: each job's id is the member's claim, so no singleton key is needed.
    await boss.createQueue(MEMBER_QUEUE, {
      deadLetter: DEAD_LETTER_QUEUE,
      retryLimit: settings.retryLimit,
      heartbeatSeconds: settings.heartbeatSeconds,
    });
    // One active merge per remote and base branch (singletonKey = `mergeJobKey`); the others wait.
    await boss.createQueue(MERGE_QUEUE, {
      policy: 'singleton',
      deadLetter: DEAD_LETTER_QUEUE,
      retryLimit: settings.retryLimit,
      heartbeatSeconds: settings.heartbeatSeconds,
    });
  } catch (error) {
    await boss.stop({ graceful: false, close: true }).catch(() => undefined);
    const reason = redactSecrets(
      error instanceof Error ? (error.message.split('\n', 1)[0] ?? '') : String(error),
    );
    throw new SwitchboardError(
      'DATABASE_UNREACHABLE',
      `cannot start the job queue on ${describePostgresUrl(url)}: ${reason}`,
      { hint: 'check that PostgreSQL is running and reachable, then retry', cause: error },
    );
  }
  return boss;
}

/**
 * One line for an error pg-boss emits: its worker loops emit plain copies of the error (`{...error,
 * message, queue}`), not `Error`s, which `String()` turns into `[object Object]`. The PostgreSQL code
 * (`57P01`) and the queue come first, then the first line of the message.
 */
export function bossErrorText(error: unknown): string {
  if (typeof error !== 'object' || error === null) return String(error);
  const fields = error as { code?: unknown; message?: unknown; queue?: unknown };
  const message = typeof fields.message === 'string' ? (fields.message.split('\n', 1)[0] ?? '') : '';
  const code = typeof fields.code === 'string' && fields.code !== '' ? `${fields.code} ` : '';
  const queue = typeof fields.queue === 'string' ? ` (queue ${fields.queue})` : '';
  if (message === '' && code === '')
    return error instanceof Error ? error.name : 'an error without a message';
  return `${code}${message}${queue}`;
}
