import { randomUUID } from 'node:crypto';
import type * as GenAiSdk from '@google/genai';
import type {
  GoogleGenAI,
  Candidate,
  Content,
  FinishReason,
  FunctionCallingConfigMode,
  GenerateContentConfig,
  GenerateContentResponse,
  Part,
} from '@google/genai';
import type {
  CallAttempt,
  CallMessage,
  CallResult,
  JsonSchema,
  Provider,
  ProviderCall,
  TokenUsage,
  ToolCall,
} from '../../core/call-types.js';
import { THINKING_BUDGET_TOKENS } from '../../core/call-types.js';
import { isSwitchboardError, SwitchboardError, type SwitchboardErrorOptions } from '../../core/errors.js';
import { endpointLabel, refuseInlineBaseUrl } from '../endpoint.js';
import { extractJson } from '../../core/json-extract.js';
import { compileSchema, schemaErrors } from '../../core/json-schema.js';
import { costOf, DEFAULT_PRICES, type ModelPrice } from '../../core/prices.js';
import { errorFromStatus } from '../http-errors.js';
import { lazySdk } from '../lazy-sdk.js';
import { watchedFetch, withIdleWatch } from '../idle-watch.js';
import { KeyPool } from './key-pool.js';
import { registerSecret } from '../../core/secrets.js';

/** The SDK, imported at the first call: a process that never calls Gemini never loads it. */
const genAi = lazySdk<typeof GenAiSdk>(() => import('@google/genai'));

const PROVIDER = 'gemini';
const KEY_VARIABLES = ['GEMINI_API_KEYS', 'GEMINI_API_KEY', 'GOOGLE_API_KEY'] as const;

export interface GeminiProviderOptions {
  /**
   * API keys, tried in turn; a key that hits its quota rests while the others answer.
   * @default env `GEMINI_API_KEYS` (comma-separated), else `GEMINI_API_KEY`, else `GOOGLE_API_KEY`
   */
  apiKeys?: readonly string[];
  /** API base URL, e.g. a `switchboard sim` address. @default env `GEMINI_BASE_URL`, else the SDK's default */
  baseUrl?: string;
  /** Prices (USD per million tokens) added to or replacing the built-in ones, by model id prefix. */
  prices?: Readonly<Record<string, ModelPrice>>;
  /** Wall-clock limit per call (ms), key rotations included; a request's own `timeoutMs` wins. @default 600_000 */
  timeoutMs?: number;
  /**
   * How long a key rests after a 429 / RESOURCE_EXHAUSTED (ms), unless the answer said how long
   * to wait (`retry-after` or Gemini's `RetryInfo`).
   * @default 60_000
   */
  keyCooldownMs?: number;
  /**
   * What to do when Gemini answers with another model family than the one asked for (e.g. asked
   * `gemini-2.5-pro`, served `gemini-2.5-flash`): fail with `MODEL_DOWNGRADED`, or answer with a warning.
   * @default 'error'
   */
  onDowngrade?: 'error' | 'warn';
  /**
   * Models that must never answer. A plain name (`gemini-2.5-flash` or `2.5-flash`) forbids that model
   * and its versions (`-001`, dated previews); `/pattern/flags` or a RegExp is matched anywhere in the
   * model id. Asking for one fails with `INVALID_INPUT`, being served one with `MODEL_DOWNGRADED`.
   * @default []
   */
  forbiddenModels?: ReadonlyArray<string | RegExp>;
  /** Test seams. */
  _internal?: {
    /** Clock for key cooldowns (ms). @default Date.now */
    now?: () => number;
  };
}

/**
 * A Gemini provider over the official `@google/genai` client (one client per key, no SDK retries:
 * the key rotation here and the retry policy in `invoke/` decide).
 */
