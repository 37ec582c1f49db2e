import { existsSync, realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { SwitchboardError, type ErrorCode } from '../core/errors.js';
import { secretValues } from '../core/secrets.js';
import type { AgentInvocation, AgentOutcome } from './claude-agent.js';
import { CONTEXT_FILES } from './context.js';
import {
  branchCommit,
  commitIdentity,
  excludeStateFolder,
  git,
  gitOk,
  guardWorktree,
  listWorktrees,
} from './git.js';
import type { RepositoryInfo } from './git.js';
import { withRepoLock } from './repo-lock.js';
import { VERIFY_NETWORK_VARIABLE } from '../confinement/sandbox.js';
import { runVerify, type CommandSandbox, type VerifyResult } from './verify.js';

// The phases of an agent run as functions of their inputs: the runner (`runner.ts`) drives them from
// its recorded phase, and a workflow step (`workflows/steps/git-agent.ts`) from its progress notes.
// None of them records anything; the caller decides what a result means for its own ledger.

/** The function that runs Claude Code; `runAgent` from `claude-agent.ts` unless a test injects one. */
export type AgentFunction = (invocation: AgentInvocation) => Promise<AgentOutcome>;

export interface WorktreeOptions {
  repository: RepositoryInfo;
  /** Switchboard's state folder: kept out of the repository's `git status` when it lies inside. */
  stateDir: string;
  branch: string;
  worktree: string;
  /** The commit a new branch starts from. */
  baseCommit: string;
  abortSignal?: AbortSignal;
}

/**
 * Makes `worktree` on `branch` (new, from `baseCommit`) under the repository lock. A worktree that is
 * already registered and present is kept with whatever is in it, and a branch left by a crash between
 * `branch` and `worktree` is checked out rather than lost. Says whether the worktree was made now.
 */
export async function createWorktree(options: WorktreeOptions): Promise<'created' | 'existing'> {
  const { repository, branch, worktree, baseCommit } = options;
  const made = await withRepoLock(
    repository.commonDir,
    async () => {
      const registered = (await listWorktrees(repository.root)).some(
        (entry) => samePath(entry.path, worktree) && !entry.prunable,
      );
      if (registered && existsSync(worktree)) return 'existing';
      await excludeStateFolder(repository, options.stateDir);
      await git(repository.root, ['worktree', 'prune']);
      const existing = await branchCommit(repository.root, branch);
      if (existing !== undefined) {
        await gitOk(repository.root, ['worktree', 'add', worktree, branch], 'git worktree add');
      } else {
        await gitOk(
          repository.root,
          ['worktree', 'add', '-b', branch, worktree, baseCommit],
          'git worktree add',
        );
      }
      return 'created';
    },
    options.abortSignal === undefined ? {} : { abortSignal: options.abortSignal },
  );
  guardWorktree(repository.commonDir, worktree);
  return made;
}

/** Files changed in the worktree (the context files aside), as `git status` names them. */
export async function changedFiles(worktree: string): Promise<string[]> {
  const status = await gitOk(
    worktree,
    ['status', '--porcelain', '--', '.', ...excludeContext()],
    'git status',
  );
  return status
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => line.slice(3));
}

/** Whether the worktree's HEAD has left `baseCommit` (commits were made in it). */
export async function headMoved(worktree: string, baseCommit: string): Promise<boolean> {
  return (await headOf(worktree)) !== baseCommit;
}

export async function headOf(worktree: string): Promise<string> {
  return (await gitOk(worktree, ['rev-parse', 'HEAD'], 'git rev-parse')).trim();
}

/** Whether the worktree holds a change: files changed, or commits since the base. */
export async function hasChange(worktree: string, baseCommit: string): Promise<boolean> {
  return (await changedFiles(worktree)).length > 0 || (await headMoved(worktree, baseCommit));
}

export interface SetupOptions {
  command: string;
  timeoutMs: number;
  worktree: string;
  baseCommit: string;
  /** The command's whole environment (see `runVerify`). */
  env: Record<string, string>;
  /** The folders the sandboxed command must not see, and the git folder it reads (see `confinedCommand`). */
  sandbox: CommandSandbox;
  abortSignal?: AbortSignal;
  onSpawn?: (pid: number) => void;
}

/** How the setup command went: `failure` says why it did not pass (it failed, or left files git does not ignore). */
export interface SetupResult {
  result: VerifyResult;
  failure?: string;
}

