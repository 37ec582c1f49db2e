import { OUTPUT_TOOL_NAME, THINKING_BUDGET_TOKENS } from '../../core/call-types.js';
import type Anthropic from '@anthropic-ai/sdk';
import type {
  CallMessage,
  CallResult,
  JsonSchema,
  Provider,
  ProviderCall,
  ThinkingBlock,
  TokenUsage,
  ToolCall,
} from '../../core/call-types.js';
import { SwitchboardError } from '../../core/errors.js';
import { endpointLabel, refuseInlineBaseUrl } from '../endpoint.js';
import { extractJson } from '../../core/json-extract.js';
import { compileSchema, schemaErrors } from '../../core/json-schema.js';
import { costOf, DEFAULT_PRICES, type ModelPrice } from '../../core/prices.js';
import {
  abortedError,
  asAnthropicError,
  cutOffError,
  loadAnthropicSdk,
  redactError,
  timeoutError,
  type AnthropicErrorContext,
} from './anthropic-errors.js';
import { registerSecret } from '../../core/secrets.js';
import { watchedFetch, withIdleWatch } from '../idle-watch.js';

const PROVIDER = 'anthropic';

/** Receives each piece of the answer's text as it arrives. */
type TextListener = NonNullable<ProviderCall['onText']>;

/** The text listener of a call that is streamed: one with `onText`, without a schema or tools. */
function streamListener(request: ProviderCall): TextListener | undefined {
  return request.schema === undefined && !offersTools(request) && typeof request.onText === 'function'
    ? request.onText
    : undefined;
}

function offersTools(request: ProviderCall): boolean {
  return request.tools !== undefined && request.tools.length > 0;
}

export interface AnthropicProviderOptions {
  /**
   * The Anthropic API key. When there is none, every call fails with `AUTH` before sending anything.
   * @default process.env.ANTHROPIC_API_KEY
   */
  apiKey?: string;
  /**
   * Base URL of the Messages API, e.g. a `switchboard sim` address.
   * @default process.env.ANTHROPIC_BASE_URL, else the SDK's default (https://api.anthropic.com)
   */
  baseUrl?: string;
  /**
   * Prices (USD per million tokens) by model id or id prefix, added to and overriding the built-in table.
   * @default DEFAULT_PRICES from core/prices
   */
  prices?: Readonly<Record<string, ModelPrice>>;
  /** Wall-clock limit per call in milliseconds; a call's own `timeoutMs` wins. @default 600_000 */
  timeoutMs?: number;
  /** `max_tokens` of every request: the longest answer, in tokens. @default 4096 */
  maxTokens?: number;
}

/**
 * The Anthropic Messages API through the official SDK: one request per call, streamed when the call
 * has `onText` (and no schema), no retries of its own, structured output through a forced
 * `emit_output` tool.
 */
