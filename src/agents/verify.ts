import { agentEnvironment } from './environment.js';
import { startParentWatch, watchProcessGroup } from '../providers/claude-code/parent-watch.js';
import { redactSecrets } from '../core/secrets.js';
import { confinedCommand, type ConfinedInvocation } from '../confinement/sandbox.js';

/** What a sandboxed setup or verify command must not see, and the git folder it may read. */
export type CommandSandbox = Pick<ConfinedInvocation, 'hiddenDirectories' | 'gitDirectory'>;

/** What the verify command did. */
export interface VerifyResult {
  passed: boolean;
  exitCode?: number;
  timedOut: boolean;
  durationMs: number;
  /** The last part of its combined output, for the ledger and for the agent's next attempt. */
  outputTail: string;
  /** How many characters of the output came before the tail and are not in it. */
  omittedChars: number;
  /** With `confine`: whether it ran in the sandbox, and why not (see `confinedCommand`). */
  sandbox?: { enabled: boolean; reason?: string };
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
  /** What the timeout note calls the command. @default 'verify command' */
  label?: string;
  /** The command's whole environment (the parent's is not added), e.g. `agentEnvironment()` and the run's tag. */
  env?: Record<string, string>;
  /**
   * Run it in a sandbox as the agent's Bash runs (see `confinedCommand`), hiding `hiddenDirectories`
   * too: a command that runs code the agent may have changed must. @default unconfined
   */
  confine?: CommandSandbox & Pick<ConfinedInvocation, 'network' | 'maskDenied' | 'maskedPaths'>;
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
  label = 'verify command',
  env = agentEnvironment(),
  confine,
}: RunVerifyOptions): Promise<VerifyResult> {
  const started = Date.now();
  const shell = ['/bin/sh', '-c', command];
  const confined = confine === undefined ? undefined : confinedCommand({ cwd, argv: shell, ...confine });
  const [program = '/bin/sh', ...programArgs] = confined?.argv ?? shell;
  const [file, args] = process.platform === 'win32' ? [command, []] : [program, programArgs];
  const { execa } = await import('execa');
  startParentWatch();
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
  const unwatch = pid === undefined ? () => undefined : watchProcessGroup(pid);
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
    unwatch();
    // The tail goes to the ledger and into the agent's next prompt: no known secret in it.
    const output = redactSecrets(String(result.all ?? ''));
    const tail = output.length > tailLength ? `…${output.slice(-tailLength)}` : output;
    const verify: VerifyResult = {
      passed: !timedOut && result.exitCode === 0,
      timedOut,
      durationMs: Date.now() - started,
      outputTail: timedOut ? `${tail}\n[${label} timed out after ${timeoutMs} ms and was killed]` : tail,
      omittedChars: Math.max(0, output.length - tailLength),
    };
    if (result.exitCode !== undefined) verify.exitCode = result.exitCode;
    if (confined !== undefined) verify.sandbox = confined.note;
    return verify;
  } finally {
    unwatch();
    clearTimeout(timer);
    abortSignal?.removeEventListener('abort', onAbort);
  }
}
