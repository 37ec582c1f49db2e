import { join } from 'node:path';
import { secretFolderList } from '../../core/secrets.js';
import { parseProviderChain } from '../../core/call-types.js';
import { isSwitchboardError, SwitchboardError, type ErrorCode } from '../../core/errors.js';
import {
  attemptSpend,
  checkAgentBudget,
  holdAgentAttempt,
  recordUnrecordedSpend,
  type AgentAttemptHold,
  type AgentSpending,
} from '../../agents/agent-spend.js';
import type { AgentInvocation } from '../../agents/claude-agent.js';
import { attemptPrompt, writeContextFiles, type AgentContext } from '../../agents/context.js';
import { agentEnvironment } from '../../agents/environment.js';
import type { CommandSandbox } from '../../agents/verify.js';
import {
  branchCommit,
  currentBranch,
  git,
  gitOk,
  repositoryInfo,
  type RepositoryInfo,
} from '../../agents/git.js';
import { assertBaseCheckoutClean, MergeQueue, mergeIntoBase } from '../../agents/merge.js';
import {
  openRemoteClone,
  pushBranch,
  REMOTE_NAME,
  remoteBranchCommit,
  remoteHeads,
  remoteLocation,
} from '../../agents/remote.js';
import { mergeIntoRemote } from '../../agents/remote-merge.js';
import {
  commitChange,
  createWorktree,
  filesChanged,
  findTrailerCommit,
  headMoved,
  judgeAttempt,
  removeWorktree,
  resetWorktree,
  runAgentAttempt,
  runSetup,
  verifyChange,
  type AgentFunction,
} from '../../agents/phases.js';
import { killRunProcesses, PROCESS_TAG_VARIABLE, runProcessTag } from '../../agents/processes.js';
import type { PullRequestTarget } from '../../agents/pull-request.js';
import type { AgentConnection } from '../../agents/runner.js';
import type { GitHubIssue } from '../../github/client.js';
import type { IssueReference } from '../../github/issue-ref.js';
import { checklistItems } from '../../github/issue-task.js';
import { parseTask, type AgentTask, type MergeMode } from '../../agents/task.js';
import type { AgentStep, GitEffectDefinition } from '../model.js';
import { validateOutput } from '../output-schema.js';
import { guidanceMessage, type StepContext, type StepOutcome } from '../step-executor.js';
import { claudeMcpServers, renderDirectory, workingDirectory } from './llm.js';
import { sessionEvents } from './session-events.js';

/** The trailer that marks the runner's commit of a step: its value is the step's key. */
export const STEP_TRAILER = 'Switchboard-Step';

/**
 * Git subcommands the agent of a git step may not run: the runner makes the step's one commit, and
 * the branch must stay where the runner put it.
 */
export const DENIED_GIT_COMMANDS: readonly string[] = [
  'commit',
  'commit-tree',
  'push',
  'merge',
  'rebase',
  'cherry-pick',
  'revert',
  'am',
  'reset',
  'update-ref',
  'switch',
  'tag',
];

/** Settings of agent steps that the workflow file does not hold. */
export interface GitAgentStepOptions {
  /** How Claude Code is started and which API it talks to (the `claude.*` settings). @default the environment's */
  connection?: AgentConnection;
  /** Test seams. */
  _internal?: { runAgent?: AgentFunction };
}

/** What a git step records before its first outside effect, and reads back on resume. */
interface GitStepNotes extends Record<string, unknown> {
  repo: string;
  /** Set when `repo` names a remote: each machine works in its own clone and pushes the branch there. */
  remote?: string;
  /** The commit the branch starts from. */
  base: string;
  /** The branch merges go into (absent when `base` named a commit). */
  baseBranch?: string;
  branch: string;
  worktree: string;
  /** Dollars the step's agent attempts have spent so far, across resumes. */
  spentUsd: number;
  /** The agent's last answer, kept for the output of an adopted commit. */
  summary?: string;
  /** Claude Code's pid while an attempt runs (it leads its process group), so a resume can kill what is left. */
  childPid?: number;
}

/** One failed outcome: a code and a one-line message. */
type StepFailure = { code: ErrorCode; message: string };

const mergeQueue = new MergeQueue();

/** A `git.repo` that is a URL (scheme or scp-like), not a path to resolve against the workflow's folder. */
const URL_LIKE = /^(?:[a-z][a-z0-9+.-]*:\/\/|[^\s/:@]+@[^\s/:]+:)/i;

/**
 * `type: agent` with `effects: git`: Claude Code in a worktree of its own on branch
 * `wf/<run>/<step>-<visit>[-<item>]`, through the agent runner's phases (worktree, setup, attempts,
 * verify, commit, merge). The agent may not commit or push; the runner commits everything with the
 * trailer `Switchboard-Step: <key>`. On resume, a commit with this key's trailer is adopted (the agent
 * does not run again); otherwise the worktree goes back to the recorded base and the step runs again.
 * A completed step removes its worktree (the branch keeps the commit); a failed one keeps it to be looked at.
 */