export function createAnthropicProvider({
  apiKey = process.env['ANTHROPIC_API_KEY'],
  baseUrl = process.env['ANTHROPIC_BASE_URL'],
  prices,
  timeoutMs = 600_000,
  maxTokens = 4096,
}: AnthropicProviderOptions = {}): Provider {
  if (apiKey !== undefined && typeof apiKey !== 'string') {
    throw new SwitchboardError('INVALID_INPUT', 'Expected "apiKey" to be a string');
  }
  registerSecret(apiKey);
  if (baseUrl !== undefined && baseUrl !== '' && !URL.canParse(baseUrl)) {
    throw new SwitchboardError(
      'INVALID_INPUT',
      `Expected "baseUrl" to be a URL, got ${JSON.stringify(baseUrl)}`,
      {
        hint: 'write it like http://127.0.0.1:8080 or https://api.anthropic.com',
      },
    );
  }
  if (prices !== undefined && (typeof prices !== 'object' || prices === null || Array.isArray(prices))) {
    throw new SwitchboardError('INVALID_INPUT', 'Expected "prices" to be an object of model → price');
  }
  checkPositive('timeoutMs', timeoutMs);
  if (!(Number.isInteger(maxTokens) && maxTokens > 0)) {
    throw new SwitchboardError(
      'INVALID_INPUT',
      'Expected "maxTokens" to be a positive whole number of tokens',
    );
  }
  const key = apiKey ?? '';
  const priceTable = prices === undefined ? DEFAULT_PRICES : { ...DEFAULT_PRICES, ...prices };
  let client: Anthropic | undefined;

  const connect = async (): Promise<Anthropic> => {
    const { default: AnthropicClient } = await loadAnthropicSdk();
    client ??= new AnthropicClient({
      apiKey: key,
      ...(baseUrl === undefined || baseUrl === '' ? {} : { baseURL: baseUrl }),
      // Switchboard's retry policy decides what to retry, with cooldowns and fallbacks across
      // providers; SDK retries would hide attempts from the ledger and multiply the wait.
      maxRetries: 0,
      timeout: timeoutMs,
      // Lets `idleTimeoutMs` see the response's headers and body chunks as they arrive.
      fetch: watchedFetch,
    });
    return client;
  };

  return {
    name: PROVIDER,
    async call(request) {
      checkEndpoint(request);
      checkRequest(request);
      if (key === '') throw missingKey();
      // Once made, the client is used at once: awaiting the SDK's import again costs every call a turn.
      const anthropic = client ?? (await connect());
      const callTimeoutMs = request.timeoutMs ?? timeoutMs;
      const errorContext: AnthropicErrorContext = {
        apiKey: key,
        baseUrl: anthropic.baseURL,
        timeoutMs: callTimeoutMs,
      };
      const onText = streamListener(request);
      const started = performance.now();
      const message = await withIdleWatch(
        request.idleTimeoutMs,
        (watch) => watch.error(PROVIDER, endpointLabel(anthropic.baseURL, 'the Anthropic API')),
        async () => {
          if (onText !== undefined) {
            return streamMessage(anthropic, request, { maxTokens, onText, errorContext });
          }
          try {
            return await anthropic.messages.create(requestBody(request, maxTokens), {
              timeout: callTimeoutMs,
              ...(request.abortSignal === undefined ? {} : { signal: request.abortSignal }),
            });
          } catch (error) {
            throw asAnthropicError(error, errorContext);
          }
        },
      );
      const durationMs = Math.round(performance.now() - started);
      try {
        return toResult(message, request, {
          durationMs,
          prices: priceTable,
          maxTokens: maxTokensFor(request, maxTokens),
          streamed: onText !== undefined,
        });
      } catch (error) {
        throw asAnthropicError(error, errorContext);
      }
    },
    endpoint() {
      return endpointLabel(baseUrl, 'https://api.anthropic.com');
    },
    checkEndpoint,
    wireEndpoint(request, clientCredential) {
      checkEndpoint(request);
      const base = (baseUrl === undefined || baseUrl === '' ? 'https://api.anthropic.com' : baseUrl).replace(
        /\/+$/,
        '',
      );
      if (clientCredential !== undefined) {
        const value =
          clientCredential.header === 'authorization'
            ? `Bearer ${clientCredential.value}`
            : clientCredential.value;
        return { baseUrl: base, headers: { [clientCredential.header]: value } };
      }
      if (key === '') throw missingKey();
      return { baseUrl: base, headers: { 'x-api-key': key } };
    },
    async close() {
      // The connection pool is the process's (see http-dispatcher.ts), shared by every client; nothing to release.
      client = undefined;
    },
  };
}

function missingKey(): SwitchboardError {
  return new SwitchboardError('AUTH', 'no Anthropic API key is set', {
    provider: PROVIDER,
    hint: 'set ANTHROPIC_API_KEY in the environment or .env, or pass the apiKey option',
    retryable: false,
  });
}

/** The key goes only to the configured base URL: a spec cannot name another. */
function checkEndpoint(request: Pick<ProviderCall, 'baseUrl'>): void {
  refuseInlineBaseUrl(PROVIDER, request, 'ANTHROPIC_BASE_URL');
}

