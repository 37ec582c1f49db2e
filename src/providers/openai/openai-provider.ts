import { OUTPUT_TOOL_NAME } from '../../core/call-types.js';
import type OpenAI from 'openai';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import type {
  CallMessage,
  CallResult,
  JsonSchema,
  Provider,
  ProviderCall,
  TokenUsage,
  ToolCall,
} from '../../core/call-types.js';
import { SwitchboardError } from '../../core/errors.js';
import { endpointLabel } from '../endpoint.js';
import { normalizeBaseUrl, sameEndpoint, type BoundEndpoint } from '../../core/base-url.js';
import { extractJson } from '../../core/json-extract.js';
import { compileSchema, schemaErrors } from '../../core/json-schema.js';
import { parseJsonOr } from '../../core/safe-json.js';
import { costOf, DEFAULT_PRICES, type ModelPrice } from '../../core/prices.js';
import { watchedFetch, withIdleWatch } from '../idle-watch.js';
import {
  idleTimeoutError,
  loadOpenAiSdk,
  openAiError,
  streamCutError,
  timeoutError,
} from './openai-errors.js';
import { registerSecret } from '../../core/secrets.js';

/** How a JSON Schema is asked of the server. */
export type OpenAiStructuredOutput = 'json_schema' | 'tool';

const STRUCTURED_OUTPUT_MODES: readonly OpenAiStructuredOutput[] = ['json_schema', 'tool'];

// Local servers ignore the key, but the SDK refuses to start without one.
const PLACEHOLDER_API_KEY = 'switchboard-no-key';

const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

/** Which base URLs a spec may name: any (sent without a key unless bound), or only configured ones. */
export type InlineEndpoints = 'any' | 'listed';

export interface OpenAiProviderOptions {
  /**
   * The API key. Not needed for a local server with a custom `baseUrl`.
   * @default process.env.OPENAI_API_KEY
   */
  apiKey?: string;
  /**
   * Base URL of an OpenAI-compatible API, e.g. `http://127.0.0.1:11434/v1` for Ollama: the one
   * endpoint `apiKey` is sent to. A call may name another (`openai@http://…:model`).
   * @default process.env.OPENAI_BASE_URL, else `https://api.openai.com/v1`
   */
  baseUrl?: string;
  /**
   * Other base URLs a call may name, each with the key it gets (none unless given). A named URL that
   * is neither `baseUrl` nor listed here is called without any key.
   * @default []
   */
  endpoints?: readonly BoundEndpoint[];
  /**
   * `listed` refuses (`ENDPOINT_NOT_ALLOWED`) a call naming a base URL that is neither `baseUrl` nor in
   * `endpoints`: for servers, whose callers must not choose where requests go.
   * @default 'any'
   */
  inlineEndpoints?: InlineEndpoints;
  /**
   * Prices in USD per million tokens, matched by model-id prefix; merged over the built-in table.
   * @default DEFAULT_PRICES
   */
  prices?: Readonly<Record<string, ModelPrice>>;
  /** Wall-clock limit per call in milliseconds, unless the call sets its own. @default 600_000 */
  timeoutMs?: number;
  /**
   * How a schema is requested: `json_schema` sends `response_format`; `tool` forces a function call
   * named `emit_output`, for local servers without `response_format` support.
   * @default 'json_schema'
   */
  structuredOutput?: OpenAiStructuredOutput;
  /** The `fetch` the SDK uses; for proxies and tests. @default globalThis.fetch */
  fetch?: typeof fetch;
}

/** A call to the openai provider; `baseUrl` comes from a spec such as `openai@http://127.0.0.1:11434/v1:llama3.2`. */
export interface OpenAiProviderCall extends ProviderCall {
  baseUrl?: string;
}

export interface OpenAiProvider extends Provider {
  call(request: OpenAiProviderCall): Promise<CallResult>;
}

/**
 * A provider for OpenAI and any OpenAI-compatible server (vLLM, Ollama, llama.cpp), through the
 * official `openai` client: chat completions, streamed when the call sets `onText` (and no schema).
 */
