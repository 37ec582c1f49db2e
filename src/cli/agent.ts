import { InvalidArgumentError, type Command } from 'commander';
import type { AgentPhase } from '../agents/run-store.js';
import type { AgentRunProgress, AgentRunResult, AgentRunnerOptions } from '../agents/runner.js';
import type { AgentTask } from '../agents/task.js';
import type { SwitchboardConfig } from '../core/config.js';
import { EXIT_CODES, exitCodeFor, SwitchboardError } from '../core/errors.js';
import { commandConfig, reportError, type GlobalFlags } from './shared.js';

interface ConnectionFlags {
  claudePath?: string;
  baseUrl?: string;
  model?: string;
  retryDelay?: number;
  contextTemplate?: string;
  json?: boolean;
}

interface RunFlags extends ConnectionFlags {
  repo?: string;
  task?: string;
  id?: string;
  title?: string;
  description?: string;
  acceptance?: string[];
  base?: string;
  setup?: string;
  verify?: string;
  tools?: string;
  merge?: string;
  maxTurns?: number;
  maxCost?: number;
  maxAttempts?: number;
  timeout?: number;
  idleTimeout?: number;
  verifyTimeout?: number;
  parallel?: number;
  enqueue?: boolean;
  issue?: string;
}

function positiveNumber(value: string): number {
  const number = Number(value);
  if (value.trim() === '' || !Number.isFinite(number) || number <= 0)
    throw new InvalidArgumentError('expected a positive number');
  return number;
}

function wholeNumber(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1)
    throw new InvalidArgumentError('expected a whole number of 1 or more');
  return number;
}

function nonNegative(value: string): number {
  const number = Number(value);
  if (value.trim() === '' || !Number.isFinite(number) || number < 0)
    throw new InvalidArgumentError('expected a number of 0 or more');
  return number;
}

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

function config(command: Command): SwitchboardConfig {
  return commandConfig(command.optsWithGlobals<GlobalFlags>());
}

function runnerOptions(settings: SwitchboardConfig, flags: ConnectionFlags): AgentRunnerOptions {
  const options: AgentRunnerOptions = { stateDir: settings.stateDir, budgetRules: settings.call.budgetRules };
  const connection: NonNullable<AgentRunnerOptions['connection']> = {};
  const executable = flags.claudePath ?? settings.claude.executable;
  if (executable !== undefined) connection.executable = executable;
  const baseUrl = flags.baseUrl ?? settings.claude.baseUrl;
  if (baseUrl !== undefined) connection.baseUrl = baseUrl;
  if (Object.keys(connection).length > 0) options.connection = connection;
  if (flags.model !== undefined) options.model = flags.model;
  if (flags.retryDelay !== undefined) options.retryDelayMs = flags.retryDelay * 1000;
  if (flags.contextTemplate !== undefined) options.contextTemplate = flags.contextTemplate;
  return options;
}

/** A task from `--task FILE` and/or flags; flags win over the file's fields. */
async function taskFromFlags(flags: RunFlags): Promise<AgentTask> {
  const { loadTask, parseTask } = await import('../agents/task.js');
  const fields: Record<string, unknown> = {};
  if (flags.id !== undefined) fields['id'] = flags.id;
  if (flags.title !== undefined) fields['title'] = flags.title;
  if (flags.description !== undefined) fields['description'] = flags.description;
  if (flags.acceptance !== undefined) fields['acceptance'] = flags.acceptance;
  if (flags.base !== undefined) fields['base'] = flags.base;
  if (flags.setup !== undefined) fields['setup'] = flags.setup;
  if (flags.verify !== undefined) fields['verify'] = flags.verify;
  if (flags.tools !== undefined)
    fields['tools'] = flags.tools
      .split(',')
      .map((tool) => tool.trim())
      .filter(Boolean);
  if (flags.model !== undefined) fields['model'] = flags.model;
  if (flags.issue !== undefined) Object.assign(fields, { ...(await issueFields(flags.issue)), ...fields });
  let task: AgentTask;
  if (flags.task !== undefined) {
    const file = loadTask(flags.task);
    // Validated with the file's id and title standing in for those not given as flags.
    const overrides = parseTask({ id: file.id, title: file.title, ...fields }, 'task flags');
    task = { ...file };
    for (const key of Object.keys(fields)) {
      (task as unknown as Record<string, unknown>)[key] = (overrides as unknown as Record<string, unknown>)[
        key
      ];
    }
  } else {
    if (fields['id'] === undefined || fields['title'] === undefined) {
      throw new SwitchboardError('TASK_INVALID', 'no task given', {
        hint: 'pass --task FILE, --issue OWNER/REPO#N, or at least --id and --title',
      });
    }
    task = parseTask(fields, 'task flags');
  }
  const limits = { ...task.limits };
  if (flags.maxTurns !== undefined) limits.maxTurns = flags.maxTurns;
  if (flags.maxCost !== undefined) limits.maxCostUsd = flags.maxCost;
  if (flags.maxAttempts !== undefined) limits.maxAttempts = flags.maxAttempts;
  if (flags.timeout !== undefined) limits.wallClockMs = flags.timeout * 1000;
  if (flags.idleTimeout !== undefined) limits.idleTimeoutMs = flags.idleTimeout * 1000;
  if (flags.verifyTimeout !== undefined) limits.verifyTimeoutMs = flags.verifyTimeout * 1000;
  return { ...task, limits };
}