function checkPositive(name: string, value: unknown): void {
  if (!(typeof value === 'number' && Number.isFinite(value) && value > 0)) {
    throw new SwitchboardError('INVALID_INPUT', `Expected "${name}" to be a positive number of milliseconds`);
  }
}

function checkRequest(request: ProviderCall): void {
  if (typeof request.prompt !== 'string' || request.prompt.trim() === '') {
    throw new SwitchboardError('INVALID_INPUT', 'the prompt is empty', {
      hint: 'pass a prompt, or "-" to read standard input',
    });
  }
  if (typeof request.model !== 'string' || request.model.trim() === '') {
    throw new SwitchboardError('INVALID_INPUT', 'no model given for anthropic', {
      hint: 'write anthropic:<model>, e.g. anthropic:claude-sonnet-4-5',
    });
  }
  if (request.timeoutMs !== undefined) checkPositive('timeoutMs', request.timeoutMs);
  if (request.schema !== undefined) compileSchema(request.schema);
}

/**
 * The tool's `input_schema` must describe an object; any other schema (an array, a string) is
 * wrapped in `{ value }` and unwrapped from the answer.
 */
function toolSchema(schema: JsonSchema): { inputSchema: Anthropic.Tool.InputSchema; wrapped: boolean } {
  if (schema['type'] === 'object') {
    return { inputSchema: schema as Anthropic.Tool.InputSchema, wrapped: false };
  }
  return {
    inputSchema: { type: 'object', properties: { value: schema }, required: ['value'] },
    wrapped: true,
  };
}

/** The output cap of a request with extended thinking: thinking and answer together. */
const THINKING_OUTPUT_CAP = 64_000;
/** Room for the answer beside a thinking budget. */
const ANSWER_HEADROOM = 4_096;

/**
 * `max_tokens` of a request: the provider's setting, raised with `reasoning` to fit the thinking
 * budget and an answer after it (the API refuses a budget at or above `max_tokens`).
 */
function maxTokensFor(request: ProviderCall, maxTokens: number): number {
  if (request.reasoning === undefined) return maxTokens;
  const budget = THINKING_BUDGET_TOKENS[request.reasoning];
  return Math.min(THINKING_OUTPUT_CAP, Math.max(maxTokens, budget + ANSWER_HEADROOM));
}

function requestBody(request: ProviderCall, maxTokens: number): Anthropic.MessageCreateParamsNonStreaming {
  const body: Anthropic.MessageCreateParamsNonStreaming = {
    model: request.model,
    max_tokens: maxTokensFor(request, maxTokens),
    messages: conversation(request.prompt, request.messages ?? []),
  };
  if (request.system !== undefined) body.system = request.system;
  if (request.tools !== undefined && request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      input_schema: tool.inputSchema as Anthropic.Tool.InputSchema,
    }));
    // `any`: the model must call one of the tools.
    body.tool_choice = { type: request.toolChoice === 'required' ? 'any' : 'auto' };
  }
  if (request.schema !== undefined) {
    body.tools = [
      {
        name: OUTPUT_TOOL_NAME,
        description:
          'Emit the final answer. Call this tool exactly once, with the complete answer as its input, matching the schema.',
        input_schema: toolSchema(request.schema).inputSchema,
      },
    ];
    body.tool_choice = { type: 'tool', name: OUTPUT_TOOL_NAME };
  }
  if (request.reasoning !== undefined) {
    body.thinking = { type: 'enabled', budget_tokens: THINKING_BUDGET_TOKENS[request.reasoning] };
    // The API refuses thinking beside a forced tool (`any`, or one by name): the model is asked, not
    // made, to call it; an answer written as JSON text is read as the structured value.
    if (body.tool_choice !== undefined && body.tool_choice.type !== 'auto')
      body.tool_choice = { type: 'auto' };
  }
  return body;
}

/**
 * The prompt and the messages after it as Messages API turns: the model's tool calls as `tool_use`
 * blocks, their results as `tool_result` blocks in the user turn that follows. Consecutive user-side
 * messages (results, then a user's words) become one turn, results first, as the API wants them.
 */