export async function executeGitAgentStep(
  context: StepContext,
  step: AgentStep,
  effect: GitEffectDefinition,
  options: GitAgentStepOptions = {},
): Promise<StepOutcome> {
  const execution = new GitStepExecution(context, step, effect, options);
  try {
    return await execution.tellIssue(await execution.run());
  } catch (error) {
    if (context.signal.aborted || !isSwitchboardError(error) || error.code === 'WORKFLOW_TEMPLATE')
      throw error;
    return await execution.tellIssue(execution.failed({ code: error.code, message: error.message }));
  } finally {
    // The agent's callbacks queue notes without waiting; they are in the ledger before the step ends.
    await execution.written();
  }
}

class GitStepExecution {
  private notes: GitStepNotes | undefined;
  /** The notes writes, one after another in the order they were made (settles, never rejects). */
  private writes: Promise<void> = Promise.resolve();
  private readonly context: StepContext;
  private readonly step: AgentStep;
  private readonly effect: GitEffectDefinition;
  private readonly options: GitAgentStepOptions;
  /** `git.issue`, read from GitHub when the step starts. */
  private issue: { reference: IssueReference; issue: GitHubIssue } | undefined;
  /** `merge: pr`: where the branch is pushed and the pull request opened (checked before the agent runs). */
  private target: PullRequestTarget | undefined;
  /** Set once the step has its commit: a failure after that is the delivery's, not the issue's work. */
  private landing = false;
  private taskValue: AgentTask | undefined;
  /** The repository the worktree is made in (the user's, or this machine's clone of the remote). */
  private repository: RepositoryInfo | undefined;

  constructor(
    context: StepContext,
    step: AgentStep,
    effect: GitEffectDefinition,
    options: GitAgentStepOptions,
  ) {
    this.context = context;
    this.step = step;
    this.effect = effect;
    this.options = options;
  }

  async run(): Promise<StepOutcome> {
    await this.readIssue();
    const task = this.task();
    this.taskValue = task;
    const mode: MergeMode = this.effect.merge ?? 'branch';
    const notes = await this.plan(mode);
    const repository =
      notes.remote === undefined
        ? await repositoryInfo(notes.repo)
        : await openRemoteClone(this.context.stateDir, notes.remote, this.context.signal);
    this.repository = repository;
    if (mode === 'pr') {
      const { pullRequestTarget } = await import('../../agents/pull-request.js');
      this.target = await pullRequestTarget(task, repository.root, notes.remote);
    }
    // A remote's step may resume on another machine: its worktree is this machine's.
    if (notes.remote !== undefined) this.notes = { ...notes, worktree: this.localWorktree() };
    const trailer = { base: notes.base, branch: notes.branch, name: STEP_TRAILER, value: this.context.key };
    // A pushed commit is adopted on any machine; one made here but not pushed yet, on this one.
    const found =
      (notes.remote === undefined
        ? undefined
        : await findTrailerCommit(repository.root, {
            ...trailer,
            ref: `refs/remotes/${REMOTE_NAME}/${notes.branch}`,
          })) ?? (await findTrailerCommit(repository.root, trailer));
    if (found !== undefined) {
      await this.context.emit({
        type: 'git-adopted',
        step: this.step.name,
        key: this.context.key,
        data: { commit: found, branch: notes.branch },
      });
      return this.land(repository, found, mode);
    }
    if (notes.baseBranch !== undefined && notes.remote === undefined) {
      await assertBaseCheckoutClean({ repository, baseBranch: notes.baseBranch, mode });
    }
    // A budget already spent fails the step before its worktree, setup or agent.
    const refused = await this.withinBudget(checkAgentBudget);
    if (refused !== undefined) return this.failed(refused);
    const made = await createWorktree({
      repository,
      stateDir: this.context.stateDir,
      branch: notes.branch,
      worktree: this.current.worktree,
      baseCommit: notes.base,
      abortSignal: this.context.signal,
    });
    if (made === 'existing' || (await branchCommit(repository.root, notes.branch)) !== notes.base) {
      // An interrupted attempt's files (or commits) must not pass for this attempt's change.
      await resetWorktree(this.current.worktree, notes.branch, notes.base);
      await this.context.emit({
        type: 'git-reset',
        step: this.step.name,
        key: this.context.key,
        data: { base: notes.base },
      });
    }
    const failure = (await this.setup(task)) ?? (await this.attempts(task));
    if (failure !== undefined) return this.failed(failure);
    const commit = await commitChange({
      worktree: this.current.worktree,
      base: notes.base,
      subject: `${this.step.name}: ${firstLine(this.step.description ?? `step of workflow ${this.context.workflow.name}`)}`,
      body: `Switchboard-Run: ${this.context.runId}\n${STEP_TRAILER}: ${this.context.key}`,
    });
    if (commit === notes.base)
      return this.failed({ code: 'AGENT_FAILED', message: 'there is nothing to commit' });
    await this.context.emit({
      type: 'git-commit',
      step: this.step.name,
      key: this.context.key,
      data: { commit },
    });
    return this.land(repository, commit, mode);
  }

