import type { CallResult, TokenUsage } from '../../core/call-types.js';
import { SwitchboardError } from '../../core/errors.js';
import { CLAUDE_LONGEST_RETRY_WAIT_MS } from './api-retry.js';

/** The fields of Claude Code's `result` message that Switchboard reads (stream-json / `--output-format json`). */
export interface ClaudeResultMessage {
  type: 'result';
  subtype: string;
  is_error: boolean;
  result?: string;
  errors?: string[];
  api_error_status?: number | null;
  session_id?: string;
  num_turns?: number;
  duration_ms?: number;
  total_cost_usd?: number;
  structured_output?: unknown;
  /** Tool calls refused during the run. */
  permission_denials?: { tool_name: string; tool_use_id: string; tool_input: unknown }[];
  usage?: Record<string, unknown>;
  modelUsage?: Record<
    string,
    {
      inputTokens?: number;
      outputTokens?: number;
      cacheReadInputTokens?: number;
      cacheCreationInputTokens?: number;
    }
  >;
}

/** What else the provider saw during the call. */
export interface ResultContext {
  spec: string;
  modelRequested: string;
  /** The model named in the `system/init` message. */
  initModel?: string;
  durationMs: number;
  schemaRequested: boolean;
  /** A rejected `rate_limit_event`'s reset time (epoch seconds), when one arrived. */
  rateLimitResetsAt?: number;
  /**
   * Claude Code had a retry left and still gave up: on a 429 that means the server asked for a longer
   * wait than Claude Code takes (`CLAUDE_LONGEST_RETRY_WAIT_MS`), which its result does not state.
   */
  retryLeft?: boolean;
  /** Claude Code sent a request again itself (after a lost connection): call() need not resend it. */
  resent?: boolean;
  /**
   * What a resumed session had spent before this call (`resumedSessionCost`): Claude Code's total
   * counts it again, so it is taken off. @default 0
   */
  earlierCostUsd?: number;
  now?: () => number;
}

const AUTH_TEXT =
  /invalid api key|api key|please run \/login|not logged in|authentication|oauth token|unauthori[sz]ed|forbidden/i;
/** Claude Code's words when `--resume` names a session it has no transcript of. */
const SESSION_NOT_FOUND_TEXT = /No conversation found with session ID:? *([\w-]+)/;
const RATE_TEXT = /usage limit|rate limit|hit your limit|limit reached|too many requests|\(429\)/i;
const OVERLOAD_TEXT = /overloaded|\b529\b/i;
const UNREACHABLE_TEXT =
  /ECONNREFUSED|connection refused|ENOTFOUND|getaddrinfo|EHOSTUNREACH|ECONNRESET|socket hang up/i;

/**
 * Turns Claude Code's final message into a `CallResult`, or the `SwitchboardError` it means. `is_error`
 * decides, whatever the subtype says: a failed API call reports `subtype: "success"` with `is_error: true`.
 */
