import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { killServers, serve, type Served } from './serve-process.js';

export interface Gateway extends Served {
  /** The folder `serve` runs in: its switchboard.yaml and .switchboard state folder. */
  cwd: string;
  /** The whole environment `serve` was started with, for a `switchboard` command run beside it. */
  env: NodeJS.ProcessEnv;
  /** The rows `sql` selects from the server's ledger, opened read-only for this one query. */
  ledger<T>(sql: string, ...parameters: unknown[]): T[];
  /** Kills the server, waits for it to exit, and removes its folder. */
  close(): Promise<void>;
}

/**
 * Starts the built `switchboard serve --port 0 --pool 0` in a fresh temporary folder, as the gateway's
 * integration tests do: `yaml`'s lines written to its switchboard.yaml (none when undefined), `env`
 * (provider keys and base URLs) over `process.env`, and never an outer server's address or token, so a
 * `switchboard serve` the developer has running is not touched.
 */
export async function startGateway({
  name,
  yaml,
  args = [],
  env,
  children,
  realPath = false,
}: {
  /** The folder's name, after `switchboard-`; mkdtemp adds a random suffix. */
  name: string;
  yaml: readonly string[] | undefined;
  /** More arguments for `serve` (`--ui`, `--metrics`, `--max-timeout 2`). */
  args?: readonly string[];
  env: Record<string, string>;
  children: Set<ChildProcess>;
  /** The folder by its real path (a symlinked tmpdir resolved), for a test that compares paths. */
  realPath?: boolean;
}): Promise<Gateway> {
  const made = mkdtempSync(join(tmpdir(), `switchboard-${name}-`));
  const cwd = realPath ? realpathSync(made) : made;
  const fullEnv: NodeJS.ProcessEnv = {
    ...process.env,
    ...env,
    SWITCHBOARD_SERVER: '',
    SWITCHBOARD_SERVER_TOKEN: '',
  };
  let served: Served;
  try {
    if (yaml !== undefined) writeFileSync(join(cwd, 'switchboard.yaml'), [...yaml, ''].join('\n'));
    served = await serve(['--port', '0', '--pool', '0', ...args], { cwd, children, env: fullEnv });
  } catch (error) {
    rmSync(cwd, { recursive: true, force: true });
    throw error;
  }
  return {
    ...served,
    cwd,
    env: fullEnv,
    ledger<T>(sql: string, ...parameters: unknown[]): T[] {
      const database = new Database(join(cwd, '.switchboard', 'ledger.db'), { readonly: true });
      try {
        return database.prepare(sql).all(...parameters) as T[];
      } finally {
        database.close();
      }
    },
    async close() {
      killServers(new Set([served.child]));
      await served.exited;
      rmSync(cwd, { recursive: true, force: true });
    },
  };
}
