import { resolve } from 'node:path';
import { SwitchboardError } from '../core/errors.js';
import type { DatabaseTarget } from '../store/database.js';
import { DEFAULT_STATE_DIR, ledgerDatabase, openLedger, type Ledger } from '../store/ledger.js';
import { WorkflowStore } from '../store/workflow-records.js';
import type { WorkflowEngineOptions } from './api-types.js';

// The stores the workflow API opens, apart from the engine: reading a run's status or events does not
// load the engine, its step executors, or the template and format modules.

/** The ledger and workflow tables one API call works with; closes what it opened. */
export interface StoreSession {
  ledger: Ledger;
  store: WorkflowStore;
  stateDir: string;
  /** Closes the workflow store, then the ledger when this session opened it (writing its queued attempts). */
  close(): Promise<void>;
}

export async function openStores(options: WorkflowEngineOptions): Promise<StoreSession> {
  // Absolute, so steps that change directory (scripts, agents in worktrees) still find it.
  const stateDir = resolve(options.stateDir ?? DEFAULT_STATE_DIR);
  const ownLedger = options.ledger === undefined;
  const ledger = options.ledger ?? openLedger({ stateDir });
  let store: WorkflowStore;
  try {
    store = await WorkflowStore.open({
      ...ledgerTarget(ledger),
      ...(options._internal?.now === undefined ? {} : { now: options._internal.now }),
    });
  } catch (error) {
    // Nothing was queued on a ledger this session opened; closing it must not hide why the store failed.
    if (ownLedger) await ledger.close().catch(() => {});
    throw error;
  }
  return {
    ledger,
    store,
    stateDir,
    async close() {
      await store.close();
      if (ownLedger) await ledger.close();
    },
  };
}

/**
 * The ledger's own database, so the workflow tables are always beside it: its SQLite file, or the
 * PostgreSQL URL it was opened with. A ledger this process's `openLedger` did not open is followed by
 * its dialect: a SQLite `path` is its file, but a PostgreSQL `path` is a URL without its password,
 * which must never be opened as a file.
 */
function ledgerTarget(ledger: Ledger): DatabaseTarget {
  const known = ledgerDatabase(ledger);
  if (known !== undefined) return known;
  if (ledger.dialect === 'sqlite') return { path: ledger.path };
  throw new SwitchboardError(
    'INVALID_INPUT',
    `cannot tell which PostgreSQL database the ledger ${ledger.path} uses`,
    {
      hint: 'open the ledger with openLedger() from switchboard, or pass no ledger and set SWITCHBOARD_DATABASE_URL',
    },
  );
}