function conversation(prompt: string, messages: readonly CallMessage[]): Anthropic.MessageParam[] {
  const turns: Anthropic.MessageParam[] = [{ role: 'user', content: prompt }];
  for (const message of messages) {
    if (message.role === 'assistant') {
      // Thinking first, unchanged: the API checks its signature and wants it before the tool calls.
      const content: Anthropic.ContentBlockParam[] = [...(message.thinking ?? [])];
      if (message.text !== '') content.push({ type: 'text', text: message.text });
      for (const call of message.toolCalls ?? []) {
        content.push({ type: 'tool_use', id: call.id, name: call.name, input: call.input });
      }
      // The API refuses an empty turn; an answer with neither text nor calls has nothing to repeat.
      if (content.length > 0) turns.push({ role: 'assistant', content });
      continue;
    }
    const blocks: Anthropic.ContentBlockParam[] =
      message.role === 'tool'
        ? message.results.map((result) => ({
            type: 'tool_result',
            tool_use_id: result.id,
            content: result.content,
            ...(result.isError === true ? { is_error: true } : {}),
          }))
        : [{ type: 'text', text: message.text }];
    const last = turns.at(-1);
    if (last?.role !== 'user') turns.push({ role: 'user', content: blocks });
    else if (typeof last.content === 'string')
      last.content = [{ type: 'text', text: last.content }, ...blocks];
    else last.content.push(...blocks);
  }
  return turns;
}

interface StreamContext {
  maxTokens: number;
  onText: TextListener;
  errorContext: AnthropicErrorContext;
}

/**
 * Sends the call as a stream, hands each text delta to `onText` as it arrives, and puts the events
 * back together into the message a non-streaming call would have returned. `timeoutMs` limits the
 * whole stream, not only the wait for the headers.
 */
async function streamMessage(
  anthropic: Anthropic,
  request: ProviderCall,
  { maxTokens, onText, errorContext }: StreamContext,
): Promise<Anthropic.Message> {
  const timer = new AbortController();
  let timedOut = false;
  const timeout = setTimeout(() => {
    timedOut = true;
    timer.abort();
  }, errorContext.timeoutMs);
  // By the monotonic clock too: on a starved event loop a whole buffered stream is read before the
  // timer runs, and no text may reach the caller past the deadline.
  const endsAt = performance.now() + errorContext.timeoutMs;
  const checkDeadline = (): void => {
    if (timedOut || performance.now() < endsAt) return;
    timedOut = true;
    timer.abort();
    throw timeoutError(errorContext);
  };
  const signal =
    request.abortSignal === undefined ? timer.signal : AbortSignal.any([request.abortSignal, timer.signal]);
  // The SDK ends a stream quietly when its signal aborts, so how the stream ended is checked here.
  const stopped = (cause?: unknown) =>
    timedOut
      ? timeoutError(errorContext, cause)
      : request.abortSignal?.aborted === true
        ? abortedError(cause)
        : undefined;
  let message: Anthropic.Message | undefined;
  let finished = false;
  try {
    const events = await anthropic.messages.create(
      { ...requestBody(request, maxTokens), stream: true },
      { timeout: errorContext.timeoutMs, signal },
    );
    for await (const event of events) {
      switch (event.type) {
        case 'message_start':
          message = { ...event.message, content: [], usage: { ...event.message.usage } };
          break;
        case 'content_block_start':
          message?.content.push({ ...event.content_block } as Anthropic.ContentBlock);
          break;
        case 'content_block_delta': {
          const open = message?.content[event.index];
          if (event.delta.type === 'thinking_delta' && open?.type === 'thinking')
            open.thinking += event.delta.thinking;
          if (event.delta.type === 'signature_delta' && open?.type === 'thinking')
            open.signature += event.delta.signature;
          if (event.delta.type !== 'text_delta') break;
          const block = message?.content[event.index];
          if (block?.type === 'text') block.text += event.delta.text;
          if (event.delta.text === '') break;
          checkDeadline();
          onText(event.delta.text);
          break;
        }
        case 'message_delta':
          if (message === undefined) break;
          message.stop_reason = event.delta.stop_reason;
          message.stop_sequence = event.delta.stop_sequence;
          addDeltaUsage(message.usage, event.usage);
          break;
        case 'message_stop':
          finished = true;
          break;
        default:
          break;
      }
    }
  } catch (error) {
    const stop = stopped(error);
    throw stop === undefined ? asAnthropicError(error, errorContext) : redactError(stop, errorContext.apiKey);
  } finally {
    clearTimeout(timeout);
  }
  if (!timedOut && performance.now() >= endsAt) timedOut = true;
  const stop = stopped();
  if (stop !== undefined) throw stop;
  if (!finished || message === undefined) throw cutOffError();
  return message;
}

