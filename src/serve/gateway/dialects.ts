import type { TokenUsage } from '../../core/call-types.js';
import { isPlainObject } from '../../core/plain-object.js';
import { formatEvent, type SseEvent } from './sse.js';

import type { Wire } from './models.js';

export type { Wire };

/**
 * What one upstream event means at the commit boundary:
 * - `hold`: before the first content it waits (message_start, a role-only chunk, response.created) and
 *   goes out with the content, so a failover before it is invisible;
 * - `content`: the first of these commits the stream to this provider;
 * - `pass`: goes out as it is once committed, held with the rest before (pings and comments too, so
 *   the client's bytes are the provider's);
 * - `final`: the clean end (message_stop, `[DONE]`, response.completed), sent once the ledger row is written;
 * - `error`: the upstream's own error event;
 * - `malformed`: data that is not JSON: never shown to the client;
 * - `drop`: never passed on (Chat's usage chunk that the gateway, not the client, asked for).
 */
export type EventKind = 'hold' | 'content' | 'pass' | 'final' | 'error' | 'malformed' | 'drop';

/** The error of a failed upstream stream event, as an HTTP status would say it. */
export interface StreamError {
  status: number;
  type: string;
  message: string;
}

/** Reads one upstream stream: what each event means, the usage so far, and errors in this dialect. */
export interface StreamReader {
  read(event: SseEvent): EventKind;
  readonly usage: TokenUsage;
  readonly model: string | undefined;
  /** The upstream's error event, when `read` said `error`. */
  readonly error: StreamError | undefined;
  /** An error event in this dialect, to end a committed stream that cannot go on. */
  errorEvent(type: string, message: string): string;
}

/** One wire's shapes. */
export interface Dialect {
  wire: Wire;
  /** The keep-alive written while upstream is silent. */
  keepAlive: string;
  /** A JSON error answer in this dialect. */
  errorBody(status: number, message: string, type?: string): unknown;
  /** A new reader for one attempt's stream; `clientWantsUsage`: Chat's `stream_options.include_usage`. */
  reader(clientWantsUsage: boolean): StreamReader;
  /** Whether a 2xx JSON body is this wire's answer (not a proxy's page or some other JSON), and its usage. */
  readAnswer(body: unknown): { usage: TokenUsage; model: string | undefined } | undefined;
  /** An in-stream error this dialect sends before any event of the answer went out (after a keep-alive). */
  earlyErrorEvent(type: string, message: string): string;
}

const ANTHROPIC_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

const OPENAI_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'invalid_request_error',
  429: 'rate_limit_error',
};