export function mapClaudeResult(
  reported: ClaudeResultMessage,
  context: ResultContext,
): CallResult | SwitchboardError {
  const earlier = context.earlierCostUsd ?? 0;
  const message =
    earlier > 0 && typeof reported.total_cost_usd === 'number'
      ? { ...reported, total_cost_usd: Math.max(0, reported.total_cost_usd - earlier) }
      : reported;
  const text = message.result ?? '';
  const detail = [text, ...(message.errors ?? [])]
    .filter((part) => part !== '')
    .join('; ')
    .slice(0, 500);
  const status = message.api_error_status ?? undefined;
  const now = context.now ?? Date.now;

  if (message.subtype === 'error_max_turns') {
    return new SwitchboardError(
      'MAX_TURNS',
      `Claude Code stopped at its turn limit after ${message.num_turns ?? '?'} turns`,
      {
        hint: 'raise maxTurns, or narrow the task',
        provider: 'claude',
        retryable: false,
        details: billed(message),
      },
    );
  }
  if (message.subtype === 'error_max_budget_usd') {
    return new SwitchboardError(
      'BUDGET_EXCEEDED',
      `Claude Code stopped at its cost cap ($${(message.total_cost_usd ?? 0).toFixed(4)} spent)`,
      {
        hint: 'raise the budget, or narrow the task',
        provider: 'claude',
        details: billed(message),
      },
    );
  }
  if (message.subtype === 'error_max_structured_output_retries') {
    return new SwitchboardError('SCHEMA', 'Claude Code gave up producing output that matches the schema', {
      hint: 'simplify the schema or the prompt',
      provider: 'claude',
      details: { raw: text, ...billed(message) },
    });
  }
  if (message.is_error || message.subtype !== 'success') {
    if (status === 401 || status === 403 || (status === undefined && AUTH_TEXT.test(detail))) {
      return new SwitchboardError(
        'AUTH',
        `Claude Code could not authenticate: ${detail || `HTTP ${status}`}`,
        {
          hint: 'set ANTHROPIC_API_KEY, or run `claude` once and /login',
          provider: 'claude',
          retryable: false,
        },
      );
    }
    if (status === 429 || context.rateLimitResetsAt !== undefined || RATE_TEXT.test(detail)) {
      const retryAfterMs =
        rateLimitDelay(detail, context.rateLimitResetsAt, now()) ??
        // `retry-after` is in whole seconds: the server asked for at least a second more than Claude Code waits.
        (status === 429 && context.retryLeft === true ? CLAUDE_LONGEST_RETRY_WAIT_MS + 1_000 : undefined);
      return new SwitchboardError('RATE_LIMITED', `Claude Code is rate limited: ${detail || 'HTTP 429'}`, {
        hint:
          retryAfterMs === undefined
            ? 'wait and retry, or fall back to another provider'
            : `retry after ${new Date(now() + retryAfterMs).toISOString()}`,
        provider: 'claude',
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      });
    }
    if (status === 529 || OVERLOAD_TEXT.test(detail)) {
      return new SwitchboardError('OVERLOADED', `the Claude API is overloaded: ${detail}`, {
        hint: 'retry later, or fall back to another provider',
        provider: 'claude',
      });
    }
    if (status === undefined && UNREACHABLE_TEXT.test(detail)) {
      return new SwitchboardError('PROVIDER_UNAVAILABLE', `Claude Code cannot reach the API: ${detail}`, {
        hint: 'check that the API server (ANTHROPIC_BASE_URL or --base-url) is running and reachable',
        provider: 'claude',
        retryable: true,
        ...(context.resent === true ? { details: { resent: true } } : {}),
      });
    }
    const missing = status === undefined ? SESSION_NOT_FOUND_TEXT.exec(detail) : null;
    if (missing !== null) {
      // Trying again cannot bring the transcript back.
      return new SwitchboardError('INVALID_INPUT', `Claude Code has no session ${missing[1]} to resume`, {
        hint: 'Claude Code keeps sessions per folder and prunes old ones: start a new session (leave out --resume), or resume from the folder it ran in',
        provider: 'claude',
        retryable: false,
        details: { sessionNotFound: missing[1] },
      });
    }
    if (status !== undefined && status >= 400 && status < 500) {
      return new SwitchboardError(
        'INVALID_INPUT',
        `the Claude API refused the request (HTTP ${status}): ${detail}`,
        {
          hint: 'check the model name and the prompt size',
          provider: 'claude',
        },
      );
    }
    return new SwitchboardError(
      'PROVIDER_ERROR',
      `Claude Code failed (${message.subtype}${status === undefined ? '' : `, HTTP ${status}`}): ${detail || 'no detail'}`,
      {
        hint: 'retry; if it persists, run the same prompt with `claude -p` to see the full error',
        provider: 'claude',
      },
    );
  }
  if (context.schemaRequested && message.structured_output === undefined) {
    // Claude Code ends such runs with subtype success after its own nudges; the output is still missing.
    return new SwitchboardError('SCHEMA', 'Claude Code answered without output matching the schema', {
      hint: 'simplify the schema or say in the prompt which fields to fill',
      provider: 'claude',
      details: { raw: text, ...billed(message) },
    });
  }

  const usage = sumUsage(message);
  const models = Object.entries(message.modelUsage ?? {}).sort(
    (a, b) => (b[1].outputTokens ?? 0) - (a[1].outputTokens ?? 0),
  );
  const result: CallResult = {
    success: true,
    text,
    provider: context.spec,
    modelRequested: context.modelRequested,
    modelUsed: models[0]?.[0] ?? context.initModel ?? context.modelRequested,
    durationMs: context.durationMs,
    usage,
    costUsd: typeof message.total_cost_usd === 'number' ? message.total_cost_usd : null,
    rateLimited: false,
    attempts: [],
    turns: message.num_turns ?? 0,
    warnings: [],
  };
  if (message.session_id !== undefined) result.sessionId = message.session_id;
  if (message.structured_output !== undefined) result.structured = message.structured_output;
  return result;
}