/** The task fields a GitHub issue gives (`--issue OWNER/REPO#N`), read with GITHUB_TOKEN. */
async function issueFields(text: string): Promise<Record<string, unknown>> {
  const { parseIssueReference } = await import('../github/issue-ref.js');
  const reference = parseIssueReference(text);
  const { openGitHub } = await import('../github/client.js');
  const { taskFieldsFromIssue } = await import('../github/issue-task.js');
  const issue = await (await openGitHub()).getIssue(reference);
  return taskFieldsFromIssue(reference, issue);
}

function addConnectionFlags(command: Command): Command {
  return command
    .option('--claude-path <path>', 'your own claude executable (env SWITCHBOARD_CLAUDE_PATH)')
    .option('--base-url <url>', 'API base URL for Claude Code, e.g. a `switchboard sim` address')
    .option('--model <model>', 'model for the agent when the task names none')
    .option(
      '--retry-delay <seconds>',
      'delay before the first retry; doubles each retry (default 2)',
      nonNegative,
    )
    .option('--context-template <file>', 'template for EXECUTION_CONTEXT.md ({{title}}, {{acceptance}}, …)')
    .option('--json', 'print the result as JSON');
}

function addTaskFlags(command: Command): Command {
  return command
    .option(
      '--merge <mode>',
      'no-ff (default) | ff | branch (leave the branch) | pr (push it and open a GitHub pull request)',
    )
    .option('--max-turns <n>', 'agent turns per attempt (default 30)', wholeNumber)
    .option('--max-cost <usd>', 'dollars for the whole run, all attempts (default 5)', positiveNumber)
    .option('--max-attempts <n>', 'agent attempts in all (default 3)', wholeNumber)
    .option('--timeout <seconds>', 'wall-clock limit of the run (default 1800)', positiveNumber)
    .option('--idle-timeout <seconds>', 'kill an agent silent this long (default 300)', positiveNumber)
    .option('--verify-timeout <seconds>', 'limit of the verify command (default 600)', positiveNumber)
    .option(
      '--enqueue',
      'record the run and queue it for a `switchboard worker` (needs SWITCHBOARD_DATABASE_URL); print its id',
    );
}

/**
 * `--enqueue`: the runs are recorded as queued in the shared database and sent to the job queue;
 * prints one run id per line (or JSON) and sets the exit code of the first task that could not be queued.
 */
async function enqueueTasks(
  tasks: AgentTask[],
  settings: SwitchboardConfig,
  flags: RunFlags,
  { single }: { single: boolean },
): Promise<void> {
  const { requireWorkerDatabase } = await import('../workers/queues.js');
  const url = requireWorkerDatabase(settings);
  const { enqueueAgentTasks } = await import('../workers/enqueue.js');
  const { connection, ...record } = runnerOptions(settings, flags);
  const outcomes = await enqueueAgentTasks({
    ...record,
    tasks,
    url,
    settings: settings.workers,
    ...(connection?.baseUrl === undefined ? {} : { job: { baseUrl: connection.baseUrl } }),
    ...(flags.repo === undefined ? {} : { repo: flags.repo }),
    ...(flags.merge === undefined ? {} : { merge: parseMerge(flags.merge) }),
  });
  let exitCode: number = EXIT_CODES.OK;
  const report: unknown[] = [];
  for (const outcome of outcomes) {
    if (outcome.runId !== undefined) {
      report.push({ taskId: outcome.taskId, id: outcome.runId, jobId: outcome.jobId });
      if (flags.json !== true) process.stdout.write(`${outcome.runId}\n`);
    } else {
      // A single task's bad input is the command's error, as without --enqueue.
      if (single) throw outcome.error;
      const code = reportError(outcome.error, false);
      report.push({
        taskId: outcome.taskId,
        error: String((outcome.error as Error).message ?? outcome.error),
      });
      if (exitCode === EXIT_CODES.OK) exitCode = code;
    }
  }
  if (flags.json === true) process.stdout.write(`${JSON.stringify(single ? report[0] : report, null, 2)}\n`);
  process.exitCode = exitCode;
}

