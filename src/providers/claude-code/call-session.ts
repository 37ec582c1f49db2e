import type { Options, SDKMessage } from '@anthropic-ai/claude-agent-sdk';
import type { CallResult, ProviderCall } from '../../core/call-types.js';
import { isSwitchboardError, SwitchboardError } from '../../core/errors.js';
import { schemaErrors } from '../../core/json-schema.js';
import { MAX_TIMER_MS } from '../../core/timer-limit.js';
import { mapApiRetry } from './api-retry.js';
import type { ClaudeProcess } from './process-group.js';
import { mapClaudeResult, type ClaudeResultMessage } from './result-mapping.js';

/** Per-call options only Claude Code understands. */
export interface ClaudeCallOptions extends ProviderCall {
  /** Resume this session id (implies session persistence). */
  resume?: string;
  /**
   * What the resumed session had spent before, when the caller knows it: Claude Code's total counts
   * it again and it is taken off. Without it, it is read from the session's transcript, where Claude
   * Code writes it as its process exits (so a session resumed at once may not show it yet).
   */
  resumedCostUsd?: number;
  /** Tools the agent may use, e.g. `['Read', 'Write', 'Bash(git:*)']`. @default none */
  allowedTools?: string[];
  cwd?: string;
  /**
   * MCP servers for this call, in Claude Code's config shape (`{type: 'stdio', command, args, env}` or
   * `{type: 'http', url, headers}`); no other server loads (strict MCP config). Their tools still need
   * an `allowedTools` entry (`mcp__server` or `mcp__server__tool`). @default none
   */
  mcpServers?: Record<string, Record<string, unknown>>;
  /** Keep the session on disk so it can be resumed. @default false */
  persistSession?: boolean;
  maxTurns?: number;
  maxBudgetUsd?: number;
  /**
   * Sees every message of the session as Claude Code sends it (the model's turns with their tool
   * calls and usage, the tools' results): for a caller that shows the work as it happens.
   */
  onMessage?: (message: SDKMessage) => void;
  /**
   * Words to send Claude Code while the session runs (a person's guidance), asked every
   * `FOLLOW_UP_POLL_MS` with the number of the model turn they would reach (1 + the model turns so
   * far). The prompt then goes in as streaming input, and Claude Code puts each message in its next
   * request. Undefined: nothing to send now. @default none (the prompt alone)
   */
  followUp?: (turn: number) => Promise<string | undefined>;
}

/** Everything a Claude Code process needs that does not change from call to call. */
export interface ClaudeLaunch {
  executable: string;
  env: Record<string, string>;
  cwd: string;
  idleTimeoutMs: number;
  timeoutMs: number;
  /**
   * End a call at Claude Code's first `api_retry` message, mapped to the error it reports (Claude Code
   * runs with one retry so that it tells the status and the server's `retry-after`; Switchboard's retry
   * policy decides what comes next).
   */
  endAtApiRetry: boolean;
  /** What `env` was made from: a call with tools starts Claude Code confined from these instead. */
  connection?: ClaudeConnection;
}

/** The provider's connection settings (see `ClaudeCodeProviderOptions`). */
export interface ClaudeConnection {
  baseUrl?: string | undefined;
  apiKey?: string | undefined;
  configDir?: string | undefined;
  env: Record<string, string>;
  maxRetries: number;
}

/** SDK options for a side-effect-free call: no tools, no MCP servers, no settings, no saved session. */
export function baseQueryOptions(
  launch: ClaudeLaunch,
  request: Pick<ClaudeCallOptions, 'model' | 'system' | 'cwd'>,
): Options {
  const options: Options = {
    model: request.model,
    pathToClaudeCodeExecutable: launch.executable,
    env: launch.env,
    cwd: request.cwd ?? launch.cwd,
    tools: [],
    settingSources: [],
    mcpServers: {},
    strictMcpConfig: true,
    persistSession: false,
  };
  if (request.system !== undefined) options.systemPrompt = request.system;
  return options;
}

/**
 * How long a new Claude Code process may take to print its first line before the idle watch gives up,
 * when the idle limit is shorter: start-up (loading, settings, MCP servers) is not the API going silent.
 */
export const STARTUP_ALLOWANCE_MS = 30_000;

