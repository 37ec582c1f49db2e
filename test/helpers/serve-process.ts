import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const cli = join(import.meta.dirname, '../../dist/cli/main.js');
/** The launcher a user runs: it execs one Node process, so the pid it starts with is the server's. */
export const launcher = join(import.meta.dirname, '../../bin/switchboard');

export interface Served {
  url: string;
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout: () => string;
  stderr: () => string;
  /** The server's token, from the token file it wrote in its state folder. */
  token: string;
  /** `{ authorization: 'Bearer <token>' }`, for a request's headers. */
  auth: { authorization: string };
}

/** The state folder a server started with `args` in `cwd` uses (as config.ts resolves it, less the yaml). */
export function stateFolderOf(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): string {
  const flag = args.indexOf('--state-dir');
  const given = flag === -1 ? env['SWITCHBOARD_STATE_DIR'] : args[flag + 1];
  return resolve(cwd, given === undefined || given === '' ? '.switchboard' : given);
}

/** The token a running server wrote to `<stateDir>/serve-<port>.token`. */
export function tokenOf(url: string, stateDir: string): string {
  const port = new URL(url).port;
  return (JSON.parse(readFileSync(join(stateDir, `serve-${port}.token`), 'utf8')) as { token: string }).token;
}

/**
 * Starts the built `switchboard serve` (or `ui`) and resolves with its URL once it prints it (or rejects with
 * the exit code and stderr when it exits first). The child joins `children`, for the caller's cleanup.
 * `viaLauncher` starts it through bin/switchboard, as a user does, instead of `node dist/cli/main.js`.
 */
export function serve(
  args: string[],
  {
    cwd,
    env,
    children,
    command = 'serve',
    viaLauncher = false,
  }: {
    cwd: string;
    env: NodeJS.ProcessEnv;
    children: Set<ChildProcess>;
    command?: 'serve' | 'ui';
    viaLauncher?: boolean;
  },
): Promise<Served> {
  const [program, first] = viaLauncher ? [launcher, []] : [process.execPath, [cli]];
  const child = spawn(program, [...first, command, ...args], {
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
        let token: string;
        try {
          token = tokenOf(url, stateFolderOf(args, cwd, env));
        } catch (error) {
          reject(error as Error);
          return;
        }
        const auth = { authorization: `Bearer ${token}` };
        resolve({ url, child, exited, stdout: () => stdout, stderr: () => stderr, token, auth });
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
