import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { SwitchboardError } from '../core/errors.js';
import { git, isAncestor, branchCommit, repositoryInfo, type RepositoryInfo } from './git.js';
import { cloneDirectory, remoteBranchCommit, remoteLocation } from './remote.js';
import { killRunProcesses } from './processes.js';
import { isRunnerAlive, isRunnerHere } from './runner-liveness.js';
import { isRecordedProcessAlive, withRepoLock } from './repo-lock.js';
import { runDirectory } from './run-files.js';
import { AgentRunStore, type AgentRunEvent, type AgentRunRecord } from './run-store.js';

export interface LifecycleOptions {
  /** @default `.switchboard` in the current directory */
  stateDir?: string;
}

/** A run as `ls` and `show` present it: the record plus whether it can be resumed. */
export interface AgentRunView extends AgentRunRecord {
  /** Its runner process is alive. */
  live: boolean;
  /** Not ended, and its runner is gone (crashed or killed): `resume` picks it up. */
  resumable: boolean;
}

function openStore(options: LifecycleOptions): Promise<AgentRunStore> {
  return AgentRunStore.open(resolve(options.stateDir ?? '.switchboard'));
}

function view(run: AgentRunRecord): AgentRunView {
  const live =
    (run.status === 'running' || run.status === 'conflict') &&
    isRunnerAlive(run) &&
    run.endedAt === undefined;
  // A run queued for a worker and not taken yet is waiting, not interrupted.
  const waiting = run.phase === 'queued' && run.runnerPid === undefined;
  return { ...run, live, resumable: run.status === 'running' && !live && !waiting };
}

async function requireRun(store: AgentRunStore, id: string): Promise<AgentRunRecord> {
  const run = await store.find(id);
  if (run === undefined) {
    throw new SwitchboardError('RUN_NOT_FOUND', `there is no agent run ${id} in ${store.path}`, {
      hint: 'list runs with `switchboard agent ls` (in the same folder, or with the same --state-dir)',
    });
  }
  return run;
}

/** Runs, newest first. */
export async function listAgentRuns(
  options: LifecycleOptions & { limit?: number } = {},
): Promise<AgentRunView[]> {
  const store = await openStore(options);
  try {
    return (await store.list(options.limit === undefined ? {} : { limit: options.limit })).map(view);
  } finally {
    await store.close();
  }
}

/** One run (by id or unique prefix) with its events. */
export async function showAgentRun(
  id: string,
  options: LifecycleOptions = {},
): Promise<AgentRunView & { events: AgentRunEvent[] }> {
  const store = await openStore(options);
  try {
    const run = await requireRun(store, id);
    return { ...view(run), events: await store.events(run.id) };
  } finally {
    await store.close();
  }
}

/** The run's transcripts (JSONL, one per attempt) and verify logs, oldest first. */
export async function agentRunFiles(
  id: string,
  options: LifecycleOptions = {},
): Promise<{ runId: string; files: string[] }> {
  const stateDir = resolve(options.stateDir ?? '.switchboard');
  const store = await AgentRunStore.open(stateDir);
  try {
    const run = await requireRun(store, id);
    const directory = runDirectory(stateDir, run.id);
    const files = existsSync(directory)
      ? readdirSync(directory)
          .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))
          .map((name) => resolve(directory, name))
      : [];
    return { runId: run.id, files };
  } finally {
    await store.close();
  }
}

/** Reads a transcript or log file of a run. */
export function readRunFile(file: string): string {
  return readFileSync(file, 'utf8');
}

export interface CancelResult {
  id: string;
  /** Process groups and processes that were signalled. */
  killed: number[];
  alreadyEnded: boolean;
}

/**
 * Cancels a run: marks it cancelled (its runner sees that and stops), kills the agent's (or verify
 * command's) whole process group, and kills the runner if it has not let go within `graceMs`.
 */
export async function cancelAgentRun(
  id: string,
  options: LifecycleOptions & { graceMs?: number } = {},
): Promise<CancelResult> {
  const store = await openStore(options);
  try {
    const run = await requireRun(store, id);
    if (run.endedAt !== undefined || (run.status !== 'running' && run.status !== 'conflict')) {
      return { id: run.id, killed: [], alreadyEnded: true };
    }
    await store.update(run.id, {
      status: 'cancelled',
      phase: 'failed',
      errorCode: 'ABORTED',
      error: 'cancelled by `switchboard agent cancel`',
      ended: true,
    });
    await store.addEvent(run.id, run.phase, 'cancel', `cancelled by pid ${process.pid}`);
    const killed: number[] = [];
    // A runner on another machine sees the cancel at its next poll and stops its own processes; its
    // pids mean nothing here (and may be some unrelated process of this machine).
    if (!isRunnerHere(run)) return { id: run.id, killed, alreadyEnded: false };
    const killGroup = (pid: number | undefined): void => {
      killed.push(...killRunProcesses(pid, run.id));
    };
    killGroup(run.childPid);
    // The runner may have started another child since we read the record.
    killGroup((await store.get(run.id))?.childPid);
    const runner = run.runnerPid;
    if (runner !== undefined && runner !== process.pid && isRecordedProcessAlive(runner, run.runnerStarted)) {
      const deadline = Date.now() + (options.graceMs ?? 3000);
      // A runner that let go clears the child pid; one serving several runs (`run-all`) stays alive.
      while (
        Date.now() < deadline &&
        (await store.get(run.id))?.childPid !== undefined &&
        isRecordedProcessAlive(runner, run.runnerStarted)
      ) {
        await new Promise((done) => setTimeout(done, 100));
      }
      const stillHolding = (await store.get(run.id))?.childPid !== undefined;
      if (stillHolding && isRecordedProcessAlive(runner, run.runnerStarted)) {
        killGroup((await store.get(run.id))?.childPid);
        try {
          process.kill(runner, 'SIGKILL');
          killed.push(runner);
        } catch {
          // Gone.
        }
      }
    }
    return { id: run.id, killed, alreadyEnded: false };
  } finally {
    await store.close();
  }
}