export function createGeminiProvider({
  apiKeys,
  baseUrl = process.env['GEMINI_BASE_URL'] || undefined,
  prices,
  timeoutMs = 600_000,
  keyCooldownMs = 60_000,
  onDowngrade = 'error',
  forbiddenModels = [],
  _internal = {},
}: GeminiProviderOptions = {}): Provider {
  checkPositive('timeoutMs', timeoutMs);
  if (!(typeof keyCooldownMs === 'number' && Number.isFinite(keyCooldownMs) && keyCooldownMs >= 0)) {
    throw new SwitchboardError(
      'INVALID_INPUT',
      'Expected "keyCooldownMs" to be a non-negative number of milliseconds',
    );
  }
  if (onDowngrade !== 'error' && onDowngrade !== 'warn') {
    throw new SwitchboardError('INVALID_INPUT', `Expected "onDowngrade" to be "error" or "warn"`);
  }
  if (apiKeys !== undefined && (!Array.isArray(apiKeys) || apiKeys.some((key) => typeof key !== 'string'))) {
    throw new SwitchboardError('INVALID_INPUT', 'Expected "apiKeys" to be a list of strings');
  }
  if (baseUrl !== undefined && !/^https?:\/\/\S+$/i.test(baseUrl)) {
    throw new SwitchboardError('INVALID_INPUT', 'Expected "baseUrl" to be an http(s) URL');
  }
  if (prices !== undefined && (typeof prices !== 'object' || prices === null)) {
    throw new SwitchboardError('INVALID_INPUT', 'Expected "prices" to map model ids to prices');
  }
  const forbidden = compileForbidden(forbiddenModels);
  const keys = (apiKeys ?? keysFromEnvironment()).map((key) => key.trim()).filter((key) => key !== '');
  for (const key of keys) registerSecret(key);
  const pool = new KeyPool({
    keys,
    cooldownMs: keyCooldownMs,
    ...(_internal.now === undefined ? {} : { now: _internal.now }),
  });
  const priceList = prices === undefined ? DEFAULT_PRICES : { ...DEFAULT_PRICES, ...prices };
  const clients = new Map<number, GoogleGenAI>();
  const clientFor = async (index: number): Promise<GoogleGenAI> => {
    let client = clients.get(index);
    if (client === undefined) {
      const { GoogleGenAI: GoogleGenAIClient } = await genAi.load();
      // No `retryOptions`: the SDK then makes exactly one request per call.
      client = new GoogleGenAIClient({
        apiKey: pool.keyAt(index),
        vertexai: false,
        ...(baseUrl === undefined ? {} : { httpOptions: { baseUrl } }),
      });
      clients.set(index, client);
    }
    return client;
  };

  return {
    name: PROVIDER,
    async call(request) {
      refuseInlineBaseUrl(PROVIDER, request, 'GEMINI_BASE_URL');
      const model = normalizeModel(request.model);
      if (typeof request.prompt !== 'string' || request.prompt.trim() === '') {
        throw new SwitchboardError('INVALID_INPUT', 'the prompt is empty', {
          hint: 'pass a prompt, or "-" to read standard input',
        });
      }
      if (request.timeoutMs !== undefined) checkPositive('timeoutMs', request.timeoutMs);
      if (request.schema !== undefined) compileSchema(request.schema);
      if (forbidden.some((rule) => rule(model))) {
        throw new SwitchboardError('INVALID_INPUT', `${model} is in "forbiddenModels"`, {
          provider: PROVIDER,
          hint: 'ask for another model, or remove it from forbiddenModels',
          retryable: false,
        });
      }
      if (pool.size === 0) {
        throw new SwitchboardError('AUTH', 'no Gemini API key is set', {
          provider: PROVIDER,
          hint: `set ${KEY_VARIABLES.join(', ')} (comma-separated for several keys) in the environment or .env`,
          retryable: false,
        });
      }
      // The SDK loads (once, about 0.1 s) before the call's own timers start, so that it never counts
      // against the attempt's time limit.
      await genAi.load();
      return withIdleWatch(
        request.idleTimeoutMs,
        (watch) => watch.error(PROVIDER, 'gemini'),
        () =>
          callWithRotation({
            request,
            model,
            pool,
            clientFor,
            timeoutMs: request.timeoutMs ?? timeoutMs,
            onDowngrade,
            forbidden,
            prices: priceList,
          }),
      );
    },
    endpoint() {
      return endpointLabel(baseUrl, 'https://generativelanguage.googleapis.com');
    },
    checkEndpoint(request) {
      // The keys go only to the configured base URL: a spec cannot name another.
      refuseInlineBaseUrl(PROVIDER, request, 'GEMINI_BASE_URL');
    },
    async close() {
      clients.clear();
    },
  };
}

interface CallContext {
  request: ProviderCall;
  model: string;
  pool: KeyPool;
  clientFor: (index: number) => Promise<GoogleGenAI>;
  timeoutMs: number;
  onDowngrade: 'error' | 'warn';
  forbidden: ReadonlyArray<(model: string) => boolean>;
  prices: Readonly<Record<string, ModelPrice>>;
}