/** Watches one call: wall clock, idle output, the caller's abort. The first failure wins. */
export class CallWatch {
  failure: SwitchboardError | undefined;
  private stopped = false;
  private readonly wall: NodeJS.Timeout;
  private idle: NodeJS.Timeout | undefined;
  private readonly onAbort: () => void;
  private readonly abortSignal: AbortSignal | undefined;
  private readonly idleTimeoutMs: number;
  private readonly onFail: () => void;
  /** See `ClaudeLaunch.endAtApiRetry`. */
  readonly endAtApiRetry: boolean;

  constructor(options: {
    timeoutMs: number;
    idleTimeoutMs: number;
    abortSignal: AbortSignal | undefined;
    onFail: () => void;
    endAtApiRetry?: boolean;
    /** The watch starts with a new Claude Code process, whose start-up gets `STARTUP_ALLOWANCE_MS`. */
    coversStartup?: boolean;
  }) {
    this.endAtApiRetry = options.endAtApiRetry ?? false;
    this.idleTimeoutMs = options.idleTimeoutMs;
    this.onFail = options.onFail;
    this.abortSignal = options.abortSignal;
    this.wall = setTimeout(
      () =>
        this.fail(
          new SwitchboardError('TIMEOUT', `Claude Code did not finish within ${options.timeoutMs} ms`, {
            hint: 'raise --timeout',
            provider: 'claude',
          }),
        ),
      Math.min(options.timeoutMs, MAX_TIMER_MS),
    );
    this.onAbort = () =>
      this.fail(
        new SwitchboardError('ABORTED', 'the call was aborted', { retryable: false, provider: 'claude' }),
      );
    if (this.abortSignal?.aborted === true) this.onAbort();
    this.abortSignal?.addEventListener('abort', this.onAbort, { once: true });
    // Until Claude Code first speaks, its start-up is what is being waited for, and that takes seconds
    // on a loaded machine: counting it as API silence killed healthy agents under a short idle limit.
    if (options.coversStartup === true)
      this.arm(Math.max(this.idleTimeoutMs, STARTUP_ALLOWANCE_MS), 'after it was started');
    else this.touch();
  }

  /** Output arrived: restart the idle watchdog. */
  touch(): void {
    this.arm(this.idleTimeoutMs, '');
  }

  private arm(ms: number, when: string): void {
    // Output that arrives after the call ended (the CLI shutting down) must not re-arm anything.
    if (this.stopped) return;
    if (this.idle !== undefined) clearTimeout(this.idle);
    const since = when === '' ? '' : ` ${when}`;
    this.idle = setTimeout(
      () =>
        this.fail(
          new SwitchboardError('IDLE_TIMEOUT', `Claude Code sent nothing for ${ms} ms${since}`, {
            hint: 'the API may be stalled; retry, or raise the idle timeout',
            provider: 'claude',
          }),
        ),
      Math.min(ms, MAX_TIMER_MS),
    );
  }

  fail(error: SwitchboardError): void {
    if (this.failure !== undefined) return;
    this.failure = error;
    this.onFail();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.wall);
    if (this.idle !== undefined) clearTimeout(this.idle);
    this.abortSignal?.removeEventListener('abort', this.onAbort);
  }
}

/** Reads messages until the result; tracks the init model and rate-limit rejections on the way. */
export async function readUntilResult(
  messages: AsyncIterator<SDKMessage>,
  watch: CallWatch,
  /** In a streaming session, the uuid of the prompt whose result to wait for; results of others are skipped. */
  promptUuid?: string,
  /** Receives the answer's text deltas (needs `includePartialMessages`). */
  onText?: (delta: string) => void,
  /** Sees every message (see `ClaudeCallOptions.onMessage`). */
  onMessage?: (message: SDKMessage) => void,
): Promise<{
  result: ClaudeResultMessage | undefined;
  initModel?: string;
  rateLimitResetsAt?: number;
  /** Claude Code had a retry left when it gave up (see `ResultContext.retryLeft`). */
  retryLeft?: boolean;
  /** Claude Code sent a request again itself (see `ResultContext.resent`). */
  resent?: boolean;
}> {
  let initModel: string | undefined;
  let rateLimitResetsAt: number | undefined;
  let retried = false;
  for (;;) {
    const next = await messages.next();
    if (next.done === true) break;
    watch.touch();
    const message = next.value;
    onMessage?.(message);
    if (message.type === 'system' && message.subtype === 'init') initModel = message.model;
    if (onText !== undefined && message.type === 'stream_event' && message.parent_tool_use_id === null) {
      const event = message.event as { type: string; delta?: { type?: string; text?: string } };
      if (
        event.type === 'content_block_delta' &&
        event.delta?.type === 'text_delta' &&
        event.delta.text !== undefined
      ) {
        onText(event.delta.text);
      }
    }
    if (message.type === 'system' && message.subtype === 'api_retry') {
      retried = true;
      // The server answered with an error: end here, before Claude Code waits and sends again, so each
      // attempt is one request. A lost connection (no status) is left to Claude Code's one retry: that
      // is the resend a dropped request deserves, and its result names the socket error.
      if (watch.endAtApiRetry && message.error_status !== null) {
        watch.fail(mapApiRetry(message, message.error_status));
        return { result: undefined };
      }
    }
    if (message.type === 'rate_limit_event' && message.rate_limit_info.status === 'rejected') {
      rateLimitResetsAt = message.rate_limit_info.resetsAt;
    }
    if (message.type === 'result') {
      const answered = (message as { user_message_uuids?: string[]; user_message_uuid?: string })
        .user_message_uuids ?? [(message as { user_message_uuid?: string }).user_message_uuid];
      if (promptUuid !== undefined && answered[0] !== undefined && !answered.includes(promptUuid)) continue;
      return {
        result: message as unknown as ClaudeResultMessage,
        ...(initModel === undefined ? {} : { initModel }),
        ...(rateLimitResetsAt === undefined ? {} : { rateLimitResetsAt }),
        ...(watch.endAtApiRetry && !retried ? { retryLeft: true } : {}),
        ...(retried ? { resent: true } : {}),
      };
    }
  }
  return { result: undefined };
}