export interface CleanOptions extends LifecycleOptions {
  /** Run ids whose unmerged work may be thrown away (worktree and branch deleted). */
  abandon?: readonly string[];
  /** Only runs of this repository. @default all repositories in the ledger */
  repo?: string;
}

export interface CleanResult {
  removed: { id: string; worktree: string; branch: string; reason: 'merged' | 'abandoned' }[];
  kept: { id: string; reason: string }[];
  pruned: string[];
}

/**
 * Removes the worktrees (and branches) of runs that have ended and whose change is merged, or that
 * the caller abandons by id; prunes git's records of worktrees whose folders are gone. Live runs,
 * resumable runs and unmerged work are left alone.
 */
export async function cleanAgentRuns(options: CleanOptions = {}): Promise<CleanResult> {
  const store = await openStore(options);
  const result: CleanResult = { removed: [], kept: [], pruned: [] };
  try {
    const abandon = new Set<string>();
    for (const id of options.abandon ?? []) abandon.add((await requireRun(store, id)).id);
    const stateDir = resolve(options.stateDir ?? '.switchboard');
    const repoRoot =
      options.repo === undefined
        ? undefined
        : ((await remoteLocation(options.repo)) ?? (await repositoryInfo(options.repo)).root);
    const runs = (await store.list(repoRoot === undefined ? {} : { repo: repoRoot })).filter(
      (run) => run.cleanedAt === undefined,
    );
    const repos = new Map<string, RepositoryInfo>();
    for (const run of runs) {
      const current = view(run);
      const ended = run.endedAt !== undefined && !current.live;
      if (!ended) {
        result.kept.push({
          id: run.id,
          reason: current.live ? 'running' : 'resumable (runner gone); resume or cancel it',
        });
        continue;
      }
      const remote = await remoteLocation(run.repo);
      // A remote's run left its worktree and branch in this machine's clone of it, if anywhere here.
      const local = remote === undefined ? run.repo : cloneDirectory(stateDir, remote);
      if (!existsSync(local)) {
        result.kept.push({
          id: run.id,
          reason:
            remote === undefined
              ? `repository ${run.repo} is gone`
              : `this machine has no clone of ${remote}`,
        });
        continue;
      }
      const info: RepositoryInfo =
        remote === undefined ? await repositoryInfo(run.repo) : { root: local, commonDir: local };
      repos.set(info.root, info);
      const branchTip = await branchCommit(info.root, run.branch);
      const baseTip =
        remote === undefined
          ? await branchCommit(info.root, run.baseBranch)
          : await remoteBranchCommit(info.root, run.baseBranch);
      const merged =
        branchTip === undefined ||
        (baseTip !== undefined &&
          (await isAncestor(info.root, branchTip, baseTip)) &&
          run.status === 'succeeded');
      const abandoned = abandon.has(run.id);
      if (!merged && !abandoned) {
        result.kept.push({
          id: run.id,
          reason: `branch ${run.branch} is not merged into ${run.baseBranch}; merge it or pass --abandon ${run.id}`,
        });
        continue;
      }
      await withRepoLock(info.commonDir, async () => {
        if (existsSync(run.worktree)) await git(info.root, ['worktree', 'remove', '--force', run.worktree]);
        if (branchTip !== undefined) await git(info.root, ['branch', '-D', run.branch]);
      });
      await store.update(run.id, { cleaned: true });
      await store.addEvent(
        run.id,
        run.phase,
        'clean',
        `worktree and branch removed (${abandoned && !merged ? 'abandoned' : 'merged'})`,
      );
      result.removed.push({
        id: run.id,
        worktree: run.worktree,
        branch: run.branch,
        reason: merged ? 'merged' : 'abandoned',
      });
    }
    if (repoRoot !== undefined && !repos.has(repoRoot) && (await remoteLocation(repoRoot)) === undefined)
      repos.set(repoRoot, await repositoryInfo(repoRoot));
    for (const [root, info] of repos) {
      const pruned = await withRepoLock(info.commonDir, () => git(root, ['worktree', 'prune', '--verbose']));
      for (const line of `${pruned.stdout}\n${pruned.stderr}`.split('\n'))
        if (line.trim() !== '') result.pruned.push(line.trim());
    }
    return result;
  } finally {
    await store.close();
  }
}
