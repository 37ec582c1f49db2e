import { createHash, randomBytes } from 'node:crypto';
import { linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SwitchboardError } from '../core/errors.js';

/** File name of the lock, inside the repository's shared `.git` folder. */
export const REPO_LOCK_FILE = 'switchboard-agent.lock';

export interface RepoLockOptions {
  /** Give up after waiting this long (ms). @default 600_000 */
  timeoutMs?: number;
  abortSignal?: AbortSignal;
  /** @internal for tests: runs between the steps of breaking a stale lock, to widen the races in it. */
  _internal?: { pause?: (step: string) => void };
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
 * The lock is a file holding the owner's pid, a token and the owner's start time (so a lock left by a
 * process whose pid was reused, e.g. across a reboot, is still stale), created whole and exclusively
 * by hard-linking a finished temporary file to its name. A lock whose owner died (for example a runner
 * killed with SIGKILL) is broken by whoever first claims that very lock (see `breakIfStale`).
 */
export async function withRepoLock<T>(
  commonDir: string,
  action: () => Promise<T>,
  { timeoutMs = 600_000, abortSignal, _internal }: RepoLockOptions = {},
): Promise<T> {
  const file = join(commonDir, REPO_LOCK_FILE);
  const token =
    `${process.pid} ${randomBytes(8).toString('hex')} ${processStartTime(process.pid) ?? ''}`.trim();
  const deadline = Date.now() + timeoutMs;
  let delay = 10;
  for (;;) {
    abortSignal?.throwIfAborted();
    if (createExclusively(file, token)) break;
    breakIfStale(file, token, _internal?.pause);
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
    // Only our own lock is removed. Nobody else removes it while we live, so read-then-remove is safe.
    if (readToken(file) === token) rmSync(file, { force: true });
  }
}

/**
 * Creates `file` holding `token` unless it exists. A hard link of a finished temporary file is atomic
 * and exclusive, so nobody ever reads a lock half written (an empty lock left by a writer killed
 * between create and write would never be broken).
 */
function createExclusively(file: string, token: string): boolean {
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    writeFileSync(temporary, token, { flag: 'wx' });
    linkSync(temporary, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw lockError(file, error);
  } finally {
    rmSync(temporary, { force: true });
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

function ownerAlive(token: string): boolean {
  const [owner, , started] = token.split(' ');
  const pid = Number(owner);
  // Not a token we wrote: leave it alone.
  if (!Number.isSafeInteger(pid) || pid <= 0) return true;
  return isRecordedProcessAlive(pid, started === undefined || started === '' ? undefined : Number(started));
}

/**
 * Removes `file` if its owner is dead. Renaming a stale lock aside is not enough: a second breaker
 * that read the same stale token a moment later would move the fresh lock the first one just took.
 * So breaking a given lock (named by a hash of its token) is itself claimed exclusively, and only the
 * claim's holder removes it, after reading it again: while the claim is held nobody else can replace
 * that lock (its owner is dead, creating needs the name free, breaking needs the claim). A breaker
 * killed while holding a claim leaves a stale claim, broken the same way, one level up.
 */
function breakIfStale(file: string, token: string, pause?: (step: string) => void): void {
  const stale = readToken(file);
  if (stale === undefined || ownerAlive(stale)) return;
  pause?.('read-stale');
  const claim = `${file}.break-${createHash('sha256').update(stale).digest('hex').slice(0, 16)}`;
  if (!createExclusively(claim, token)) {
    breakIfStale(claim, token, pause);
    return;
  }
  try {
    pause?.('claimed');
    if (readToken(file) === stale) rmSync(file, { force: true });
  } finally {
    rmSync(claim, { force: true });
  }
}

function lockError(file: string, error: unknown): SwitchboardError {
  return new SwitchboardError('INTERNAL', `cannot create the repository lock ${file}`, {
    hint: 'make the repository’s .git folder writable',
    cause: error,
  });
}
