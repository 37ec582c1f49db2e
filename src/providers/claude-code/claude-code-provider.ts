import { resumedSessionCost } from '../../agents/session-cost.js';
import { claudeConfigDir } from '../../core/claude-config-dir.js';
import type { Options, SDKMessage } from '@anthropic-ai/claude-agent-sdk';
import type { CallResult, Provider } from '../../core/call-types.js';
import { SwitchboardError } from '../../core/errors.js';
import { endpointLabel, refuseInlineBaseUrl } from '../endpoint.js';
import { compileSchema } from '../../core/json-schema.js';
import {
  asClaudeError,
  baseQueryOptions,
  CallWatch,
  finishCall,
  readUntilResult,
  type ClaudeCallOptions,
  type ClaudeLaunch,
} from './call-session.js';
import type { Confinement } from './confinement.js';
import { claudeEnvironment } from './environment.js';
import { resolveClaudeExecutable } from './executable.js';
import { limitMcpTools } from './mcp-tools.js';
import { ClaudeProcess } from './process-group.js';
import { WarmPool, type WarmPoolOptions } from './warm-pool.js';
import { registerSecret } from '../../core/secrets.js';
import { loadAgentSdk } from './agent-sdk.js';
import { modelTurnCounter, streamingPrompt } from './streaming-prompt.js';

export type { ClaudeCallOptions } from './call-session.js';

export interface ClaudeCodeProviderOptions {
  /** Path of a `claude` executable to use instead of the one the Agent SDK ships. Env: `SWITCHBOARD_CLAUDE_PATH`. */
  executable?: string;
  /** API base URL for the Claude Code process (`ANTHROPIC_BASE_URL`), e.g. a `switchboard sim` address. */
  baseUrl?: string;
  /** API key for the process (`ANTHROPIC_API_KEY`); otherwise Claude Code's own login or environment. */
  apiKey?: string;
  /**
   * Extra environment variables for the process. In a call with tools, those named like secrets are left
   * out like the parent's (see `agentEnvironment`): the tools run what the model chooses.
   */
  env?: Record<string, string>;
  /** Claude Code's configuration folder (`CLAUDE_CONFIG_DIR`); tests point it at a temporary folder. */
  configDir?: string;
  /** Working directory of the process. @default process.cwd() */
  cwd?: string;
  /**
   * Claude Code's own API retries (`CLAUDE_CODE_MAX_RETRIES`). Left to itself it retries even a 401 ten
   * times over three minutes. At 0, Switchboard's retry policy decides: Claude Code runs with one retry
   * so that it reports the failure (status, the server's `retry-after`), and the call ends there, before
   * the retry is sent.
   * @default 0
   */
  maxRetries?: number;
  /** Fail with `IDLE_TIMEOUT` when the process prints nothing for this long (ms). @default 120_000 */
  idleTimeoutMs?: number;
  /** Wall-clock limit per call (ms). @default 600_000 */
  timeoutMs?: number;
  /** Keep Claude Code processes ready so calls skip start-up. Off unless given. */
  pool?: WarmPoolOptions;
}

export interface ClaudeCodeProvider extends Provider {
  call(request: ClaudeCallOptions): Promise<CallResult>;
  /** The warm pool, when one is configured. */
  readonly pool: WarmPool | undefined;
}

export function createClaudeCodeProvider({
  executable,
  baseUrl,
  apiKey,
  env = {},
  configDir,
  cwd = process.cwd(),
  maxRetries = 0,
  idleTimeoutMs = 120_000,
  timeoutMs = 600_000,
  pool: poolOptions,
}: ClaudeCodeProviderOptions = {}): ClaudeCodeProvider {
  checkPositive('idleTimeoutMs', idleTimeoutMs);
  checkPositive('timeoutMs', timeoutMs);
  registerSecret(apiKey);
  let resolvedExecutable: string | undefined;
  const launch = (): ClaudeLaunch => {
    resolvedExecutable ??= resolveClaudeExecutable(executable ?? process.env['SWITCHBOARD_CLAUDE_PATH']);
    const endAtApiRetry = maxRetries === 0;
    const connection = { baseUrl, apiKey, configDir, env, maxRetries: endAtApiRetry ? 1 : maxRetries };
    return {
      executable: resolvedExecutable,
      env: claudeEnvironment(connection),
      cwd,
      idleTimeoutMs,
      timeoutMs,
      endAtApiRetry,
      connection,
    };
  };
  const pool = poolOptions === undefined ? undefined : new WarmPool(launch, poolOptions);
  // Cold processes still exiting after their call returned (they may write their config folder until
  // then): `close` waits for them, so a caller that removes that folder next does not race them.
  const exiting = new Set<Promise<void>>();
  const trackExit = (ending: Promise<void>) => {
    exiting.add(ending);
    void ending.finally(() => exiting.delete(ending));
  };

  return {
    name: 'claude',
    pool,
    async call(request) {
      refuseInlineBaseUrl('claude', request, 'claude.base_url (or --base-url)');
      if (typeof request.prompt !== 'string' || request.prompt.trim() === '') {
        throw new SwitchboardError('INVALID_INPUT', 'the prompt is empty', {
          hint: 'pass a prompt, or "-" to read standard input',
        });
      }
      if (request.schema !== undefined) compileSchema(request.schema);
      if ((request.tools?.length ?? 0) > 0 || (request.messages?.length ?? 0) > 0) {
        throw new SwitchboardError('INVALID_INPUT', 'claude takes neither "tools" nor "messages"', {
          provider: 'claude',
          retryable: false,
          hint: 'Claude Code runs its own tools: give allowedTools and mcpServers, and resume a session to continue a conversation',
        });
      }
      if (pool?.canServe(request) === true) return pool.call(request);
      return coldCall(launch(), request, trackExit);
    },
    checkEndpoint(request) {
      // Claude Code's key and login go only to the configured base URL: a spec cannot name another.
      refuseInlineBaseUrl('claude', request, 'claude.base_url (or --base-url)');
    },
    endpoint() {
      const api = endpointLabel(
        baseUrl ?? env['ANTHROPIC_BASE_URL'] ?? process.env['ANTHROPIC_BASE_URL'],
        'the Claude API',
      );
      const binary = executable ?? process.env['SWITCHBOARD_CLAUDE_PATH'] ?? 'the bundled claude';
      return `${api} via ${binary}`;
    },
    async close() {
      await Promise.all([pool?.close(), ...exiting]);
    },
  };
}