async function callWithRotation(context: CallContext): Promise<CallResult> {
  const { request, model, pool } = context;
  const provider = `${PROVIDER}:${model}`;
  const started = performance.now();
  const attempts: CallAttempt[] = [];
  const warnings: string[] = [];
  const onText = request.schema === undefined && !offersTools(request) ? request.onText : undefined;
  if (request.onText !== undefined && request.schema !== undefined) {
    warnings.push('streaming is not used with a schema; "onText" is not called');
  } else if (request.onText !== undefined && offersTools(request)) {
    warnings.push('streaming is not used with tools; "onText" is not called');
  }
  const deadline = new CallDeadline(context.timeoutMs, request.abortSignal);
  try {
    for (;;) {
      const choice = pool.next();
      if (choice === undefined) {
        const waitMs = pool.msUntilAvailable();
        throw new SwitchboardError(
          'RATE_LIMITED',
          `every Gemini key is rate limited (${pool.size} ${pool.size === 1 ? 'key' : 'keys'}); the first is free again in ${Math.ceil(waitMs / 1000)} s`,
          {
            provider: PROVIDER,
            retryAfterMs: waitMs,
            hint: 'wait, add keys to GEMINI_API_KEYS, or fall back to another provider',
            details: { attempts },
          },
        );
      }
      // Checked between keys too, so a call aborted or out of time lists no attempt it never made.
      const stopped = deadline.failure();
      if (stopped !== undefined) throw withDetails(stopped, { attempts });
      const attemptStarted = performance.now();
      const stream: StreamProgress = { started: false, delivered: 0 };
      let response: AnswerParts;
      try {
        response =
          onText === undefined
            ? await generate(context, choice.index, deadline.signal)
            : await generateStreaming(context, choice.index, deadline, onText, stream);
        // An answer that arrives after the deadline is still a timeout: on a starved event loop the
        // whole response can be read before the deadline's timer gets its turn.
        if (deadline.expired()) throw new DeadlinePassed();
        checkAnswerShape(response);
      } catch (error) {
        // The caller's own callback threw: its error, not a provider failure.
        if (error instanceof CallbackFailure) throw error.error;
        const failure =
          deadline.failure() ?? streamFailure(errorFromGemini(error, context.pool, choice.label), stream);
        attempts.push({
          provider,
          model,
          errorCode: failure.code,
          errorMessage: `${choice.label}: ${failure.message}`,
          durationMs: performance.now() - attemptStarted,
        });
        // A 429 that says nothing of how long to wait, on the last free key: left to call()'s backoff, which
        // retries this key soon, rather than resting it for the pool's whole cooldown and giving up.
        const unsaid = failure.retryAfterMs === undefined && !pool.otherFree(choice.index);
        if (failure.code === 'RATE_LIMITED' && !unsaid) {
          pool.coolDown(choice.index, failure.retryAfterMs);
          // Text already handed to onText cannot be taken back, so another key only before the first piece.
          if (stream.delivered === 0) {
            warnings.push(`${choice.label} is rate limited; it rests and the next key is tried`);
            continue;
          }
        }
        throw withDetails(failure, { attempts });
      }
      attempts.push({ provider, model, durationMs: performance.now() - attemptStarted });
      return finish(context, response, { provider, attempts, warnings, started });
    }
  } finally {
    deadline.stop();
  }
}

/** The fields of a Gemini answer that `finish` reads; a streamed answer is merged into one. */
type AnswerParts = Pick<
  GenerateContentResponse,
  'candidates' | 'usageMetadata' | 'modelVersion' | 'promptFeedback'
>;

/** The largest thinking budgets Gemini's 2.5 models take: Pro's, and Flash's (and Flash-Lite's). */
const GEMINI_MAX_THINKING_BUDGET = 32_768;
const GEMINI_FLASH_MAX_THINKING_BUDGET = 24_576;

interface RequestSetup {
  config: GenerateContentConfig;
  /** The headers of a failed HTTP answer, once one arrived. */
  failedHeaders: () => Headers | undefined;
}

function requestSetup(request: ProviderCall, abortSignal: AbortSignal): RequestSetup {
  const config: GenerateContentConfig = { abortSignal };
  if (request.system !== undefined) config.systemInstruction = request.system;
  if (request.reasoning !== undefined) {
    config.thinkingConfig = {
      thinkingBudget: Math.min(
        THINKING_BUDGET_TOKENS[request.reasoning],
        /flash/i.test(request.model) ? GEMINI_FLASH_MAX_THINKING_BUDGET : GEMINI_MAX_THINKING_BUDGET,
      ),
    };
  }
  if (request.schema !== undefined) {
    config.responseMimeType = 'application/json';
    config.responseJsonSchema = schemaForGemini(request.schema);
  }
  if (offersTools(request)) {
    config.tools = [
      {
        functionDeclarations: (request.tools ?? []).map((tool) => ({
          name: tool.name,
          description: tool.description,
          parametersJsonSchema: schemaForGemini(tool.inputSchema),
        })),
      },
    ];
    // `ANY`: the model must call one of the functions.
    const mode = (request.toolChoice === 'required' ? 'ANY' : 'AUTO') as FunctionCallingConfigMode;
    config.toolConfig = { functionCallingConfig: { mode } };
  }
  let failedHeaders: Headers | undefined;
  // The SDK's ApiError keeps only the status and body, so a per-request fetch keeps the headers
  // (retry-after) of a failed answer.
  config.httpOptions = {
    fetch: async (input, init) => {
      // watchedFetch lets `idleTimeoutMs` see the headers and body chunks as they arrive.
      const response = await watchedFetch(input, init);
      if (!response.ok) failedHeaders = response.headers;
      return response;
    },
  };
  return { config, failedHeaders: () => failedHeaders };
}

