import { spawn, type ChildProcess } from 'node:child_process';

/**
 * One watcher per Node process: a small `sh`, started on first need, reading lines on its stdin from
 * this process (`+g PGID` / `-g PGID` for process groups, `+p PATH` / `-p PATH` for leftovers). It runs
 * nothing while it waits. When its stdin ends, this process is gone (even by SIGKILL, which runs no
 * cleanup: the kernel closes the pipe), and the watcher stops every registered group, kills it with
 * every descendant that left it (Claude Code's Bash commands run under `setsid`), then removes every
 * registered path. Our end of the pipe is close-on-exec, so no other child holds it open.
 *
 * What it cannot see: a child SIGKILLed with us in the microseconds between `spawn` returning and its
 * line reaching the pipe (the write is synchronous on an empty pipe), which is why callers start the
 * watcher (`startParentWatch`) before they spawn.
 */
const WATCHER = `
groups=' '
set --
while IFS= read -r line; do
  case $line in
    '+g '*) g=\${line#+g }
      case $groups in *" $g "*) ;; *) groups="$groups$g " ;; esac ;;
    '-g '*) g=\${line#-g }
      case $groups in *" $g "*) groups="\${groups%% $g *} \${groups#* $g }" ;; esac ;;
    '+p '*) set -- "$@" "\${line#+p }" ;;
    '-p '*) p=\${line#-p }; n=$#
      while [ "$n" -gt 0 ]; do q=$1; shift; [ "$q" = "$p" ] || set -- "$@" "$q"; n=$((n - 1)); done ;;
  esac
done
if [ "$groups" != ' ' ]; then
  for g in $groups; do kill -STOP "-$g" 2>/dev/null; done
  victims=$(ps -A -o pid= -o ppid= -o pgid= 2>/dev/null | awk -v roots="$groups" -v self="$$" '
    BEGIN { n = split(roots, list, " "); for (i = 1; i <= n; i++) root[list[i]] = 1 }
    { pid[NR] = $1; parent[$1] = $2; group[$1] = $3 }
    END {
      for (i = 1; i <= NR; i++) if ((pid[i] in root) || (group[pid[i]] in root)) mark[pid[i]] = 1
      do {
        grown = 0
        for (i = 1; i <= NR; i++) if (!(pid[i] in mark) && (parent[pid[i]] in mark)) { mark[pid[i]] = 1; grown = 1 }
      } while (grown)
      for (p in mark) if (p > 1 && p != self) { if (group[p] == p) printf "-%s ", p; printf "%s ", p }
    }')
  for victim in $victims; do kill -KILL "$victim" 2>/dev/null; done
  for g in $groups; do kill -KILL "-$g" 2>/dev/null; done
fi
if [ $# -gt 0 ]; then rm -rf -- "$@"; fi
`;

interface Watcher {
  child: ChildProcess;
  alive: boolean;
}

let watcher: Watcher | undefined;
const groups = new Set<number>();
/** Paths to remove → how many live children asked for it. */
const paths = new Map<string, number>();

/**
 * Starts the watcher unless it runs. Call it before spawning a child to watch: started afterwards,
 * it would leave the child unwatched for the milliseconds a spawn takes.
 */
export function startParentWatch(): void {
  if (process.platform !== 'win32') currentWatcher();
}

/** The running watcher, started (and told what is registered) when there is none. */
function currentWatcher(): Watcher {
  if (watcher?.alive === true) return watcher;
  const child = spawn('/bin/sh', ['-c', WATCHER, 'switchboard-parent-watch'], {
    // Its own group: a Ctrl-C for the terminal's foreground group must not end it before it acts.
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
    cwd: '/',
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', LC_ALL: 'C' },
  });
  const started: Watcher = { child, alive: true };
  const lost = (): void => {
    started.alive = false;
  };
  child.on('error', lost);
  child.on('exit', lost);
  child.stdin?.on('error', lost);
  // Neither the process nor its pipe keeps this process's event loop alive.
  child.unref();
  (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  watcher = started;
  // A watcher that died (killed from outside) is replaced, and told what the last one knew.
  const known = [
    ...[...groups].map((group) => `+g ${group}`),
    ...[...paths.keys()].map((path) => `+p ${path}`),
  ];
  if (known.length > 0) write(started, known);
  return started;
}

/** Writes lines to the watcher's pipe; on an empty pipe libuv writes at once, before `write` returns. */
function write(target: Watcher, lines: string[]): void {
  target.child.stdin?.write(`${lines.join('\n')}\n`);
}

/** What `watchChild` registers beside the child's group. */
export interface WatchOptions {
  /**
   * A file or folder to delete if this process dies while the child runs (an API key file); it stays
   * registered until the child exits. A path holding a line break cannot be sent and is not registered.
   */
  removeOnParentDeath?: string;
}

/**
 * Has the watcher kill `child`'s process group (spawned with `detached: true`, so that it leads one,
 * after `startParentWatch`)
 * and delete `removeOnParentDeath` if this process dies while the child runs, even by SIGKILL. The
 * registration ends when the child exits, before its pid can be reused. No-op on Windows, which has
 * no such shell.
 */
export function watchChild(child: ChildProcess, options: WatchOptions = {}): void {
  if (child.pid === undefined) return;
  const unwatch = watchProcessGroup(child.pid, options);
  child.once('exit', unwatch);
}

/**
 * `watchChild` for a group known by its leader's pid; the caller calls the function returned once the
 * leader has exited (an execa subprocess has no `exit` event to listen to).
 */
export function watchProcessGroup(pid: number, { removeOnParentDeath }: WatchOptions = {}): () => void {
  if (process.platform === 'win32') return () => undefined;
  const path =
    removeOnParentDeath === undefined || removeOnParentDeath === '' || /[\n\r]/.test(removeOnParentDeath)
      ? undefined
      : removeOnParentDeath;
  const target = currentWatcher();
  const lines = [`+g ${pid}`];
  groups.add(pid);
  if (path !== undefined) {
    const count = paths.get(path) ?? 0;
    paths.set(path, count + 1);
    if (count === 0) lines.push(`+p ${path}`);
  }
  write(target, lines);
  let registered = true;
  return () => {
    if (!registered) return;
    registered = false;
    const done = [`-g ${pid}`];
    groups.delete(pid);
    if (path !== undefined) {
      const count = (paths.get(path) ?? 1) - 1;
      if (count > 0) paths.set(path, count);
      else {
        paths.delete(path);
        done.push(`-p ${path}`);
      }
    }
    if (watcher?.alive === true) write(watcher, done);
  };
}