function checkPositive(name: string, value: number): void {
  if (!(typeof value === 'number' && value > 0)) {
    throw new SwitchboardError('INVALID_INPUT', `Expected "${name}" to be a positive number of milliseconds`);
  }
}

/** A call in a fresh Claude Code process, which exits when the call ends. */
async function coldCall(
  launch: ClaudeLaunch,
  request: ClaudeCallOptions,
  exiting: (ending: Promise<void>) => void,
): Promise<CallResult> {
  // Loaded before the call's timers start: the first load (about 0.1 s) is not the call's time.
  const { query } = await loadAgentSdk();
  const started = performance.now();
  const abortController = new AbortController();
  let child: ClaudeProcess | undefined;
  const watch = new CallWatch({
    timeoutMs: request.timeoutMs ?? launch.timeoutMs,
    idleTimeoutMs: request.idleTimeoutMs ?? launch.idleTimeoutMs,
    abortSignal: request.abortSignal,
    endAtApiRetry: launch.endAtApiRetry,
    coversStartup: true,
    onFail: () => {
      // Kill first: the SDK's abort waits two seconds before it signals the process.
      child?.killTree();
      abortController.abort();
    },
  });
  const options = baseQueryOptions(launch, request);
  options.abortController = abortController;
  let confinement: Confinement | undefined;
  options.spawnClaudeCodeProcess = (spawnOptions) => {
    // With tools, the process itself starts in its mount namespace (see `processJail`).
    child = new ClaudeProcess(confinement?.jail(spawnOptions) ?? spawnOptions);
    child.child.stdout.on('data', () => watch.touch());
    return child.child;
  };
  if (request.resume !== undefined) options.resume = request.resume;
  if (request.resume !== undefined || request.persistSession === true) options.persistSession = true;
  if (request.maxTurns !== undefined) options.maxTurns = request.maxTurns;
  if (request.reasoning !== undefined) options.effort = request.reasoning;
  if (request.maxBudgetUsd !== undefined) options.maxBudgetUsd = request.maxBudgetUsd;
  if (request.schema !== undefined) options.outputFormat = { type: 'json_schema', schema: request.schema };
  if (request.onText !== undefined) options.includePartialMessages = true;

  const leftOut: string[] = [];
  let messages: AsyncGenerator<SDKMessage, void> | undefined;
  // Ends the streaming input of a call with `followUp`, so Claude Code's stdin closes and it exits.
  const ended = new AbortController();
  try {
    // Tools run code the model chose: Claude Code then starts the way an agent run does.
    if (usesTools(request)) confinement = await confine(launch, request, options);
    const bash = request.allowedTools?.some((tool) => /^Bash\b/.test(tool)) === true;
    if (bash && confinement?.sandbox.enabled === false)
      leftOut.push(`Bash ran without Claude Code's sandbox: ${confinement.sandbox.reason ?? 'unavailable'}`);
    for (const name of confinement?.exposedCredentials ?? [])
      leftOut.push(
        `${name} stayed in Claude Code's environment, where its tools can read it: set ANTHROPIC_API_KEY so Switchboard's key forwarder holds the key instead`,
      );
    if (request.mcpServers !== undefined) {
      options.mcpServers = request.mcpServers as NonNullable<typeof options.mcpServers>;
      // The model is offered only the allowed tools of each server, not all it has.
      const limits = await limitMcpTools(options, request.allowedTools ?? [], abortController.signal);
      for (const { server, reason } of limits.removed)
        leftOut.push(`MCP server "${server}" left out: ${reason}`);
    }
    // A resumed session's total includes what it spent before; read that before this call adds to it.
    const earlierCostUsd =
      request.resume === undefined
        ? 0
        : (request.resumedCostUsd ?? resumedSessionCost(claudeConfigDir(options.env), request.resume));
    const followUp = request.followUp;
    const turns = modelTurnCounter();
    const onMessage =
      followUp === undefined
        ? request.onMessage
        : (message: SDKMessage) => {
            turns.see(message);
            request.onMessage?.(message);
          };
    messages = query({
      prompt:
        followUp === undefined
          ? request.prompt
          : streamingPrompt(request.prompt, () => followUp(turns.count() + 1), ended.signal),
      options,
    });
    const found = await readUntilResult(
      messages[Symbol.asyncIterator](),
      watch,
      undefined,
      request.onText,
      onMessage,
    );
    if (watch.failure !== undefined) throw watch.failure;
    const result = finishCall(
      found,
      request,
      performance.now() - started,
      child?.stderr ?? '',
      earlierCostUsd,
    );
    result.warnings.push(...leftOut);
    return result;
  } catch (error) {
    throw watch.failure ?? asClaudeError(error, child);
  } finally {
    ended.abort();
    watch.stop();
    void messages?.return(undefined).catch(() => undefined);
    // The CLI exits on its own once its input closes; make sure of it without holding the caller.
    child?.detach();
    if (confinement === undefined) {
      if (child !== undefined) exiting(child.waitForExit(5_000));
    } else {
      // The forwarder and the configuration folder go once the process has: it uses both until then.
      const confined = confinement;
      const ending = child?.waitForExit(5_000) ?? Promise.resolve();
      exiting(ending.then(() => confined.close()));
    }
  }
}

