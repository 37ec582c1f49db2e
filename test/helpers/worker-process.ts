import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { waitFor } from './wait-for.js';

const cli = join(import.meta.dirname, '../../dist/cli/main.js');

/** A `switchboard worker` of the built CLI, running as its own process (one "machine"). */
export interface WorkerProcess {
  child: ChildProcess;
  pid: number;
  /** The /healthz and /metrics address when started with `--port`. */
  url?: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout: () => string;
  stderr: () => string;
  /** The `job <queue> <run id> <outcome> <seconds>s` lines so far. */
  jobLines: () => string[];
}

/**
 * Starts `switchboard worker` and resolves once it says it is ready (or rejects with its stderr when it
 * exits first). The child joins `children`, for the caller's cleanup.
 */
export async function startWorker(
  args: readonly string[],
  { cwd, env, children }: { cwd: string; env: NodeJS.ProcessEnv; children: Set<ChildProcess> },
): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [cli, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      resolve(exit);
    }),
  );
  await waitFor(() => exit !== undefined || /worker ready/.test(stdout), {
    withinMs: 30_000,
    what: 'the worker to say it is ready',
  });
  if (exit !== undefined) throw new Error(`worker exited ${exit.code}: ${stderr}`);
  const worker: WorkerProcess = {
    child,
    pid: child.pid as number,
    exited,
    stdout: () => stdout,
    stderr: () => stderr,
    jobLines: () => stderr.split('\n').filter((line) => line.startsWith('job ')),
  };
  const url = /worker listening on (http:\/\/\S+)/.exec(stdout)?.[1];
  if (url !== undefined) worker.url = url;
  return worker;
}

/** Kills every worker still running (SIGKILL), even when a test failed before stopping it. */
export function killWorkers(children: Set<ChildProcess>): void {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}
