import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { isRecordedProcessAlive } from '../agents/repo-lock.js';

// Where a running `serve` keeps its token for the programs of its user, as Jupyter keeps its server's:
// a 0600 file in its state folder, and one in a per-user registry under HOME keyed by port, so a client
// started in another folder (the prompt hook, run from Claude Code's project) finds it too. Both lie
// where an agent's sandbox sees nothing: HOME is always hidden, and `serverStateFolders` names the state
// folders of running servers for the sandbox to hide. Kept to node built-ins: `call --server` reads it
// on its fast path.

/** The environment variable holding the server's token; set, it wins over the files. */
export const TOKEN_VARIABLE = 'SWITCHBOARD_SERVER_TOKEN';

/** What a token file holds. */
export interface TokenRecord {
  url: string;
  token: string;
  pid: number;
  /** The server's state folder: hidden from agents' sandboxes while the server runs. */
  stateDir: string;
  /**
   * A server started in the background by a client (`cli/background-serve.ts`): the fingerprint of the
   * settings it routes and calls with. Clients with the same settings use it; others leave it alone.
   */
  settings?: string;
}

/** The per-user registry: one file per port of a running server. */
export function registryFolder(home = homedir()): string {
  return join(home, '.switchboard', 'servers');
}

/** The token file in a state folder for a server on `port`. */
export function stateTokenFile(stateDir: string, port: number): string {
  return join(stateDir, `serve-${port}.token`);
}

function registryTokenFile(port: number, home?: string): string {
  return join(registryFolder(home), `${port}.token`);
}

/**
 * Writes the token files of a server that listens on `port`, each 0600, whole or not at all. The state
 * folder's must be written (the server fails to start without it); the registry's is a convenience,
 * so a failure there only comes back in `warnings`. Returns the files to remove at exit.
 */
export async function writeTokenFiles(
  record: TokenRecord,
  port: number,
): Promise<{ files: string[]; warnings: string[] }> {
  const { writeFileAtomically } = await import('../store/atomic-file.js');
  const text = `${JSON.stringify(record)}\n`;
  const write = (folder: string, file: string) => {
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    // An older file keeps its own mode through the atomic rename: removed first, the new one is 0600.
    rmSync(file, { force: true });
    writeFileAtomically(file, text, { redact: false, mode: 0o600 });
  };
  const stateFile = stateTokenFile(record.stateDir, port);
  write(record.stateDir, stateFile);
  const files = [stateFile];
  const warnings: string[] = [];
  const registered = registryTokenFile(port);
  try {
    write(registryFolder(), registered);
    files.push(registered);
  } catch (error) {
    warnings.push(
      `could not write ${registered} (${(error as NodeJS.ErrnoException).code ?? 'error'}): clients in other folders need ${TOKEN_VARIABLE}`,
    );
  }
  return { files, warnings };
}

/** Removes the token files that still hold `token` (a newer server on the port may have replaced one). */
export function removeTokenFiles(files: readonly string[], token: string): void {
  for (const file of files) {
    if (readRecord(file)?.token === token) rmSync(file, { force: true });
  }
}

function readRecord(file: string): TokenRecord | undefined {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const record = value as Partial<TokenRecord>;
  if (typeof record.token !== 'string' || typeof record.pid !== 'number') return undefined;
  if (typeof record.stateDir !== 'string' || typeof record.url !== 'string') return undefined;
  if (record.settings !== undefined && typeof record.settings !== 'string') return undefined;
  return record as TokenRecord;
}

/** A record whose server is gone (killed before it could remove its file) is no one's token. */
function alive(record: TokenRecord): boolean {
  return processRunning(record.pid);
}

/**
 * Whether a process of this user's with `pid` runs: what a file left by a process (a token file, the
 * background server's start lock) is worth once that process may be gone.
 */
export function processRunning(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch {
    // ESRCH, or EPERM: another user's process has the pid now, so the one that wrote it is gone.
    return false;
  }
  // Not a zombie either (exited, not yet reaped: an orphan waits for init, which in a container may
  // take seconds): the one rule for that is the agents' lock's.
  return isRecordedProcessAlive(pid);
}