async function generate(
  { request, model, clientFor }: CallContext,
  keyIndex: number,
  abortSignal: AbortSignal,
): Promise<AnswerParts> {
  const { config, failedHeaders } = requestSetup(request, abortSignal);
  try {
    return await (
      await clientFor(keyIndex)
    ).models.generateContent({ model, contents: contentsOf(request), config });
  } catch (error) {
    const headers = failedHeaders();
    throw headers === undefined ? error : new FailedAnswer(error, headers);
  }
}

function offersTools(request: ProviderCall): boolean {
  return request.tools !== undefined && request.tools.length > 0;
}

/**
 * The prompt alone, or the conversation as Gemini contents: the model's tool calls as `functionCall`
 * parts (with the thought signature Gemini asks to get back), their results as `functionResponse`
 * parts of a user turn (`{output}`, or `{error}` for a failed tool, as Gemini's documentation shows).
 */
function contentsOf(request: ProviderCall): string | Content[] {
  const messages = request.messages ?? [];
  if (messages.length === 0) return request.prompt;
  const contents: Content[] = [{ role: 'user', parts: [{ text: request.prompt }] }];
  for (const message of messages) {
    const content = contentOf(message);
    const last = contents.at(-1);
    // Gemini wants turns to alternate: results followed by a user's words are one turn.
    if (last !== undefined && last.role === content.role)
      last.parts = [...(last.parts ?? []), ...(content.parts ?? [])];
    else contents.push(content);
  }
  return contents;
}

function contentOf(message: CallMessage): Content {
  if (message.role === 'user') return { role: 'user', parts: [{ text: message.text }] };
  if (message.role === 'tool') {
    return {
      role: 'user',
      parts: message.results.map((result) => ({
        functionResponse: {
          id: result.id,
          name: result.name,
          response: result.isError === true ? { error: result.content } : { output: result.content },
        },
      })),
    };
  }
  const parts: Part[] = message.text === '' ? [] : [{ text: message.text }];
  for (const call of message.toolCalls ?? []) {
    parts.push({
      functionCall: { id: call.id, name: call.name, args: call.input },
      ...(call.signature === undefined ? {} : { thoughtSignature: call.signature }),
    });
  }
  return { role: 'model', parts };
}

/** The answer's `functionCall` parts as tool calls; an id is made up for a call Gemini gave none. */
function toolCallsOf(candidate: Candidate | undefined): ToolCall[] {
  const calls: ToolCall[] = [];
  for (const part of candidate?.content?.parts ?? []) {
    const call = part.functionCall;
    if (call === undefined || typeof call.name !== 'string') continue;
    const args = call.args;
    calls.push({
      id: typeof call.id === 'string' && call.id !== '' ? call.id : `call_${randomUUID()}`,
      name: call.name,
      input: typeof args === 'object' && args !== null && !Array.isArray(args) ? args : {},
      ...(typeof part.thoughtSignature === 'string' ? { signature: part.thoughtSignature } : {}),
    });
  }
  return calls;
}

/** How far a streamed attempt got, for mapping its failure and deciding whether another key may answer. */
interface StreamProgress {
  /** The answer's headers arrived and its body is being read. */
  started: boolean;
  /** Pieces of text handed to `onText`. */
  delivered: number;
}

/**
 * `streamGenerateContent`: hands each chunk's text to `onText` as it arrives and returns the chunks
 * merged into one answer (the whole text; usage, model version and finish reason from the last chunk
 * that has them).
 */
