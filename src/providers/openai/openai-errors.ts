import type * as OpenAiSdk from 'openai';
import { isSwitchboardError, SwitchboardError } from '../../core/errors.js';
import { errorFromStatus } from '../http-errors.js';
import { lazySdk } from '../lazy-sdk.js';
import { redact } from '../redact.js';

/** What the error mapping needs to know about the call that failed. */
export interface OpenAiErrorContext {
  /** The base URL the request went to, or undefined for the SDK's default (api.openai.com). */
  baseUrl: string | undefined;
  timeoutMs: number;
  abortSignal: AbortSignal | undefined;
  /** The key in use, so it can be cut out of any message that echoes it. */
  apiKey: string;
}

// Node's fetch (undici) has its own header and body timeouts (five minutes by default) that fire
// before a longer `timeoutMs`; Switchboard's own fetch has none, but a caller's `fetch` option may.
// They arrive as connection errors but mean the server was too slow.
const UNDICI_TIMEOUT_CODES = new Set([
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** The SDK, imported at the first call, so that routing never pays for it. */
const sdk = lazySdk<typeof OpenAiSdk>(() => import('openai'));

/** Loads the OpenAI SDK (once per process). The error mapping below recognises its errors afterwards. */
export function loadOpenAiSdk(): Promise<typeof OpenAiSdk> {
  return sdk.load();
}

/** Turns whatever the OpenAI SDK threw into a coded `SwitchboardError`. */
export function openAiError(error: unknown, context: OpenAiErrorContext): SwitchboardError {
  if (isSwitchboardError(error)) return error;
  // Nothing the SDK threw can reach here before it was loaded; without it, only the generic cases apply.
  const { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } = sdk.current();
  const where = context.baseUrl ?? 'the OpenAI API';
  if (context.abortSignal?.aborted === true || error instanceof APIUserAbortError) {
    return new SwitchboardError('ABORTED', 'the call was aborted', { provider: 'openai', retryable: false });
  }
  if (error instanceof APIConnectionTimeoutError) {
    return timeoutError(where, context.timeoutMs);
  }
  if (error instanceof APIError && typeof error.status === 'number') {
    // The SDK error is not kept as `cause`: OpenAI's 401 body quotes part of the key, and a cause is
    // printed in full by `util.inspect` and most loggers.
    return errorFromStatus(
      'openai',
      error.status,
      redact(error.message, context.apiKey),
      error.headers as { get(name: string): string | null } | undefined,
    );
  }
  if (error instanceof APIConnectionError) {
    if (UNDICI_TIMEOUT_CODES.has(causeCode(error) ?? '')) return timeoutError(where, context.timeoutMs);
    const reason = redact(describeCause(error), context.apiKey);
    return new SwitchboardError('PROVIDER_UNAVAILABLE', `cannot reach ${where}: ${reason}`, {
      provider: 'openai',
      retryable: true,
      hint:
        context.baseUrl === undefined
          ? 'check the network connection, or set OPENAI_BASE_URL for a local server'
          : `is the server at ${context.baseUrl} running? (e.g. \`ollama serve\`, \`vllm serve\`, \`llama-server\`)`,
      cause: error,
    });
  }
  if (error instanceof SyntaxError) {
    return new SwitchboardError('PARSE', `${where} answered with a body that is not valid JSON`, {
      provider: 'openai',
      hint: 'check that the base URL points at an OpenAI-compatible /v1 endpoint',
      details: { reason: error.message },
    });
  }
  if (error instanceof TypeError && /terminated|other side closed|socket/i.test(describeCause(error))) {
    // The response started, then the connection closed: the server is up but failed mid-answer.
    return new SwitchboardError(
      'PROVIDER_ERROR',
      `${where} closed the connection in the middle of the answer`,
      {
        provider: 'openai',
        retryable: true,
        hint: 'retry, or fall back to another provider',
        cause: error,
      },
    );
  }
  const message = error instanceof Error ? error.message : String(error);
  return new SwitchboardError('INTERNAL', `the openai call failed: ${redact(message, context.apiKey)}`, {
    provider: 'openai',
    retryable: false,
    hint: 'this is likely a Switchboard bug; report it with the message above',
  });
}

export function timeoutError(where: string, timeoutMs: number): SwitchboardError {
  return new SwitchboardError('TIMEOUT', `${where} did not answer within ${timeoutMs} ms`, {
    provider: 'openai',
    hint: 'raise timeoutMs, or use a smaller model or prompt',
  });
}

/** A stream that went quiet for `idleTimeoutMs`. */
export function idleTimeoutError(where: string, idleTimeoutMs: number): SwitchboardError {
  return new SwitchboardError('IDLE_TIMEOUT', `${where} sent nothing for ${idleTimeoutMs} ms`, {
    provider: 'openai',
    hint: 'raise idleTimeoutMs, or retry',
  });
}

/** A stream that ended cleanly but before its last chunk (no finish reason). */
export function streamCutError(where: string): SwitchboardError {
  return new SwitchboardError('PROVIDER_ERROR', `${where} ended the stream before the answer was complete`, {
    provider: 'openai',
    retryable: true,
    hint: 'retry, or fall back to another provider',
  });
}

/** The innermost useful message: the SDK says "Connection error." and hides the reason in `cause`. */
function describeCause(error: Error): string {
  const parts = [error.message];
  let cause: unknown = error.cause;
  for (let depth = 0; depth < 3 && cause instanceof Error; depth++) {
    const code = (cause as { code?: unknown }).code;
    parts.push(typeof code === 'string' ? `${cause.message} (${code})` : cause.message);
    cause = cause.cause;
  }
  return parts.filter((part) => part !== '').join(': ');
}

function causeCode(error: Error): string | undefined {
  let cause: unknown = error.cause;
  for (let depth = 0; depth < 3 && cause instanceof Error; depth++) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    cause = cause.cause;
  }
  return undefined;
}