  /** `git.issue`: the issue, through GitHub's API with GITHUB_TOKEN. */
  private async readIssue(): Promise<void> {
    if (this.effect.issue === undefined) return;
    const { parseIssueReference } = await import('../../github/issue-ref.js');
    const { openGitHub } = await import('../../github/client.js');
    const reference = parseIssueReference(this.context.render(this.effect.issue, 'git.issue'));
    this.issue = { reference, issue: await (await openGitHub()).getIssue(reference) };
  }

  /** The step as an agent task: the rendered prompt, the effect's verify, setup, tools and limits. */
  private task(): AgentTask {
    const { step, effect, context } = this;
    const fields: Record<string, unknown> = {
      // A task id starts with a letter or digit; a step name may start with "_".
      id: safeName(step.name)
        .replace(/^[^A-Za-z0-9]+/, 'step-')
        .slice(0, 64),
      title: firstLine(step.description ?? step.name),
      description: context.render(step.prompt, 'prompt'),
      tools: step.tools ?? ['Read', 'Write', 'Edit', 'Glob', 'Grep'],
    };
    if (this.issue !== undefined) Object.assign(fields, this.issueFields(this.issue, fields));
    if (effect.acceptance !== undefined) fields['acceptance'] = effect.acceptance;
    if (effect.verify !== undefined) fields['verify'] = context.render(effect.verify, 'git.verify');
    if (effect.setup !== undefined) fields['setup'] = context.render(effect.setup, 'git.setup');
    if (effect.limits !== undefined) fields['limits'] = effect.limits;
    if (step.systemPrompt !== undefined)
      fields['instructions'] = context.render(step.systemPrompt, 'system_prompt');
    const model = this.model();
    if (model !== undefined) fields['model'] = model;
    try {
      return parseTask(fields, `${context.workflow.file}: step "${step.name}"`);
    } catch (error) {
      if (!isSwitchboardError(error)) throw error;
      throw new SwitchboardError('WORKFLOW_INVALID', error.message.replace(/ field "/, ' field "git.'), {
        hint: 'see the `effects: git` keys in docs/workflows.md',
      });
    }
  }

  /** The issue's title, text and checklist join the step's prompt; the issue is the task's provenance. */
  private issueFields(
    { reference, issue }: { reference: IssueReference; issue: GitHubIssue },
    fields: Record<string, unknown>,
  ): Record<string, unknown> {
    const items = checklistItems(issue.body);
    const ref = `${reference.owner}/${reference.repo}#${reference.number}`;
    return {
      title: issue.title,
      description: `${String(fields['description'])}\n\nGitHub issue ${ref}: ${issue.title}\n\n${issue.body.trim()}`,
      issue: ref,
      ...(items.length === 0 ? {} : { acceptance: items }),
    };
  }

  /**
   * Tells the step's issue that its work failed (in mode `pr`), once per step key. A failure in the
   * delivery itself (push, GitHub) is not told: resuming the workflow delivers the commit.
   */
  async tellIssue(outcome: StepOutcome): Promise<StepOutcome> {
    if (outcome.status !== 'failed' || this.landing || this.issue === undefined) return outcome;
    if ((this.effect.merge ?? 'branch') !== 'pr') return outcome;
    try {
      const { commentOnce, outcomeComment, runMarker } = await import('../../agents/pull-request.js');
      const { openGitHub } = await import('../../github/client.js');
      const body = outcomeComment({
        runId: `${this.context.runId}/${this.step.name}`,
        costUsd: outcome.costUsd,
        failure: outcome.error ?? { code: 'WORKFLOW_FAILED', message: 'the step failed' },
      });
      await commentOnce(
        await openGitHub(),
        this.issue.reference,
        runMarker(this.context.key, 'failed'),
        body,
      );
    } catch (error) {
      await this.context.emit({
        type: 'issue-comment-failed',
        step: this.step.name,
        key: this.context.key,
        data: { error: error instanceof Error ? error.message : String(error) },
      });
    }
    return outcome;
  }