/**
 * What a failed run was still billed for (every request Claude Code made, its own retries included), in
 * the `costUsd` / `usage` details that call() records, so budgets and stats count it.
 */
function billed(message: ClaudeResultMessage): { costUsd?: number; usage: TokenUsage } {
  const usage = sumUsage(message);
  return typeof message.total_cost_usd === 'number' ? { costUsd: message.total_cost_usd, usage } : { usage };
}

function sumUsage(message: ClaudeResultMessage): TokenUsage {
  const entries = Object.values(message.modelUsage ?? {});
  if (entries.length > 0) {
    return entries.reduce<TokenUsage>(
      (total, model) => ({
        inputTokens: total.inputTokens + (model.inputTokens ?? 0),
        outputTokens: total.outputTokens + (model.outputTokens ?? 0),
        cacheReadTokens: total.cacheReadTokens + (model.cacheReadInputTokens ?? 0),
        cacheWriteTokens: total.cacheWriteTokens + (model.cacheCreationInputTokens ?? 0),
      }),
      { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 },
    );
  }
  const usage = message.usage ?? {};
  const number = (key: string): number => (typeof usage[key] === 'number' ? (usage[key] as number) : 0);
  return {
    inputTokens: number('input_tokens'),
    outputTokens: number('output_tokens'),
    cacheReadTokens: number('cache_read_input_tokens'),
    cacheWriteTokens: number('cache_creation_input_tokens'),
  };
}

/**
 * How long until a rate limit resets, from a rate-limit event's reset time or the message text:
 * `…limit reached|1767225600` (epoch seconds), `resets at 3pm`/`resets 3:30pm` (local time), or
 * `retry after N seconds`.
 */
export function rateLimitDelay(text: string, resetsAt: number | undefined, now: number): number | undefined {
  if (resetsAt !== undefined) return Math.max(0, resetsAt * 1000 - now);
  const epoch = /\|(\d{10})\b/.exec(text);
  if (epoch !== null) return Math.max(0, Number(epoch[1]) * 1000 - now);
  const seconds = /retry (?:after|in) (\d+) ?s(?:econds?)?\b/i.exec(text);
  if (seconds !== null) return Number(seconds[1]) * 1000;
  const clock = /resets(?: at)? (\d{1,2})(?::(\d{2}))? ?(am|pm)?/i.exec(text);
  if (clock !== null) {
    let hour = Number(clock[1]) % 12;
    if ((clock[3] ?? '').toLowerCase() === 'pm') hour += 12;
    if (clock[3] === undefined) hour = Number(clock[1]);
    const reset = new Date(now);
    reset.setHours(hour, Number(clock[2] ?? 0), 0, 0);
    if (reset.getTime() <= now) reset.setDate(reset.getDate() + 1);
    return reset.getTime() - now;
  }
  return undefined;
}
