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
    this.child = spawn(command, args, {
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