function elapsed(ms: number): string {
  return ms < 60_000
    ? `${(ms / 1000).toFixed(1)}s`
    : `${Math.floor(ms / 60_000)}m${Math.round((ms % 60_000) / 1000)}s`;
}

function summary(result: AgentRunResult): string {
  const where =
    result.status === 'succeeded'
      ? result.pullRequest !== undefined
        ? `pull request #${result.pullRequest.number}: ${result.pullRequest.url}`
        : result.mergedCommit === undefined
          ? `left on branch ${result.branch}`
          : `merged into ${result.baseBranch} at ${result.mergedCommit.slice(0, 12)}`
      : `${result.errorCode ?? 'failed'}: ${result.error ?? ''}`;
  return `${result.id}: ${result.phase} — ${where} (${result.attempts} attempt${result.attempts === 1 ? '' : 's'}, $${result.costUsd.toFixed(4)}, ${elapsed(result.durationMs)})`;
}

function exitCodeOf(result: AgentRunResult): number {
  if (result.ok) return EXIT_CODES.OK;
  return result.errorCode === undefined ? EXIT_CODES.INTERNAL : exitCodeFor(result.errorCode);
}

/** Stops the runner's work cleanly on Ctrl-C or SIGTERM: the runs are marked cancelled, agents killed. */
function abortOnSignals(): AbortController {
  const controller = new AbortController();
  const stop = (): void => controller.abort(new Error('interrupted'));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return controller;
}

/**
 * One line on stderr before agents run when the default sandbox mode finds no sandbox: otherwise only
 * each attempt's transcript event would tell that the agent's commands ran unconfined.
 */
async function warnIfUnsandboxed(): Promise<{ onWarning?: (message: string) => void }> {
  const { sandboxShortfall, unsandboxedWarning } = await import('../confinement/sandbox.js');
  const shortfall = sandboxShortfall();
  if (shortfall === undefined) return {};
  process.stderr.write(`switchboard: warning: ${unsandboxedWarning(shortfall)}\n`);
  // Said here once for the command: the runner's own per-run line about setup and verify would repeat it.
  return { onWarning: () => undefined };
}

/** Plain log lines on stderr, one per phase change and attempt (not the agent's every message). */
function logLines(): (progress: AgentRunProgress) => void {
  return (progress) => {
    if (progress.message.startsWith('agent working')) return;
    process.stderr.write(
      `[${progress.runId}] ${progress.phase} ${elapsed(progress.elapsedMs)} $${progress.costUsd.toFixed(4)}: ${progress.message}\n`,
    );
  };
}

/**
 * A table redrawn in place on a terminal: phase, elapsed time and cost of each run. Between progress
 * reports a running row's clock ticks on; an ended run's stops at its end.
 */
function progressTable(finalPhases: ReadonlySet<AgentPhase>): {
  update: (progress: AgentRunProgress) => void;
  stop: () => void;
} {
  const rows = new Map<string, AgentRunProgress & { seen: number }>();
  let drawn = 0;
  const draw = (): void => {
    const lines = [...rows.values()].map((row) => {
      const age = finalPhases.has(row.phase) ? row.elapsedMs : row.elapsedMs + (Date.now() - row.seen);
      return `${row.runId.padEnd(28)} ${row.phase.padEnd(9)} ${elapsed(age).padStart(7)} $${row.costUsd.toFixed(4)}  ${row.message.slice(0, 60)}`;
    });
    if (drawn > 0) process.stderr.write(`\x1b[${drawn}A`);
    for (const line of lines) process.stderr.write(`\x1b[2K${line}\n`);
    drawn = lines.length;
  };
  const timer = setInterval(draw, 250);
  return {
    update(progress) {
      rows.set(progress.runId, { ...progress, seen: Date.now() });
    },
    stop() {
      clearInterval(timer);
      draw();
    },
  };
}