function emptyUsage(): TokenUsage {
  return { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
}

function parse(data: string | undefined): unknown {
  if (data === undefined) return undefined;
  try {
    return JSON.parse(data);
  } catch {
    return MALFORMED;
  }
}

const MALFORMED = Symbol('malformed');

/** What a reader learns from the events it has read. */
interface ReaderState {
  usage: TokenUsage;
  model: string | undefined;
  error: StreamError | undefined;
}

/** A reader from its dialect's parts: what an event means (updating the state), and its error event. */
function streamReader(
  read: (event: SseEvent, state: ReaderState) => EventKind,
  errorEvent: (type: string, message: string) => string,
): StreamReader {
  const state: ReaderState = { usage: emptyUsage(), model: undefined, error: undefined };
  return {
    get usage() {
      return state.usage;
    },
    get model() {
      return state.model;
    },
    get error() {
      return state.error;
    },
    read: (event) => read(event, state),
    errorEvent,
  };
}

function anthropicErrorEvent(type: string, message: string): string {
  return formatEvent('error', { type: 'error', error: { type, message } });
}

function chatErrorEvent(type: string, message: string): string {
  return formatEvent(undefined, { error: { message, type, param: null, code: type } });
}

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** An Anthropic `usage` object into `usage`: counts given replace the earlier ones (deltas are running totals). */
function takeAnthropicUsage(usage: TokenUsage, raw: unknown): void {
  if (!isPlainObject(raw)) return;
  usage.inputTokens = count(raw['input_tokens']) ?? usage.inputTokens;
  usage.outputTokens = count(raw['output_tokens']) ?? usage.outputTokens;
  usage.cacheReadTokens = count(raw['cache_read_input_tokens']) ?? usage.cacheReadTokens;
  usage.cacheWriteTokens = count(raw['cache_creation_input_tokens']) ?? usage.cacheWriteTokens;
}

/** An OpenAI usage object (Chat's prompt/completion or Responses' input/output): cached tokens apart. */
function takeOpenAiUsage(usage: TokenUsage, raw: unknown): void {
  if (!isPlainObject(raw)) return;
  const input = count(raw['prompt_tokens']) ?? count(raw['input_tokens']);
  const output = count(raw['completion_tokens']) ?? count(raw['output_tokens']);
  const details = raw['prompt_tokens_details'] ?? raw['input_tokens_details'];
  const cached = isPlainObject(details) ? (count(details['cached_tokens']) ?? 0) : 0;
  if (input !== undefined) {
    usage.inputTokens = Math.max(0, input - cached);
    usage.cacheReadTokens = cached;
  }
  if (output !== undefined) usage.outputTokens = output;
}

function errorOf(raw: unknown, fallbackStatus: number): StreamError {
  const error = isPlainObject(raw) ? raw : {};
  const type = typeof error['type'] === 'string' ? error['type'] : 'api_error';
  const message = typeof error['message'] === 'string' ? error['message'] : 'the provider reported an error';
  const status =
    type === 'overloaded_error'
      ? 529
      : type === 'rate_limit_error' || type === 'rate_limit_exceeded'
        ? 429
        : type === 'invalid_request_error'
          ? 400
          : fallbackStatus;
  return { status, type, message };
}

export const anthropicDialect: Dialect = {
  wire: 'anthropic',
  keepAlive: 'event: ping\ndata: {"type": "ping"}\n\n',
  errorBody(status, message, type) {
    return { type: 'error', error: { type: type ?? ANTHROPIC_TYPES[status] ?? 'api_error', message } };
  },
  earlyErrorEvent: anthropicErrorEvent,
  readAnswer(body) {
    if (!isPlainObject(body) || body['type'] !== 'message' || !Array.isArray(body['content']))
      return undefined;
    const usage = emptyUsage();
    takeAnthropicUsage(usage, body['usage']);
    return { usage, model: typeof body['model'] === 'string' ? body['model'] : undefined };
  },
  reader() {
    return streamReader((event, state) => {
      if (event.data === undefined) return 'pass';
      const data = parse(event.data);
      if (data === MALFORMED || !isPlainObject(data)) return 'malformed';
      switch (data['type']) {
        case 'message_start': {
          const message = data['message'];
          if (isPlainObject(message)) {
            takeAnthropicUsage(state.usage, message['usage']);
            if (typeof message['model'] === 'string') state.model = message['model'];
          }
          return 'hold';
        }
        case 'content_block_start':
          return 'content';
        case 'message_delta':
          takeAnthropicUsage(state.usage, data['usage']);
          return 'pass';
        case 'message_stop':
          return 'final';
        case 'error':
          state.error = errorOf(data['error'], 500);
          return 'error';
        default:
          return 'pass';
      }
    }, anthropicErrorEvent);
  },
};

export const chatDialect: Dialect = {
  wire: 'chat',
  keepAlive: ': keep-alive\n\n',
  errorBody(status, message, type) {
    const kind = type ?? OPENAI_TYPES[status] ?? 'server_error';
    return { error: { message, type: kind, param: null, code: kind } };
  },
  earlyErrorEvent: chatErrorEvent,
  readAnswer(body) {
    if (!isPlainObject(body) || !Array.isArray(body['choices'])) return undefined;
    const usage = emptyUsage();
    takeOpenAiUsage(usage, body['usage']);
    return { usage, model: typeof body['model'] === 'string' ? body['model'] : undefined };
  },
  reader(clientWantsUsage) {
    return streamReader((event, state) => {
      if (event.data === undefined) return 'pass';
      if (event.data.trim() === '[DONE]') return 'final';
      const data = parse(event.data);
      if (data === MALFORMED || !isPlainObject(data)) return 'malformed';
      if (data['error'] !== undefined) {
        state.error = errorOf(data['error'], 500);
        return 'error';
      }
      if (typeof data['model'] === 'string') state.model = data['model'];
      if (data['usage'] !== undefined && data['usage'] !== null) takeOpenAiUsage(state.usage, data['usage']);
      const choices = data['choices'];
      if (!Array.isArray(choices)) return 'malformed';
      // The usage chunk (no choices) the gateway asked for when the client did not.
      if (choices.length === 0 && !clientWantsUsage) return 'drop';
      return choices.some(carriesContent) ? 'content' : 'hold';
    }, chatErrorEvent);
  },
};

/** Whether a Chat chunk's choice carries some of the answer (not only the role or an empty string). */
function carriesContent(choice: unknown): boolean {
  if (!isPlainObject(choice)) return false;
  const delta = choice['delta'];
  if (!isPlainObject(delta)) return false;
  const text = delta['content'];
  if (typeof text === 'string' && text !== '') return true;
  if (Array.isArray(delta['tool_calls']) && delta['tool_calls'].length > 0) return true;
  const refusal = delta['refusal'];
  return typeof refusal === 'string' && refusal !== '';
}

export const responsesDialect: Dialect = {
  wire: 'responses',
  keepAlive: ': keep-alive\n\n',
  errorBody: chatDialect.errorBody,
  earlyErrorEvent(type, message) {
    return formatEvent('error', { type: 'error', code: type, message, param: null, sequence_number: 0 });
  },
  readAnswer(body) {
    if (!isPlainObject(body) || body['object'] !== 'response' || !Array.isArray(body['output']))
      return undefined;
    const usage = emptyUsage();
    takeOpenAiUsage(usage, body['usage']);
    return { usage, model: typeof body['model'] === 'string' ? body['model'] : undefined };
  },
  reader() {
    let sequence = -1;
    let response: Record<string, unknown> = {};
    return streamReader(
      (event, state) => {
        if (event.data === undefined) return 'pass';
        const data = parse(event.data);
        if (data === MALFORMED || !isPlainObject(data)) return 'malformed';
        if (typeof data['sequence_number'] === 'number') sequence = data['sequence_number'];
        const body = data['response'];
        if (isPlainObject(body)) {
          response = body;
          if (typeof body['model'] === 'string') state.model = body['model'];
          if (body['usage'] !== undefined && body['usage'] !== null)
            takeOpenAiUsage(state.usage, body['usage']);
        }
        switch (data['type']) {
          case 'response.created':
          case 'response.in_progress':
            return 'hold';
          case 'response.completed':
          case 'response.incomplete':
            return 'final';
          case 'response.failed': {
            const failure = isPlainObject(body) ? body['error'] : undefined;
            state.error = errorOf(
              isPlainObject(failure) ? { type: failure['code'], message: failure['message'] } : undefined,
              500,
            );
            return 'error';
          }
          case 'error':
            state.error = errorOf({ type: data['code'], message: data['message'] }, 500);
            return 'error';
          default:
            return typeof data['type'] === 'string' && data['type'].startsWith('response.output_item')
              ? 'content'
              : 'pass';
        }
      },
      (type, message) => {
        sequence += 1;
        return formatEvent('response.failed', {
          type: 'response.failed',
          sequence_number: sequence,
          response: { ...response, status: 'failed', error: { code: type, message } },
        });
      },
    );
  },
};

export const DIALECTS: Readonly<Record<Wire, Dialect>> = {
  anthropic: anthropicDialect,
  chat: chatDialect,
  responses: responsesDialect,
};
