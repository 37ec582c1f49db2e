import type * as AnthropicSdk from '@anthropic-ai/sdk';
import { isSwitchboardError, SwitchboardError } from '../../core/errors.js';
import { errorFromStatus } from '../http-errors.js';
import { lazySdk } from '../lazy-sdk.js';
import { redact } from '../redact.js';

const PROVIDER = 'anthropic';

/** The SDK, imported at the first call, so that routing never pays for it. */
const sdk = lazySdk<typeof AnthropicSdk>(() => import('@anthropic-ai/sdk'));

/** Loads the Anthropic SDK (once per process). The error mapping below recognises its errors afterwards. */
export function loadAnthropicSdk(): Promise<typeof AnthropicSdk> {
  return sdk.load();
}

/** What the error mapping needs to know about the call that failed. */
export interface AnthropicErrorContext {
  /** The key in use, so that no message, hint or detail ever repeats it. */
  apiKey: string;
  /** The base URL the client talks to, named in connection hints. */
  baseUrl: string;
  /** The wall-clock limit of the call (ms), named in timeout messages. */
  timeoutMs: number;
}

/**
 * Turns whatever the Anthropic SDK threw into a coded `SwitchboardError`. Order matters: the SDK's
 * abort and connection errors are `APIError`s without a status, so they are told apart first.
 */
export function asAnthropicError(error: unknown, context: AnthropicErrorContext): SwitchboardError {
  const mapped = mapError(error, context);
  return redactError(mapped, context.apiKey);
}

function mapError(error: unknown, context: AnthropicErrorContext): SwitchboardError {
  if (isSwitchboardError(error)) return error;
  const cause = safeCause(error, context.apiKey);
  // Nothing the SDK threw can reach here before it was loaded; without it, only the generic cases apply.
  const { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError, AnthropicError } =
    sdk.current();
  if (error instanceof APIUserAbortError || isAbortError(error)) return abortedError(cause);
  if (error instanceof APIConnectionTimeoutError) return timeoutError(context, cause);
  if (error instanceof APIConnectionError) {
    const reason = connectionReason(error);
    return new SwitchboardError(
      'PROVIDER_UNAVAILABLE',
      `anthropic cannot be reached at ${context.baseUrl}${reason === '' ? '' : ` (${reason})`}`,
      {
        provider: PROVIDER,
        hint: `is the server at ${context.baseUrl} reachable? Check ANTHROPIC_BASE_URL or the baseUrl option`,
        retryable: true,
        cause,
      },
    );
  }
  if (error instanceof APIError && typeof error.status === 'number') {
    const mapped = errorFromStatus(PROVIDER, error.status, error.apiMessage ?? error.message, error.headers);
    const hint =
      mapped.code === 'AUTH'
        ? 'check ANTHROPIC_API_KEY in the environment or .env, or the apiKey option'
        : mapped.hint;
    return new SwitchboardError(mapped.code, mapped.message, {
      provider: PROVIDER,
      retryable: mapped.retryable,
      ...(hint === undefined ? {} : { hint }),
      ...(mapped.retryAfterMs === undefined ? {} : { retryAfterMs: mapped.retryAfterMs }),
      ...(error.requestID == null ? {} : { details: { requestId: error.requestID } }),
      cause,
    });
  }
  if (error instanceof SyntaxError) {
    // The SDK parses a JSON body with `response.json()`; a broken body surfaces as a bare SyntaxError.
    return new SwitchboardError(
      'PARSE',
      `anthropic sent a response that is not valid JSON: ${error.message}`,
      {
        provider: PROVIDER,
        hint: 'retry; a proxy or server in between may have corrupted the answer',
        retryable: true,
        cause,
      },
    );
  }
  if (isBodyCutOff(error)) return cutOffError(cause);
  if (error instanceof AnthropicError) {
    // Raised by the SDK before sending, e.g. options it refuses; sending the same call again cannot help.
    return new SwitchboardError('INVALID_INPUT', `the Anthropic SDK refused the call: ${error.message}`, {
      provider: PROVIDER,
      hint: 'check the model name and maxTokens',
      retryable: false,
      cause,
    });
  }
  return new SwitchboardError('PROVIDER_ERROR', `anthropic call failed: ${messageOf(error)}`, {
    provider: PROVIDER,
    hint: 'retry; if it persists, report it with the message above',
    retryable: false,
    cause,
  });
}