/** `message_delta` carries cumulative counts; those it gives replace the ones from `message_start`. */
function addDeltaUsage(
  usage: Anthropic.Usage,
  delta: Partial<Anthropic.MessageDeltaUsage> | undefined,
): void {
  if (delta === undefined || delta === null) return;
  if (typeof delta.output_tokens === 'number') usage.output_tokens = delta.output_tokens;
  if (typeof delta.input_tokens === 'number') usage.input_tokens = delta.input_tokens;
  if (typeof delta.cache_read_input_tokens === 'number') {
    usage.cache_read_input_tokens = delta.cache_read_input_tokens;
  }
  if (typeof delta.cache_creation_input_tokens === 'number') {
    usage.cache_creation_input_tokens = delta.cache_creation_input_tokens;
  }
}

interface ResultContext {
  durationMs: number;
  prices: Readonly<Record<string, ModelPrice>>;
  maxTokens: number;
  /** Whether the answer came as a stream. */
  streamed: boolean;
}

/**
 * A 200 whose body is not a Messages answer (a proxy's HTML page, which the SDK hands over as a string,
 * or unrelated JSON) is a provider failure, retried and then fallen back from: never an empty success
 * that costs nothing.
 */
function checkMessageShape(message: unknown): asserts message is Anthropic.Message {
  const body = message as Partial<Anthropic.Message> | null;
  const shaped =
    typeof body === 'object' &&
    body !== null &&
    body.type === 'message' &&
    Array.isArray(body.content) &&
    typeof body.usage === 'object' &&
    body.usage !== null;
  if (shaped) return;
  const seen = typeof message === 'string' ? 'a text or HTML page' : 'JSON that is not a message';
  throw new SwitchboardError('PROVIDER_ERROR', `anthropic answered 200 with ${seen}, not a message`, {
    provider: PROVIDER,
    retryable: true,
    hint: 'check ANTHROPIC_BASE_URL: a proxy or portal in the way answers in its place',
  });
}