export function registerAgentCommand(program: Command): void {
  const agent = program
    .command('agent')
    .description(
      'run Claude Code on a task in its own git worktree, verify, merge; list, resume, cancel, clean',
    );

  addConnectionFlags(
    addTaskFlags(
      agent
        .command('run')
        .description('run one task (from --task FILE or flags) and merge the verified change')
        .option('--repo <dir>', 'the git repository (default: the current directory)')
        .option(
          '--task <file>',
          'task file (YAML or JSON: id, title, description, acceptance, base, verify, limits)',
        )
        .option(
          '--issue <ref>',
          'build the task from a GitHub issue OWNER/REPO#N (needs GITHUB_TOKEN); merge defaults to pr',
        )
        .option('--id <id>', 'task id (overrides the file)')
        .option('--title <text>', 'task title')
        .option('--description <text>', 'what to do')
        .option('--acceptance <text>', 'an acceptance criterion; repeatable', collect)
        .option('--base <branch>', 'branch to start from and merge into (default: the checked-out branch)')
        .option(
          '--setup <command>',
          'shell command run once in the new worktree before the agent, e.g. "npm ci"',
        )
        .option('--verify <command>', 'shell command that must pass in the worktree')
        .option(
          '--tools <list>',
          'comma-separated Claude Code tools, e.g. Read,Write,Edit,"Bash(npm test:*)"',
        ),
    ),
  ).action(async (flags: RunFlags, command: Command) => {
    const settings = config(command);
    const task = await taskFromFlags(flags);
    if (flags.enqueue === true) {
      await enqueueTasks([task], settings, flags, { single: true });
      return;
    }
    const warned = await warnIfUnsandboxed();
    const { runAgentTask } = await import('../agents/runner.js');
    const controller = abortOnSignals();
    const options = {
      ...runnerOptions(settings, flags),
      ...warned,
      task,
      abortSignal: controller.signal,
      onProgress: logLines(),
      ...(flags.repo === undefined ? {} : { repo: flags.repo }),
      ...(flags.merge === undefined ? {} : { merge: parseMerge(flags.merge) }),
    };
    const result = await runAgentTask(options);
    finishRun(result, flags.json === true);
  });

  addConnectionFlags(
    addTaskFlags(
      agent
        .command('run-all')
        .description('run several task files in parallel; merges into each branch go one at a time')
        .argument('<tasks...>', 'task files')
        .option('--repo <dir>', 'the git repository (default: the current directory)')
        .option('--parallel <n>', 'runs at once (default 2)', wholeNumber),
    ),
  ).action(async (files: string[], flags: RunFlags, command: Command) => {
    const settings = config(command);
    const tasks: AgentTask[] = [];
    for (const file of files) tasks.push(await taskFromFlags({ ...flags, task: file }));
    const ids = new Set<string>();
    for (const task of tasks) {
      if (ids.has(task.id)) {
        throw new SwitchboardError('TASK_INVALID', `two task files have the id "${task.id}"`, {
          hint: 'give every task its own id',
        });
      }
      ids.add(task.id);
    }
    if (flags.enqueue === true) {
      await enqueueTasks(tasks, settings, flags, { single: false });
      return;
    }
    const warned = await warnIfUnsandboxed();
    const { runAgentTasks } = await import('../agents/run-all.js');
    const { FINAL_PHASES } = await import('../agents/run-files.js');
    const controller = abortOnSignals();
    const table = process.stderr.isTTY && flags.json !== true ? progressTable(FINAL_PHASES) : undefined;
    const outcomes = await runAgentTasks({
      ...runnerOptions(settings, flags),
      ...warned,
      tasks,
      parallel: flags.parallel ?? 2,
      abortSignal: controller.signal,
      onProgress: table?.update ?? logLines(),
      ...(flags.repo === undefined ? {} : { repo: flags.repo }),
      ...(flags.merge === undefined ? {} : { merge: parseMerge(flags.merge) }),
    });
    table?.stop();
    let exitCode: number = EXIT_CODES.OK;
    const report: unknown[] = [];
    for (const outcome of outcomes) {
      if (outcome.result !== undefined) {
        report.push(outcome.result);
        if (flags.json !== true) process.stdout.write(`${summary(outcome.result)}\n`);
        if (exitCode === EXIT_CODES.OK) exitCode = exitCodeOf(outcome.result);
      } else {
        const code = reportError(outcome.error, false);
        report.push({
          taskId: outcome.taskId,
          error: String((outcome.error as Error).message ?? outcome.error),
        });
        if (exitCode === EXIT_CODES.OK) exitCode = code;
      }
    }
    if (flags.json === true) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    process.exitCode = exitCode;
  });

  agent
    .command('ls')
    .description('list agent runs, newest first')
    .option('--json', 'print JSON')
    .action(async (flags: { json?: boolean }, command: Command) => {
      const { listAgentRuns } = await import('../agents/lifecycle.js');
      const runs = await listAgentRuns({ stateDir: config(command).stateDir });
      if (flags.json === true) {
        process.stdout.write(
          `${JSON.stringify(
            runs.map(({ task: _task, ...run }) => run),
            null,
            2,
          )}\n`,
        );
        return;
      }
      for (const run of runs) {
        const waiting = run.phase === 'queued' && run.runnerPid === undefined && run.status === 'running';
        const state = run.live ? 'live' : waiting ? 'queued' : run.resumable ? 'resumable' : run.status;
        process.stdout.write(
          `${run.id.padEnd(28)} ${run.phase.padEnd(9)} ${state.padEnd(10)} $${run.costUsd.toFixed(4)}  ${run.createdAt}  ${run.title}\n`,
        );
      }
    });

  agent
    .command('show')
    .description('show one run: phase, status, branch, worktree, cost, events')
    .argument('<id>', 'run id (or a unique prefix)')
    .option('--json', 'print JSON')
    .action(async (id: string, flags: { json?: boolean }, command: Command) => {
      const { showAgentRun } = await import('../agents/lifecycle.js');
      const run = await showAgentRun(id, { stateDir: config(command).stateDir });
      if (flags.json === true) {
        process.stdout.write(`${JSON.stringify(run, null, 2)}\n`);
        return;
      }
      const lines = [
        `run       ${run.id} (${run.live ? 'live' : run.resumable ? 'resumable' : run.status})`,
        `task      ${run.taskId}: ${run.title}`,
        `phase     ${run.phase}, attempt ${run.attempt} of ${run.task.limits.maxAttempts}`,
        `repo      ${run.repo} (base ${run.baseBranch} at ${run.baseCommit.slice(0, 12)})`,
        `branch    ${run.branch}`,
        `worktree  ${run.worktree}`,
        `cost      $${run.costUsd.toFixed(4)}, ${run.turns} turns`,
      ];
      if (run.mergedCommit !== undefined) lines.push(`merged    ${run.mergedCommit}`);
      if (run.error !== undefined) lines.push(`error     ${run.errorCode ?? ''}: ${run.error}`);
      if (run.detail !== undefined)
        lines.push('detail', ...run.detail.split('\n').map((line) => `  ${line}`));
      process.stdout.write(`${lines.join('\n')}\n`);
    });

  agent
    .command('logs')
    .description("print a run's events, or with --transcript an attempt's Claude Code transcript (JSONL)")
    .argument('<id>', 'run id (or a unique prefix)')
    .option('--transcript [attempt]', 'the transcript of this attempt (default: the last)')
    .action(async (id: string, flags: { transcript?: string | boolean }, command: Command) => {
      const { agentRunFiles, readRunFile, showAgentRun } = await import('../agents/lifecycle.js');
      const stateDir = config(command).stateDir;
      if (flags.transcript === undefined) {
        for (const event of (await showAgentRun(id, { stateDir })).events) {
          process.stdout.write(
            `${event.at} ${event.phase.padEnd(9)} ${event.kind.padEnd(13)} ${event.message}\n`,
          );
        }
        return;
      }
      const transcripts = (await agentRunFiles(id, { stateDir })).files.filter((file) =>
        file.endsWith('.jsonl'),
      );
      const wanted =
        typeof flags.transcript === 'string'
          ? transcripts.find((file) => file.endsWith(`attempt-${flags.transcript as string}.jsonl`))
          : transcripts.at(-1);
      if (wanted === undefined) {
        throw new SwitchboardError('INVALID_INPUT', `run ${id} has no such transcript`, {
          hint: `transcripts: ${transcripts.map((file) => file.replace(/.*\//, '')).join(', ') || 'none yet'}`,
        });
      }
      process.stdout.write(readRunFile(wanted));
    });

  addConnectionFlags(
    agent
      .command('resume')
      .description(
        'pick up a run whose runner died (or that stopped on a conflict or a dirty checkout) from its recorded phase',
      )
      .argument('<id>', 'run id (or a unique prefix)'),
  ).action(async (id: string, flags: ConnectionFlags, command: Command) => {
    const warned = await warnIfUnsandboxed();
    const { resumeAgentRun } = await import('../agents/runner.js');
    const controller = abortOnSignals();
    const result = await resumeAgentRun({
      ...runnerOptions(config(command), flags),
      ...warned,
      runId: id,
      abortSignal: controller.signal,
      onProgress: logLines(),
    });
    finishRun(result, flags.json === true);
  });

  agent
    .command('cancel')
    .description("stop a run: kill the agent's process tree (and its runner), mark the run cancelled")
    .argument('<id>', 'run id (or a unique prefix)')
    .option('--json', 'print JSON')
    .action(async (id: string, flags: { json?: boolean }, command: Command) => {
      const { cancelAgentRun } = await import('../agents/lifecycle.js');
      const result = await cancelAgentRun(id, { stateDir: config(command).stateDir });
      if (flags.json === true) process.stdout.write(`${JSON.stringify(result)}\n`);
      else
        process.stdout.write(
          result.alreadyEnded ? `${result.id} had already ended\n` : `${result.id} cancelled\n`,
        );
    });

  agent
    .command('clean')
    .description('remove worktrees and branches of ended runs that are merged (or abandoned); prune orphans')
    .option('--abandon <id>', 'also throw away this ended, unmerged run; repeatable', collect)
    .option('--repo <dir>', 'only runs of this repository')
    .option('--json', 'print JSON')
    .action(async (flags: { abandon?: string[]; repo?: string; json?: boolean }, command: Command) => {
      const { cleanAgentRuns } = await import('../agents/lifecycle.js');
      const result = await cleanAgentRuns({
        stateDir: config(command).stateDir,
        ...(flags.abandon === undefined ? {} : { abandon: flags.abandon }),
        ...(flags.repo === undefined ? {} : { repo: flags.repo }),
      });
      if (flags.json === true) {
        process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
        return;
      }
      for (const entry of result.removed)
        process.stdout.write(`removed ${entry.id} (${entry.reason}): ${entry.worktree}\n`);
      for (const entry of result.kept) process.stdout.write(`kept    ${entry.id}: ${entry.reason}\n`);
      for (const line of result.pruned) process.stdout.write(`pruned  ${line}\n`);
    });
}

