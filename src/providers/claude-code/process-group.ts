import { execFileSync, spawn, type ChildProcessByStdio } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';

/** The part of the Agent SDK's spawn options we use (see `spawnClaudeCodeProcess`). */
export interface SpawnRequest {
  command: string;
  args: string[];
  cwd?: string;
  env: Record<string, string | undefined>;
}

/**
 * A path (a file or folder) the parent watch deletes when the parent dies, such as the API key file of
 * an `apiKeyHelper`: the parent's own cleanup never runs after a SIGKILL. The command does not see it.
 */
export const REMOVE_ON_PARENT_DEATH_VARIABLE = 'SWITCHBOARD_REMOVE_ON_PARENT_DEATH';

/**
 * Runs the CLI under a small shell that also watches its parent: if the Node process that started it
 * dies (even by SIGKILL, which runs no cleanup), the watcher deletes `REMOVE_ON_PARENT_DEATH_VARIABLE`'s
 * path and kills the whole group within a second. Claude Code blocked on an API request does not notice
 * its input closing, so without this it would outlive its parent.
 */
const PARENT_WATCH = [
  'parent=$PPID',
  `leftover=\${${REMOVE_ON_PARENT_DEATH_VARIABLE}:-}`,
  `unset ${REMOVE_ON_PARENT_DEATH_VARIABLE}`,
  // Away from the command's pipes: a reader waiting for their end must not wait for the watcher's sleep.
  '( while kill -0 "$parent" 2>/dev/null; do sleep 1; done; if [ -n "$leftover" ]; then rm -rf -- "$leftover"; fi; kill -KILL 0 ) </dev/null >/dev/null 2>&1 &',
  'watcher=$!',
  'unset leftover',
  '"$@"',
  'status=$?',
  'kill "$watcher" 2>/dev/null',
  'exit $status',
].join('\n');

/**
 * The file and arguments that run `command args…` under the parent watch (see `PARENT_WATCH`), for a
 * process spawned with `detached: true` so that it leads a group of its own: if the spawning process
 * dies, even by SIGKILL, everything left in that group is killed within about a second. Windows has no
 * such shell; there the command runs as given.
 */
export function parentWatchedCommand(
  command: string,
  args: readonly string[],
  label: string,
): [string, string[]] {
  if (process.platform === 'win32') return [command, [...args]];
  return ['/bin/sh', ['-c', PARENT_WATCH, label, command, ...args]];
}

/**
 * A Claude Code process started in its own process group, so that killing the group takes the CLI and
 * every tool process it started (Bash commands, subagents) with it. The SDK's own abort path waits
 * about two seconds and then signals only the CLI; a timeout must not leave anything behind.
 */
export class ClaudeProcess {
  readonly child: ChildProcessByStdio<Writable, Readable, Readable>;
  private stderrTail = '';

  constructor({ command, args, cwd, env }: SpawnRequest) {
    const cleanEnvironment = Object.fromEntries(
      Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined),
    );
    const [file, argv] = parentWatchedCommand(command, args, 'claude-watch');
    this.child = spawn(file, argv, {
      cwd,
      env: cleanEnvironment,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    this.child.stderr.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-4000);
    });
    // An error such as ENOENT arrives as an event; the SDK also listens, so only keep it from crashing us.
    this.child.on('error', () => undefined);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** The last few kilobytes the process wrote to stderr, for error messages. */
  get stderr(): string {
    return this.stderrTail;
  }

  /**
   * Lets the caller's process exit while this one winds down: a finished call must not keep a CLI
   * waiting for Claude Code's shutdown. The parent watch still ends the group if we exit first.
   */
  detach(): void {
    this.child.unref();
    for (const stream of [this.child.stdin, this.child.stdout, this.child.stderr]) {
      (stream as unknown as { unref?: () => void }).unref?.();
    }
  }

  /** Kills the whole process group at once. Safe to call more than once. */
  killTree(): void {
    const pid = this.child.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // The group is already gone.
    }
  }

  /**
   * Kills the group and every process below it, also those in sessions of their own (Claude Code starts
   * each Bash command with `setsid`, so the group kill alone leaves a running test suite behind), and on
   * Linux every process whose environment carries `tag`.
   */
  killAll(tag?: ProcessTag): number[] {
    const pid = this.child.pid;
    return pid === undefined ? [] : killProcessTree(pid, tag);
  }

  /** Resolves when the process has exited, killing the group if it is still there after `graceMs`. */
  async waitForExit(graceMs: number): Promise<void> {
    if (this.exited) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.killTree();
        resolve();
      }, graceMs);
      timer.unref();
      this.child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

