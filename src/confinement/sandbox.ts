import { accessSync, constants, existsSync, lstatSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { deniedPathsIn } from './file-access.js';
import { registryFolder, serverStateFolders } from './server-tokens.js';

/** `SWITCHBOARD_VERIFY_NETWORK=on`: the verify command keeps the machine's network (a database, a registry). */
export const VERIFY_NETWORK_VARIABLE = 'SWITCHBOARD_VERIFY_NETWORK';

/** `SWITCHBOARD_AGENT_SANDBOX`: `auto` (the default), `required` or `off`. */
export const SANDBOX_VARIABLE = 'SWITCHBOARD_AGENT_SANDBOX';

/** Claude Code's `sandbox` settings block, as far as Switchboard sets it. */
export interface AgentSandboxSettings {
  [setting: string]: unknown;
  enabled: true;
  failIfUnavailable: true;
  allowUnsandboxedCommands: false;
  autoAllowBashIfSandboxed: false;
  filesystem: { denyRead: string[]; allowRead: string[]; denyWrite: string[] };
}

export interface SandboxChoice {
  /** Undefined when the agent's commands run without Claude Code's sandbox. */
  settings: AgentSandboxSettings | undefined;
  /** For the transcript: whether the sandbox is on, and why not. */
  note: { enabled: boolean; reason?: string };
}

/**
 * Claude Code's own sandbox for the agent's Bash commands (and everything they start): on Linux a
 * bubblewrap container with its own process and network namespaces, so a command sees no other
 * process (not the runner's environment in `/proc`), writes only inside the worktree, and reads
 * neither the home folder, `/tmp`, nor `hiddenDirectories`, except the worktree, the git folder it
 * needs and `readableDirectories`. Claude Code's file tools are confined by the tool policy instead.
 *
 * On Linux it needs `bwrap` and `socat` on PATH; `auto` turns it on when they are there and says in the
 * transcript when they are not; `required` lets Claude Code refuse to start without it; `off` never.
 */
export function sandboxSettings(invocation: {
  cwd: string;
  readableDirectories?: readonly string[] | undefined;
  hiddenDirectories?: readonly string[] | undefined;
  /**
   * The repository's git folder, as the runner found it. Without it the folder is read from the
   * worktree's `.git` file, which an earlier attempt's agent could have rewritten to name any folder.
   */
  gitDirectory?: string | undefined;
}): SandboxChoice {
  if (process.env[SANDBOX_VARIABLE] === 'off')
    return { settings: undefined, note: { enabled: false, reason: `${SANDBOX_VARIABLE}=off` } };
  const shortfall = sandboxShortfall();
  if (shortfall !== undefined) return { settings: undefined, note: { enabled: false, reason: shortfall } };
  const gitDirectory = invocation.gitDirectory ?? gitCommonDirectory(invocation.cwd);
  return {
    settings: {
      enabled: true,
      failIfUnavailable: true,
      allowUnsandboxedCommands: false,
      autoAllowBashIfSandboxed: false,
      filesystem: {
        // /run: the machine's service sockets (Docker's, PostgreSQL's), reachable from any network namespace.
        denyRead: unique([
          ...alwaysHidden(),
          ...(invocation.hiddenDirectories ?? []),
          // What the one deny list names in the worktree (`.env` files, keys, credentials), where it
          // exists: a Bash `cat` must not read what the file tools refuse. Git's folder stays: git needs it.
          ...deniedPathsIn(invocation.cwd),
        ]),
        allowRead: unique([
          invocation.cwd,
          ...(gitDirectory === undefined ? [] : [gitDirectory]),
          ...(invocation.readableDirectories ?? []),
        ]),
        // The worktree's `.git` names the folder the runner's own git reads its settings from: a command
        // that rewrote it could point that git at settings which run programs (core.fsmonitor, hooks).
        denyWrite: [join(resolve(invocation.cwd), '.git')],
      },
    },
    note: { enabled: true },
  };
}

/**
 * Why `auto` (the default) would run an agent's Bash commands unsandboxed on this machine (`bwrap and
 * socat not found on PATH`); undefined when they would be sandboxed or the user chose `off` or
 * `required` (which then refuses to start without the sandbox).
 */
export function sandboxShortfall(): string | undefined {
  const mode = process.env[SANDBOX_VARIABLE] ?? 'auto';
  if (mode === 'off' || mode === 'required') return undefined;
  const missing = missingPrograms();
  return missing.length === 0 ? undefined : `${missing.join(' and ')} not found on PATH`;
}

/** The one-line warning for a command that is about to run agents unsandboxed, naming the fixes. */
export function unsandboxedWarning(shortfall: string): string {
  // Without bwrap the task's setup and verify commands (confined by bwrap alone) run unconfined too.
  const commands = shortfall.includes('bwrap')
    ? "the agent's Bash commands and the task's setup and verify commands"
    : "the agent's Bash commands";
  return `${commands} will run unsandboxed, able to read whatever your user can (${shortfall}): install bubblewrap and socat (Debian/Ubuntu: apt-get install bubblewrap socat), or set ${SANDBOX_VARIABLE}=required to refuse to run without the sandbox, or =off to run unsandboxed without this warning`;
}

/** What Claude Code's sandbox needs and this machine lacks (Linux only: macOS has its own). */
function missingPrograms(): string[] {
  if (process.platform === 'darwin') return [];
  if (process.platform !== 'linux') return [`a sandbox for ${process.platform}`];
  return ['bwrap', 'socat'].filter((program) => !onPath(program));
}

/**
 * The repository's git folder a linked worktree reads its objects from (`.git` in the worktree is a
 * file naming `<common>/worktrees/<id>`, which holds `commondir`). Undefined for a plain checkout,
 * whose `.git` lies inside the worktree anyway.
 */
function gitCommonDirectory(cwd: string): string | undefined {
  try {
    const dotGit = join(cwd, '.git');
    if (statSync(dotGit).isDirectory()) return undefined;
    const match = /^gitdir:\s*(.+)$/m.exec(readFileSync(dotGit, 'utf8'));
    if (match === null) return undefined;
    const gitdir = resolve(cwd, (match[1] ?? '').trim());
    const common = readFileSync(join(gitdir, 'commondir'), 'utf8').trim();
    return isAbsolute(common) ? common : resolve(gitdir, common);
  } catch {
    return undefined;
  }
}

function unique(paths: readonly string[]): string[] {
  return [...new Set(paths.map((path) => resolve(path)))];
}

/** A command the runner runs on the agent's work, and the folders it must not see. */
export interface ConfinedInvocation {
  /** The worktree: the command's working folder, and the only folder it may write. */
  cwd: string;
  argv: readonly string[];
  /** Folders hidden besides `HOME` and `/tmp` (the repository's checkout, the state folder). */
  hiddenDirectories?: readonly string[] | undefined;
  /**
   * The repository's shared git folder, readable (git in the worktree needs it). From the runner, never
   * from the worktree's `.git` file: the agent can rewrite that to name any folder, `HOME` included.
   */
  gitDirectory?: string | undefined;
  /**
   * Mask what the one deny list names inside `cwd` (`deniedPathsIn`: a nested `.env`, `.aws/`, a key),
   * and `maskedPaths`: a command the model writes (`run_command`) must read nothing the file tools
   * refuse. Off for a task's setup and verify, which the task's author writes and which may need a
   * project `.npmrc` or a `.env.test` (the agent's own Bash is kept from them by Claude Code's sandbox).
   * @default false
   */
  maskDenied?: boolean | undefined;
  /**
   * Paths masked besides what the deny list names in `cwd`, with `maskDenied` (`secretPaths` of a
   * working folder that is not a worktree: the `.env` files of the folders Switchboard loaded one from).
   * @default none
   */
  maskedPaths?: readonly string[] | undefined;
  /**
   * Keep the machine's network. Without it the command gets a network namespace of its own, a
   * loopback with nothing on it: no local server (`serve`, a database) and nothing beyond.
   * @default false
   */
  network?: boolean | undefined;
}

export interface ConfinedCommand {
  /** What to run: `argv` inside bubblewrap, or `argv` itself when the sandbox is off or missing. */
  argv: string[];
  /** Whether it runs confined, and why not (as `SandboxChoice.note`). */
  note: { enabled: boolean; reason?: string };
}

/**
 * Confines a command the runner itself runs on the agent's work (the task's `setup` and `verify`): it
 * runs code the agent may have edited, so it gets what the agent's Bash gets. A bubblewrap container
 * with its own process namespace (no runner environment under `/proc`) and session (no way to type
 * into the user's terminal); the system read-only; empty, throwaway `HOME`, `/tmp` and
 * `hiddenDirectories`; the repository's git folder readable; the worktree writable. The node that runs
 * Switchboard and the `PATH` folders stay readable where they lie in a hidden folder, so `npm test`
 * still finds its tools. No network unless `network` (setup keeps it, to install packages): a command
 * the agent wrote must not reach a server on this machine.
 *
 * `off` runs `argv` as it is; so does `auto` on a platform other than Linux or when `bwrap` is not on
 * `PATH`, saying why in `note`; `required` runs bubblewrap all the same, on every platform, so a
 * missing one fails the command (bubblewrap not found) instead of running it unconfined.
 */
export function confinedCommand({
  cwd,
  argv,
  hiddenDirectories = [],
  gitDirectory,
  maskDenied = false,
  maskedPaths = [],
  network = false,
}: ConfinedInvocation): ConfinedCommand {
  const unconfined = confinementShortfall();
  if (unconfined !== undefined) return { argv: [...argv], note: { enabled: false, reason: unconfined } };
  const worktree = resolve(cwd);
  const dotGit = join(worktree, '.git');
  // `/run` holds the machine's service sockets (Docker's, PostgreSQL's, the user's session bus): none
  // is the command's to use; nor is `/var/run` where it is a folder of its own rather than a link to it.
  const hidden = outermost([...alwaysHidden(), ...hiddenDirectories]).filter(
    (path) => path !== '/' && existsSync(path),
  );
  // Inside a hidden folder, never the folder itself: a PATH entry of `HOME` must not bring it back.
  const readable = toolDirectories().filter((path) =>
    hidden.some((folder) => path !== folder && within(path, folder)),
  );
  // The file /etc/resolv.conf names when it lies in a hidden folder (systemd-resolved's, under /run):
  // that file alone comes back, not its folder, which holds the resolver's own sockets.
  const resolver = resolverFile();
  if (resolver !== undefined && hidden.some((folder) => within(resolver, folder))) readable.push(resolver);
  return {
    argv: [
      'bwrap',
      '--die-with-parent',
      '--new-session',
      '--unshare-pid',
      ...(network ? [] : ['--unshare-net']),
      ...['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc'],
      ...hidden.flatMap((path) => ['--tmpfs', path]),
      ...readable.flatMap((path) => ['--ro-bind', path, path]),
      ...(gitDirectory === undefined ? [] : ['--ro-bind', gitDirectory, gitDirectory]),
      ...['--bind', worktree, worktree],
      // Read-only inside the writable worktree: see `denyWrite` in `sandboxSettings`.
      ...(existsSync(dotGit) ? ['--ro-bind', dotGit, dotGit] : []),
      ...(maskDenied ? deniedMasks(worktree, maskedPaths, hidden) : []),
      ...['--chdir', worktree, '--'],
      ...argv,
    ],
    note: { enabled: true },
  };
}

/**
 * Why `confinedCommand` would run a command as it is, unconfined, on this machine (`SWITCHBOARD_AGENT_SANDBOX=off`,
 * `bwrap not found on PATH`, another platform); undefined when it runs it in bubblewrap. `required`
 * is never a shortfall: bubblewrap then runs all the same, so a missing one fails the command.
 */
export function confinementShortfall(): string | undefined {
  const mode = process.env[SANDBOX_VARIABLE] ?? 'auto';
  if (mode === 'off') return `${SANDBOX_VARIABLE}=off`;
  // `required` is checked first: it must never fall back to running unconfined, whatever the platform.
  if (mode === 'required') return undefined;
  if (process.platform !== 'linux') return `no bubblewrap on ${process.platform}`;
  if (!onPath('bwrap')) return 'bwrap not found on PATH';
  return undefined;
}

/**
 * bubblewrap's masks over what the one deny list names inside the writable worktree (`deniedPathsIn`:
 * a nested `.env`, a key, a state folder), as they exist now: the null device over a file (on a file
 * system mounted `nodev` opening it is refused), an empty folder over a folder, so a command's
 * `cat sub/.env` reads what the file tools refuse to: nothing.
 * A link is left alone: bubblewrap would mask where it leads, and what it leads to is checked by its
 * own name. Git's folder stays (read-only above): git in the command needs it.
 */
function deniedMasks(worktree: string, more: readonly string[], hidden: readonly string[]): string[] {
  const paths = unique([...deniedPathsIn(worktree), ...more]).filter(
    // Outside the worktree, inside a hidden folder, a path is gone already (and bubblewrap could not
    // mask it there); the worktree's `.git` is read-only above.
    (path) =>
      (within(path, worktree) || !hidden.some((folder) => within(path, folder))) &&
      path !== join(worktree, '.git'),
  );
  return paths.flatMap((path) => {
    try {
      const info = lstatSync(path);
      if (info.isDirectory()) return ['--tmpfs', path];
      if (info.isSymbolicLink()) return [];
      return ['--ro-bind', '/dev/null', path];
    } catch {
      return [];
    }
  });
}

/**
 * What every confinement hides, whoever it confines (Claude Code's Bash, the whole Claude Code process,
 * setup and verify): the home folder, the temporary folders, `/run` (the machine's service sockets) and
 * where running servers keep their tokens. One list, so a folder added here is hidden from all of them.
 */
export function alwaysHidden(): string[] {
  return [homedir(), '/tmp', tmpdir(), ...runFolders(), ...serverTokenFolders()];
}

/**
 * Where running servers keep their tokens: the per-user registry and each server's state folder,
 * wherever it lies (a token there would let a command the agent wrote call `serve`).
 */
function serverTokenFolders(): string[] {
  return [registryFolder(), ...serverStateFolders()];
}

/** The install folder of the node running Switchboard and the folders on `PATH`, as they exist. */
export function toolDirectories(): string[] {
  const path = (process.env['PATH'] ?? '').split(delimiter).filter((entry) => isAbsolute(entry));
  return unique([dirname(dirname(process.execPath)), ...path]).filter((folder) => existsSync(folder));
}

/** `/run`, and `/var/run` where it is not a link to it. */
export function runFolders(): string[] {
  try {
    return unique(['/run', realpathSync('/var/run')]);
  } catch {
    return ['/run'];
  }
}

/** The file /etc/resolv.conf resolves to, when it is a link (to systemd-resolved's, under /run). */
export function resolverFile(): string | undefined {
  try {
    const file = realpathSync('/etc/resolv.conf');
    return file === '/etc/resolv.conf' ? undefined : file;
  } catch {
    return undefined;
  }
}

/** The folders not inside another of them: a tmpfs over a parent already hides its children. */
export function outermost(paths: readonly string[]): string[] {
  const all = unique(paths);
  return all.filter((path) => !all.some((other) => other !== path && within(path, other)));
}

export function within(path: string, folder: string): boolean {
  const inside = relative(folder, path);
  return inside === '' || (!inside.startsWith('..') && !isAbsolute(inside));
}

export function onPath(program: string): boolean {
  const path = (process.env['PATH'] ?? '').split(delimiter).filter((entry) => entry !== '');
  return path.some((folder) => {
    try {
      accessSync(join(folder, program), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}