function parseMerge(value: string): 'no-ff' | 'ff' | 'branch' | 'pr' {
  if (value === 'no-ff' || value === 'ff' || value === 'branch' || value === 'pr') return value;
  throw new SwitchboardError('INVALID_INPUT', `--merge "${value}" is not a merge mode`, {
    hint: 'use no-ff, ff, branch or pr',
  });
}

function finishRun(result: AgentRunResult, json: boolean): void {
  if (json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  else process.stdout.write(`${summary(result)}\n`);
  if (!result.ok && !json) {
    const hint =
      result.errorCode === 'DIRTY_CHECKOUT'
        ? `commit or stash the changes in the checkout, then run \`switchboard agent resume ${result.id}\` to merge without running the agent again`
        : result.status === 'conflict' && result.errorCode !== 'MERGE_CONFLICT'
          ? `the change is committed; fix that, then run \`switchboard agent resume ${result.id}\` to deliver it without running the agent again`
          : result.status === 'conflict'
            ? `resolve it on branch ${result.branch}, or run \`switchboard agent resume ${result.id}\` after moving the base`
            : `see \`switchboard agent show ${result.id}\` and \`switchboard agent logs ${result.id}\``;
    process.stderr.write(`switchboard: ${result.error ?? result.errorCode ?? 'the run failed'} (${hint})\n`);
  }
  process.exitCode = exitCodeOf(result);
}