  /**
   * `merge: pr`: push the step's branch, find or open its pull request, comment on the issue. Each is
   * looked up before it is done, so a resumed step (its commit adopted) adds nothing twice.
   */
  private async deliver(
    repository: RepositoryInfo,
    commit: string,
  ): Promise<{ number: number; url: string }> {
    const notes = this.current;
    const target = this.target;
    const task = this.taskValue;
    if (target === undefined || task === undefined || notes.baseBranch === undefined)
      throw new SwitchboardError('INTERNAL', 'merge: pr without its target');
    const pullRequests = await import('../../agents/pull-request.js');
    const pushed = await pullRequests.pushRunBranch({
      cwd: repository.root,
      url: target.url,
      branch: notes.branch,
      commit,
    });
    if (pushed === 'pushed') await this.pushed(commit, notes.branch);
    const github = await (await import('../../github/client.js')).openGitHub();
    const { pullRequest, opened } = await pullRequests.ensurePullRequest(github, target, {
      branch: notes.branch,
      baseBranch: notes.baseBranch,
      title: task.title,
      body: pullRequests.pullRequestBody(task, `${this.context.runId}/${this.step.name}`, target),
    });
    await this.context.emit({
      type: 'pull-request',
      step: this.step.name,
      key: this.context.key,
      data: { number: pullRequest.number, url: pullRequest.url, opened },
    });
    if (target.issue !== undefined) {
      const body = pullRequests.outcomeComment({
        runId: `${this.context.runId}/${this.step.name}`,
        costUsd: notes.spentUsd,
        pullRequest,
      });
      await pullRequests.commentOnce(
        github,
        target.issue,
        pullRequests.runMarker(this.context.key, 'succeeded'),
        body,
      );
    }
    return { number: pullRequest.number, url: pullRequest.url };
  }

  /** Claude Code's model: the `claude:` (or Anthropic) entry of the step's spec. */
  /** Records the effect point of a remote: the step's commit is on the remote as its branch. */
  private async pushed(commit: string, branch: string): Promise<void> {
    await this.context.emit({
      type: 'git-push',
      step: this.step.name,
      key: this.context.key,
      data: { commit, branch },
    });
  }

  private model(): string | undefined {
    const { step, context } = this;
    const { runtime } = context.workflow;
    const explicit = step.provider !== undefined || step.model !== undefined;
    if (!explicit && runtime.provider === undefined && runtime.defaultModel === undefined) return undefined;
    const spec = context.resolveSpec(step.provider ?? runtime.provider, step.model ?? runtime.defaultModel);
    const chain = parseProviderChain(spec);
    const entry =
      chain.find((candidate) => candidate.provider === 'claude') ??
      chain.find((candidate) => candidate.provider === 'anthropic');
    if (entry !== undefined) return entry.model;
    if (!explicit) return undefined;
    throw new SwitchboardError(
      'WORKFLOW_INVALID',
      `${context.workflow.file}: step "${step.name}" field "provider": effects: git runs Claude Code, but the step resolves to ${spec}`,
      { hint: 'set provider: claude-agent-sdk (or a claude: model) on the step' },
    );
  }

  /**
   * Where the step works: the notes of an interrupted attempt of this key, or new ones recorded before
   * anything outside the ledger happens.
   */
  private async plan(mode: MergeMode): Promise<GitStepNotes> {
    const previous = readNotes(this.context.previous);
    if (previous !== undefined) {
      // The interrupted attempt's agent may still run (its Bash commands leave Claude Code's group): it must not race this one.
      killRunProcesses(previous.childPid, this.processTag());
      this.notes = previous;
      return previous;
    }
    const { context, step, effect } = this;
    const directory =
      (effect.repo === undefined
        ? workingDirectory(context, step.workingDir)
        : renderDirectory(context, effect.repo, 'git.repo')) ?? process.cwd();
    // A URL is taken as written; a relative path (a bare repository among them) from the workflow's folder.
    const rendered = effect.repo === undefined ? undefined : context.render(effect.repo, 'git.repo').trim();
    await context.checkRepository?.(rendered !== undefined && URL_LIKE.test(rendered) ? rendered : directory);
    const remote =
      rendered === undefined
        ? undefined
        : await remoteLocation(URL_LIKE.test(rendered) ? rendered : directory);
    if (remote !== undefined) return this.planRemote(remote);
    const repository = await repositoryInfo(directory);
    const baseName =
      effect.base === undefined
        ? await currentBranch(repository.root)
        : context.render(effect.base, 'git.base');
    if (baseName === undefined) {
      throw new SwitchboardError(
        'UNKNOWN_BASE',
        `${repository.root} has no branch checked out (detached HEAD)`,
        {
          hint: `give step "${step.name}" a git.base branch`,
        },
      );
    }
    const base = await resolveCommit(repository.root, baseName);
    const baseBranch = (await branchCommit(repository.root, baseName)) === undefined ? undefined : baseName;
    if (baseBranch === undefined && mode !== 'branch') {
      throw new SwitchboardError(
        'WORKFLOW_INVALID',
        `${context.workflow.file}: step "${step.name}" field "git.merge": ${mode} needs git.base to be a branch, not ${baseName}`,
        { hint: 'name a local branch in git.base, or use merge: branch' },
      );
    }
    const name = stepBranchName(context, step.name);
    const notes: GitStepNotes = {
      repo: repository.root,
      base,
      branch: `wf/${safeName(context.runId)}/${name}`,
      worktree: join(context.stateDir, 'workflows', 'worktrees', safeName(context.runId), name),
      spentUsd: 0,
    };
    if (baseBranch !== undefined) notes.baseBranch = baseBranch;
    await context.recordProgress(notes);
    this.notes = notes;
    return notes;
  }