async function generateStreaming(
  { request, model, clientFor }: CallContext,
  keyIndex: number,
  deadline: CallDeadline,
  onText: (delta: string) => void,
  progress: StreamProgress,
): Promise<AnswerParts> {
  const { config, failedHeaders } = requestSetup(request, deadline.signal);
  let text = '';
  let last: GenerateContentResponse | undefined;
  let usageMetadata: GenerateContentResponse['usageMetadata'];
  let modelVersion: string | undefined;
  let promptFeedback: GenerateContentResponse['promptFeedback'];
  let finishReason: FinishReason | undefined;
  let sawCandidate = false;
  try {
    const chunks = await (
      await clientFor(keyIndex)
    ).models.generateContentStream({
      model,
      contents: contentsOf(request),
      config,
    });
    progress.started = true;
    for await (const chunk of chunks) {
      last = chunk;
      if (chunk.usageMetadata !== undefined) usageMetadata = chunk.usageMetadata;
      if (typeof chunk.modelVersion === 'string' && chunk.modelVersion !== '')
        modelVersion = chunk.modelVersion;
      if (chunk.promptFeedback !== undefined) promptFeedback = chunk.promptFeedback;
      const candidate = chunk.candidates?.[0];
      if (candidate === undefined) continue;
      sawCandidate = true;
      if (candidate.finishReason !== undefined) finishReason = candidate.finishReason;
      const delta = textOf(candidate);
      if (delta === '') continue;
      // No text reaches the caller past the deadline, however late its timer fires.
      if (deadline.expired()) throw new DeadlinePassed();
      text += delta;
      progress.delivered++;
      try {
        onText(delta);
      } catch (error) {
        throw new CallbackFailure(error);
      }
    }
  } catch (error) {
    if (error instanceof CallbackFailure || error instanceof DeadlinePassed) throw error;
    const headers = failedHeaders();
    throw headers === undefined ? error : new FailedAnswer(error, headers);
  }
  const candidate = last?.candidates?.[0];
  return {
    ...(sawCandidate
      ? {
          candidates: [
            {
              ...candidate,
              content: { role: 'model', parts: text === '' ? [] : [{ text }] },
              ...(finishReason === undefined ? {} : { finishReason }),
            },
          ],
        }
      : {}),
    ...(usageMetadata === undefined ? {} : { usageMetadata }),
    ...(modelVersion === undefined ? {} : { modelVersion }),
    ...(promptFeedback === undefined ? {} : { promptFeedback }),
  };
}

/** What `onText` threw, kept apart so that it reaches the caller unchanged. */
class CallbackFailure extends Error {
  readonly error: unknown;

  constructor(error: unknown) {
    super('onText threw');
    this.error = error;
  }
}

/** A connection lost after the stream began is a broken answer, not an unreachable provider. */
function streamFailure(failure: SwitchboardError, progress: StreamProgress): SwitchboardError {
  if (!progress.started || failure.code !== 'PROVIDER_UNAVAILABLE') return failure;
  const reason = failure.message.replace(/^gemini could not be reached with [^:]*: /, '');
  return new SwitchboardError(
    'PROVIDER_ERROR',
    `the gemini stream broke off after ${progress.delivered} ${progress.delivered === 1 ? 'piece' : 'pieces'} of text: ${reason}`,
    {
      provider: PROVIDER,
      retryable: true,
      hint: 'retry, or fall back to another provider',
      ...(failure.cause === undefined ? {} : { cause: failure.cause }),
    },
  );
}

/** The answer's text parts, thoughts left out. */
function textOf(candidate: Candidate | undefined): string {
  return (candidate?.content?.parts ?? [])
    .filter((part) => typeof part.text === 'string' && part.thought !== true)
    .map((part) => part.text)
    .join('');
}

/** An SDK error plus the headers of the HTTP answer that caused it. */
class FailedAnswer extends Error {
  readonly error: unknown;
  readonly headers: Headers;

  constructor(error: unknown, headers: Headers) {
    super('gemini answered with an error');
    this.error = error;
    this.headers = headers;
  }
}

interface Progress {
  provider: string;
  attempts: CallAttempt[];
  warnings: string[];
  started: number;
}