/** Maps the result and checks structured output against the schema. */
export function finishCall(
  found: Awaited<ReturnType<typeof readUntilResult>>,
  request: ClaudeCallOptions,
  durationMs: number,
  stderr: string,
  earlierCostUsd = 0,
): CallResult {
  if (found.result === undefined) {
    throw new SwitchboardError(
      'PROVIDER_ERROR',
      `Claude Code ended without a result${stderr === '' ? '' : `: ${lastLine(stderr)}`}`,
      {
        hint: 'run the same prompt with `claude -p` to see the full error',
        provider: 'claude',
      },
    );
  }
  const mapped = mapClaudeResult(found.result, {
    spec: `claude:${request.model}`,
    modelRequested: request.model,
    durationMs,
    schemaRequested: request.schema !== undefined,
    ...(found.initModel === undefined ? {} : { initModel: found.initModel }),
    ...(found.rateLimitResetsAt === undefined ? {} : { rateLimitResetsAt: found.rateLimitResetsAt }),
    ...(found.retryLeft === true ? { retryLeft: true } : {}),
    ...(found.resent === true ? { resent: true } : {}),
    earlierCostUsd,
  });
  if (isSwitchboardError(mapped)) throw mapped;
  if (request.schema !== undefined) {
    const errors = schemaErrors(request.schema, mapped.structured);
    if (errors.length > 0) {
      throw new SwitchboardError(
        'SCHEMA',
        `Claude Code's output does not match the schema: ${errors.slice(0, 3).join('; ')}`,
        {
          hint: 'simplify the schema or say in the prompt which fields to fill',
          provider: 'claude',
          // The answer was billed although it failed the schema: call() records this spend.
          details: { raw: mapped.text, errors, costUsd: mapped.costUsd, usage: mapped.usage },
        },
      );
    }
  }
  mapped.attempts.push({ provider: mapped.provider, model: request.model, durationMs });
  return mapped;
}

function lastLine(text: string): string {
  return text.trim().split('\n').at(-1)?.slice(0, 300) ?? '';
}

/** Turns what escaped the SDK into a coded error. */
export function asClaudeError(error: unknown, process: ClaudeProcess | undefined): SwitchboardError {
  if (isSwitchboardError(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (/ENOENT|not found|EACCES/i.test(message) && process?.pid === undefined) {
    return new SwitchboardError('PROVIDER_UNAVAILABLE', `Claude Code could not start: ${message}`, {
      hint: 'install it with `npm install @anthropic-ai/claude-agent-sdk`, or pass the path of your own claude',
      provider: 'claude',
      cause: error,
    });
  }
  const stderr = process?.stderr ?? '';
  return new SwitchboardError(
    'PROVIDER_ERROR',
    `Claude Code failed: ${message}${stderr === '' ? '' : ` (${lastLine(stderr)})`}`,
    {
      hint: 'retry; if it persists, run the same prompt with `claude -p` to see the full error',
      provider: 'claude',
      cause: error,
    },
  );
}
