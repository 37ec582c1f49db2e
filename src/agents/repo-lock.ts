import { randomBytes } from 'node:crypto';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SwitchboardError } from '../core/errors.js';

/** File name of the lock, inside the repository's shared `.git` folder. */
export const REPO_LOCK_FILE = 'switchboard-agent.lock';

export interface RepoLockOptions {
  /** Give up after waiting this long (ms). @default 600_000 */
  timeoutMs?: number;
  abortSignal?: AbortSignal;
}

/**
 * The fields of `/proc/<pid>/stat` after the command name (which may itself hold spaces or
 * parentheses): [0] is the state, [19] the start time in clock ticks since boot. Undefined where /proc
 * cannot tell (not Linux, or the process is gone).
 */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** Whether a process with this id exists (signal 0 checks without sending anything). */
function signalable(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whether a process with this id is running. A zombie (a runner killed with SIGKILL whose parent has
 * not reaped it yet) answers signal 0 but is dead.
 */
export function isProcessAlive(pid: number | null | undefined): boolean {
  return isRecordedProcessAlive(pid);
}

/** Clock ticks per second of /proc's times (USER_HZ): 100 on every Linux architecture Node runs on. */
const TICKS_PER_SECOND = 100;

function startTimeOf(fields: readonly string[]): number | undefined {
  const ticks = Number(fields[19]);
  let boot: string | undefined;
  try {
    boot = /^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'))?.[1];
  } catch {
    return undefined;
  }
  if (!Number.isFinite(ticks) || boot === undefined) return undefined;
  return Number(boot) * 1000 + (ticks * 1000) / TICKS_PER_SECOND;
}

/**
 * When a process started, in milliseconds since the epoch (to about a second), or undefined where
 * /proc cannot tell (not Linux, or the process is gone). With the pid it identifies a process even
 * after the pid is reused, e.g. by another program after a reboot.
 */
export function processStartTime(pid: number): number | undefined {
  const fields = statFields(pid);
  return fields === undefined ? undefined : startTimeOf(fields);
}

/**
 * Whether the process recorded as `pid`, started at `startedAt` (from `processStartTime`), is still
 * running: not a zombie, and not a live process that got the pid later (another start time).
 */
export function isRecordedProcessAlive(pid: number | null | undefined, startedAt?: number): boolean {
  if (pid === null || pid === undefined || pid <= 0 || !signalable(pid)) return false;
  const fields = statFields(pid);
  if (fields === undefined) return true; // no /proc (not Linux): signal 0 is all there is
  if (fields[0] === 'Z') return false;
  if (startedAt === undefined) return true;
  const started = startTimeOf(fields);
  return started === undefined || Math.abs(started - startedAt) < 2_000;
}

/**
 * Runs `action` holding the repository's agent lock, shared by every Switchboard process on the
 * machine: worktree creation and removal, merges and branch deletion go through it, so two runners
 * never interleave git operations that touch shared state (the worktree registry, the base branch).
 *
 * The lock is a file created exclusively (`O_EXCL`) holding the owner's pid, a token and the owner's
 * start time (so a lock left by a process whose pid was reused, e.g. across a reboot, is still stale). A lock whose
 * owner died (for example a runner killed with SIGKILL) is broken by renaming it away, which only one
 * waiting process can win.
 */
export async function withRepoLock<T>(
  commonDir: string,
  action: () => Promise<T>,
  { timeoutMs = 600_000, abortSignal }: RepoLockOptions = {},
): Promise<T> {
  const file = join(commonDir, REPO_LOCK_FILE);
  const token =
    `${process.pid} ${randomBytes(8).toString('hex')} ${processStartTime(process.pid) ?? ''}`.trim();
  const deadline = Date.now() + timeoutMs;
  let delay = 10;
  for (;;) {
    abortSignal?.throwIfAborted();
    try {
      writeFileSync(file, token, { flag: 'wx' });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw lockError(file, error);
    }
    breakIfStale(file);
    if (Date.now() > deadline) {
      throw new SwitchboardError('INTERNAL', `timed out waiting for the repository lock ${file}`, {
        hint: `another switchboard process holds it (pid ${readOwner(file) ?? 'unknown'}); wait for it, or delete the file if that process is gone`,
      });
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 200);
  }
  try {
    return await action();
  } finally {
    // Only our own lock is removed: read back first, in case it was (wrongly) broken meanwhile.
    if (readToken(file) === token) rmSync(file, { force: true });
  }
}

function readToken(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

function readOwner(file: string): number | undefined {
  const pid = Number(readToken(file)?.split(' ', 1)[0]);
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

function breakIfStale(file: string): void {
  const token = readToken(file);
  if (token === undefined) return;
  const [owner, , started] = token.split(' ');
  const pid = Number(owner);
  // A lock file being written has no content yet; leave it to its writer.
  if (!Number.isSafeInteger(pid) || pid <= 0) return;
  if (isRecordedProcessAlive(pid, started === undefined || started === '' ? undefined : Number(started)))
    return;
  const aside = `${file}.stale-${randomBytes(4).toString('hex')}`;
  try {
    renameSync(file, aside);
  } catch {
    return; // Someone else broke it first.
  }
  if (readToken(aside) === token) {
    rmSync(aside, { force: true });
  } else {
    // We moved a fresh lock taken in between; put it back if its place is still free.
    try {
      writeFileSync(file, readToken(aside) ?? '', { flag: 'wx' });
    } catch {
      // The place was taken again; the owner of the moved lock will notice on release.
    }
    rmSync(aside, { force: true });
  }
}

function lockError(file: string, error: unknown): SwitchboardError {
  return new SwitchboardError('INTERNAL', `cannot create the repository lock ${file}`, {
    hint: 'make the repository’s .git folder writable',
    cause: error,
  });
}