export function createOpenAiProvider({
  apiKey = nonEmpty(process.env['OPENAI_API_KEY']),
  baseUrl = nonEmpty(process.env['OPENAI_BASE_URL']),
  prices,
  timeoutMs = 600_000,
  structuredOutput = 'json_schema',
  endpoints = [],
  inlineEndpoints = 'any',
  fetch: customFetch,
}: OpenAiProviderOptions = {}): OpenAiProvider {
  if (!(typeof timeoutMs === 'number' && Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw invalidOption('Expected "timeoutMs" to be a positive number of milliseconds');
  }
  if (!STRUCTURED_OUTPUT_MODES.includes(structuredOutput)) {
    throw invalidOption(
      `Expected "structuredOutput" to be one of ${STRUCTURED_OUTPUT_MODES.map((mode) => `"${mode}"`).join(', ')}`,
    );
  }
  if (apiKey !== undefined && (typeof apiKey !== 'string' || apiKey.trim() === '')) {
    throw invalidOption('Expected "apiKey" to be a non-empty string');
  }
  registerSecret(apiKey);
  if (baseUrl !== undefined) checkBaseUrl('baseUrl', baseUrl);
  checkEndpoints(endpoints);
  if (inlineEndpoints !== 'any' && inlineEndpoints !== 'listed') {
    throw invalidOption('Expected "inlineEndpoints" to be "any" or "listed"');
  }
  const home = baseUrl ?? DEFAULT_BASE_URL;
  const priceTable = prices === undefined ? DEFAULT_PRICES : { ...DEFAULT_PRICES, ...prices };
  const clients = new Map<string, OpenAI>();

  /** Where a call goes and the key bound to that endpoint: `apiKey` only to `baseUrl`. */
  function boundKey(target: string): string | undefined {
    if (sameEndpoint(target, home)) return apiKey;
    return endpoints.find((endpoint) => sameEndpoint(target, endpoint.url))?.apiKey;
  }

  function checkEndpoint(request: { baseUrl?: string | undefined }): void {
    const named = request.baseUrl;
    if (named === undefined) return;
    checkBaseUrl('baseUrl', named);
    if (inlineEndpoints === 'any') return;
    const listed =
      sameEndpoint(named, home) || endpoints.some((endpoint) => sameEndpoint(named, endpoint.url));
    if (!listed) {
      throw new SwitchboardError(
        'ENDPOINT_NOT_ALLOWED',
        `${endpointLabel(named, 'the base URL')} is not an endpoint this server calls`,
        {
          provider: 'openai',
          retryable: false,
          hint: 'name a role or write openai:<model>; the server operator may add the URL under providers.openai.endpoints in switchboard.yaml',
        },
      );
    }
  }

  /** The key bound to `target`; none for a local server without one; `AUTH` for OpenAI's own host without one. */
  function keyFor(target: string): string | undefined {
    const key = boundKey(target);
    if (key !== undefined || !isOpenAiHost(target)) return key;
    const bound = sameEndpoint(target, home);
    throw new SwitchboardError(
      'AUTH',
      bound
        ? 'no OpenAI API key: OPENAI_API_KEY is not set'
        : `no OpenAI API key is bound to ${endpointLabel(target, 'this base URL')}`,
      {
        provider: 'openai',
        retryable: false,
        hint: bound
          ? 'set OPENAI_API_KEY in the environment or .env, or give a baseUrl for a local server'
          : 'OPENAI_API_KEY goes only to OPENAI_BASE_URL; tie a key to this URL under providers.openai.endpoints',
      },
    );
  }

  async function clientFor(target: string): Promise<{ client: OpenAI; key: string }> {
    const key = keyFor(target) ?? PLACEHOLDER_API_KEY;
    const cacheKey = normalizeBaseUrl(target) ?? target;
    let client = clients.get(cacheKey);
    if (client === undefined) {
      const { default: OpenAiClient } = await loadOpenAiSdk();
      client = new OpenAiClient({
        apiKey: key,
        // Always given: the SDK would otherwise read OPENAI_BASE_URL itself.
        baseURL: target,
        // Switchboard's retry policy decides what to retry, with cooldowns and fallbacks; SDK retries
        // would hide attempts from the ledger and multiply the wait on a rate limit.
        maxRetries: 0,
        timeout: timeoutMs,
        // watchedFetch lets `idleTimeoutMs` see the response's headers and body chunks as they arrive.
        fetch: customFetch ?? watchedFetch,
      });
      clients.set(cacheKey, client);
    }
    return { client, key };
  }

  return {
    name: 'openai',
    async call(request) {
      const started = performance.now();
      if (typeof request.model !== 'string' || request.model.trim() === '') {
        throw invalidOption('Expected "model" to be a model id, e.g. gpt-4.1-mini or llama3.2');
      }
      if (typeof request.prompt !== 'string' || request.prompt.trim() === '') {
        throw new SwitchboardError('INVALID_INPUT', 'the prompt is empty', {
          hint: 'pass a prompt, or "-" to read standard input',
        });
      }
      const callTimeoutMs = request.timeoutMs ?? timeoutMs;
      if (!(typeof callTimeoutMs === 'number' && Number.isFinite(callTimeoutMs) && callTimeoutMs > 0)) {
        throw invalidOption('Expected "timeoutMs" to be a positive number of milliseconds');
      }
      checkEndpoint(request);
      if (request.schema !== undefined) compileSchema(request.schema);
      const target = request.baseUrl ?? baseUrl;
      const { client, key } = await clientFor(target ?? home);
      const warnings: string[] = [];
      const onText = typeof request.onText === 'function' ? request.onText : undefined;
      if (onText !== undefined && request.schema !== undefined) {
        warnings.push('streaming is not used with a schema');
      } else if (onText !== undefined && offersTools(request)) {
        warnings.push('streaming is not used with tools');
      }
      const streaming = onText !== undefined && request.schema === undefined && !offersTools(request);
      const errorContext = {
        baseUrl: target,
        timeoutMs: callTimeoutMs,
        abortSignal: request.abortSignal,
        apiKey: key,
      };
      const where = target ?? 'the OpenAI API';

      const response = await withIdleWatch(
        streaming ? undefined : request.idleTimeoutMs,
        (watch) => idleTimeoutError(where, watch.idleMs),
        async (): Promise<ChatCompletion> => {
          // A stream keeps its own idle watch over the chunks it parses.
          if (streaming) {
            return streamCompletion(client, buildStreamingBody(request, structuredOutput), {
              request,
              onText,
              timeoutMs: callTimeoutMs,
              where,
              errorContext,
            });
          }
          try {
            return await client.chat.completions.create(buildBody(request, structuredOutput), {
              timeout: callTimeoutMs,
              ...(request.abortSignal === undefined ? {} : { signal: request.abortSignal }),
            });
          } catch (error) {
            throw openAiError(error, errorContext);
          }
        },
      );
      return toResult(response, request, {
        started,
        warnings,
        priceTable,
        structuredOutput,
        where,
      });
    },
    endpoint(request) {
      return endpointLabel(request.baseUrl ?? baseUrl, DEFAULT_BASE_URL);
    },
    checkEndpoint,
    wireEndpoint(request) {
      checkEndpoint(request);
      const target = request.baseUrl ?? baseUrl ?? home;
      const key = keyFor(target);
      return {
        baseUrl: target.replace(/\/+$/, ''),
        headers: key === undefined ? {} : { authorization: `Bearer ${key}` },
      };
    },
    async close() {
      clients.clear();
    },
  };
}

function buildBody(
  request: OpenAiProviderCall,
  structuredOutput: OpenAiStructuredOutput,
): ChatCompletionCreateParamsNonStreaming {
  const messages: ChatCompletionMessageParam[] = [];
  if (request.system !== undefined && request.system !== '') {
    messages.push({ role: 'system', content: request.system });
  }
  messages.push({ role: 'user', content: request.prompt }, ...conversation(request.messages ?? []));
  const body: ChatCompletionCreateParamsNonStreaming = { model: request.model, messages };
  if (request.reasoning !== undefined) body.reasoning_effort = request.reasoning;
  if (offersTools(request)) {
    body.tools = (request.tools ?? []).map((tool) => ({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
    }));
    body.tool_choice = request.toolChoice === 'required' ? 'required' : 'auto';
  }
  if (request.schema === undefined) return body;
  if (structuredOutput === 'tool') {
    body.tools = [
      {
        type: 'function',
        function: {
          name: OUTPUT_TOOL_NAME,
          description: 'Give the answer as arguments matching this schema.',
          parameters: request.schema,
        },
      },
    ];
    body.tool_choice = { type: 'function', function: { name: OUTPUT_TOOL_NAME } };
  } else {
    // strict: true would reject most user schemas (it needs every property required and no extras).
    body.response_format = {
      type: 'json_schema',
      json_schema: { name: 'output', schema: request.schema, strict: false },
    };
  }
  return body;
}

function offersTools(request: ProviderCall): boolean {
  return request.tools !== undefined && request.tools.length > 0;
}

/** The messages after the prompt as chat messages: `tool_calls` on the assistant's, one `role: 'tool'` per result. */
function conversation(messages: readonly CallMessage[]): ChatCompletionMessageParam[] {
  return messages.flatMap((message): ChatCompletionMessageParam[] => {
    if (message.role === 'user') return [{ role: 'user', content: message.text }];
    if (message.role === 'tool') {
      return message.results.map((result) => ({
        role: 'tool',
        tool_call_id: result.id,
        // Chat completions have no error flag for a tool result; the text says so.
        content: result.isError === true ? `Error: ${result.content}` : result.content,
      }));
    }
    const calls = message.toolCalls ?? [];
    return [
      {
        role: 'assistant',
        content: message.text === '' && calls.length > 0 ? null : message.text,
        ...(calls.length === 0
          ? {}
          : {
              tool_calls: calls.map((call) => ({
                id: call.id,
                type: 'function' as const,
                function: { name: call.name, arguments: JSON.stringify(call.input) },
              })),
            }),
      },
    ];
  });
}

/** The answer's function calls, their arguments parsed (`{}` when they are not a JSON object). */
function toolCallsOf(message: ChatCompletion['choices'][number]['message'], warnings: string[]): ToolCall[] {
  return (message.tool_calls ?? []).flatMap((call) => {
    if (call.type !== 'function') return [];
    const input = parseJsonOr(call.function.arguments, undefined);
    const object = typeof input === 'object' && input !== null && !Array.isArray(input);
    if (!object) warnings.push(`the arguments of the ${call.function.name} call are not a JSON object`);
    return [
      {
        id: call.id,
        name: call.function.name,
        input: object ? (input as Record<string, unknown>) : {},
      },
    ];
  });
}

function buildStreamingBody(
  request: OpenAiProviderCall,
  structuredOutput: OpenAiStructuredOutput,
): ChatCompletionCreateParamsStreaming {
  return {
    ...buildBody(request, structuredOutput),
    stream: true,
    // Without it the stream carries no token counts.
    stream_options: { include_usage: true },
  };
}

interface StreamContext {
  request: OpenAiProviderCall;
  onText: (delta: string) => void;
  timeoutMs: number;
  where: string;
  errorContext: Parameters<typeof openAiError>[1];
}

/**
 * Streams a completion, handing each text delta to `onText`, and assembles the chunks into the
 * `ChatCompletion` the non-streaming path would have returned. The SDK's `timeout` stops at the
 * response headers, so the wall-clock and idle limits over the body are kept here.
 */
async function streamCompletion(
  client: OpenAI,
  body: ChatCompletionCreateParamsStreaming,
  { request, onText, timeoutMs, where, errorContext }: StreamContext,
): Promise<ChatCompletion> {
  const local = new AbortController();
  const signal =
    request.abortSignal === undefined ? local.signal : AbortSignal.any([local.signal, request.abortSignal]);
  // Set when one of our own timers stopped the stream; the SDK then sees only an abort.
  let stopped: SwitchboardError | undefined;
  const stop = (error: SwitchboardError) => {
    stopped ??= error;
    local.abort();
  };
  const deadline = setTimeout(() => stop(timeoutError(where, timeoutMs)), timeoutMs);
  // By the monotonic clock too: on a starved event loop a whole buffered stream is read before the
  // timer runs, and no text may reach the caller past the deadline.
  const endsAt = performance.now() + timeoutMs;
  const passed = (): boolean => {
    if (stopped === undefined && performance.now() >= endsAt) stop(timeoutError(where, timeoutMs));
    return stopped !== undefined;
  };
  const idleMs = request.idleTimeoutMs;
  let idle: ReturnType<typeof setTimeout> | undefined;
  const touch = () => {
    if (idleMs === undefined) return;
    clearTimeout(idle);
    idle = setTimeout(() => stop(idleTimeoutError(where, idleMs)), idleMs);
  };

  let text = '';
  let id = '';
  let created = 0;
  let model = '';
  let finishReason: ChatCompletion.Choice['finish_reason'] | undefined;
  let usage: ChatCompletion['usage'];
  try {
    touch();
    let stream: AsyncIterable<ChatCompletionChunk>;
    try {
      stream = await client.chat.completions.create(body, { timeout: timeoutMs, signal });
    } catch (error) {
      throw stopped ?? openAiError(error, errorContext);
    }
    try {
      for await (const chunk of stream) {
        touch();
        if (typeof chunk.id === 'string' && chunk.id !== '') id = chunk.id;
        if (typeof chunk.created === 'number') created = chunk.created;
        if (typeof chunk.model === 'string' && chunk.model !== '') model = chunk.model;
        if (chunk.usage !== undefined && chunk.usage !== null) usage = chunk.usage;
        const choice = Array.isArray(chunk.choices)
          ? chunk.choices.find((entry) => (entry.index ?? 0) === 0)
          : undefined;
        if (choice === undefined) continue;
        if (choice.finish_reason !== null && choice.finish_reason !== undefined) {
          finishReason = choice.finish_reason;
        }
        const delta = choice.delta?.content;
        if (typeof delta === 'string' && delta !== '') {
          if (passed()) throw stopped;
          text += delta;
          deliver(onText, delta, local);
        }
      }
    } catch (error) {
      if (error instanceof CallbackError) throw error.original;
      throw stopped ?? openAiError(error, errorContext);
    }
  } finally {
    clearTimeout(deadline);
    clearTimeout(idle);
  }
  // The SDK ends the iteration quietly when the request is aborted, so a stop is noticed here.
  if (passed()) throw stopped;
  if (request.abortSignal?.aborted === true) throw openAiError(request.abortSignal.reason, errorContext);
  if (finishReason === undefined) throw streamCutError(where);
  return {
    id,
    object: 'chat.completion',
    created,
    model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: text, refusal: null },
        finish_reason: finishReason,
        logprobs: null,
      },
    ],
    ...(usage === undefined ? {} : { usage }),
  };
}