function finish(context: CallContext, response: AnswerParts, progress: Progress): CallResult {
  const { request, model } = context;
  const { provider, attempts, warnings } = progress;
  const usage = usageOf(response);
  const servedReported = typeof response.modelVersion === 'string' && response.modelVersion !== '';
  const served = servedReported ? stripModelsPrefix(response.modelVersion as string) : model;
  if (!servedReported) warnings.push(`gemini did not report the model that answered; assuming ${model}`);
  const costUsd = costOf(served, usage, context.prices);
  if (costUsd === null) warnings.push(`no price is known for ${served}; costUsd is null`);
  const spent = { attempts, usage, costUsd };

  if (context.forbidden.some((rule) => rule(served))) {
    throw new SwitchboardError(
      'MODEL_DOWNGRADED',
      `gemini answered with ${served}, which is in "forbiddenModels" (asked for ${model})`,
      {
        provider: PROVIDER,
        retryable: true,
        hint: 'fall back to another provider, or remove the model from forbiddenModels',
        details: { requested: model, served, ...spent },
      },
    );
  }
  if (servedReported && familyOf(served) !== familyOf(model) && !aliasCovers(model, served)) {
    const message = `gemini answered with ${served} instead of ${model}`;
    if (context.onDowngrade === 'error') {
      throw new SwitchboardError('MODEL_DOWNGRADED', message, {
        provider: PROVIDER,
        retryable: true,
        hint: 'fall back to another provider, or set onDowngrade: "warn" to accept the answer',
        details: { requested: model, served, ...spent },
      });
    }
    warnings.push(message);
  }

  const candidate = response.candidates?.[0];
  const blockReason = response.promptFeedback?.blockReason;
  if (candidate === undefined && blockReason !== undefined) {
    throw new SwitchboardError('PROVIDER_ERROR', `gemini refused the prompt (${blockReason})`, {
      provider: PROVIDER,
      retryable: false,
      hint: 'rephrase the prompt, or fall back to another provider',
      details: { blockReason, ...spent },
    });
  }
  const text = textOf(candidate);
  const toolCalls = offersTools(request) ? toolCallsOf(candidate) : [];
  const finishReason = candidate?.finishReason;
  if (finishReason === 'MAX_TOKENS') warnings.push('the answer was cut off at the output token limit');
  else if (finishReason !== undefined && finishReason !== 'STOP' && text === '' && toolCalls.length === 0) {
    throw new SwitchboardError('PROVIDER_ERROR', `gemini stopped without an answer (${finishReason})`, {
      provider: PROVIDER,
      retryable: false,
      hint: 'rephrase the prompt, or fall back to another provider',
      details: { finishReason, ...spent },
    });
  }

  let structured: unknown;
  if (request.schema !== undefined) {
    const extracted = extractJson(text);
    const errors = extracted.ok ? schemaErrors(request.schema, extracted.value) : [extracted.reason];
    if (errors.length > 0) {
      throw new SwitchboardError(
        'SCHEMA',
        `gemini's answer does not match the schema: ${errors.slice(0, 3).join('; ')}`,
        {
          provider: PROVIDER,
          hint: 'retry, simplify the schema, or fall back to another provider',
          details: { raw: text, errors, ...spent },
        },
      );
    }
    structured = extracted.ok ? extracted.value : undefined;
  }

  return {
    success: true,
    text,
    ...(request.schema === undefined ? {} : { structured }),
    ...(toolCalls.length === 0 ? {} : { toolCalls }),
    provider,
    modelRequested: model,
    modelUsed: served,
    durationMs: performance.now() - progress.started,
    usage,
    costUsd,
    rateLimited: attempts.some((attempt) => attempt.errorCode === 'RATE_LIMITED'),
    attempts,
    ...(typeof finishReason === 'string' ? { finishReason } : {}),
    warnings,
  };
}

function usageOf(response: AnswerParts): TokenUsage {
  const metadata = response.usageMetadata;
  const cached = metadata?.cachedContentTokenCount ?? 0;
  return {
    inputTokens: Math.max(0, (metadata?.promptTokenCount ?? 0) - cached),
    // Thinking tokens are billed as output but not counted in candidatesTokenCount.
    outputTokens: (metadata?.candidatesTokenCount ?? 0) + (metadata?.thoughtsTokenCount ?? 0),
    cacheReadTokens: cached,
    cacheWriteTokens: 0,
  };
}

/** Thrown where a call finds its deadline passed; `CallDeadline.failure` then says TIMEOUT. */
class DeadlinePassed extends Error {}

/**
 * One wall-clock limit for the whole call (every key tried) plus the caller's abort signal, keeping
 * track of which one fired: the SDK turns both into the same anonymous AbortError.
 */
class CallDeadline {
  readonly #controller = new AbortController();
  readonly #timer: NodeJS.Timeout;
  readonly #endsAt: number;
  readonly #callerSignal: AbortSignal | undefined;
  readonly #onCallerAbort = (): void => this.#controller.abort();
  readonly #timeoutMs: number;
  #timedOut = false;

  constructor(timeoutMs: number, callerSignal: AbortSignal | undefined) {
    this.#timeoutMs = timeoutMs;
    this.#callerSignal = callerSignal;
    this.#endsAt = performance.now() + timeoutMs;
    this.#timer = setTimeout(() => {
      this.#timedOut = true;
      this.#controller.abort();
    }, timeoutMs);
    if (callerSignal?.aborted === true) this.#controller.abort();
    else callerSignal?.addEventListener('abort', this.#onCallerAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /**
   * Whether the limit has passed by the monotonic clock, whether or not its timer has run yet (a timer
   * is only a request to be called back; I/O that is ready first is handled first). Aborts when it has.
   */
  expired(): boolean {
    if (!this.#timedOut && performance.now() >= this.#endsAt) {
      this.#timedOut = true;
      this.#controller.abort();
    }
    return this.#timedOut;
  }

  /** The abort or timeout error when one of them ended the call. */
  failure(): SwitchboardError | undefined {
    if (this.#callerSignal?.aborted === true) {
      return new SwitchboardError('ABORTED', 'the gemini call was aborted', {
        provider: PROVIDER,
        retryable: false,
      });
    }
    if (this.#timedOut) {
      return new SwitchboardError('TIMEOUT', `gemini did not answer within ${this.#timeoutMs} ms`, {
        provider: PROVIDER,
        hint: 'raise timeoutMs, or fall back to another provider',
      });
    }
    return undefined;
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#callerSignal?.removeEventListener('abort', this.#onCallerAbort);
  }
}