/** Runs a setup command in a new worktree; whatever it makes must be ignored by git, or it would pass for the agent's change. */
export async function runSetup(options: SetupOptions): Promise<SetupResult> {
  const { command, worktree } = options;
  const result = await runVerify({
    command,
    cwd: worktree,
    timeoutMs: options.timeoutMs,
    env: options.env,
    // It runs the repository's code (install scripts), and a worktree made anew for a resumed run holds
    // the run's branch, the agent's commits included: confined as verify is, but with the network
    // (it installs packages).
    confine: { ...options.sandbox, network: true },
    ...(options.abortSignal === undefined ? {} : { abortSignal: options.abortSignal }),
    ...(options.onSpawn === undefined ? {} : { onSpawn: options.onSpawn }),
  });
  if (!result.passed) {
    const why = result.timedOut ? 'timed out' : `failed with exit status ${result.exitCode ?? 'unknown'}`;
    return { result, failure: `the setup command \`${command}\` ${why}` };
  }
  const left = await changedFiles(worktree);
  if (left.length > 0 || (await headMoved(worktree, options.baseCommit))) {
    const named = left.length > 0 ? left.slice(0, 5).join(', ') : 'a commit';
    return {
      result,
      failure: `the setup command \`${command}\` left files git does not ignore (${named}); add them to .gitignore`,
    };
  }
  return { result };
}

/** Runs one agent attempt; an agent function that throws becomes an `agent_error` outcome. */
export async function runAgentAttempt(
  invocation: AgentInvocation,
  runAgent?: AgentFunction,
): Promise<AgentOutcome> {
  const run = runAgent ?? (await import('./claude-agent.js')).runAgent;
  try {
    return await run(invocation);
  } catch (error) {
    return {
      status: 'agent_error',
      isError: true,
      costUsd: 0,
      turns: 0,
      durationMs: 0,
      denied: [],
      error: error instanceof Error ? error.message : String(error),
    };
  }
}

/** Outcome statuses that end a run at once; the others are retried while attempts remain. */
const FINAL_AGENT_FAILURES: Partial<Record<AgentOutcome['status'], ErrorCode>> = {
  timeout: 'TIMEOUT',
  budget_exceeded: 'BUDGET_EXCEEDED',
  aborted: 'ABORTED',
  spawn_failed: 'PROVIDER_UNAVAILABLE',
};

/** Error codes when retries run out, by the last attempt's status. */
const EXHAUSTED_CODES: Partial<Record<AgentOutcome['status'], ErrorCode>> = {
  max_turns: 'MAX_TURNS',
  idle_timeout: 'IDLE_TIMEOUT',
};

/**
 * What an attempt's outcome means: `passed` (a successful result and a non-empty change), `final` (stop,
 * no retry would help), `api` (the API failed, not the agent: see `apiFailure`), or `retry` with the
 * feedback for the next attempt.
 */
export type AttemptVerdict =
  | { kind: 'passed' }
  | { kind: 'final'; code: ErrorCode; message: string }
  | { kind: 'api'; code: ErrorCode; message: string }
  | { kind: 'retry'; code: ErrorCode; failure: string };

export async function judgeAttempt(
  outcome: AgentOutcome,
  worktree: string,
  baseCommit: string,
): Promise<AttemptVerdict> {
  const finalCode = FINAL_AGENT_FAILURES[outcome.status];
  if (finalCode !== undefined) return { kind: 'final', code: finalCode, message: describeOutcome(outcome) };
  if (outcome.status === 'api_error' || outcome.status === 'rate_limited') {
    const code = outcome.errorCode ?? (outcome.status === 'rate_limited' ? 'RATE_LIMITED' : 'PROVIDER_ERROR');
    return { kind: 'api', code, message: apiFailureMessage(outcome, code) };
  }
  // `is_error: true` with `subtype: success` is a failure too: trust neither field alone.
  const succeeded = outcome.status === 'success' && !outcome.isError;
  if (!succeeded) {
    return {
      kind: 'retry',
      code: EXHAUSTED_CODES[outcome.status] ?? 'AGENT_FAILED',
      failure: describeOutcome(outcome),
    };
  }
  if (!(await hasChange(worktree, baseCommit))) {
    return {
      kind: 'retry',
      code: 'AGENT_FAILED',
      failure: 'The attempt finished without changing any file. Make the change the task asks for.',
    };
  }
  return { kind: 'passed' };
}

/**
 * The API, not the agent, failed (a bad key, a rate limit, an overload, no connection): another attempt
 * would meet the same wall and pay for nothing, and feeding the failure back as the agent's mistake would
 * mislead it.
 */