  /** `plan` for a remote: the base is the remote's branch (the step's `git.base`, else its default branch) as fetched now. */
  private async planRemote(remote: string): Promise<GitStepNotes> {
    const { context, step, effect } = this;
    const clone = await openRemoteClone(context.stateDir, remote, context.signal);
    const baseBranch =
      effect.base === undefined ? (await remoteHeads(remote)).head : context.render(effect.base, 'git.base');
    const base = baseBranch === undefined ? undefined : await remoteBranchCommit(clone.root, baseBranch);
    if (baseBranch === undefined || base === undefined) {
      throw new SwitchboardError(
        'UNKNOWN_BASE',
        `the remote ${remote} has no branch "${baseBranch ?? 'HEAD'}"`,
        {
          hint: `give step "${step.name}" a git.base branch the remote has`,
        },
      );
    }
    const notes: GitStepNotes = {
      repo: remote,
      remote,
      base,
      baseBranch,
      branch: `wf/${safeName(context.runId)}/${stepBranchName(context, step.name)}`,
      worktree: this.localWorktree(),
      spentUsd: 0,
    };
    await context.recordProgress(notes);
    this.notes = notes;
    return notes;
  }

  private localWorktree(): string {
    const { context, step } = this;
    return join(
      context.stateDir,
      'workflows',
      'worktrees',
      safeName(context.runId),
      stepBranchName(context, step.name),
    );
  }

  private get current(): GitStepNotes {
    if (this.notes === undefined) throw new SwitchboardError('INTERNAL', 'the git step has no notes yet');
    return this.notes;
  }

  private record(update: Partial<GitStepNotes>): Promise<void> {
    const notes = { ...this.current, ...update };
    this.notes = notes;
    const written = this.writes.then(() => this.context.recordProgress(notes));
    this.writes = written.catch(() => {});
    return written;
  }

  /**
   * `record` for the agent's callbacks, which cannot wait: the write keeps its place in the queue, and
   * a failed one is dropped (the agent's bookkeeping must not end its run; the next awaited write or
   * the step's end finds a lost run).
   */
  private recordSoon(update: Partial<GitStepNotes>): void {
    this.record(update).catch(() => {});
  }

  /** Settles once every notes write made so far has. */
  written(): Promise<void> {
    return this.writes;
  }

  private commandEnvironment(task: AgentTask): Record<string, string> {
    return {
      ...agentEnvironment(process.env, task.passEnvironment),
      [PROCESS_TAG_VARIABLE]: runProcessTag(this.processTag()),
    };
  }

  /**
   * What the setup and verify commands must not see (the checkout, its `.env`, the folder Switchboard
   * loaded `.env` from; the state folder) and read.
   */
  private commandSandbox(): CommandSandbox {
    const repository = this.repository;
    return {
      hiddenDirectories: [
        ...(repository === undefined ? [] : [repository.root]),
        this.context.stateDir,
        ...secretFolderList(),
      ],
      ...(repository === undefined ? {} : { gitDirectory: repository.commonDir }),
    };
  }

  private processTag(): string {
    return `${safeName(this.context.runId)}-${stepBranchName(this.context, this.step.name)}`;
  }

  private async setup(task: AgentTask): Promise<StepFailure | undefined> {
    if (task.setup === undefined) return undefined;
    const { failure } = await runSetup({
      command: task.setup.command,
      timeoutMs: task.setup.timeoutMs,
      worktree: this.current.worktree,
      baseCommit: this.current.base,
      env: this.commandEnvironment(task),
      sandbox: this.commandSandbox(),
      abortSignal: this.context.signal,
    });
    return failure === undefined ? undefined : { code: 'SETUP_FAILED', message: failure };
  }