/**
 * A 200 whose body is no Gemini answer (unrelated JSON from a proxy in the way: neither candidates nor
 * a prompt's block reason) is a provider failure, retried and fallen back from, never an empty success.
 */
function checkAnswerShape(response: AnswerParts): void {
  if (Array.isArray(response.candidates) || response.promptFeedback !== undefined) return;
  throw new SwitchboardError('PROVIDER_ERROR', 'gemini answered 200 with JSON that is not an answer', {
    provider: PROVIDER,
    retryable: true,
    hint: 'check GEMINI_BASE_URL: a proxy or portal in the way answers in its place',
  });
}

/** Maps what the SDK threw to a coded error whose message names the key by label, never by value. */
function errorFromGemini(thrown: unknown, pool: KeyPool, label: string): SwitchboardError {
  if (isSwitchboardError(thrown)) return thrown;
  const headers = thrown instanceof FailedAnswer ? thrown.headers : undefined;
  const error = thrown instanceof FailedAnswer ? thrown.error : thrown;
  const redact = (text: string): string => redactKeys(text, pool);
  if (isApiError(error)) {
    const body = parseErrorBody(error.message);
    const message = redact(body.message ?? error.message);
    const exhausted = error.status === 429 || body.status === 'RESOURCE_EXHAUSTED';
    const mapped = errorFromStatus(PROVIDER, exhausted ? 429 : error.status, message, headers);
    const retryAfterMs = mapped.retryAfterMs ?? body.retryDelayMs;
    return new SwitchboardError(mapped.code, mapped.message, {
      provider: PROVIDER,
      retryable: mapped.retryable,
      ...(mapped.hint === undefined ? {} : { hint: mapped.hint }),
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      details: { status: error.status, ...(body.status === undefined ? {} : { reason: body.status }) },
      cause: error,
    });
  }
  const text = redact(error instanceof Error ? error.message : String(error));
  if (error instanceof SyntaxError) {
    // A broken body is a provider glitch, so unlike a model's unparseable answer it is worth retrying.
    return new SwitchboardError('PARSE', `gemini sent a response that is not valid JSON: ${text}`, {
      provider: PROVIDER,
      retryable: true,
      hint: 'retry, or fall back to another provider',
      cause: error,
    });
  }
  if (error instanceof TypeError || hasNetworkCode(error)) {
    const reason = networkReason(error);
    return new SwitchboardError(
      'PROVIDER_UNAVAILABLE',
      `gemini could not be reached with ${label}: ${text}${reason === undefined ? '' : ` (${reason})`}`,
      {
        provider: PROVIDER,
        retryable: true,
        hint: 'check the network and GEMINI_BASE_URL, then retry or fall back to another provider',
        cause: error,
      },
    );
  }
  return new SwitchboardError('PROVIDER_ERROR', `gemini failed: ${text}`, {
    provider: PROVIDER,
    retryable: true,
    cause: error,
  });
}

function isApiError(value: unknown): value is Error & { status: number } {
  return (
    value instanceof Error &&
    value.name === 'ApiError' &&
    typeof (value as { status?: unknown }).status === 'number'
  );
}

interface ErrorBody {
  message?: string;
  status?: string;
  retryDelayMs?: number;
}

/** The SDK puts the whole JSON error body in `message`; Gemini's quota errors carry a RetryInfo delay. */
function parseErrorBody(text: string): ErrorBody {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return {};
  }
  const error = (parsed as { error?: unknown } | null)?.error;
  if (typeof error !== 'object' || error === null) return {};
  const { message, status, details } = error as { message?: unknown; status?: unknown; details?: unknown };
  const body: ErrorBody = {};
  if (typeof message === 'string') body.message = message;
  if (typeof status === 'string') body.status = status;
  for (const detail of Array.isArray(details) ? (details as unknown[]) : []) {
    const delay = (detail as { retryDelay?: unknown } | null)?.retryDelay;
    const seconds = typeof delay === 'string' ? /^(\d+(?:\.\d+)?)s$/.exec(delay)?.[1] : undefined;
    if (seconds !== undefined) body.retryDelayMs = Number(seconds) * 1000;
  }
  return body;
}

function hasNetworkCode(error: unknown): boolean {
  return networkReason(error) !== undefined;
}

/** The system error code (ECONNRESET, UND_ERR_SOCKET, …) fetch hides in `cause`. */
function networkReason(error: unknown): string | undefined {
  for (let current = error, depth = 0; current !== undefined && depth < 4; depth++) {
    const code = (current as { code?: unknown } | null)?.code;
    if (typeof code === 'string' && /^(E[A-Z]+|UND_ERR_[A-Z_]+)$/.test(code)) return code;
    current = (current as { cause?: unknown } | null)?.cause;
  }
  return undefined;
}

