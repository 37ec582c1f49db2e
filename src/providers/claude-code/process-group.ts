import { execFileSync, spawn, type ChildProcessByStdio } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { startParentWatch, watchChild } from './parent-watch.js';

/** The part of the Agent SDK's spawn options we use (see `spawnClaudeCodeProcess`). */
export interface SpawnRequest {
  command: string;
  args: string[];
  cwd?: string;
  env: Record<string, string | undefined>;
}

/**
 * A path (a file or folder) the parent watch deletes when the parent dies, such as the API key file of
 * an `apiKeyHelper`: the parent's own cleanup never runs after a SIGKILL. Given in a `SpawnRequest`'s
 * environment, it is registered with the watcher (see `watchChild`); the command does not see it.
 */
export const REMOVE_ON_PARENT_DEATH_VARIABLE = 'SWITCHBOARD_REMOVE_ON_PARENT_DEATH';

/**
 * A Claude Code process started in its own process group, so that killing the group takes the CLI and
 * every tool process it started (Bash commands, subagents) with it. The SDK's own abort path waits
 * about two seconds and then signals only the CLI; a timeout must not leave anything behind. Claude
 * Code blocked on an API request does not notice its input closing, so the group is registered with
 * the parent watch (see `watchChild`), which ends it if this process dies first.
 */
export class ClaudeProcess {
  readonly child: ChildProcessByStdio<Writable, Readable, Readable>;
  private stderrTail = '';

  constructor({ command, args, cwd, env }: SpawnRequest) {
    const { [REMOVE_ON_PARENT_DEATH_VARIABLE]: leftover, ...rest } = env;
    const cleanEnvironment = Object.fromEntries(
      Object.entries(rest).filter((entry): entry is [string, string] => entry[1] !== undefined),
    );
    startParentWatch();
    this.child = spawn(command, args, {
      cwd,
      env: cleanEnvironment,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    // If we die, even by SIGKILL, the parent watch ends the group and deletes the leftover.
    watchChild(this.child, leftover === undefined ? {} : { removeOnParentDeath: leftover });
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