function apiFailureMessage(outcome: AgentOutcome, code: ErrorCode): string {
  const wait =
    outcome.retryAfterMs === undefined
      ? ''
      : ` (the API asks to wait until ${new Date(Date.now() + outcome.retryAfterMs).toISOString()})`;
  return `the API failed, not the agent, so the attempt was not retried: ${outcome.error ?? code}${wait}`;
}

export interface VerifyChangeOptions {
  worktree: string;
  baseCommit: string;
  /** The verify command; without one a non-empty change passes. */
  command?: string;
  timeoutMs: number;
  env: Record<string, string>;
  /** The folders the sandboxed command must not see, and the git folder it reads (see `confinedCommand`). */
  sandbox: CommandSandbox;
  abortSignal?: AbortSignal;
  onSpawn?: (pid: number) => void;
}

/** The verify phase: a non-empty change, then the verify command; `failure` is the feedback for a retry. */
export interface VerifyChangeResult {
  passed: boolean;
  code?: ErrorCode;
  failure?: string;
  verify?: VerifyResult;
}

export async function verifyChange(options: VerifyChangeOptions): Promise<VerifyChangeResult> {
  if (!(await hasChange(options.worktree, options.baseCommit))) {
    return {
      passed: false,
      code: 'AGENT_FAILED',
      failure: 'The change is empty. Make the change the task asks for.',
    };
  }
  if (options.command === undefined) return { passed: true };
  const verify = await runVerify({
    command: options.command,
    cwd: options.worktree,
    timeoutMs: options.timeoutMs,
    env: options.env,
    // It runs what the agent may have changed (a test file, an npm script): confined as the agent is,
    // and off the network unless the user said otherwise: on loopback it could call `serve`.
    confine: { ...options.sandbox, network: process.env[VERIFY_NETWORK_VARIABLE] === 'on' },
    ...(options.abortSignal === undefined ? {} : { abortSignal: options.abortSignal }),
    ...(options.onSpawn === undefined ? {} : { onSpawn: options.onSpawn }),
  });
  if (verify.passed) return { passed: true, verify };
  const failure = `The verify command \`${options.command}\` ${verify.timedOut ? 'timed out' : `failed with exit status ${verify.exitCode ?? 'unknown'}`}. The end of its output:\n${verify.outputTail.slice(-3000)}`;
  return { passed: false, code: 'VERIFY_FAILED', failure, verify };
}

export interface CommitChangeOptions {
  worktree: string;
  /** The commit the change started from: everything between it and the commit is scanned for secrets. */
  base: string;
  subject: string;
  /** The message body: a description and trailers (`Switchboard-Step: …`). */
  body: string;
}

/**
 * Commits everything in the worktree but the context files, with the user's identity (or a stand-in
 * on a machine without one), hooks skipped. Returns HEAD afterwards, which is the base when there was
 * nothing to commit.
 */
export async function commitChange({ worktree, base, subject, body }: CommitChangeOptions): Promise<string> {
  const identity = await commitIdentity(worktree);
  await gitOk(worktree, ['add', '-A', '--', '.', ...excludeContext()], 'git add');
  await assertNoSecretInChange(worktree, base);
  const staged = await git(worktree, ['diff', '--cached', '--quiet']);
  if (staged.exitCode === 1) {
    await gitOk(worktree, ['commit', '--no-verify', '-q', '-m', subject, '-m', body], 'git commit', identity);
  }
  return headOf(worktree);
}

/**
 * Throws `SECRET_IN_CHANGE`, naming the file (never the value), when a line the change adds between
 * `base` and the index holds a known secret (`secretValues`: the environment's credentials, `.env`
 * values, keys given as options). The agent's own commits count too, since the scan starts at `base`.
 * The index is reset first, so nothing of the change is staged; the worktree keeps the files.
 */
export async function assertNoSecretInChange(worktree: string, base: string): Promise<void> {
  const secrets = secretValues();
  if (secrets.length === 0) return;
  const diff = await gitOk(
    worktree,
    [
      '-c',
      'core.quotePath=false',
      'diff',
      '--cached',
      '--text',
      '--no-color',
      '--no-ext-diff',
      '--no-renames',
      '-U0',
      base,
    ],
    'git diff',
  );
  const file = fileWithSecret(diff, secrets);
  if (file === undefined) return;
  await gitOk(worktree, ['reset', '-q'], 'git reset');
  throw new SwitchboardError(
    'SECRET_IN_CHANGE',
    `the change writes a known secret into ${file}; nothing was committed`,
    {
      hint: `the worktree ${worktree} keeps the file: take the value out of it, or do not give the agent the secret (see docs/agent.md)`,
    },
  );
}