/** The tool Claude Code answers a call's `outputFormat` schema with. */
const STRUCTURED_OUTPUT_TOOL = 'StructuredOutput';

/** Whether the call lets Claude Code run anything: built-in tools or an MCP server. */
function usesTools(request: ClaudeCallOptions): boolean {
  return (request.allowedTools?.length ?? 0) > 0 || Object.keys(request.mcpServers ?? {}).length > 0;
}

/**
 * Sets up a call with tools (see `startConfinement`): the key stays behind a forwarder, the environment
 * holds no credential, Claude Code gets a configuration folder of its own (unless the call keeps its
 * session), Bash runs in Claude Code's sandbox, and a hook refuses file tools outside the working folder.
 */
async function confine(
  launch: ClaudeLaunch,
  request: ClaudeCallOptions,
  options: Options,
): Promise<Confinement> {
  // Loaded only for calls with tools: a plain call does not pay for the agent modules.
  const [
    { startConfinement, secretPaths },
    { createToolPolicy, preToolUseGuard, hasStdioServer },
    { claudeCodeDenyRules },
  ] = await Promise.all([
    import('./confinement.js'),
    import('../../agents/claude-agent.js'),
    import('../../confinement/file-access.js'),
  ]);
  const allowedTools = request.allowedTools ?? [];
  const cwd = options.cwd ?? launch.cwd;
  // The working folder is the caller's, not a worktree: what the one deny list names in it (`.env` files,
  // credentials, git's folder, Switchboard's state) stays hidden from every tool: the file tools by the
  // policy and Claude Code's own deny rules, Bash by the sandbox's masks of the paths that exist.
  const hiddenPaths = secretPaths(cwd);
  const policy = createToolPolicy({ cwd, allowedTools, hiddenPaths });
  const connection = launch.connection ?? { env: {}, maxRetries: 0 };
  const confinement = await startConfinement({
    cwd,
    baseUrl: connection.baseUrl,
    apiKey: connection.apiKey,
    configDir: connection.configDir,
    sharedConfigDir: request.resume !== undefined || request.persistSession === true,
    env: connection.env,
    maxRetries: connection.maxRetries,
    hiddenDirectories: hiddenPaths,
    stdioMcpServers: hasStdioServer(request.mcpServers),
  });
  // `tools` lists built-in tools only; MCP tools come with their servers.
  options.tools = policy.builtinTools.filter((tool) => !tool.startsWith('mcp__'));
  options.allowedTools = allowedTools;
  options.env = confinement.env;
  options.settings = {
    ...confinement.settings,
    permissions: { deny: claudeCodeDenyRules(cwd, hiddenPaths) },
  };
  // With a schema, Claude Code's answer arrives as its StructuredOutput tool, which touches nothing:
  // refusing it as an unlisted tool would leave every call with tools and a schema without output.
  const structured = request.schema !== undefined;
  options.hooks = {
    PreToolUse: [
      {
        hooks: [
          preToolUseGuard((_id, tool, input) =>
            structured && tool === STRUCTURED_OUTPUT_TOOL ? undefined : policy.check(tool, input),
          ),
        ],
        onFailure: 'block',
      },
    ],
  };
  return confinement;
}
