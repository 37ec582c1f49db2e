import { execFile } from 'node:child_process';
import { join } from 'node:path';

export interface CliRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

const cli = join(import.meta.dirname, '../../dist/cli/main.js');

/**
 * Runs the built CLI without blocking, so a simulator started by the same test process can answer it
 * (a synchronous spawn would deadlock).
 */
export function runCli(
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; input?: string },
): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [cli, ...args],
      { cwd: options.cwd, env: options.env, encoding: 'utf8', timeout: 60_000 },
      (error, stdout, stderr) => {
        const status = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
        resolve({ status, stdout, stderr });
      },
    );
    child.stdin?.end(options.input ?? '');
  });
}
