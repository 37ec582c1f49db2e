import { randomUUID } from 'node:crypto';
import { appendFileSync, lstatSync, mkdirSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import type {
  CanUseTool,
  HookCallback,
  Options,
  SDKMessage,
  SpawnedProcess,
  SpawnOptions,
} from '@anthropic-ai/claude-agent-sdk';
import { isSwitchboardError, SwitchboardError, type ErrorCode } from '../core/errors.js';
import { loadAgentSdk } from '../providers/claude-code/agent-sdk.js';
import type { ForwardedUsage } from '../providers/claude-code/key-forwarder.js';
import { startConfinement, type Confinement } from '../providers/claude-code/confinement.js';
import { claudeCodeDenyRules, fileRefusal } from '../confinement/file-access.js';
import { realOrResolved } from './paths.js';
import { resumedSessionCost } from './session-cost.js';
import { claudeConfigDir } from '../core/claude-config-dir.js';
import { PROCESS_TAG_VARIABLE } from './processes.js';
import { costOf } from '../core/prices.js';
import { redactDeep, redactSecrets, registerSecret } from '../core/secrets.js';
import { CallWatch } from '../providers/claude-code/call-session.js';
import { resolveClaudeExecutable } from '../providers/claude-code/executable.js';
import { limitMcpTools } from '../providers/claude-code/mcp-tools.js';
import { modelTurnCounter, streamingPrompt } from '../providers/claude-code/streaming-prompt.js';
import {
  ClaudeProcess,
  waitForProcessesGone,
  type ProcessTag,
} from '../providers/claude-code/process-group.js';
import { mapClaudeResult, type ClaudeResultMessage } from '../providers/claude-code/result-mapping.js';

export interface AgentInvocation {
  /** The worktree. Claude Code runs here; every write outside it is denied. */
  cwd: string;
  prompt: string;
  /** Appended to Claude Code's system prompt. On a resumed session Claude Code keeps the one it recorded first. */
  appendSystemPrompt?: string;
  /**
   * Tools the agent may use: 'Read', 'Write', 'Edit', 'Glob', 'Grep', and Bash patterns like
   * 'Bash(npm test:*)' or 'Bash(git diff:*)'. Everything else is denied. File tools only reach paths
   * inside `cwd` (links followed); a Bash command must match a pattern as a whole, so `git diff; rm x`
   * and command substitution are denied. `Bash` alone allows any command.
   */
  allowedTools: readonly string[];
  /** Folders outside `cwd` that Read, Glob and Grep may also read (absolute paths). @default none */
  readableDirectories?: readonly string[];
  /**
   * Git subcommands the agent may not run through Bash, whatever `allowedTools` allows (`['commit',
   * 'push']` when the runner, not the agent, makes the commit). See `ToolPolicyOptions.deniedGitCommands`.
   * @default none
   */
  deniedGitCommands?: readonly string[];
  /**
   * MCP servers in Claude Code's config shape (`{type: 'stdio', command, args, env}` or `{type: 'http',
   * url, headers}`); no other server loads (strict MCP config, no settings). Their tools need an
   * `allowedTools` entry: `mcp__server` for all of them, or `mcp__server__tool` each, and then the model
   * is offered only those (see `limitMcpTools`). @default none
   */
  mcpServers?: Record<string, unknown>;
  maxTurns?: number;
  /** Stop the agent once its cost reaches this (USD). */
  maxCostUsd?: number;
  /** Kill the agent when no message arrives for this long (ms). @default 300_000 */
  idleTimeoutMs?: number;
  /** Kill the agent after this long in all (ms). @default 1_800_000 */
  wallClockMs?: number;
  /** Every SDK message is appended here as one JSON line (no secrets: never the API key or env). */
  transcriptPath: string;
  /** Continue an earlier session (for retries that feed back a failure). */
  resumeSessionId?: string;
  model?: string;
  /** Where Claude Code connects and with what key: baseUrl/apiKey like the provider's options, plus configDir and executable path. */
  connection?: { baseUrl?: string; apiKey?: string; configDir?: string; executable?: string };
  abortSignal?: AbortSignal;
  /**
   * Set as `SWITCHBOARD_AGENT_TAG` in the agent's environment, which its tools inherit, so that
   * `killAgentProcesses(pid, processTag)` also finds tool processes that were orphaned. @default a random id
   */
  processTag?: string;
  /**
   * Credentials in the environment and `.env` values are not passed to the agent (its tools run what the
   * model chooses; Claude Code's API key stays with the run's key forwarder); name
   * here the ones it needs, e.g. `['NPM_TOKEN']`.
   */
  passEnvironment?: readonly string[];
  /** Called once the Claude Code process is spawned, with its pid (it leads its own process group), so a runner can record it and `cancel` can kill the whole tree from another process. */
  onSpawn?: (pid: number) => void;
  /** Called with the running cost after each message that carries usage. */
  onProgress?: (progress: { costUsd: number; turns: number; lastTool?: string }) => void;
  /** Called with every message of the session, in order (`sessionObserver` turns them into events). */
  onMessage?: (message: SDKMessage) => void;
  /**
   * Words to send the agent while it runs (a person's guidance, see `ClaudeCallOptions.followUp`),
   * asked every half second with the number of the model turn they would reach. @default none
   */
  followUp?: (turn: number) => Promise<string | undefined>;
  /**
   * Called with the usage of each API response as it passes the run's key forwarder (see
   * `startKeyForwarder`): every request Claude Code makes, side requests and subagents included. Not
   * called when Claude Code uses its own login, Bedrock or Vertex (no forwarder then).
   */
  onUsage?: (usage: ForwardedUsage) => void;
  /**
   * Folders the agent's sandboxed commands may not read even where they lie above the worktree (the
   * repository's own checkout with its `.env`, Switchboard's state folder). Reads inside `cwd`, the git
   * folder it needs and `readableDirectories` stay allowed. @default none beyond the sandbox's own list
   */
  hiddenDirectories?: readonly string[] | undefined;
  /**
   * The repository's git folder, which the agent's sandboxed commands may read (git needs it). Runners
   * pass the one they found, so that a `.git` file rewritten by an earlier attempt cannot widen it.
   */
  gitDirectory?: string | undefined;
}

export type AgentStatus =
  | 'success'
  | 'agent_error'
  | 'max_turns'
  | 'budget_exceeded'
  | 'idle_timeout'
  | 'timeout'
  | 'rate_limited'
  | 'api_error'
  | 'aborted'
  | 'spawn_failed';

export interface AgentOutcome {
  status: AgentStatus;
  /** The result message's subtype and is_error as Claude Code sent them (undefined when no result came). */
  subtype?: string;
  isError: boolean;
  resultText?: string;
  sessionId?: string;
  /** Claude Code's own total when a result came; otherwise Switchboard's estimate from the messages. */
  costUsd: number;
  turns: number;
  durationMs: number;
  /** Tool calls that were denied, with the reason (e.g. a Write outside the worktree). */
  denied: { tool: string; input: unknown; reason: string }[];
  /** Whether the agent's Bash commands ran in Claude Code's sandbox, and why not (see `sandboxSettings`). */
  sandbox?: {
    enabled: boolean;
    reason?: string;
    /** Credentials its tools could read from Claude Code's environment (see `Confinement.exposedCredentials`). */
    exposedCredentials?: string[];
  };
  error?: string;
  /** For rate_limited: when to try again, if Claude Code said. */
  retryAfterMs?: number;
  /**
   * For `api_error` and `rate_limited`: what the API failure was (`AUTH`, `RATE_LIMITED`, `OVERLOADED`,
   * `PROVIDER_UNAVAILABLE`, `PROVIDER_ERROR`, `INVALID_INPUT`), as the Claude Code provider maps it. Such a
   * failure says nothing about the agent's work, so a runner must not retry it as an agent failure.
   */
  errorCode?: ErrorCode;
}

export type AgentDenial = AgentOutcome['denied'][number];

const DEFAULT_IDLE_TIMEOUT_MS = 300_000;

/** Codes that name a failure of the API or its access, whatever result subtype carried them. */
const INFRASTRUCTURE_CODES: ReadonlySet<ErrorCode> = new Set(['AUTH', 'OVERLOADED', 'PROVIDER_UNAVAILABLE']);

const DEFAULT_WALL_CLOCK_MS = 1_800_000;
/** How long Claude Code may take to report its own budget stop once our estimate has crossed the cap. */
const BUDGET_GRACE_MS = 5_000;

const WRITE_TOOLS: Readonly<Record<string, string>> = {
  Write: 'file_path',
  Edit: 'file_path',
  MultiEdit: 'file_path',
  NotebookEdit: 'notebook_path',
};
const READ_TOOLS: Readonly<Record<string, string>> = {
  Read: 'file_path',
  Glob: 'path',
  Grep: 'path',
  NotebookRead: 'notebook_path',
};

/**
 * Runs Claude Code as an autonomous agent in `cwd` with hard limits, and says honestly how it ended.
 *
 * Permissions, as measured against Claude Code 2.1.330 headless: a bare name in the SDK's `allowedTools`
 * approves the tool before `canUseTool` is consulted (a Write outside the working directory then goes
 * through), and read-only Bash commands and reads inside `cwd` are approved without asking. So no tool is
 * pre-approved: a PreToolUse hook, which sees every call, denies what the policy refuses, and `canUseTool`
 * approves the rest when Claude Code asks. Claude Code's own `blockWritesOutsideWorkingDirectories`
 * setting is on as well.
 *
 * Never throws for what happens during the run; invalid options throw `INVALID_INPUT`.
 */
export async function runAgent(invocation: AgentInvocation): Promise<AgentOutcome> {
  const {
    cwd,
    prompt,
    allowedTools,
    transcriptPath,
    connection = {},
    idleTimeoutMs = DEFAULT_IDLE_TIMEOUT_MS,
    wallClockMs = DEFAULT_WALL_CLOCK_MS,
  } = invocation;
  validateInvocation(invocation, idleTimeoutMs, wallClockMs);
  const policy = createToolPolicy({
    cwd,
    allowedTools,
    readableDirectories: invocation.readableDirectories ?? [],
    deniedGitCommands: invocation.deniedGitCommands ?? [],
  });
  const session = new AgentSession(invocation, policy, { idleTimeoutMs, wallClockMs });

  let executable: string;
  try {
    executable = resolveClaudeExecutable(connection.executable ?? process.env['SWITCHBOARD_CLAUDE_PATH']);
  } catch (error) {
    session.stop();
    return session.outcome('spawn_failed', { error: errorText(error) });
  }
  mkdirSync(dirname(resolve(transcriptPath)), { recursive: true });
  registerSecret(connection.apiKey);

  let confinement: Confinement;
  try {
    confinement = await session.confine();
  } catch (error) {
    session.stop();
    return session.outcome('spawn_failed', { error: `the key forwarder did not start: ${errorText(error)}` });
  }
  let result: ClaudeResultMessage | undefined;
  let streamError: unknown;
  // Loaded here: a program that never runs an agent never loads the Agent SDK.
  const { query } = await loadAgentSdk();
  const options = session.queryOptions(executable, confinement);
  let messages: ReturnType<typeof query> | undefined;
  // Ends the streaming input of a run with `followUp`, so Claude Code's stdin closes and it exits.
  const ended = new AbortController();
  const followUp = invocation.followUp;
  const turns = modelTurnCounter();
  try {
    await session.limitMcpTools(options);
    messages = query({
      prompt:
        followUp === undefined
          ? prompt
          : streamingPrompt(prompt, () => followUp(turns.count() + 1), ended.signal),
      options,
    });
    for await (const message of messages) {
      turns.see(message);
      result = session.read(message);
      if (result !== undefined) break;
    }
  } catch (error) {
    // The SDK also throws after it has handed over an error result; the result says more.
    streamError = error;
  } finally {
    ended.abort();
    session.stop();
    await messages?.return(undefined).catch(() => undefined);
    await session.finishProcess();
    await confinement.close();
  }
  return session.finalOutcome(result, streamError);
}

/** One agent run's state: its watchdogs, its child process, what it spent, what was denied. */
class AgentSession {
  private readonly started = performance.now();
  private readonly invocation: AgentInvocation;
  private readonly policy: ToolPolicy;
  private readonly wallClockMs: number;
  private readonly denied: AgentDenial[] = [];
  private readonly deniedIds = new Set<string>();
  private readonly abortController = new AbortController();
  private readonly tag: ProcessTag;
  private readonly watch: CallWatch;
  private readonly messageUsage = new Map<string, number>();
  private readonly permissionReasons = new Map<string, string>();
  private child: ClaudeProcess | undefined;
  private sessionId: string | undefined;
  private costEstimate = 0;
  /** What the resumed session had spent before this process (see `resumedSessionCost`). */
  private resumedCostUsd = 0;
  private lastTool: string | undefined;
  private budgetReached = false;
  private budgetTimer: NodeJS.Timeout | undefined;
  private rateLimitResetsAt: number | undefined;
  private sandbox: AgentOutcome['sandbox'];

  constructor(
    invocation: AgentInvocation,
    policy: ToolPolicy,
    limits: { idleTimeoutMs: number; wallClockMs: number },
  ) {
    this.invocation = invocation;
    this.policy = policy;
    this.wallClockMs = limits.wallClockMs;
    this.tag = { name: PROCESS_TAG_VARIABLE, value: invocation.processTag ?? randomUUID() };
    this.watch = new CallWatch({
      timeoutMs: limits.wallClockMs,
      idleTimeoutMs: limits.idleTimeoutMs,
      abortSignal: invocation.abortSignal,
      coversStartup: true,
      onFail: () => {
        // Kill first: the SDK's abort waits two seconds and then signals only the CLI, not its tools.
        this.child?.killAll(this.tag);
        this.abortController.abort();
      },
    });
  }

  /** The outcome so far with `status`; it quotes the agent and its tools, so it is redacted. */
  outcome(status: AgentStatus, fields: Partial<AgentOutcome> = {}): AgentOutcome {
    return redactDeep({
      status,
      isError: status !== 'success',
      costUsd: 0,
      turns: 0,
      durationMs: Math.round(performance.now() - this.started),
      denied: this.denied,
      ...(this.sandbox === undefined ? {} : { sandbox: this.sandbox }),
      ...fields,
    });
  }

  stop(): void {
    this.watch.stop();
    if (this.budgetTimer !== undefined) clearTimeout(this.budgetTimer);
  }

  /** Waits for the process group to end; kills it (and whatever its tools left running) if it lingers. */
  async finishProcess(): Promise<void> {
    const { child } = this;
    if (child === undefined) return;
    const killed = this.watch.failure !== undefined;
    const victims = killed ? child.killAll(this.tag) : [];
    await child.waitForExit(killed ? 2_000 : 5_000);
    // Commands the agent left running in the background outlive the CLI; an agent run leaves nothing behind.
    victims.push(...child.killAll(this.tag));
    await waitForProcessesGone(victims, 2_000);
  }

  /**
   * The run's key forwarder, environment, configuration folder and sandbox (see `startConfinement`).
   * Without a configuration folder of its own the run uses Claude Code's, where a later run may resume it.
   */
  async confine(): Promise<Confinement> {
    const { invocation } = this;
    const confinement = await startConfinement({
      cwd: invocation.cwd,
      baseUrl: invocation.connection?.baseUrl,
      apiKey: invocation.connection?.apiKey,
      configDir: invocation.connection?.configDir,
      sharedConfigDir: true,
      extraEnv: { [PROCESS_TAG_VARIABLE]: this.tag.value },
      passEnvironment: invocation.passEnvironment,
      readableDirectories: invocation.readableDirectories,
      hiddenDirectories: invocation.hiddenDirectories,
      gitDirectory: invocation.gitDirectory,
      onUsage: invocation.onUsage,
      stdioMcpServers: hasStdioServer(invocation.mcpServers),
    });
    const { exposedCredentials } = confinement;
    this.sandbox = {
      ...confinement.sandbox,
      ...(exposedCredentials.length === 0 ? {} : { exposedCredentials }),
    };
    return confinement;
  }

  /** The SDK options: nothing pre-approved, the policy's hook and callback, strict MCP, the process in its group. */
  queryOptions(executable: string, confinement: Confinement): Options {
    const { invocation, policy } = this;
    const { guard, canUseTool } = this.permissionHandlers();
    const options: Options = {
      cwd: invocation.cwd,
      pathToClaudeCodeExecutable: executable,
      env: confinement.env,
      abortController: this.abortController,
      tools: policy.builtinTools,
      // Nothing is pre-approved: see `runAgent`.
      allowedTools: [],
      canUseTool,
      hooks: { PreToolUse: [{ hooks: [guard], onFailure: 'block' }] },
      permissionMode: 'default',
      settingSources: [],
      settings: {
        permissions: {
          blockWritesOutsideWorkingDirectories: true,
          // Claude Code's own rules as a second layer behind the hook (they see `git commit` as written),
          // and the deny list's, which its Grep and Glob honour in a search of the whole worktree.
          deny: [
            ...policy.deniedRules,
            ...claudeCodeDenyRules(invocation.cwd, invocation.hiddenDirectories ?? []),
          ],
        },
        ...confinement.settings,
      },
      mcpServers: (invocation.mcpServers ?? {}) as NonNullable<Options['mcpServers']>,
      strictMcpConfig: true,
      persistSession: true,
      systemPrompt: {
        type: 'preset',
        preset: 'claude_code',
        ...(invocation.appendSystemPrompt === undefined ? {} : { append: invocation.appendSystemPrompt }),
      },
      spawnClaudeCodeProcess: (spawnOptions) => this.spawn(spawnOptions, confinement),
    };
    if (invocation.model !== undefined) options.model = invocation.model;
    if (invocation.maxTurns !== undefined) options.maxTurns = invocation.maxTurns;
    if (invocation.resumeSessionId !== undefined) {
      options.resume = invocation.resumeSessionId;
      this.resumedCostUsd = resumedSessionCost(claudeConfigDir(confinement.env), invocation.resumeSessionId);
    }
    // Claude Code's own cap check leaves a resumed session's earlier spend out: the cap is this attempt's.
    if (invocation.maxCostUsd !== undefined) options.maxBudgetUsd = invocation.maxCostUsd;
    return options;
  }

  /**
   * Leaves the MCP tools the invocation does not allow out of Claude Code's tool list. A server left out
   * (no tool of it allowed, or its tools could not be listed) gets a line in the transcript.
   */
  async limitMcpTools(options: Options): Promise<void> {
    if (Object.keys(options.mcpServers ?? {}).length === 0) return;
    const limits = await limitMcpTools(options, this.invocation.allowedTools, this.abortController.signal);
    for (const { server, reason } of limits.removed) {
      this.note({ type: 'switchboard', subtype: 'mcp_server_removed', server, reason });
    }
  }

  /** A line of Switchboard's own in the transcript. */
  private note(line: Record<string, unknown>): void {
    appendFileSync(this.invocation.transcriptPath, `${redactSecrets(JSON.stringify(line))}\n`);
  }

  private spawn(spawnOptions: SpawnOptions, confinement: Confinement): SpawnedProcess {
    // The process itself starts in its mount namespace (see `processJail`): no tool race reaches past it.
    const spawned = new ClaudeProcess(confinement.jail(spawnOptions));
    this.child = spawned;
    spawned.child.stdout.on('data', () => this.watch.touch());
    if (spawned.pid !== undefined) {
      try {
        this.invocation.onSpawn?.(spawned.pid);
      } catch {
        // A failing callback must not leave the agent without its watchdogs.
      }
    }
    return spawned.child;
  }

  /** A PreToolUse hook, which sees every call, and the permission callback, both asking the policy. */
  private permissionHandlers(): { guard: HookCallback; canUseTool: CanUseTool } {
    const refuse = (toolUseId: string | undefined, tool: string, input: unknown): string | undefined => {
      const reason = this.budgetReached
        ? `the cost cap of $${this.invocation.maxCostUsd} is reached`
        : this.policy.check(tool, input);
      if (reason !== undefined) this.recordDenial(toolUseId, { tool, input, reason });
      return reason;
    };
    const guard = preToolUseGuard(refuse);
    const canUseTool: CanUseTool = async (tool, input, { toolUseID }) => {
      const reason = refuse(toolUseID, tool, input);
      if (reason === undefined) return { behavior: 'allow', updatedInput: input };
      return { behavior: 'deny', message: reason };
    };
    return { guard, canUseTool };
  }

  private recordDenial(id: string | undefined, denial: AgentDenial): void {
    if (id !== undefined) {
      if (this.deniedIds.has(id)) return;
      this.deniedIds.add(id);
    }
    this.denied.push(denial);
  }

  /** Takes one SDK message: transcript, session id, denials, running cost; returns the result message when it comes. */
  read(message: SDKMessage): ClaudeResultMessage | undefined {
    this.watch.touch();
    // Tool output quotes files and environments: no known secret reaches the transcript. Synchronous on
    // purpose: a crash of this process keeps every line written before it.
    appendFileSync(this.invocation.transcriptPath, `${redactSecrets(JSON.stringify(message))}\n`);
    if ('session_id' in message && typeof message.session_id === 'string')
      this.sessionId ??= message.session_id;
    if (message.type === 'system' && message.subtype === 'init') this.sessionId = message.session_id;
    if (message.type === 'system' && message.subtype === 'permission_denied') {
      const reason = message.decision_reason ?? (message as { message?: string }).message;
      if (reason !== undefined) this.permissionReasons.set(message.tool_use_id, reason);
    }
    if (message.type === 'rate_limit_event' && message.rate_limit_info.status === 'rejected') {
      this.rateLimitResetsAt = message.rate_limit_info.resetsAt;
    }
    if (message.type === 'assistant' && message.parent_tool_use_id === null) this.countUsage(message);
    try {
      this.invocation.onMessage?.(message);
    } catch {
      // The caller's bookkeeping must not end the run.
    }
    return message.type === 'result' ? (message as unknown as ClaudeResultMessage) : undefined;
  }

  private countUsage(message: Extract<SDKMessage, { type: 'assistant' }>): void {
    const body = message.message as unknown as {
      id?: string;
      model?: string;
      usage?: Record<string, unknown>;
      content?: { type?: string; name?: string }[];
    };
    for (const block of body.content ?? []) {
      if (block.type === 'tool_use' && block.name !== undefined) this.lastTool = block.name;
    }
    if (body.usage === undefined) return;
    this.messageUsage.set(
      body.id ?? message.uuid,
      usageCost(body.model ?? this.invocation.model ?? '', body.usage),
    );
    this.costEstimate = [...this.messageUsage.values()].reduce((sum, cost) => sum + cost, 0);
    this.progress(this.messageUsage.size);
    const cap = this.invocation.maxCostUsd;
    if (cap !== undefined && this.costEstimate >= cap && !this.budgetReached) {
      // Claude Code stops itself after this response (maxBudgetUsd); kill it if it does not.
      this.budgetReached = true;
      this.budgetTimer = setTimeout(
        () =>
          this.watch.fail(
            new SwitchboardError(
              'BUDGET_EXCEEDED',
              `the agent reached its cost cap of $${cap} (about $${this.costEstimate.toFixed(4)} spent)`,
            ),
          ),
        BUDGET_GRACE_MS,
      );
    }
  }

  private progress(turns: number): void {
    try {
      this.invocation.onProgress?.({
        costUsd: this.costEstimate,
        turns,
        ...(this.lastTool === undefined ? {} : { lastTool: this.lastTool }),
      });
    } catch {
      // The caller's bookkeeping must not end the run.
    }
  }

  /** How the run ended, from the result message (if one came), the watchdogs and the stream's error. */
  finalOutcome(result: ClaudeResultMessage | undefined, streamError: unknown): AgentOutcome {
    for (const entry of result?.permission_denials ?? []) {
      this.recordDenial(entry.tool_use_id, {
        tool: entry.tool_name,
        input: entry.tool_input,
        reason: this.permissionReasons.get(entry.tool_use_id) ?? 'denied by Claude Code',
      });
    }
    const base: Partial<AgentOutcome> = {
      // A resumed session's total includes its earlier processes' spend, already counted by their attempts.
      // Never below what this process's own answers cost at Switchboard's prices.
      costUsd:
        typeof result?.total_cost_usd === 'number'
          ? this.resumedCostUsd > 0
            ? Math.max(result.total_cost_usd - this.resumedCostUsd, this.costEstimate)
            : result.total_cost_usd
          : this.costEstimate,
      turns: result?.num_turns ?? this.messageUsage.size,
      ...(this.sessionId === undefined ? {} : { sessionId: result?.session_id ?? this.sessionId }),
    };
    if (result !== undefined) {
      base.subtype = result.subtype;
      base.isError = result.is_error;
      if (result.result !== undefined) base.resultText = result.result;
    }
    const failure = this.watch.failure;
    if (failure !== undefined) {
      const status: AgentStatus =
        failure.code === 'ABORTED'
          ? 'aborted'
          : failure.code === 'IDLE_TIMEOUT'
            ? 'idle_timeout'
            : failure.code === 'BUDGET_EXCEEDED'
              ? 'budget_exceeded'
              : 'timeout';
      const message =
        failure.code === 'TIMEOUT'
          ? `the agent did not finish within ${this.wallClockMs} ms`
          : failure.message;
      return this.outcome(status, { ...base, isError: true, error: message });
    }
    if (result === undefined) {
      if (this.child?.pid === undefined)
        return this.outcome('spawn_failed', { ...base, error: errorText(streamError) });
      const stderr = lastLines(this.child.stderr);
      return this.outcome('agent_error', {
        ...base,
        isError: true,
        error: `Claude Code ended without a result${streamError === undefined ? '' : `: ${errorText(streamError)}`}${stderr === '' ? '' : ` (stderr: ${stderr})`}`,
      });
    }
    return this.resultOutcome(result, base);
  }

  /** The outcome a result message stands for: success, a limit, or an API or agent failure. */
  private resultOutcome(result: ClaudeResultMessage, base: Partial<AgentOutcome>): AgentOutcome {
    const { invocation } = this;
    if (result.subtype === 'error_max_turns') {
      return this.outcome('max_turns', {
        ...base,
        error: `the agent stopped at its turn limit (${invocation.maxTurns})`,
      });
    }
    if (result.subtype === 'error_max_budget_usd' || this.budgetReached) {
      return this.outcome('budget_exceeded', {
        ...base,
        isError: true,
        error: `the agent stopped at its cost cap of $${invocation.maxCostUsd} ($${(base.costUsd ?? 0).toFixed(4)} spent)`,
      });
    }
    if (result.subtype === 'success' && !result.is_error) return this.outcome('success', base);

    const mapped = mapClaudeResult(result, {
      spec: 'claude:agent',
      modelRequested: invocation.model ?? 'default',
      durationMs: Math.round(performance.now() - this.started),
      schemaRequested: false,
      ...(this.rateLimitResetsAt === undefined ? {} : { rateLimitResetsAt: this.rateLimitResetsAt }),
    });
    const error = isSwitchboardError(mapped)
      ? mapped
      : new SwitchboardError('PROVIDER_ERROR', `Claude Code failed (${result.subtype})`);
    if (error.code === 'RATE_LIMITED') {
      return this.outcome('rate_limited', {
        ...base,
        isError: true,
        error: error.message,
        errorCode: error.code,
        ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
      });
    }
    // `is_error` with `subtype: success` is how Claude Code reports a failed API request.
    const apiFailure =
      INFRASTRUCTURE_CODES.has(error.code) || result.subtype === 'success' || result.api_error_status != null;
    if (apiFailure) {
      return this.outcome('api_error', {
        ...base,
        isError: true,
        error: error.message,
        errorCode: error.code,
      });
    }
    return this.outcome('agent_error', { ...base, isError: true, error: error.message });
  }
}

function validateInvocation(invocation: AgentInvocation, idleTimeoutMs: number, wallClockMs: number): void {
  const fail = (message: string, hint?: string): never => {
    throw new SwitchboardError('INVALID_INPUT', message, hint === undefined ? {} : { hint });
  };
  if (typeof invocation.prompt !== 'string' || invocation.prompt.trim() === '') fail('the prompt is empty');
  let isDirectory = false;
  try {
    isDirectory = statSync(invocation.cwd).isDirectory();
  } catch {
    // Reported below.
  }
  if (!isDirectory) fail(`Expected "cwd" to be an existing directory, got ${invocation.cwd}`);
  if (typeof invocation.transcriptPath !== 'string' || invocation.transcriptPath === '') {
    fail('Expected "transcriptPath" to be a file path');
  }
  if (!Array.isArray(invocation.allowedTools)) fail('Expected "allowedTools" to be a list of tool names');
  for (const [name, value] of [
    ['idleTimeoutMs', idleTimeoutMs],
    ['wallClockMs', wallClockMs],
  ] as const) {
    if (!(typeof value === 'number' && value > 0 && value <= 2_147_483_647)) {
      fail(`Expected "${name}" to be a positive number of milliseconds`);
    }
  }
  if (
    invocation.maxTurns !== undefined &&
    !(Number.isInteger(invocation.maxTurns) && invocation.maxTurns > 0)
  ) {
    fail('Expected "maxTurns" to be a positive integer');
  }
  if (
    invocation.maxCostUsd !== undefined &&
    !(typeof invocation.maxCostUsd === 'number' && invocation.maxCostUsd > 0)
  ) {
    fail('Expected "maxCostUsd" to be a positive number of US dollars');
  }
  for (const directory of invocation.readableDirectories ?? []) {
    if (!isAbsolute(directory))
      fail(`Expected "readableDirectories" to hold absolute paths, got ${directory}`);
  }
}

/** Cost of one API response from the usage Claude Code reports with it (its output count may be low). */
function usageCost(model: string, usage: Record<string, unknown>): number {
  const number = (key: string): number => (typeof usage[key] === 'number' ? (usage[key] as number) : 0);
  return (
    costOf(model, {
      inputTokens: number('input_tokens'),
      outputTokens: number('output_tokens'),
      cacheReadTokens: number('cache_read_input_tokens'),
      cacheWriteTokens: number('cache_creation_input_tokens'),
    }) ?? 0
  );
}

/** Whether a server of the map is started as a program (no `type`, or `stdio`) rather than reached by URL. */
export function hasStdioServer(servers: Record<string, unknown> | undefined): boolean {
  return Object.values(servers ?? {}).some((server) => {
    const type = (server as { type?: unknown } | null)?.type;
    return type === undefined || type === 'stdio';
  });
}

function errorText(error: unknown): string {
  if (error === undefined) return 'unknown error';
  return error instanceof Error ? error.message : String(error);
}

function lastLines(text: string): string {
  return text.trim().split('\n').slice(-3).join(' | ').slice(-500);
}

// ---------------------------------------------------------------------------------------------------
// Tool policy

export interface ToolPolicyOptions {
  cwd: string;
  allowedTools: readonly string[];
  readableDirectories?: readonly string[];
  /**
   * Git subcommands refused in any Bash command, even under a bare `Bash`: wherever `git` (or a path
   * ending in `/git`) appears among the command's words, inside quotes, `sh -c` or `$(…)` included, its
   * global options (`-C dir`, `-c key=value`, `--git-dir=…`) are skipped and the subcommand is checked.
   * It is a guard against an agent's habit, not a sandbox: a command that builds the word `git` at run
   * time gets past it, so a runner that relies on it also checks the branch afterwards.
   */
  deniedGitCommands?: readonly string[];
  /**
   * Folders no file tool may read or write besides what the one deny list names (`fileRefusal`: `.env`
   * files, git's folder, credential files, `.switchboard` at any depth): a state folder set elsewhere.
   */
  hiddenPaths?: readonly string[];
}

export interface ToolPolicy {
  /** Built-in tool names to offer the model (the `tools` option). */
  readonly builtinTools: string[];
  /** Claude Code permission rules for the denied git subcommands (`Bash(git commit:*)`). */
  readonly deniedRules: string[];
  /** Why a call is refused, or undefined when it is allowed. */
  check(tool: string, input: unknown): string | undefined;
}

/**
 * A PreToolUse hook that denies, with its reason, every tool use `refuse` names one for: agent runs
 * and the claude provider's calls with tools both guard their tools this way.
 */
export function preToolUseGuard(
  refuse: (toolUseId: string | undefined, tool: string, input: unknown) => string | undefined,
): HookCallback {
  return async (input, toolUseId) => {
    if (input.hook_event_name !== 'PreToolUse') return {};
    const reason = refuse(input.tool_use_id ?? toolUseId, input.tool_name, input.tool_input);
    if (reason === undefined) return {};
    return {
      hookSpecificOutput: {
        hookEventName: 'PreToolUse',
        permissionDecision: 'deny',
        permissionDecisionReason: reason,
      },
    };
  };
}

/**
 * Decides each tool call: the tool must be listed, file tools must stay inside `cwd` (and reads may also
 * reach `readableDirectories`) once `..`, `~` and symbolic links are resolved, and a Bash command must
 * match an allowed pattern as a whole.
 */
export function createToolPolicy({
  cwd,
  allowedTools,
  readableDirectories = [],
  deniedGitCommands = [],
  hiddenPaths = [],
}: ToolPolicyOptions): ToolPolicy {
  const root = realpathSync(cwd);
  const hidden = hiddenPaths.map((path) => realOrResolved(path));
  const readRoots = [root, ...readableDirectories.map((directory) => realOrResolved(directory))];
  /** checkPath, then the one deny list (`fileRefusal`): both readings of the path must pass it. */
  const checkVisible = (
    path: string,
    roots: readonly string[],
    access: 'read' | 'write',
    protectGit: boolean,
  ): string | undefined => {
    const refused = checkPath(path, root, roots, access, protectGit);
    if (refused !== undefined) return refused;
    const absolute = resolveHome(path, root);
    for (const target of [walkPath(resolve(absolute)), walkPath(absolute)]) {
      if (target === undefined) continue;
      // Names below the folder it lies in are checked: a worktree under `.switchboard/` is not refused whole.
      const base = roots.find((directory) => isInside(target, directory));
      const denied = fileRefusal(target, { root: base, hidden, named: path });
      if (denied !== undefined) return denied;
    }
    return undefined;
  };
  const names = new Set<string>();
  const bashPatterns: string[] = [];
  for (const entry of allowedTools) {
    const bash = /^Bash\((.*)\)$/s.exec(entry.trim());
    if (bash !== null) {
      bashPatterns.push((bash[1] ?? '').trim());
      names.add('Bash');
    } else if (entry.trim() === 'Bash') {
      bashPatterns.push('*');
      names.add('Bash');
    } else {
      names.add(entry.trim());
    }
  }
  const builtinTools = [...names].filter((name) => !name.startsWith('mcp__'));

  const toolListed = (tool: string): boolean => {
    if (names.has(tool)) return true;
    if (!tool.startsWith('mcp__')) return false;
    const server = tool.split('__')[1];
    return server !== undefined && (names.has(`mcp__${server}`) || names.has(`mcp__${server}__*`));
  };

  return {
    builtinTools,
    deniedRules: deniedGitCommands.map((command) => `Bash(git ${command}:*)`),
    check(tool, rawInput) {
      const input = (typeof rawInput === 'object' && rawInput !== null ? rawInput : {}) as Record<
        string,
        unknown
      >;
      if (!toolListed(tool)) return `${tool} is not among the allowed tools`;
      const writeKey = WRITE_TOOLS[tool];
      if (writeKey !== undefined) {
        const path = input[writeKey];
        if (typeof path !== 'string' || path === '') return `${tool} needs a path`;
        return checkVisible(path, [root], 'write', true);
      }
      const readKey = READ_TOOLS[tool];
      if (readKey !== undefined) {
        const path = input[readKey];
        if (path !== undefined && (typeof path !== 'string' || path === '')) return `${tool} needs a path`;
        if (typeof path === 'string') {
          const refused = checkVisible(path, readRoots, 'read', false);
          if (refused !== undefined) return refused;
        }
        if (tool === 'Glob' && typeof input['pattern'] === 'string') {
          const base = typeof path === 'string' ? path : root;
          const prefix = staticPrefix(input['pattern']);
          if (prefix !== undefined) return checkVisible(resolveHome(prefix, base), readRoots, 'read', false);
        }
        return undefined;
      }
      if (tool === 'Bash') {
        const command = input['command'];
        if (typeof command !== 'string') return 'Bash needs a command';
        return deniedGitCommand(command, deniedGitCommands) ?? checkBashCommand(command, bashPatterns);
      }
      return undefined;
    },
  };
}

function isInside(path: string, directory: string): boolean {
  const rel = relative(directory, path);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

/** `~` and `~/x` the way Claude Code expands them; relative paths against `base`. */
function resolveHome(path: string, base: string): string {
  if (path === '~') return homedir();
  if (path.startsWith('~/')) return join(homedir(), path.slice(2));
  return isAbsolute(path) ? path : join(base, path);
}

/**
 * Where a path really leads: walks it one name at a time as the kernel does, following each link
 * (so `link/..` leaves from where the link points). A dangling link yields undefined.
 */
function walkPath(absolute: string): string | undefined {
  let current: string = sep;
  const parts = absolute.split(sep).filter((part) => part !== '');
  for (const part of parts) {
    if (part === '.') continue;
    if (part === '..') {
      current = dirname(current);
      continue;
    }
    const candidate = join(current, part);
    const entry = lstatSync(candidate, { throwIfNoEntry: false });
    // A name that does not exist (yet) is created as written, and so is the rest after it.
    if (entry === undefined || !entry.isSymbolicLink()) {
      current = candidate;
      continue;
    }
    try {
      current = realpathSync(candidate);
    } catch {
      return undefined;
    }
  }
  return current;
}

function checkPath(
  path: string,
  root: string,
  roots: readonly string[],
  access: 'read' | 'write',
  protectGit: boolean,
): string | undefined {
  if (/^~[^/]/.test(path)) return `${path}: another user's home folder is outside the worktree`;
  const absolute = resolveHome(path, root);
  // Both readings must stay inside: the path as written with `..` collapsed first (what Node's path
  // functions do) and as the kernel follows it (links before `..`).
  const targets = [walkPath(resolve(absolute)), walkPath(absolute)];
  for (const target of targets) {
    if (target === undefined) return `${path} is a link that leads nowhere`;
    if (!roots.some((directory) => isInside(target, directory))) {
      return access === 'write'
        ? `${path} is outside the worktree ${root}; writes are allowed only inside it`
        : `${path} is outside the folders the agent may read`;
    }
    if (protectGit && isInside(target, join(root, '.git'))) {
      return `${path} is inside .git, which the agent may not change`;
    }
  }
  return undefined;
}

/** The part of a glob pattern before its first wildcard, when the pattern could leave the folder. */
function staticPrefix(pattern: string): string | undefined {
  const parts = pattern.split('/');
  const fixed: string[] = [];
  for (const part of parts) {
    if (/[*?[\]{}]/.test(part)) break;
    fixed.push(part);
  }
  const leaves = isAbsolute(pattern) || pattern.startsWith('~') || parts.includes('..');
  if (!leaves) return undefined;
  const prefix = fixed.join('/');
  return prefix === '' ? '/' : prefix;
}

/** Redirections that write nowhere: `2>&1`, `>/dev/null`, `&>/dev/null`. */
const HARMLESS_REDIRECT = /^(?:\d?>&\d|(?:\d|&)?>>?\s*\/dev\/null)$/;

/**
 * Splits a command at `;`, `&&`, `||`, `|`, `&` and newlines outside quotes. Returns a reason instead
 * when the command substitutes commands or redirects output anywhere but /dev/null, since no prefix
 * pattern can vouch for those.
 */
export function splitBashCommand(command: string): string[] | { refused: string } {
  const segments: string[] = [];
  let current = '';
  let quote: "'" | '"' | undefined;
  for (let index = 0; index < command.length; index++) {
    const char = command[index] as string;
    const next = command[index + 1];
    if (quote === "'") {
      current += char;
      if (char === "'") quote = undefined;
      continue;
    }
    if (char === '\\') {
      current += char + (next ?? '');
      index++;
      continue;
    }
    if (char === '`' || (char === '$' && next === '(')) return { refused: 'command substitution' };
    if (quote === '"') {
      current += char;
      if (char === '"') quote = undefined;
      continue;
    }
    if (char === "'" || char === '"') {
      quote = char;
      current += char;
      continue;
    }
    if ((char === '<' || char === '>') && next === '(') return { refused: 'process substitution' };
    if (char === '>' || char === '<') {
      // Take the redirection with its descriptor and target, and allow only the harmless ones.
      let start = current.length;
      while (start > 0 && /[\d&]/.test(current[start - 1] as string)) start--;
      let end = index + 1;
      while (end < command.length && /[>&]/.test(command[end] as string)) end++;
      while (end < command.length && command[end] === ' ') end++;
      while (end < command.length && !/[\s;&|<>]/.test(command[end] as string)) end++;
      const redirect = (current.slice(start) + command.slice(index, end)).trim();
      if (char === '<' || !HARMLESS_REDIRECT.test(redirect)) {
        return { refused: `the redirection ${redirect}` };
      }
      current = current.slice(0, start);
      index = end - 1;
      continue;
    }
    if (char === ';' || char === '\n' || char === '|' || char === '&') {
      segments.push(current);
      current = '';
      if ((char === '|' || char === '&') && next === char) index++;
      continue;
    }
    current += char;
  }
  if (quote !== undefined) return { refused: 'an unterminated quote' };
  segments.push(current);
  return segments.map((segment) => segment.trim().replace(/\s+/g, ' ')).filter((segment) => segment !== '');
}

/** Whether one simple command matches a permission pattern: `*`, `prefix:*`, a glob with `*`, or exact. */
export function matchesBashPattern(command: string, pattern: string): boolean {
  if (pattern === '*' || pattern === '') return true;
  const prefix = /^(.*):\*$/s.exec(pattern);
  if (prefix !== null) {
    const head = (prefix[1] ?? '').trim();
    return command === head || command.startsWith(`${head} `);
  }
  if (pattern.includes('*')) {
    const regex = new RegExp(
      `^${pattern
        .split('*')
        .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*')}$`,
      's',
    );
    return regex.test(command);
  }
  return command === pattern.trim();
}

function checkBashCommand(command: string, patterns: readonly string[]): string | undefined {
  if (patterns.includes('*')) return undefined;
  const split = splitBashCommand(command);
  if (!Array.isArray(split)) {
    return `Bash command refused: ${split.refused} is not allowed (allowed: ${describePatterns(patterns)})`;
  }
  if (split.length === 0) return 'Bash needs a command';
  for (const segment of split) {
    if (!patterns.some((pattern) => matchesBashPattern(segment, pattern))) {
      return `Bash command "${segment}" matches no allowed pattern (allowed: ${describePatterns(patterns)})`;
    }
  }
  return undefined;
}

/** Git's global options that take the next word as their value (`git -C dir commit`). */
const GIT_OPTIONS_WITH_VALUE = new Set([
  '-C',
  '-c',
  '--git-dir',
  '--work-tree',
  '--namespace',
  '--exec-path',
  '--config-env',
  '--super-prefix',
]);

/**
 * The git subcommand a command runs, for each `git` word in it. Quotes and backslashes are dropped as
 * the shell drops them (`gi"t"` is `git`), and backticks, `$(` and shell operators break words, so
 * nested shells (`sh -c '…'`) and substitutions are looked into too.
 */
export function gitSubcommands(command: string): string[] {
  const words = command
    .replace(/['"\\]/g, '')
    .split(/[\s`;&|(){}<>$]+/)
    .filter((word) => word !== '');
  const found: string[] = [];
  for (let index = 0; index < words.length; index++) {
    const word = words[index] as string;
    if (word !== 'git' && !word.endsWith('/git')) continue;
    let next = index + 1;
    while (next < words.length) {
      const option = words[next] as string;
      if (!option.startsWith('-')) break;
      next += GIT_OPTIONS_WITH_VALUE.has(option) ? 2 : 1;
    }
    const subcommand = words[next];
    if (subcommand !== undefined) found.push(subcommand);
  }
  return found;
}

function deniedGitCommand(command: string, denied: readonly string[]): string | undefined {
  if (denied.length === 0) return undefined;
  const hit = gitSubcommands(command).find((subcommand) => denied.includes(subcommand));
  if (hit === undefined) return undefined;
  return `Bash command refused: \`git ${hit}\` is not allowed here (the runner commits the change; denied: ${denied.map((name) => `git ${name}`).join(', ')})`;
}

function describePatterns(patterns: readonly string[]): string {
  return patterns.length === 0 ? 'none' : patterns.map((pattern) => `Bash(${pattern})`).join(', ');
}