/** The caller's abort signal fired. */
export function abortedError(cause?: unknown): SwitchboardError {
  return new SwitchboardError('ABORTED', 'the call was aborted', {
    provider: PROVIDER,
    retryable: false,
    ...(cause === undefined ? {} : { cause }),
  });
}

/** The call's wall-clock limit ran out, before the headers or in the middle of a stream. */
export function timeoutError(context: AnthropicErrorContext, cause?: unknown): SwitchboardError {
  return new SwitchboardError('TIMEOUT', `anthropic did not answer within ${context.timeoutMs} ms`, {
    provider: PROVIDER,
    hint: 'retry, raise timeoutMs, or fall back to another provider',
    retryable: true,
    ...(cause === undefined ? {} : { cause: safeCause(cause, context.apiKey) }),
  });
}

/** The body or stream ended before the answer was complete. */
export function cutOffError(cause?: unknown): SwitchboardError {
  return new SwitchboardError(
    'PROVIDER_ERROR',
    'the connection to anthropic closed in the middle of the answer',
    {
      provider: PROVIDER,
      hint: 'retry, or fall back to another provider',
      retryable: true,
      ...(cause === undefined ? {} : { cause }),
    },
  );
}

function isAbortError(error: unknown): boolean {
  return error instanceof Error && error.name === 'AbortError';
}

/** undici reports a body cut short as `TypeError: terminated`, its socket error as the cause. */
function isBodyCutOff(error: unknown): boolean {
  return error instanceof TypeError && /terminated|other side closed|socket/i.test(error.message);
}

function connectionReason(error: AnthropicSdk.APIConnectionError): string {
  const cause = error.cause;
  let reason = '';
  let current: unknown = cause;
  // fetch wraps the socket error (ECONNREFUSED, ECONNRESET) one or two levels down.
  for (let depth = 0; depth < 3 && current instanceof Error; depth++) {
    const code = (current as NodeJS.ErrnoException).code;
    reason = typeof code === 'string' ? code : current.message;
    if (typeof code === 'string') break;
    current = current.cause;
  }
  return reason;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The SDK error as cause, unless it repeats the key (a proxy may echo it in an error body). */
function safeCause(error: unknown, apiKey: string): unknown {
  if (apiKey === '') return error;
  let serialized: string;
  try {
    serialized = `${messageOf(error)} ${JSON.stringify(error)}`;
  } catch {
    serialized = messageOf(error);
  }
  if (!serialized.includes(apiKey)) return error;
  return new Error(redact(messageOf(error), apiKey));
}

function redactValue(value: unknown, apiKey: string): unknown {
  if (typeof value === 'string') return redact(value, apiKey);
  if (Array.isArray(value)) return value.map((item) => redactValue(item, apiKey));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, redactValue(item, apiKey)]));
  }
  return value;
}

/** A copy of the error with the key removed from its message, hint and details. */
export function redactError(error: SwitchboardError, apiKey: string): SwitchboardError {
  if (apiKey === '' || !JSON.stringify(error).includes(apiKey)) return error;
  return new SwitchboardError(error.code, redact(error.message, apiKey), {
    retryable: error.retryable,
    ...(error.hint === undefined ? {} : { hint: redact(error.hint, apiKey) }),
    ...(error.provider === undefined ? {} : { provider: error.provider }),
    ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
    ...(error.details === undefined
      ? {}
      : { details: redactValue(error.details, apiKey) as Record<string, unknown> }),
    cause: safeCause(error.cause, apiKey),
  });
}