  /** The agent's attempts, each judged and verified; a failed one is retried with what went wrong. */
  private async attempts(task: AgentTask): Promise<StepFailure | undefined> {
    const { limits } = task;
    const started = Date.now();
    const deadline = Math.min(
      started + limits.wallClockMs,
      this.context.deadline ?? Number.POSITIVE_INFINITY,
    );
    let feedback: string | undefined;
    let sessionId: string | undefined;
    let last: StepFailure = { code: 'AGENT_FAILED', message: 'no attempts left' };
    for (let attempt = 1; attempt <= limits.maxAttempts; attempt++) {
      const budget = limits.maxCostUsd - this.current.spentUsd;
      if (budget <= 0) {
        return {
          code: 'BUDGET_EXCEEDED',
          message: `the step has spent $${this.current.spentUsd.toFixed(4)} of its $${limits.maxCostUsd} cap`,
        };
      }
      const time = deadline - Date.now();
      if (time <= 0) return { code: 'TIMEOUT', message: 'the step reached its wall-clock limit' };
      const agentContext: AgentContext = {
        runId: this.context.runId,
        task,
        worktree: this.current.worktree,
        branch: this.current.branch,
        baseBranch: this.current.baseBranch ?? this.current.base,
        baseCommit: this.current.base,
        attempt,
      };
      if (feedback !== undefined) agentContext.feedback = feedback;
      writeContextFiles(agentContext);
      const spentBefore = this.current.spentUsd;
      const hold = await this.holdAttempt(task, attempt, budget, time);
      if ('code' in hold) return hold;
      let outcome;
      // The session's turns, tool calls and results, as events of the step.
      const session = sessionEvents(this.context);
      try {
        const invocation = this.invocation(task, agentContext, sessionId, hold.capUsd, time);
        invocation.onMessage = session.observe;
        await this.guided(invocation);
        outcome = await runAgentAttempt(invocation, this.options._internal?.runAgent);
        await hold.settle(attemptSpend(outcome));
      } finally {
        await hold.release();
      }
      await session.flushed();
      sessionId = outcome.sessionId ?? sessionId;
      const { childPid: _ended, ...rest } = this.current;
      this.notes = rest;
      await this.record({
        spentUsd: spentBefore + outcome.costUsd,
        ...(outcome.resultText === undefined || outcome.isError ? {} : { summary: outcome.resultText }),
      });
      await this.context.emit({
        type: 'agent-attempt',
        step: this.step.name,
        key: this.context.key,
        data: {
          attempt,
          status: outcome.status,
          costUsd: outcome.costUsd,
          turns: outcome.turns,
          denied: outcome.denied.map((denial) => `${denial.tool}: ${denial.reason}`),
        },
      });
      this.context.signal.throwIfAborted();
      await this.keepBranch();
      const verdict = await judgeAttempt(outcome, this.current.worktree, this.current.base);
      if (verdict.kind === 'final' || verdict.kind === 'api')
        return { code: verdict.code, message: verdict.message };
      if (verdict.kind === 'retry') {
        feedback = verdict.failure;
        last = { code: verdict.code, message: firstLine(verdict.failure) };
        continue;
      }
      const checked = await verifyChange({
        worktree: this.current.worktree,
        baseCommit: this.current.base,
        ...(task.verify === undefined ? {} : { command: task.verify }),
        timeoutMs: limits.verifyTimeoutMs,
        env: this.commandEnvironment(task),
        sandbox: this.commandSandbox(),
        abortSignal: this.context.signal,
      });
      if (checked.passed) return undefined;
      feedback = checked.failure ?? 'verify failed';
      last = { code: checked.code ?? 'VERIFY_FAILED', message: firstLine(feedback) };
    }
    return {
      code: last.code,
      message: `${last.message} (after ${limits.maxAttempts} attempt${limits.maxAttempts === 1 ? '' : 's'})`,
    };
  }

  /**
   * Where this step's agent attempts are held and recorded, tagged with the run (not the step: the
   * step's cost is its notes'); undefined when the engine gave no `agentBudget`.
   */
  private spending(): AgentSpending | undefined {
    const { context } = this;
    if (context.agentBudget === undefined) return undefined;
    return {
      ledger: context.ledger,
      rules: context.agentBudget.rules,
      callId: context.key,
      tags: { workflow_run: context.runId, workflow_agent_step: context.key },
      runTag: `workflow_agent_step=${context.key}`,
      since: context.agentBudget.since,
    };
  }

  /** Runs `action` against the step's spending, if any; a budget that refuses becomes the step's failure. */
  private async withinBudget(
    action: (spending: AgentSpending) => Promise<void>,
  ): Promise<StepFailure | undefined> {
    const spending = this.spending();
    if (spending === undefined) return undefined;
    try {
      await action(spending);
      return undefined;
    } catch (error) {
      if (!isSwitchboardError(error) || error.code !== 'BUDGET_EXCEEDED') throw error;
      return {
        code: 'BUDGET_EXCEEDED',
        message: `${error.message}${error.hint === undefined ? '' : `; ${error.hint}`}`,
      };
    }
  }

