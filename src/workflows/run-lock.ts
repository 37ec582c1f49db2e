import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { SwitchboardError } from '../core/errors.js';
import { isRecordedProcessAlive, processStartTime } from '../agents/repo-lock.js';
import type { RunOwner, WorkflowRunRow, WorkflowStore } from '../store/workflow-records.js';

/** How old another host's heartbeat must be before its run counts as abandoned. @default 60 s */
export const DEFAULT_STALE_AFTER_MS = 60_000;

export interface RunLockOptions {
  /** Another host's owner is taken for dead once its heartbeat is this old (ms). @default 60_000 */
  staleAfterMs?: number;
  /** How often the owner stamps its heartbeat and looks for a cancel (ms). @default 1_000 */
  pollMs?: number;
  /**
   * When this process last saw its database come back after an outage (epoch ms; undefined: never
   * away). No owner can beat while the database is away, so another host's heartbeat counts as stale
   * only once the database has answered for `staleAfterMs` since: after a restart longer than that,
   * every owner's heartbeat is old, and the live ones beat again within a second of its return.
   */
  databaseBackAt?: () => number | undefined;
  now?: () => number;
}

/** The right to advance one run, held by this process until `release`. */
export interface RunLock {
  readonly token: string;
  readonly owner: RunOwner;
  /**
   * Aborted when the run is cancelled from another process or taken over (the reason is a
   * SwitchboardError `WORKFLOW_CANCELLED` or `WORKFLOW_LOST`).
   */
  readonly signal: AbortSignal;
  /** Stops the heartbeat and lets go of the run (only if this process still holds it). */
  release(): Promise<void>;
}

/**
 * The owner tokens of the run locks this process holds now. A run recorded as this process's whose token
 * is not here is held by nothing: the lock that took it ended without its release reaching the store (a
 * database away at that moment), and waiting for this live process to let go would wait forever.
 */
const heldHere = new Set<string>();

/** Why the recorded owner still holds the run, or undefined when it is gone. */
function liveOwner(
  run: WorkflowRunRow,
  host: string,
  staleAfterMs: number,
  now: number,
  databaseBackAt?: number,
): string | undefined {
  const owner = run.owner;
  if (owner === undefined) return undefined;
  const age = run.heartbeatAt === undefined ? Number.POSITIVE_INFINITY : now - run.heartbeatAt;
  const silence = Math.min(
    age,
    databaseBackAt === undefined ? Number.POSITIVE_INFINITY : now - databaseBackAt,
  );
  if (owner.host === host && owner.pid === process.pid && !heldHere.has(owner.token)) return undefined;
  if (owner.host === host) {
    // On this machine the pid answers at once: a process killed with SIGKILL frees the run immediately.
    if (!isRecordedProcessAlive(owner.pid, owner.started)) return undefined;
  } else if (silence > staleAfterMs) {
    return undefined;
  }
  const seconds = Number.isFinite(age) ? `${Math.max(0, Math.round(age / 1000))}s ago` : 'never';
  return `pid ${owner.pid} on ${owner.host} (heartbeat ${seconds})`;
}

/** The live process advancing the run, described in a few words, or undefined when none is. */
export function runOwner(run: WorkflowRunRow, options: { staleAfterMs?: number } = {}): string | undefined {
  return liveOwner(run, hostname(), options.staleAfterMs ?? DEFAULT_STALE_AFTER_MS, Date.now());
}

/**
 * Takes the run for this process: free, or its recorded owner is dead (same host: its pid is gone;
 * another host: its heartbeat is older than `staleAfterMs`). The claim is a compare-and-swap on the
 * owner token, so of two processes racing for a dead owner's run exactly one wins.
 *
 * @throws SwitchboardError `WORKFLOW_LOCKED` naming the live owner and what to do.
 */
export async function acquireRunLock(
  store: WorkflowStore,
  runId: string,
  options: RunLockOptions = {},
): Promise<RunLock> {
  const now = options.now ?? Date.now;
  const staleAfterMs = options.staleAfterMs ?? DEFAULT_STALE_AFTER_MS;
  const host = hostname();
  const owner: RunOwner = { pid: process.pid, host, token: randomBytes(12).toString('hex') };
  const started = processStartTime(process.pid);
  if (started !== undefined) owner.started = started;
  for (let tries = 0; tries < 3; tries++) {
    const run = await store.getRun(runId);
    if (run === undefined) throw new SwitchboardError('RUN_NOT_FOUND', `there is no workflow run ${runId}`);
    const holder = liveOwner(run, host, staleAfterMs, now(), options.databaseBackAt?.());
    if (holder !== undefined) {
      throw new SwitchboardError('WORKFLOW_LOCKED', `workflow run ${runId} is being advanced by ${holder}`, {
        hint: `wait for it (\`switchboard workflow status ${runId}\`), or stop that process and resume again`,
        retryable: false,
        details: { pid: run.owner?.pid, host: run.owner?.host },
      });
    }
    if (await store.claimRun(runId, run.owner?.token, owner))
      return startHeartbeat(store, runId, owner, options);
  }
  throw new SwitchboardError('WORKFLOW_LOCKED', `workflow run ${runId} is being claimed by another process`, {
    hint: `wait for it (\`switchboard workflow status ${runId}\`), then resume again if it stopped`,
    retryable: false,
  });
}

function startHeartbeat(
  store: WorkflowStore,
  runId: string,
  owner: RunOwner,
  options: RunLockOptions,
): RunLock {
  const controller = new AbortController();
  let held = true;
  heldHere.add(owner.token);
  const lost = (reason: SwitchboardError) => {
    // A beat that answers after `release` says nothing about the run any more.
    if (held) controller.abort(reason);
  };
  const poll = async (): Promise<void> => {
    if (controller.signal.aborted) return;
    try {
      if (!(await store.heartbeat(runId, owner.token))) {
        lost(
          new SwitchboardError('WORKFLOW_LOST', `another process took workflow run ${runId} over`, {
            hint: `see where it is with \`switchboard workflow status ${runId}\``,
            retryable: false,
          }),
        );
      } else if ((await store.getRun(runId))?.status === 'cancelled') {
        lost(
          new SwitchboardError('WORKFLOW_CANCELLED', `workflow run ${runId} was cancelled`, {
            retryable: false,
          }),
        );
      }
    } catch {
      // A busy ledger skips one beat; the next one tries again.
    }
  };
  // One beat at a time: a slow one is not overtaken by the next, and `release` writes after it.
  let beating: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (beating !== undefined) return;
    beating = poll().finally(() => {
      beating = undefined;
    });
  }, options.pollMs ?? 1_000);
  timer.unref();
  return {
    token: owner.token,
    owner,
    signal: controller.signal,
    async release() {
      if (!held) return;
      held = false;
      clearInterval(timer);
      // Not held from here on, whether or not the store hears of it: see `heldHere`.
      heldHere.delete(owner.token);
      await beating;
      await store.releaseRun(runId, owner.token);
    },
  };
}
