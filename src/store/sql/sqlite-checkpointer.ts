import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * WAL checkpoints on a thread of their own. SQLite moves the write-ahead log into the database file when
 * a commit finds it past 1,000 pages, inside that commit: with `synchronous = NORMAL` it writes those
 * pages and syncs both files, on the event loop, in the commit of whichever request came then (about
 * half of a busy serve's commit time). A long-running process hands that to a worker with its own
 * connection, which checkpoints PASSIVE (never waiting for, nor blocking, a reader or the writer) every
 * `intervalMs`; the process's connection stops checkpointing itself. The log still restarts from its
 * start once a checkpoint has caught up, so it does not grow.
 */
export interface SqliteCheckpointer {
  /**
   * Stops the worker after a last checkpoint, its connection closed, and gives the checkpoints back to
   * the connection. Call it before the connection closes: the last to close removes the log.
   */
  stop(): Promise<void>;
}

/** SQLite's own default, given back to a connection whose worker failed. */
const SQLITE_AUTOCHECKPOINT_PAGES = 1000;

/** How often the worker checkpoints, unless told. */
export const CHECKPOINT_INTERVAL_MS = 200;

// CommonJS, evaluated in the worker: the addon is required by the path this module resolves, so the
// worker finds it from the sources (tests) and from dist/ alike.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const database = new Database(workerData.file, { fileMustExist: true });
database.pragma('busy_timeout = 0');
database.pragma('synchronous = NORMAL');
const checkpoint = () => {
  try {
    database.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // Busy or locked: the next tick tries again; the log only grows meanwhile.
  }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.once('message', () => {
  clearInterval(timer);
  checkpoint();
  database.close();
  parentPort.postMessage('stopped');
});
parentPort.postMessage('started');
`;

/**
 * Starts checkpointing `file` on a worker and turns `connection`'s own automatic checkpoints off once it
 * runs. The worker never keeps the process alive; if it cannot start, the connection keeps checkpointing.
 */
export function startSqliteCheckpointer(
  file: string,
  connection: { pragma(source: string): unknown },
  { intervalMs = CHECKPOINT_INTERVAL_MS }: { intervalMs?: number } = {},
): SqliteCheckpointer {
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { file, intervalMs, module: createRequire(import.meta.url).resolve('better-sqlite3') },
  });
  worker.unref();
  let running = false;
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  let stopping: Promise<void> | undefined;
  // A connection closed meanwhile has nothing left to set.
  const setAutomatic = (pages: number) => {
    try {
      connection.pragma(`wal_autocheckpoint = ${pages}`);
    } catch {
      // closed
    }
  };
  worker.on('message', (message) => {
    if (message !== 'started' || stopping !== undefined) return;
    running = true;
    setAutomatic(0);
  });
  // A worker that fails leaves the checkpoints to the connection, as without one.
  worker.on('error', () => {
    if (running) setAutomatic(SQLITE_AUTOCHECKPOINT_PAGES);
    running = false;
  });
  return {
    stop() {
      stopping ??= (async () => {
        // Held until it has stopped: a process must not end with the worker halfway through its close.
        worker.ref();
        worker.postMessage('stop');
        await exited;
        if (running) setAutomatic(SQLITE_AUTOCHECKPOINT_PAGES);
        running = false;
      })();
      return stopping;
    },
  };
}
