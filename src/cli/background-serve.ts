import {
  closeSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findStateServer, processRunning, type FoundServer } from '../confinement/server-tokens.js';

export { forgetServer } from '../confinement/server-tokens.js';

// The per-user `serve` that `route`, `call` and the prompt hook start for themselves when no server was
// named: the first client starts it and runs in process, later ones ask it (a loopback request instead
// of loading the router). It is found as any local server is, by its token file in the state folder
// (0600, in a folder the agent sandbox hides); its record carries the fingerprint of the settings it was
// started with, so a client with other skills, flags, config or keys never asks it. Kept to node
// built-ins: the client side of it runs on the quick path of `route`.

/** `1` starts a background server even under CI; `0` never starts one. */
export const BACKGROUND_VARIABLE = 'SWITCHBOARD_BACKGROUND_SERVE';
/** How long (seconds) a background server waits for a request before it exits; default 600. */
export const IDLE_EXIT_VARIABLE = 'SWITCHBOARD_BACKGROUND_IDLE_EXIT';
/** Set by the starter for the server it starts: the fingerprint the server writes into its token file. */
export const SETTINGS_VARIABLE = 'SWITCHBOARD_BACKGROUND_SETTINGS';
const DEFAULT_IDLE_EXIT_SECONDS = 600;
/**
 * A lock older than this is taken over even when its owner runs: a server that has not listened by
 * then is stuck. A lock whose owner is gone (a server that failed to start) is taken over at once.
 */
const STALE_LOCK_MS = 30_000;

/**
 * Whether clients may start a background server: yes unless `SWITCHBOARD_BACKGROUND_SERVE=0`, or under
 * CI (`CI` set to anything but `0`/`false`), where a process outliving the job is a leak, unless
 * `SWITCHBOARD_BACKGROUND_SERVE=1`. Never inside an agent run (its processes carry
 * `SWITCHBOARD_AGENT_TAG`): nothing a run starts may outlive it, and its sandbox hides the state folder.
 */
export function backgroundServeEnabled(environment: NodeJS.ProcessEnv = process.env): boolean {
  if ((environment['SWITCHBOARD_AGENT_TAG'] ?? '') !== '') return false;
  const chosen = environment[BACKGROUND_VARIABLE]?.trim().toLowerCase();
  if (chosen === '1' || chosen === 'true') return true;
  if (chosen === '0' || chosen === 'false') return false;
  const ci = environment['CI']?.trim().toLowerCase();
  return ci === undefined || ci === '' || ci === '0' || ci === 'false';
}

/** What a background server is started with, and what a client must share to use it. */
export interface BackgroundSettings {
  /** The state folder (absolute): where its token, lock and log files live. */
  stateDir: string;
  /** The working folder it starts in (its switchboard.yaml, its relative paths). */
  cwd: string;
  /** `--config`, when given. */
  configFile?: string | undefined;
  /** serve's flags for this client's settings: routing flags as given, paths made absolute (`--skills /abs`). */
  serveArgs: readonly string[];
  environment: NodeJS.ProcessEnv;
}