  /**
   * Records what an interrupted earlier attempt spent (the notes know, the ledger may not), then holds
   * this attempt's cost cap against the budgets.
   */
  /**
   * Guidance for the agent: what was sent before the attempt follows its prompt, and what comes while
   * it runs goes in as a user message of its session (`followUp`).
   */
  private async guided(invocation: AgentInvocation): Promise<void> {
    const take = this.context.takeGuidance;
    if (take === undefined) return;
    const before = await take(1);
    if (before.length > 0) invocation.prompt = `${invocation.prompt}\n\n${guidanceMessage(before)}`;
    invocation.followUp = async (turn) => {
      const guidance = await take(turn);
      return guidance.length === 0 ? undefined : guidanceMessage(guidance);
    };
  }

  private async holdAttempt(
    task: AgentTask,
    attempt: number,
    capUsd: number,
    timeoutMs: number,
  ): Promise<AgentAttemptHold | StepFailure> {
    let hold: AgentAttemptHold = {
      capUsd,
      lowered: false,
      warnings: [],
      settle: () => Promise.resolve(),
      release: () => Promise.resolve(),
    };
    const refused = await this.withinBudget(async (spending) => {
      await recordUnrecordedSpend(spending, this.current.spentUsd, attempt - 1, task.model);
      hold = await holdAgentAttempt(spending, { attempt, model: task.model, capUsd, timeoutMs });
    });
    return refused ?? hold;
  }

  private invocation(
    task: AgentTask,
    agentContext: AgentContext,
    sessionId: string | undefined,
    budget: number,
    time: number,
  ): AgentInvocation {
    const { worktree } = this.current;
    const spentBefore = this.current.spentUsd;
    const mcp = claudeMcpServers(this.context.mcpServers);
    const invocation: AgentInvocation = {
      cwd: worktree,
      prompt: attemptPrompt(agentContext, sessionId !== undefined),
      appendSystemPrompt: [
        `You are working on step ${this.step.name} of workflow ${this.context.workflow.name} in the git worktree ${worktree}. Only change files inside it. Do not commit, push or move the branch: the runner commits your change.`,
        task.instructions ?? '',
      ]
        .filter(Boolean)
        .join('\n'),
      allowedTools: [...task.tools, ...mcp.tools],
      deniedGitCommands: DENIED_GIT_COMMANDS,
      maxTurns: task.limits.maxTurns,
      maxCostUsd: budget,
      idleTimeoutMs: task.limits.idleTimeoutMs,
      wallClockMs: time,
      transcriptPath: join(
        this.context.stateDir,
        'workflows',
        'runs',
        safeName(this.context.runId),
        `${stepBranchName(this.context, this.step.name)}-attempt-${agentContext.attempt}.jsonl`,
      ),
      abortSignal: this.context.signal,
      processTag: runProcessTag(this.processTag()),
      passEnvironment: task.passEnvironment,
      // The checkout's `.env` and the state folder stay hidden, and git's folder is the one found here.
      ...this.commandSandbox(),
      onSpawn: (pid) => this.recordSoon({ childPid: pid }),
      onProgress: (progress) => {
        // The running cost reaches the notes, so an attempt killed midway still counts what it spent.
        // Every change is written (one small row update per answer): a kill -9 would lose a deferred one.
        const spentUsd = spentBefore + progress.costUsd;
        if (spentUsd !== this.current.spentUsd) this.recordSoon({ spentUsd });
      },
    };
    if (mcp.tools.length > 0) invocation.mcpServers = mcp.servers;
    if (sessionId !== undefined) invocation.resumeSessionId = sessionId;
    if (task.model !== undefined) invocation.model = task.model;
    if (this.options.connection !== undefined) invocation.connection = this.options.connection;
    return invocation;
  }

  /**
   * The agent may not commit, but a command that hides `git` from the policy could: its commits are
   * undone (their changes kept, staged) so that the runner's commit is the only one. A worktree moved
   * off its branch fails the step.
   */
  private async keepBranch(): Promise<void> {
    const { worktree, branch, base } = this.current;
    const head = await git(worktree, ['symbolic-ref', '-q', 'HEAD']);
    if (head.stdout.trim() !== `refs/heads/${branch}`) {
      throw new SwitchboardError(
        'AGENT_FAILED',
        `the agent moved the worktree ${worktree} off its branch ${branch}`,
      );
    }
    if (await headMoved(worktree, base)) {
      await gitOk(worktree, ['reset', '-q', '--soft', base], 'git reset');
      await this.context.emit({
        type: 'agent-commit-undone',
        step: this.step.name,
        key: this.context.key,
        data: { branch },
      });
    }
  }

