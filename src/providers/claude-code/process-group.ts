import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

/** The part of the Agent SDK's spawn options we use (see `spawnClaudeCodeProcess`). */
export interface SpawnRequest {
  command: string;
  args: string[];
  cwd?: string;
  env: Record<string, string | undefined>;
}

/**
 * Runs the CLI under a small shell that also watches its parent: if the Node process that started it
 * dies (even by SIGKILL, which runs no cleanup), the watcher kills the whole group within a second.
 * Claude Code blocked on an API request does not notice its input closing, so without this it would
 * outlive its parent.
 */
const PARENT_WATCH = [
  'parent=$PPID',
  '( while kill -0 "$parent" 2>/dev/null; do sleep 1; done; kill -KILL 0 ) &',
  'watcher=$!',
  '"$@"',
  'status=$?',
  'kill "$watcher" 2>/dev/null',
  'exit $status',
].join('\n');

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
    const [file, argv] =
      process.platform === 'win32'
        ? [command, args]
        : ['/bin/sh', ['-c', PARENT_WATCH, 'claude-watch', command, ...args]];
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