/** Environment names that may change what a server does: its own settings, providers' keys and ends. */
const RELEVANT_PREFIXES = [
  'SWITCHBOARD_',
  'ANTHROPIC_',
  'OPENAI_',
  'GEMINI_',
  'GOOGLE_',
  'CLAUDE_',
  'NODE_',
  // Tracing: where spans go, with what credentials, and whether prompts go with them.
  'OTEL_',
];
const RELEVANT_NAMES = new Set(['PATH', 'HOME', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY']);
/** Set per client, not per server: left out so every client of one setup shares one server. */
const IGNORED_NAMES = new Set([
  BACKGROUND_VARIABLE,
  SETTINGS_VARIABLE,
  'SWITCHBOARD_DEBUG',
  'SWITCHBOARD_SERVER',
  'CLAUDE_PROJECT_DIR',
  'CLAUDE_ENV_FILE',
]);

/**
 * The fingerprint of `settings`: equal for two clients exactly when one's background server routes and
 * calls as the other would in process. The config file counts by path and modification time, so an
 * edited switchboard.yaml gets a new server (the old one idles out). A hash, never the values
 * themselves: the environment holds keys.
 */
export function settingsFingerprint(settings: BackgroundSettings): string {
  const configPath = resolve(settings.cwd, settings.configFile ?? 'switchboard.yaml');
  let configTime: number | null;
  try {
    configTime = statSync(configPath).mtimeMs;
  } catch {
    configTime = null;
  }
  const environment = Object.entries(settings.environment)
    .filter(
      ([name]) =>
        !IGNORED_NAMES.has(name.toUpperCase()) &&
        (RELEVANT_NAMES.has(name.toUpperCase()) ||
          RELEVANT_PREFIXES.some((prefix) => name.toUpperCase().startsWith(prefix))),
    )
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return fingerprint(
    JSON.stringify([
      settings.cwd,
      settings.stateDir,
      configPath,
      configTime,
      settings.serveArgs,
      environment,
    ]),
  );
}

/** Two seeded 32-bit FNV-1a hashes: node:crypto would add its load to every quick client. */
function fingerprint(text: string): string {
  const hash = (seed: number) => {
    let value = seed;
    for (let index = 0; index < text.length; index++) {
      value ^= text.charCodeAt(index);
      value = Math.imul(value, 0x01000193);
    }
    return (value >>> 0).toString(16).padStart(8, '0');
  };
  return `${hash(0x811c9dc5)}${hash(0x2166136a)}`;
}

/**
 * Whether a background server can stand in for this client: not when a config file sets `state_dir`
 * and neither `--state-dir` nor `SWITCHBOARD_STATE_DIR` does (the client then does not know, without
 * parsing the YAML, which folder the server's token file would be in). A cheap look at the text.
 */
export function stateFolderKnown(settings: BackgroundSettings, stateDirGiven: boolean): boolean {
  if (stateDirGiven) return true;
  let text: string;
  try {
    text = readFileSync(resolve(settings.cwd, settings.configFile ?? 'switchboard.yaml'), 'utf8');
  } catch {
    return true;
  }
  return !/^\s*state_dir\s*:/m.test(text);
}

/** The running background server for these settings, if there is one (by its token file). */
export function findBackgroundServer(settings: BackgroundSettings): FoundServer | undefined {
  return findStateServer(settings.stateDir, settingsFingerprint(settings));
}

/** The lock a starter holds from before it starts the server until the server has written its token. */
export function backgroundLockFile(stateDir: string): string {
  return join(stateDir, 'serve-background.lock');
}

/** Where a background server's output goes (appended; 0600 like its token file). */
export function backgroundLogFile(stateDir: string): string {
  return join(stateDir, 'serve-background.log');
}

/**
 * Starts `switchboard serve --port 0 --pool 0 --idle-exit 600` for `settings`, detached (a process
 * group of its own, output to the log file, nothing of the caller's held open), unless another client
 * holds the lock: racing clients start one server. Does not wait for it: the caller runs in process
 * this time. `started`, or `starting` when another client's server is on its way; `failed` (never
 * thrown) when it could not be started, which only means in process next time too.
 */
export function startBackgroundServe(settings: BackgroundSettings): 'started' | 'starting' | 'failed' {
  const lock = backgroundLockFile(settings.stateDir);
  try {
    mkdirSync(settings.stateDir, { recursive: true, mode: 0o700 });
    if (!takeLock(lock)) return 'starting';
  } catch {
    return 'failed';
  }
  let log: number | undefined;
  try {
    log = openSync(backgroundLogFile(settings.stateDir), 'a', 0o600);
    const { spawn } = process.getBuiltinModule('node:child_process');
    const launcher = fileURLToPath(new URL('./launch.js', import.meta.url));
    const idle = Number(settings.environment[IDLE_EXIT_VARIABLE]);
    const idleSeconds = Number.isFinite(idle) && idle > 0 ? idle : DEFAULT_IDLE_EXIT_SECONDS;
    const child = spawn(
      process.execPath,
      [
        launcher,
        ...(settings.configFile === undefined ? [] : ['--config', settings.configFile]),
        '--state-dir',
        settings.stateDir,
        'serve',
        '--port',
        '0',
        '--pool',
        '0',
        '--idle-exit',
        String(idleSeconds),
        ...settings.serveArgs,
      ],
      {
        cwd: settings.cwd,
        detached: true,
        stdio: ['ignore', log, log],
        env: { ...settings.environment, [SETTINGS_VARIABLE]: settingsFingerprint(settings) },
      },
    );
    // An error here (no such executable) is the only one: the server's own failures go to its log.
    child.once('error', () => rmSync(lock, { force: true }));
    child.unref();
    // From now on the server owns the lock: one that exits before listening (a bad setting, see the
    // log) leaves a lock the next client takes over at once, instead of running in process for 30 s.
    if (child.pid !== undefined) handLock(lock, child.pid);
    return 'started';
  } catch {
    rmSync(lock, { force: true });
    return 'failed';
  } finally {
    if (log !== undefined) closeSync(log);
  }
}

/**
 * Creates the lock file (O_EXCL) holding this process's pid, taking over one whose owner is gone or
 * that was left for longer than STALE_LOCK_MS.
 */
function takeLock(lock: string): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const descriptor = openSync(lock, 'wx', 0o600);
      writeSync(descriptor, `${process.pid}\n`);
      closeSync(descriptor);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      let age: number;
      let owner: number;
      try {
        age = Date.now() - statSync(lock).mtimeMs;
        // Empty while its starter is between creating and writing it: held, unless left that way.
        owner = Number.parseInt(readFileSync(lock, 'utf8'), 10);
      } catch {
        continue; // removed meanwhile: try again
      }
      const ownerGone = Number.isSafeInteger(owner) && !processRunning(owner);
      if (!ownerGone && age < STALE_LOCK_MS) return false;
      rmSync(lock, { force: true });
    }
  }
  return false;
}

/** Writes `pid` as the lock's owner, unless the lock is gone already (its server listened). */
function handLock(lock: string, pid: number): void {
  let descriptor: number | undefined;
  try {
    descriptor = openSync(lock, 'r+');
    const text = `${pid}\n`;
    writeSync(descriptor, text, 0);
    ftruncateSync(descriptor, Buffer.byteLength(text));
  } catch {
    // Removed meanwhile: the server is listening, or another client took the lock over.
  } finally {
    if (descriptor !== undefined) closeSync(descriptor);
  }
}
