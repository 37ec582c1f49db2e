import { accessSync, constants as fsConstants, statSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { delimiter, isAbsolute, join, resolve, sep } from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { killProcessTree } from '../../providers/claude-code/process-group.js';
import { startParentWatch, watchChild } from '../../providers/claude-code/parent-watch.js';
import { redactDeep, redactSecrets } from '../../core/secrets.js';
import { validateOutput } from '../output-schema.js';
import type { ScriptStep } from '../model.js';
import type { StepContext, StepExecutor, StepOutcome } from '../step-executor.js';
import { isPlainObject } from '../../core/plain-object.js';
import { safeJsonParse } from '../../core/safe-json.js';

/** What a script step's output always holds; a JSON object on stdout is merged on top. */
export interface ScriptOutput {
  stdout: string;
  stderr: string;
  exit_code: number;
  [field: string]: unknown;
}

/** How much of each stream the `script-output` event keeps: the last 2,000 characters. */
const STREAM_EVENT_LIMIT = 2_000;

/** The end of a text, at most `limit` characters, saying how much came before. */
function tail(text: string, limit: number): string {
  return text.length <= limit ? text : `(${text.length - limit} characters before) …${text.slice(-limit)}`;
}

/** Bytes a script may print on stdout, and again on stderr, unless its step says `max_output_bytes`. */
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
/** Bytes of a stream's end kept in the output when the script printed past its cap. */
const KEPT_TAIL_BYTES = 64 * 1024;

/** What the child did, before the output is shaped. */
interface ScriptProcessResult {
  stdout: string;
  stderr: string;
  exitCode: number;
  /** The signal that ended the child, when one did. */
  signal?: string;
  timedOut: boolean;
  aborted: boolean;
  /** The stream that passed the cap, when one did (the child was then killed). */
  overflow?: 'stdout' | 'stderr';
  /** Why the child could not be started, when it could not. */
  startError?: string;
}

/**
 * `type: script`: runs `command args…` (each rendered as a template; `env` values as written) and
 * captures `{stdout, stderr, exit_code}`, as Conductor does. A non-zero exit is not a failure: routes
 * decide (`when: exit_code == 0`). A JSON object on stdout is merged into the output; with `output:`
 * declared, stdout must be exactly one JSON object and the merged output must match the schema.
 * The child leads its own process group: a `timeout`, an abort, or the runner's death kills everything
 * it started. Captured text is cleaned of secrets before it enters the output.
 */
export const executeScriptStep: StepExecutor = async (context) => {
  const step = context.step as ScriptStep;
  const command = context.render(step.command, 'command');
  const args = step.args.map((arg, index) => context.render(arg, `args[${index}]`));
  const workingDir =
    step.workingDir === undefined ? undefined : context.render(step.workingDir, 'working_dir');
  const stdin = step.stdin === undefined ? undefined : context.render(step.stdin, 'stdin');
  const env: NodeJS.ProcessEnv = { ...process.env, PYTHONUTF8: '1', ...step.env };
  const cwd = resolve(workingDir ?? '.');
  if (!isDirectory(cwd)) {
    return failure(
      'WORKFLOW_FAILED',
      `step "${step.name}": working_dir ${cwd} is not a directory; create it first (a script step can) or fix the template`,
    );
  }
  const executable = findExecutable(command, cwd, env['PATH']);
  if (executable === undefined) {
    return failure(
      'WORKFLOW_FAILED',
      `step "${step.name}": command not found: "${command}" (working_dir ${cwd}); install it or put it on PATH`,
    );
  }
  const timeoutMs = effectiveTimeoutMs(step.timeoutSeconds, context.deadline);
  const maxOutputBytes = step.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  const started = performance.now();
  const result = await runScriptProcess(context, {
    executable,
    args,
    cwd,
    env,
    stdin,
    timeoutMs,
    maxOutputBytes,
  });
  if (result.startError !== undefined) {
    return failure(
      'WORKFLOW_FAILED',
      `step "${step.name}": could not start "${command}": ${result.startError}`,
    );
  }
  const output: ScriptOutput = {
    stdout: redactSecrets(result.stdout),
    stderr: redactSecrets(result.stderr),
    exit_code: result.exitCode,
  };
  await context.emit({
    type: 'script-output',
    data: {
      exitCode: result.exitCode,
      ...(result.signal === undefined ? {} : { signal: result.signal }),
      durationMs: Math.round(performance.now() - started),
      stdout: tail(output.stdout, STREAM_EVENT_LIMIT),
      stderr: tail(output.stderr, STREAM_EVENT_LIMIT),
    },
  });
  if (result.aborted) {
    return failure(
      'ABORTED',
      `step "${step.name}": the script was stopped (the run was cancelled or lost)`,
      output,
    );
  }
  if (result.timedOut) {
    return failure(
      'TIMEOUT',
      `step "${step.name}": the script timed out after ${(timeoutMs ?? 0) / 1000} s and was killed with every process it started`,
      output,
    );
  }
  if (result.overflow !== undefined) {
    return failure(
      'OUTPUT_LIMIT',
      `step "${step.name}": the script printed more than ${maxOutputBytes} bytes on ${result.overflow} (max_output_bytes) and was killed with every process it started; the output keeps its last ${KEPT_TAIL_BYTES / 1024} KiB. Raise max_output_bytes on the step, or have the script write large output to a file`,
      output,
    );
  }
  // Ended by a signal nobody here sent (the OOM killer, a kill from outside): it did not finish.
  if (result.signal !== undefined) {
    return failure(
      'WORKFLOW_FAILED',
      `step "${step.name}": the script was killed by ${result.signal} (exit ${result.exitCode}) before it finished`,
      output,
    );
  }
  return shapeOutput(step, result.stdout, output);
};

/**
 * One captured stream: everything up to the cap; past it only the last `KEPT_TAIL_BYTES`, so a script
 * printing without end costs neither memory nor a huge ledger row.
 */
class CappedStream {
  private chunks: Buffer[] = [];
  private total = 0;
  private readonly cap: number;

  constructor(cap: number) {
    this.cap = cap;
  }

  get over(): boolean {
    return this.total > this.cap;
  }

  /** Adds a chunk; true when this chunk took the stream past its cap. */
  add(chunk: Buffer | string): boolean {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    const wasOver = this.over;
    this.total += bytes.length;
    this.chunks.push(bytes);
    if (this.over) {
      const all = Buffer.concat(this.chunks);
      this.chunks = [Buffer.from(all.subarray(Math.max(0, all.length - KEPT_TAIL_BYTES)))];
    }
    return this.over && !wasOver;
  }

  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

/** Merges a JSON object printed on stdout into the output; with `output:` declared, enforces it. */
function shapeOutput(step: ScriptStep, rawStdout: string, output: ScriptOutput): StepOutcome {
  const parsed = safeJsonParse(rawStdout);
  const merged: ScriptOutput =
    parsed.ok && isPlainObject(parsed.value) ? { ...output, ...redactDeep(parsed.value) } : output;
  if (step.output === undefined) return { status: 'completed', output: merged, costUsd: 0 };
  const contract = 'output: is declared, so stdout must be exactly one JSON object (write logs to stderr)';
  if (!parsed.ok) {
    return failure('SCHEMA', `step "${step.name}": ${contract}, but it is not JSON: ${parsed.error}`, merged);
  }
  if (!isPlainObject(parsed.value)) {
    return failure(
      'SCHEMA',
      `step "${step.name}": ${contract}, but it is a JSON ${jsonKind(parsed.value)}`,
      merged,
    );
  }
  const violation = validateOutput(step.output, merged);
  if (violation !== undefined) {
    return failure(
      'SCHEMA',
      `step "${step.name}": stdout JSON does not match its output: schema: ${violation}`,
      merged,
    );
  }
  return { status: 'completed', output: merged, costUsd: 0 };
}

interface ProcessOptions {
  executable: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  stdin: string | undefined;
  timeoutMs: number | undefined;
  maxOutputBytes: number;
}

/**
 * Runs the child in a group of its own, registered with the parent watch (see `watchChild`), so a
 * timeout, an abort, or our own death takes every process the script started with it, and whatever
 * it left running in the background is killed once it exits. Like execa, it resolves once the child
 * has exited and its output pipes have closed.
 */
async function runScriptProcess(
  context: StepContext,
  { executable, args, cwd, env, stdin, timeoutMs, maxOutputBytes }: ProcessOptions,
): Promise<ScriptProcessResult> {
  startParentWatch();
  const subprocess = spawn(executable, args, {
    cwd,
    env,
    detached: process.platform !== 'win32',
    // Never the terminal: a script waiting for keyboard input would hang the run.
    stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    windowsHide: true,
  });
  const ended = processEnd(subprocess);
  watchChild(subprocess);
  if (stdin !== undefined && subprocess.stdin !== null) {
    // A script that exits without reading its input is no error of ours.
    subprocess.stdin.on('error', () => undefined);
    subprocess.stdin.end(stdin);
  }
  const pid = subprocess.pid;
  const killGroup = (): void => {
    if (pid === undefined) return;
    try {
      process.kill(process.platform === 'win32' ? pid : -pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  };
  // Stopping a running script also finds what left its group (a `setsid` daemon, a nested session).
  const killTree = (): void => {
    if (pid !== undefined) killProcessTree(pid);
  };
  let timedOut = false;
  let aborted = false;
  let overflow: ScriptProcessResult['overflow'];
  // Listen before anything is awaited: what a quick script prints while the process-start event is
  // being written (a round trip to PostgreSQL) would otherwise be lost.
  const streams = { stdout: new CappedStream(maxOutputBytes), stderr: new CappedStream(maxOutputBytes) };
  for (const name of ['stdout', 'stderr'] as const) {
    subprocess[name]?.on('data', (chunk: Buffer) => {
      if (!streams[name].add(chunk) || overflow !== undefined) return;
      overflow = name;
      killTree();
    });
  }
  if (pid !== undefined)
    await context.emit({ type: 'process-start', step: context.step.name, key: context.key, data: { pid } });
  const timer =
    timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          killTree();
        }, timeoutMs);
  const onAbort = (): void => {
    aborted = true;
    killTree();
  };
  if (context.signal.aborted) onAbort();
  else context.signal.addEventListener('abort', onAbort, { once: true });
  try {
    const end = await ended;
    // Whatever the script left running in its group (a backgrounded server) goes too.
    killGroup();
    const processResult: ScriptProcessResult = {
      stdout: streams.stdout.text(),
      stderr: streams.stderr.text(),
      exitCode: exitCodeOf(end.exitCode, end.signal),
      timedOut,
      aborted,
      ...(overflow === undefined ? {} : { overflow }),
      ...(end.signal === undefined ? {} : { signal: end.signal }),
    };
    if (end.startError !== undefined) processResult.startError = end.startError;
    return processResult;
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    context.signal.removeEventListener('abort', onAbort);
  }
}

/** How a child ended: its exit code or signal, or why it could not start. */
interface ProcessEnd {
  exitCode?: number;
  signal?: string;
  startError?: string;
}

/** Resolves when the child has exited and its pipes have closed, or when it could not be started. */
function processEnd(subprocess: ChildProcess): Promise<ProcessEnd> {
  return new Promise((resolveEnd) => {
    subprocess.once('error', (error: NodeJS.ErrnoException) => {
      // An error after the start (a failed kill) leaves 'close' to report the end.
      if (subprocess.pid === undefined) resolveEnd({ startError: error.message });
    });
    subprocess.once('close', (code: number | null, signal: NodeJS.Signals | null) => {
      resolveEnd({
        ...(code === null ? {} : { exitCode: code }),
        ...(signal === null ? {} : { signal }),
      });
    });
  });
}

/** A process killed by a signal reports `128 + n`, as a shell would. */
function exitCodeOf(exitCode: number | undefined, signal: string | undefined): number {
  if (exitCode !== undefined) return exitCode;
  const number = signal === undefined ? undefined : osConstants.signals[signal as NodeJS.Signals];
  return number === undefined ? 1 : 128 + number;
}

/** The step's `timeout` or the run's deadline, whichever comes first. */
function effectiveTimeoutMs(
  timeoutSeconds: number | undefined,
  deadline: number | undefined,
): number | undefined {
  const candidates: number[] = [];
  if (timeoutSeconds !== undefined) candidates.push(timeoutSeconds * 1000);
  if (deadline !== undefined) candidates.push(Math.max(0, deadline - Date.now()));
  return candidates.length === 0 ? undefined : Math.min(...candidates);
}

/**
 * The path the child will run, or undefined when there is none: a bare name is looked up on the
 * child's PATH (so a missing tool is a clear failure, not the shell's exit 127), a path with a
 * separator is taken relative to the working directory.
 */
function findExecutable(command: string, cwd: string, path: string | undefined): string | undefined {
  if (command === '') return undefined;
  if (isAbsolute(command) || command.includes(sep) || command.includes('/')) {
    const candidate = resolve(cwd, command);
    return isExecutable(candidate) ? candidate : undefined;
  }
  for (const folder of (path ?? '').split(delimiter)) {
    if (folder === '') continue;
    const candidate = join(folder, command);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, process.platform === 'win32' ? fsConstants.F_OK : fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function jsonKind(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  return typeof value;
}

function failure(code: string, message: string, output?: unknown): StepOutcome {
  const outcome: StepOutcome = {
    status: 'failed',
    costUsd: 0,
    error: { code, message: redactSecrets(message) },
  };
  if (output !== undefined) outcome.output = output;
  return outcome;
}