function redactKeys(text: string, pool: KeyPool): string {
  let result = text;
  for (let index = 0; index < pool.size; index++) {
    result = result.split(pool.keyAt(index)).join(`key #${index + 1}`);
  }
  return result;
}

function withDetails(error: SwitchboardError, details: Record<string, unknown>): SwitchboardError {
  const options: SwitchboardErrorOptions = {
    retryable: error.retryable,
    details: { ...error.details, ...details },
  };
  if (error.hint !== undefined) options.hint = error.hint;
  if (error.provider !== undefined) options.provider = error.provider;
  if (error.retryAfterMs !== undefined) options.retryAfterMs = error.retryAfterMs;
  if (error.cause !== undefined) options.cause = error.cause;
  return new SwitchboardError(error.code, error.message, options);
}

/**
 * `2.5-pro` → `gemini-2.5-pro`. Names starting with a digit or with `flash` / `pro` (the `-latest`
 * aliases) get the `gemini-` prefix; others (`gemma-3-27b-it`) are Google's own names and stay.
 */
export function normalizeModel(model: string): string {
  const trimmed = stripModelsPrefix(typeof model === 'string' ? model.trim() : '');
  if (trimmed === '') {
    throw new SwitchboardError('INVALID_INPUT', 'no Gemini model given', {
      hint: 'write gemini:<model>, e.g. gemini:2.5-flash',
    });
  }
  return /^(\d|flash|pro)/i.test(trimmed) ? `gemini-${trimmed}` : trimmed;
}

function stripModelsPrefix(model: string): string {
  return model.replace(/^models\//, '');
}

/**
 * The model without its version: `gemini-2.5-pro-001`, `gemini-2.5-pro-preview-06-05` and
 * `gemini-2.5-pro-latest` are all `gemini-2.5-pro`; `gemini-2.5-flash-lite` stays apart from
 * `gemini-2.5-flash`.
 */
export function familyOf(model: string): string {
  let family = stripModelsPrefix(model).toLowerCase();
  for (;;) {
    const next = family
      .replace(/-\d{3}$/, '')
      .replace(/-(latest|exp|experimental)$/, '')
      .replace(/-(preview|exp)(-\d{2,4})+$/, '')
      .replace(/-preview$/, '')
      .replace(/(-\d{2}){2}$|-\d{2}-\d{4}$|-\d{8}$|-\d{4}$/, '');
    if (next === family) return family;
    family = next;
  }
}

/** `gemini-flash-latest` names no version, so any version of flash answers it. */
function aliasCovers(requested: string, served: string): boolean {
  const family = familyOf(requested);
  if (/\d/.test(family)) return false;
  return familyOf(served).replace(/-\d+(\.\d+)?(?=-|$)/g, '') === family;
}

function compileForbidden(
  entries: ReadonlyArray<string | RegExp>,
): ReadonlyArray<(model: string) => boolean> {
  if (!Array.isArray(entries)) {
    throw new SwitchboardError(
      'INVALID_INPUT',
      'Expected "forbiddenModels" to be a list of model names or regexes',
    );
  }
  return entries.map((entry) => {
    if (entry instanceof RegExp) {
      const pattern = new RegExp(entry.source, entry.flags.replace(/[gy]/g, ''));
      return (model: string) => pattern.test(model);
    }
    if (typeof entry !== 'string' || entry.trim() === '') {
      throw new SwitchboardError(
        'INVALID_INPUT',
        'Expected "forbiddenModels" to be a list of model names or regexes',
      );
    }
    const literal = /^\/(.+)\/([a-z]*)$/.exec(entry.trim());
    if (literal !== null) {
      let pattern: RegExp;
      try {
        pattern = new RegExp(literal[1] as string, (literal[2] as string).replace(/[gy]/g, ''));
      } catch (error) {
        throw new SwitchboardError('INVALID_INPUT', `"forbiddenModels" holds an invalid regex: ${entry}`, {
          cause: error,
        });
      }
      return (model: string) => pattern.test(model);
    }
    const family = familyOf(normalizeModel(entry));
    return (model: string) => familyOf(model) === family;
  });
}

/** `$schema` is not among the JSON Schema keywords Gemini documents as supported, so it is left out. */
function schemaForGemini(schema: JsonSchema): JsonSchema {
  const { $schema: _ignored, ...rest } = schema;
  return rest;
}

function keysFromEnvironment(): string[] {
  const several = process.env['GEMINI_API_KEYS'];
  if (several !== undefined && several.trim() !== '') return several.split(',');
  const single = process.env['GEMINI_API_KEY'] || process.env['GOOGLE_API_KEY'];
  return single === undefined || single === '' ? [] : [single];
}

function checkPositive(name: string, value: number): void {
  if (!(typeof value === 'number' && Number.isFinite(value) && value > 0)) {
    throw new SwitchboardError('INVALID_INPUT', `Expected "${name}" to be a positive number of milliseconds`);
  }
}