  /** Merges the commit per `merge` and builds the step's output from it. */
  private async land(repository: RepositoryInfo, commit: string, mode: MergeMode): Promise<StepOutcome> {
    this.landing = true;
    const notes = this.current;
    const output: Record<string, unknown> = {
      branch: notes.branch,
      commit,
      base: notes.base,
      files_changed: await filesChanged(repository.root, notes.base, commit),
    };
    if (notes.summary !== undefined) output['summary'] = notes.summary;
    if (mode === 'pr') output['pull_request'] = await this.deliver(repository, commit);
    // A remote's effect point: the commit pushed as the step's branch.
    else if (notes.remote !== undefined) {
      const pushed = await pushBranch(repository, notes.remote, notes.branch, commit);
      if (pushed === 'pushed') await this.pushed(commit, notes.branch);
    }
    if (mode !== 'branch' && mode !== 'pr' && notes.baseBranch !== undefined) {
      const remote = notes.remote;
      const message = `Merge ${notes.branch}: ${this.step.name}\n\nswitchboard workflow run ${this.context.runId}`;
      const merged = await mergeQueue.run(`${remote ?? repository.commonDir}\0${notes.baseBranch}`, () =>
        remote !== undefined
          ? mergeIntoRemote({
              clone: repository,
              url: remote,
              baseBranch: notes.baseBranch as string,
              branch: notes.branch,
              commit,
              mode,
              message,
              abortSignal: this.context.signal,
            })
          : mergeIntoBase({
              repo: repository.root,
              commonDir: repository.commonDir,
              baseBranch: notes.baseBranch as string,
              branch: notes.branch,
              commit,
              mode,
              message: `Merge ${notes.branch}: ${this.step.name}\n\nswitchboard workflow run ${this.context.runId}`,
              abortSignal: this.context.signal,
            }),
      );
      if (merged.kind === 'conflict' || merged.kind === 'dirty') {
        const why =
          merged.kind === 'conflict'
            ? 'conflicts with'
            : `cannot land while ${merged.checkout} has uncommitted changes on`;
        return this.failed({
          code: merged.kind === 'conflict' ? 'MERGE_CONFLICT' : 'DIRTY_CHECKOUT',
          message: `the change ${why} ${notes.baseBranch}, which was left unmoved; the commit stays on branch ${notes.branch}`,
        });
      }
      if (merged.kind !== 'branch-left') output['merged_commit'] = merged.commit;
    }
    // The commit is on its branch: the worktree (and whatever setup put in it) is no longer needed.
    await removeWorktree(repository, notes.worktree, this.context.signal);
    const problem = this.step.output === undefined ? undefined : validateOutput(this.step.output, output);
    if (problem !== undefined) {
      return this.failed({
        code: 'SCHEMA',
        message: `step "${this.step.name}": its output does not match its output schema: ${problem}`,
      });
    }
    return { status: 'completed', output, costUsd: notes.spentUsd };
  }

  failed(failure: StepFailure): StepOutcome {
    return { status: 'failed', costUsd: this.notes?.spentUsd ?? 0, error: failure };
  }
}

/** Notes of an interrupted attempt, when they are a git step's. */
function readNotes(previous: Record<string, unknown> | undefined): GitStepNotes | undefined {
  if (previous === undefined) return undefined;
  const { repo, base, branch, worktree } = previous;
  if (
    typeof repo !== 'string' ||
    typeof base !== 'string' ||
    typeof branch !== 'string' ||
    typeof worktree !== 'string'
  ) {
    return undefined;
  }
  const notes: GitStepNotes = {
    repo,
    base,
    branch,
    worktree,
    spentUsd: typeof previous['spentUsd'] === 'number' ? previous['spentUsd'] : 0,
  };
  if (typeof previous['baseBranch'] === 'string') notes.baseBranch = previous['baseBranch'];
  if (typeof previous['summary'] === 'string') notes.summary = previous['summary'];
  if (typeof previous['childPid'] === 'number') notes.childPid = previous['childPid'];
  return notes;
}

/** `<step>-<visit>[-<item>]`: the item is the fourth part of the key (`<run>/<step>/<iteration>/<item>`). */
function stepBranchName(context: StepContext, step: string): string {
  const item = context.key.split('/')[3];
  return `${safeName(step)}-${context.visit}${item === undefined ? '' : `-${safeName(item)}`}`;
}

/** A name git accepts in a branch and a file system in a folder name. */
function safeName(name: string): string {
  const cleaned = name
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/\.{2,}/g, '.')
    .replace(/^[.-]+|[.-]+$/g, '');
  return cleaned === '' ? 'step' : cleaned.replace(/\.lock$/, '-lock');
}

async function resolveCommit(repo: string, name: string): Promise<string> {
  const result = await git(repo, ['rev-parse', '--verify', '--quiet', `${name}^{commit}`]);
  if (result.exitCode !== 0) {
    throw new SwitchboardError('UNKNOWN_BASE', `there is no branch or commit "${name}" in ${repo}`, {
      hint: 'set git.base to an existing local branch or commit',
    });
  }
  return result.stdout.trim();
}

function firstLine(text: string): string {
  return text.trim().split('\n', 1)[0] ?? '';
}