/** Wraps an error thrown by the caller's `onText`, so it is rethrown as is rather than mapped. */
class CallbackError extends Error {
  readonly original: unknown;
  constructor(original: unknown) {
    super('onText threw');
    this.original = original;
  }
}

function deliver(onText: (delta: string) => void, delta: string, local: AbortController): void {
  try {
    onText(delta);
  } catch (error) {
    local.abort();
    throw new CallbackError(error);
  }
}

interface ResultContext {
  started: number;
  warnings: string[];
  priceTable: Readonly<Record<string, ModelPrice>>;
  structuredOutput: OpenAiStructuredOutput;
  where: string;
}

function toResult(response: ChatCompletion, request: OpenAiProviderCall, context: ResultContext): CallResult {
  const { warnings } = context;
  const choice = Array.isArray(response.choices) ? response.choices[0] : undefined;
  if (choice === undefined) {
    // A 200 that is not an answer (a proxy's JSON): a provider failure, retried, then fallen back from.
    throw new SwitchboardError('PROVIDER_ERROR', `${context.where} answered 200 without any choice`, {
      provider: 'openai',
      retryable: true,
      hint: 'check that the base URL points at an OpenAI-compatible /v1 endpoint',
    });
  }
  if (choice.finish_reason === 'length') warnings.push('the answer was cut off at the token limit');
  if (choice.finish_reason === 'content_filter') warnings.push('the answer was cut by a content filter');
  const modelUsed =
    typeof response.model === 'string' && response.model !== '' ? response.model : request.model;
  const usage = tokenUsage(response, warnings);
  const costUsd = costOf(modelUsed, usage, context.priceTable);
  if (costUsd === null) warnings.push(`no price for model ${modelUsed}; cost unknown`);
  const content = choice.message.content ?? '';

  let text = content;
  let structured: unknown;
  if (request.schema !== undefined) {
    const raw =
      context.structuredOutput === 'tool' ? toolArguments(choice.message, content, warnings) : content;
    structured = validated(raw, request.schema, { modelUsed, usage, costUsd });
    text = JSON.stringify(structured);
  }

  const toolCalls = offersTools(request) ? toolCallsOf(choice.message, warnings) : [];
  const durationMs = Math.round(performance.now() - context.started);
  const provider = `openai:${request.model}`;
  return {
    success: true,
    text,
    ...(request.schema === undefined ? {} : { structured }),
    ...(toolCalls.length === 0 ? {} : { toolCalls }),
    provider,
    modelRequested: request.model,
    modelUsed,
    durationMs,
    usage,
    costUsd,
    rateLimited: false,
    attempts: [{ provider, model: request.model, durationMs }],
    ...(typeof choice.finish_reason === 'string' ? { finishReason: choice.finish_reason } : {}),
    warnings,
  };
}