function toResult(message: Anthropic.Message, request: ProviderCall, context: ResultContext): CallResult {
  checkMessageShape(message);
  const spec = `${PROVIDER}:${request.model}`;
  const usage = usageOf(message.usage);
  const modelUsed = typeof message.model === 'string' && message.model !== '' ? message.model : request.model;
  const costUsd = costOf(modelUsed, usage, context.prices);
  const warnings: string[] = [];
  if (costUsd === null) warnings.push(`no price for model ${modelUsed}; cost unknown`);
  if (request.schema !== undefined && request.onText !== undefined) {
    warnings.push('streaming is not used with a schema');
  } else if (offersTools(request) && request.onText !== undefined) {
    warnings.push('streaming is not used with tools');
  }
  if (message.stop_reason === 'max_tokens') {
    warnings.push(`the answer stopped at the maxTokens limit (${context.maxTokens}); it may be cut off`);
  }
  const text = (message.content ?? [])
    .flatMap((block) => (block.type === 'text' ? [block.text] : []))
    .join('');
  const result: CallResult = {
    success: true,
    text,
    provider: spec,
    modelRequested: request.model,
    modelUsed,
    durationMs: context.durationMs,
    usage,
    costUsd,
    rateLimited: false,
    attempts: [{ provider: spec, model: request.model, durationMs: context.durationMs }],
    ...(typeof message.stop_reason === 'string' ? { finishReason: message.stop_reason } : {}),
    warnings,
  };
  const toolCalls = offersTools(request) ? toolCallsOf(message) : [];
  if (toolCalls.length > 0) result.toolCalls = toolCalls;
  const thinking = thinkingOf(message);
  if (thinking.length > 0) result.thinking = thinking;
  if (request.schema === undefined) return result;

  const structured = structuredValue(message, request.schema, text);
  const failure = (errors: string[], raw: string, reason: string): SwitchboardError =>
    new SwitchboardError('SCHEMA', `anthropic answered ${reason}`, {
      provider: PROVIDER,
      hint:
        message.stop_reason === 'max_tokens'
          ? `the answer was cut off at maxTokens (${context.maxTokens}); raise maxTokens`
          : 're-ask with the errors, or simplify the schema',
      details: { raw, errors, modelUsed, usage, costUsd },
    });
  if (!structured.ok) throw failure([structured.reason], structured.raw, 'without JSON output');
  const errors = schemaErrors(request.schema, structured.value);
  if (errors.length > 0) throw failure(errors, structured.raw, 'with output that does not match the schema');
  result.structured = structured.value;
  result.text = JSON.stringify(structured.value);
  return result;
}

type StructuredValue = { ok: true; value: unknown; raw: string } | { ok: false; reason: string; raw: string };

/** The forced tool's input, else JSON the model wrote as text despite the forced tool. */
function structuredValue(message: Anthropic.Message, schema: JsonSchema, text: string): StructuredValue {
  const call = (message.content ?? []).find(
    (block): block is Anthropic.ToolUseBlock => block.type === 'tool_use' && block.name === OUTPUT_TOOL_NAME,
  );
  if (call !== undefined) {
    const input = call.input as unknown;
    const raw = JSON.stringify(input) ?? '';
    if (!toolSchema(schema).wrapped) return { ok: true, value: input, raw };
    if (typeof input === 'object' && input !== null && 'value' in input) {
      return { ok: true, value: (input as { value: unknown }).value, raw };
    }
    return { ok: false, reason: `the ${OUTPUT_TOOL_NAME} input has no "value"`, raw };
  }
  const extracted = extractJson(text);
  return extracted.ok
    ? { ok: true, value: extracted.value, raw: text }
    : { ok: false, reason: extracted.reason, raw: text };
}

/** The answer's thinking blocks, as given. */
function thinkingOf(message: Anthropic.Message): ThinkingBlock[] {
  return (message.content ?? []).flatMap((block): ThinkingBlock[] => {
    if (block.type === 'thinking') {
      return [{ type: 'thinking', thinking: block.thinking, signature: block.signature }];
    }
    return block.type === 'redacted_thinking' ? [{ type: 'redacted_thinking', data: block.data }] : [];
  });
}

/** The answer's `tool_use` blocks as tool calls. */
function toolCallsOf(message: Anthropic.Message): ToolCall[] {
  return (message.content ?? []).flatMap((block) =>
    block.type === 'tool_use'
      ? [
          {
            id: block.id,
            name: block.name,
            input:
              typeof block.input === 'object' && block.input !== null && !Array.isArray(block.input)
                ? (block.input as Record<string, unknown>)
                : {},
          },
        ]
      : [],
  );
}

function usageOf(usage: Anthropic.Usage | undefined): TokenUsage {
  const count = (value: number | null | undefined): number =>
    typeof value === 'number' && Number.isFinite(value) ? value : 0;
  return {
    inputTokens: count(usage?.input_tokens),
    outputTokens: count(usage?.output_tokens),
    cacheReadTokens: count(usage?.cache_read_input_tokens),
    cacheWriteTokens: count(usage?.cache_creation_input_tokens),
  };
}