/** An environment variable set on a process tree so that its members can be found once orphaned. */
export interface ProcessTag {
  name: string;
  value: string;
}

function signal(target: number, name: NodeJS.Signals): void {
  try {
    process.kill(target, name);
  } catch {
    // Already gone, or not ours.
  }
}

/** pid → [parent pid, process group id] of every process, from `ps` (Linux and macOS). */
function processTable(): Map<number, [number, number]> {
  const table = new Map<number, [number, number]>();
  const output = execFileSync('ps', ['-A', '-o', 'pid=,ppid=,pgid='], { encoding: 'utf8', timeout: 5_000 });
  for (const line of output.split('\n')) {
    const [pid, parent, group] = line.trim().split(/\s+/).map(Number);
    if (pid !== undefined && parent !== undefined && group !== undefined && !Number.isNaN(group)) {
      table.set(pid, [parent, group]);
    }
  }
  return table;
}

/** Processes (Linux only) whose environment holds `tag`; processes of other users are skipped. */
export function taggedProcesses(tag: ProcessTag): number[] {
  if (process.platform !== 'linux') return [];
  const needle = `\0${tag.name}=${tag.value}\0`;
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (`\0${readFileSync(`/proc/${entry}/environ`, 'latin1')}`.includes(needle)) found.push(Number(entry));
    } catch {
      // Gone, or not ours to read.
    }
  }
  return found;
}

/**
 * Kills `rootPid`'s process group and every descendant of `rootPid`, whatever group or session it moved
 * to, and (Linux) every process whose environment carries `tag`, which finds those already orphaned.
 * The root group is stopped first so that it cannot start anything while the tree is read. Works from
 * any process of the same user, e.g. a `cancel` command given a recorded pid.
 */
export function killProcessTree(rootPid: number, tag?: ProcessTag): number[] {
  if (process.platform === 'win32') {
    signal(rootPid, 'SIGKILL');
    return [rootPid];
  }
  signal(-rootPid, 'SIGSTOP');
  const victims = new Set<number>();
  try {
    const table = processTable();
    const children = new Map<number, number[]>();
    for (const [pid, [parent]] of table) children.set(parent, [...(children.get(parent) ?? []), pid]);
    const queue = [rootPid, ...[...table].filter(([, [, group]]) => group === rootPid).map(([pid]) => pid)];
    if (tag !== undefined) queue.push(...taggedProcesses(tag));
    while (queue.length > 0) {
      const pid = queue.pop() as number;
      if (victims.has(pid) || pid === process.pid) continue;
      victims.add(pid);
      queue.push(...(children.get(pid) ?? []));
    }
    for (const pid of victims) {
      // A descendant that leads its own group (a Bash command under setsid) takes that group along.
      if (table.get(pid)?.[1] === pid) signal(-pid, 'SIGKILL');
      signal(pid, 'SIGKILL');
    }
  } finally {
    signal(-rootPid, 'SIGKILL');
  }
  return [...victims];
}

/**
 * Waits until none of `pids` runs any more, or the time is up; returns those still running. A killed
 * orphan stays a zombie until whoever adopted it reaps it, which some init processes are slow to do;
 * a zombie runs nothing and does not count.
 */
export async function waitForProcessesGone(pids: readonly number[], withinMs: number): Promise<number[]> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const running = runningProcesses(pids);
    if (running.length === 0 || Date.now() >= deadline) return running;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function runningProcesses(pids: readonly number[]): number[] {
  if (pids.length === 0) return [];
  let output: string;
  try {
    output = execFileSync('ps', ['-o', 'pid=,stat=', '-p', pids.join(',')], {
      encoding: 'utf8',
      timeout: 5_000,
    });
  } catch (error) {
    // ps exits 1 when none of the pids exists.
    output = String((error as { stdout?: unknown }).stdout ?? '');
  }
  return output
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([pid, state]) => pid !== undefined && pid !== '' && !(state ?? '').startsWith('Z'))
    .map(([pid]) => Number(pid));
}