function tokenUsage(response: ChatCompletion, warnings: string[]): TokenUsage {
  const usage = response.usage;
  if (usage === undefined || usage === null) {
    warnings.push('the server reported no token usage; counts are 0');
    return { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
  }
  const cached = count(usage.prompt_tokens_details?.cached_tokens);
  return {
    // OpenAI counts cached tokens inside prompt_tokens; Switchboard keeps them apart, as Anthropic does.
    inputTokens: Math.max(0, count(usage.prompt_tokens) - cached),
    outputTokens: count(usage.completion_tokens),
    cacheReadTokens: cached,
    cacheWriteTokens: 0,
  };
}

function count(value: number | null | undefined): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

/** The forced tool call's arguments; the text when a server ignored `tool_choice`. */
function toolArguments(
  message: ChatCompletion['choices'][number]['message'],
  content: string,
  warnings: string[],
): string {
  for (const call of message.tool_calls ?? []) {
    if (call.type === 'function' && call.function.name === OUTPUT_TOOL_NAME) return call.function.arguments;
  }
  warnings.push(`the server did not call ${OUTPUT_TOOL_NAME}; the JSON was read from the text`);
  return content;
}

/**
 * The JSON value in `raw` when it matches the schema; otherwise SCHEMA, so the caller can re-ask. The
 * error carries what the answer was billed (`spent`), so call() records its cost and tokens.
 */
function validated(
  raw: string,
  schema: JsonSchema,
  spent: { modelUsed: string; usage: TokenUsage; costUsd: number | null },
): unknown {
  const extracted = extractJson(raw);
  if (!extracted.ok) {
    throw new SwitchboardError('SCHEMA', `the answer holds no JSON value (${extracted.reason})`, {
      provider: 'openai',
      hint: 'ask again with the schema errors, or try structuredOutput "tool" for servers without response_format',
      details: { raw, errors: [extracted.reason], ...spent },
    });
  }
  const errors = schemaErrors(schema, extracted.value);
  if (errors.length > 0) {
    throw new SwitchboardError('SCHEMA', `the answer does not match the schema: ${errors.join('; ')}`, {
      provider: 'openai',
      hint: 'ask again with the schema errors',
      details: { raw, errors, ...spent },
    });
  }
  return extracted.value;
}

function isOpenAiHost(target: string): boolean {
  return new URL(target).hostname.toLowerCase() === 'api.openai.com';
}

function checkEndpoints(endpoints: readonly BoundEndpoint[]): void {
  if (!Array.isArray(endpoints)) throw invalidOption('Expected "endpoints" to be a list of { url, apiKey }');
  for (const endpoint of endpoints) {
    if (typeof endpoint?.url !== 'string' || normalizeBaseUrl(endpoint.url) === undefined) {
      throw invalidOption(
        `Expected each of "endpoints" to have an http(s) "url" without user, password or query, got ${JSON.stringify(endpoint?.url)}`,
      );
    }
    if (
      endpoint.apiKey !== undefined &&
      (typeof endpoint.apiKey !== 'string' || endpoint.apiKey.trim() === '')
    ) {
      throw invalidOption(`Expected the "apiKey" of endpoint ${endpoint.url} to be a non-empty string`);
    }
    registerSecret(endpoint.apiKey);
  }
}

function checkBaseUrl(name: string, value: string): void {
  let url: URL | undefined;
  try {
    url = typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw invalidOption(
      `Expected "${name}" to be an http(s) URL such as http://127.0.0.1:11434/v1, got ${JSON.stringify(value)}`,
    );
  }
}

function invalidOption(message: string): SwitchboardError {
  return new SwitchboardError('INVALID_INPUT', message, { provider: 'openai', retryable: false });
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}