/** The first file whose added lines in a `git diff` hold one of `secrets`. */
function fileWithSecret(diff: string, secrets: readonly string[]): string | undefined {
  let file: string | undefined;
  let header = false;
  for (const line of diff.split('\n')) {
    if (line.startsWith('diff --git ')) {
      header = true;
      file = undefined;
    } else if (header && line.startsWith('+++ ')) {
      const name = line.slice(4);
      file = name === '/dev/null' ? undefined : name.replace(/^"?b\//, '').replace(/"$/, '');
    } else if (line.startsWith('@@')) {
      header = false;
    } else if (!header && line.startsWith('+') && file !== undefined) {
      if (secrets.some((secret) => line.includes(secret))) return file;
    }
  }
  return undefined;
}

export function describeOutcome(outcome: AgentOutcome): string {
  const parts = [
    `The agent ended with ${outcome.status}${outcome.subtype === undefined ? '' : ` (${outcome.subtype})`}${outcome.isError ? ', reported as an error' : ''}.`,
  ];
  if (outcome.error !== undefined) parts.push(outcome.error);
  if (outcome.resultText !== undefined && outcome.isError) parts.push(outcome.resultText.slice(0, 1000));
  for (const denied of outcome.denied) parts.push(`Denied: ${denied.tool} (${denied.reason})`);
  return parts.join('\n');
}

function excludeContext(): string[] {
  return CONTEXT_FILES.map((file) => `:(exclude)${file}`);
}

export function samePath(a: string, b: string): boolean {
  const real = (path: string): string => {
    try {
      return realpathSync(path);
    } catch {
      return resolve(path);
    }
  };
  return real(a) === real(b);
}

/**
 * The newest commit in `base..branch` whose trailer `name` has `value` (`Switchboard-Step: <key>`):
 * the mark a runner's commit carries, so a resumed step can tell its own finished commit from none.
 */
export async function findTrailerCommit(
  repo: string,
  options: {
    base: string;
    branch: string;
    name: string;
    value: string;
    /** The ref to search. @default `refs/heads/<branch>`; a remote's pushed branch is `refs/remotes/origin/<branch>` */
    ref?: string;
  },
): Promise<string | undefined> {
  const ref = options.ref ?? `refs/heads/${options.branch}`;
  if ((await git(repo, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`])).exitCode !== 0)
    return undefined;
  const log = await gitOk(
    repo,
    [
      'log',
      `--format=%H%x1f%(trailers:key=${options.name},valueonly,separator=%x1f)%x1e`,
      `${options.base}..${ref}`,
    ],
    'git log',
  );
  for (const entry of log.split('\x1e')) {
    const [commit, ...values] = entry.trim().split('\x1f');
    if (
      commit !== undefined &&
      commit !== '' &&
      values.map((value) => value.trim()).includes(options.value)
    ) {
      return commit;
    }
  }
  return undefined;
}

/**
 * Puts a worktree back to `base` on `branch`: the branch is moved there, tracked files restored and
 * every untracked or ignored file removed, inside this worktree only.
 */
export async function resetWorktree(worktree: string, branch: string, base: string): Promise<void> {
  await gitOk(worktree, ['checkout', '-q', '-f', '-B', branch, base], 'git checkout');
  await gitOk(worktree, ['clean', '-q', '-ffdx'], 'git clean');
}

/** Files a commit changed against `base`. */
export async function filesChanged(repo: string, base: string, commit: string): Promise<string[]> {
  const names = await gitOk(repo, ['diff', '--name-only', base, commit], 'git diff');
  return names.split('\n').filter((name) => name !== '');
}

/** Removes a worktree (its files, not its branch) under the repository lock; nothing when it is gone already. */
export async function removeWorktree(
  repository: RepositoryInfo,
  worktree: string,
  abortSignal?: AbortSignal,
): Promise<void> {
  await withRepoLock(
    repository.commonDir,
    async () => {
      if (existsSync(worktree)) {
        await gitOk(repository.root, ['worktree', 'remove', '--force', worktree], 'git worktree remove');
      }
      await git(repository.root, ['worktree', 'prune']);
    },
    abortSignal === undefined ? {} : { abortSignal },
  );
}
