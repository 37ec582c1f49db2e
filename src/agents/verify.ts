import { agentEnvironment } from './environment.js';
import { parentWatchedCommand } from '../providers/claude-code/process-group.js';
import { redactSecrets } from '../core/secrets.js';

/** What the verify command did. */
export interface VerifyResult {
  passed: boolean;
  exitCode?: number;
  timedOut: boolean;
  durationMs: number;
  /** The last part of its combined output, for the ledger and for the agent's next attempt. */
  outputTail: string;
}

export interface RunVerifyOptions {
  command: string;
  cwd: string;
  timeoutMs: number;
  abortSignal?: AbortSignal;
  /** The pid of the shell, which leads its own process group (for `cancel` from another process). */
  onSpawn?: (pid: number) => void;
  /** @default 4000 characters */
  tailLength?: number;
  /** The command's whole environment (the parent's is not added), e.g. `agentEnvironment()` and the run's tag. */
  env?: Record<string, string>;
}

/**
 * Runs the task's verify command through the shell in the worktree. The command leads its own process
 * group, so a timeout or an abort kills everything it started (test runners, servers), not only the
 * shell. The group also dies with the runner: a watcher in it kills it once the runner is gone, even
 * after a `kill -9` that gives the runner no chance to clean up.
 */
export async function runVerify({
  command,
  cwd,
  timeoutMs,
  abortSignal,
  onSpawn,
  tailLength = 4000,
  env = agentEnvironment(),
}: RunVerifyOptions): Promise<VerifyResult> {
  const started = Date.now();
  const [file, args] =
    process.platform === 'win32'
      ? [command, []]
      : parentWatchedCommand('/bin/sh', ['-c', command], 'verify-watch');
  const { execa } = await import('execa');
  const subprocess = execa(file, args, {
    cwd,
    shell: process.platform === 'win32',
    detached: true,
    reject: false,
    all: true,
    stdin: 'ignore',
    extendEnv: false,
    env: { ...env, CI: '1' },
  });
  const pid = subprocess.pid;
  const killTree = (): void => {
    if (pid === undefined) return;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  };
  if (pid !== undefined) onSpawn?.(pid);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killTree();
  }, timeoutMs);
  const onAbort = (): void => killTree();
  abortSignal?.addEventListener('abort', onAbort, { once: true });
  try {
    const result = await subprocess;
    // Whatever the shell left running in its group (a backgrounded server) goes too.
    killTree();
    // The tail goes to the ledger and into the agent's next prompt: no known secret in it.
    const output = redactSecrets(String(result.all ?? ''));
    const tail = output.length > tailLength ? `…${output.slice(-tailLength)}` : output;
    const verify: VerifyResult = {
      passed: !timedOut && result.exitCode === 0,
      timedOut,
      durationMs: Date.now() - started,
      outputTail: timedOut
        ? `${tail}\n[verify command timed out after ${timeoutMs} ms and was killed]`
        : tail,
    };
    if (result.exitCode !== undefined) verify.exitCode = result.exitCode;
    return verify;
  } finally {
    clearTimeout(timer);
    abortSignal?.removeEventListener('abort', onAbort);
  }
}