/** Whether a URL names this machine's loopback: only then may a local file's token go to it. */
export function namesLoopback(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || /^127\.\d+\.\d+\.\d+$/.test(host) || host === '::1';
}

/** Where a client's token came from, for the hint of a refusal. */
export interface FoundToken {
  token: string;
  /** `SWITCHBOARD_SERVER_TOKEN`, or the file it was read from. */
  source: string;
}

/**
 * The token to send to `server`: `SWITCHBOARD_SERVER_TOKEN` when set; else, for a server on loopback
 * only (a local file's token must never go to another machine), the token file of a live server on
 * its port in `stateDir`, then in the per-user registry. `undefined` when there is none.
 */
export function findServerToken(
  server: URL,
  {
    stateDir,
    environment = process.env,
    home,
  }: { stateDir?: string | undefined; environment?: NodeJS.ProcessEnv; home?: string } = {},
): FoundToken | undefined {
  const given = environment[TOKEN_VARIABLE]?.trim();
  if (given !== undefined && given !== '') return { token: given, source: TOKEN_VARIABLE };
  if (!namesLoopback(server)) return undefined;
  const port = Number(server.port === '' ? (server.protocol === 'https:' ? 443 : 80) : server.port);
  const files = [
    ...(stateDir === undefined ? [] : [stateTokenFile(stateDir, port)]),
    registryTokenFile(port, home),
  ];
  for (const file of files) {
    const record = readRecord(file);
    if (record !== undefined && alive(record) && sameListener(record.url, server))
      return { token: record.token, source: file };
  }
  return undefined;
}

/**
 * Whether `server` is the listener the record was written for, not only its port: 127.0.0.0/8 holds
 * many addresses, so another program may listen on 127.0.0.5 with the port of the user's server on
 * 127.0.0.1, and a token sent there would be its. `localhost` is taken for 127.0.0.1 and ::1.
 */
function sameListener(recorded: string, server: URL): boolean {
  let written: URL;
  try {
    written = new URL(recorded);
  } catch {
    return false;
  }
  const address = (url: URL): string => {
    const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    return host === 'localhost' ? 'loopback' : host === '127.0.0.1' || host === '::1' ? 'loopback' : host;
  };
  const port = (url: URL): string => url.port || (url.protocol === 'https:' ? '443' : '80');
  return address(written) === address(server) && port(written) === port(server);
}

/** A live server's token file found in a state folder. */
export interface FoundServer {
  record: TokenRecord;
  file: string;
}

/**
 * The live server in `stateDir` started in the background with `settings`, from its token file (the
 * same file `findServerToken` then reads its token from). The file of a server that is gone (killed
 * before it could remove it) is removed on the way, so it costs one look, never a connection attempt.
 */
export function findStateServer(stateDir: string, settings: string): FoundServer | undefined {
  let names: string[];
  try {
    names = readdirSync(stateDir);
  } catch {
    return undefined;
  }
  for (const name of names) {
    if (!/^serve-\d+\.token$/.test(name)) continue;
    const file = join(stateDir, name);
    const record = readRecord(file);
    if (record === undefined) continue;
    if (!alive(record)) {
      forgetServer({ record, file });
      continue;
    }
    if (record.settings === settings) return { record, file };
  }
  return undefined;
}

/**
 * Removes a found server's token files (its state folder's and the registry's) that still hold its
 * token: it did not answer, so its pid belongs to another process now, or it is stopping.
 */
export function forgetServer({ record, file }: FoundServer, home?: string): void {
  const port = /^serve-(\d+)\.token$/.exec(file.slice(file.lastIndexOf('/') + 1))?.[1];
  const files = port === undefined ? [file] : [file, registryTokenFile(Number(port), home)];
  removeTokenFiles(files, record.token);
}

/**
 * The state folders of the servers in the registry that are running: an agent's sandbox hides them,
 * wherever they lie, so no command it runs reads a server's token from one.
 */
export function serverStateFolders(home?: string): string[] {
  const folder = registryFolder(home);
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return [];
  }
  const folders: string[] = [];
  for (const name of names) {
    if (!name.endsWith('.token')) continue;
    const record = readRecord(join(folder, name));
    if (record !== undefined && alive(record)) folders.push(record.stateDir);
  }
  return folders;
}
