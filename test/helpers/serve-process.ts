import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const cli = join(import.meta.dirname, '../../dist/cli/main.js');

export interface Served {
  url: string;
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout: () => string;
  stderr: () => string;
}

/**
 * Starts the built `switchboard serve` (or `ui`) and resolves with its URL once it prints it (or rejects with
 * the exit code and stderr when it exits first). The child joins `children`, for the caller's cleanup.
 */
export function serve(
  args: string[],
  {
    cwd,
    env,
    children,
    command = 'serve',
  }: { cwd: string; env: NodeJS.ProcessEnv; children: Set<ChildProcess>; command?: 'serve' | 'ui' },
): Promise<Served> {
  const child = spawn(process.execPath, [cli, command, ...args], {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stdout = '';
  let stderr = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      const url = /listening on (http:\/\/\S+)/.exec(stdout)?.[1];
      if (url !== undefined) {
        resolve({ url, child, exited, stdout: () => stdout, stderr: () => stderr });
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    void exited.then(({ code }) =>
      reject(Object.assign(new Error(`serve exited ${code}: ${stderr}`), { code, stderr })),
    );
  });
}

/** Kills every server still running (SIGKILL), even when a test failed before stopping it. */
export function killServers(children: Set<ChildProcess>): void {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}
