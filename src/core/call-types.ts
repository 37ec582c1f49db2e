import { SwitchboardError, type ErrorCode } from './errors.js';

/**
 * The tool through which Switchboard asks an API model for structured output: the providers' forced
 * output tool and the workflows' tool-loop answer (beside its read tools), and what `switchboard sim`'s
 * `conform` answers with when told to call some tool.
 */
export const OUTPUT_TOOL_NAME = 'emit_output';

/** A JSON Schema object (draft 2020-12 or 7), as given by a user or produced by `z.toJSONSchema`. */
export type JsonSchema = Record<string, unknown>;

/** A tool the model may call: what it is for, and its arguments as a JSON Schema object. */
export interface ToolDefinition {
  /** Letters, digits, `_` and `-`, at most 64 characters: what every provider accepts. */
  name: string;
  description: string;
  /** JSON Schema of the arguments; `type: 'object'` at the top. */
  inputSchema: JsonSchema;
}

/** A call of a tool the model made. */
export interface ToolCall {
  /** The provider's id of the call; one is made up when the provider gives none (Gemini may not). */
  id: string;
  name: string;
  /** The arguments the model wrote; `{}` when they were not a JSON object. */
  input: Record<string, unknown>;
  /**
   * An opaque token the provider wants back with the call in a later request (Gemini's
   * `thoughtSignature`); keep it as given.
   */
  signature?: string;
}

/**
 * How hard the model should think before it answers, as Conductor's `reasoning.effort` spells it. Each
 * provider maps it to its own setting (`REASONING_EFFORTS` and docs/workflows.md say how).
 */
export type ReasoningEffort = 'low' | 'medium' | 'high' | 'xhigh' | 'max';
export const REASONING_EFFORTS: readonly ReasoningEffort[] = ['low', 'medium', 'high', 'xhigh', 'max'];

/** `value` as an effort level, or undefined when it is not one. */
export function reasoningEffortOf(value: unknown): ReasoningEffort | undefined {
  return REASONING_EFFORTS.find((level) => level === value);
}

/**
 * Anthropic's extended-thinking budget for each effort (tokens of thinking the model may spend):
 * 2,048 to 59,904, the largest that leaves 4,096 tokens of answer under the 64,000-token output cap.
 */
export const THINKING_BUDGET_TOKENS: Readonly<Record<ReasoningEffort, number>> = {
  low: 2_048,
  medium: 8_192,
  high: 16_384,
  xhigh: 32_768,
  max: 59_904,
};

/**
 * A thinking block of an Anthropic answer, kept as the API gave it: a later request in the same tool
 * loop must send it back unchanged (the signature covers its text) before the tool calls it preceded.
 */
export type ThinkingBlock =
  { type: 'thinking'; thinking: string; signature: string } | { type: 'redacted_thinking'; data: string };

/** What a tool answered to one call. */
export interface ToolResult {
  /** The `ToolCall.id` it answers. */
  id: string;
  /** The tool's name (Gemini pairs results with calls by name). */
  name: string;
  /** The result as text. */
  content: string;
  /** The tool failed; `content` says why. */
  isError?: boolean;
}

/**
 * One message of a conversation after `CallRequest.prompt`: the model's earlier answer (with the tool
 * calls it made), the results of those calls, or another user message.
 */
export type CallMessage =
  | { role: 'assistant'; text: string; toolCalls?: ToolCall[]; thinking?: ThinkingBlock[] }
  | { role: 'tool'; results: ToolResult[] }
  | { role: 'user'; text: string };

/** One LLM call, whatever the provider. */
export interface CallRequest {
  /** The user prompt: the conversation's first message. */
  prompt: string;
  /**
   * The conversation after `prompt`, oldest first; each provider gets it in its own format (Anthropic
   * `tool_use` / `tool_result` blocks, OpenAI `tool_calls` and `role: 'tool'` messages, Gemini
   * `functionCall` / `functionResponse` parts). Not for `claude:` (Claude Code runs its own tools).
   */
  messages?: CallMessage[];
  /**
   * Tools the model may call. `call()` does not run them: the calls come back in
   * `CallResult.toolCalls`, and the caller sends the results in `messages` in its next call. Not
   * with `schema`, and never streamed.
   */
  tools?: ToolDefinition[];
  /** `auto`: the model calls a tool or answers; `required`: it must call one. @default 'auto' */
  toolChoice?: 'auto' | 'required';
  /**
   * Think before answering: Anthropic extended thinking with `THINKING_BUDGET_TOKENS[effort]` (which
   * lets the model choose whether to call a tool: the API refuses a forced tool beside thinking),
   * OpenAI `reasoning_effort` / `reasoning.effort`, Gemini `thinkingConfig.thinkingBudget`, Claude
   * Code's `effort`. @default the provider's own
   */
  reasoning?: ReasoningEffort;
  /** The system prompt; replaces the provider's default. */
  system?: string;
  /** Ask for structured output matching this JSON Schema; the value arrives in `CallResult.structured`. */
  schema?: JsonSchema;
  /** Wall-clock limit for the whole call, in milliseconds. */
  timeoutMs?: number;
  /** Fail with `IDLE_TIMEOUT` when the provider sends nothing for this many milliseconds. */
  idleTimeoutMs?: number;
  abortSignal?: AbortSignal;
  /** Free tags recorded with the call. */
  tags?: Record<string, string>;
  /**
   * Stream the answer: called with each piece of text as it arrives. A fallback chain moves to the
   * next provider only before the first piece; once text has been delivered, a failure ends the call.
   */
  onText?: (delta: string) => void;
}

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

/** One try at one provider; a call made of retries or fallbacks has several. */
export interface CallAttempt {
  provider: string;
  model: string;
  /** Error code when the attempt failed. */
  errorCode?: ErrorCode;
  errorMessage?: string;
  durationMs: number;
}

export interface CallResult {
  success: true;
  /** The answer's text (for structured output, the JSON text). */
  text: string;
  /** The validated structured value when a schema was given. */
  structured?: unknown;
  /** The provider spec that answered, e.g. `claude:haiku`. */
  provider: string;
  modelRequested: string;
  /** The model that actually answered, as reported by the provider. */
  modelUsed: string;
  durationMs: number;
  usage: TokenUsage;
  /** Cost in US dollars, or null when the provider does not report it and the model has no known price. */
  costUsd: number | null;
  rateLimited: boolean;
  attempts: CallAttempt[];
  /**
   * The call's id in the ledger (`call_id` of its attempt rows), set by `call()`: its rows are
   * committed when the result is handed back.
   */
  callId?: string;
  sessionId?: string;
  /** The tools the model called (`CallRequest.tools`), in order; absent when it called none. */
  toolCalls?: ToolCall[];
  /** Anthropic thinking blocks of the answer, to send back with `toolCalls` (`CallMessage.thinking`). */
  thinking?: ThinkingBlock[];
  /** Agent turns, for agentic providers such as Claude Code. */
  turns?: number;
  /** Set when an already running process answered (a Claude Code warm pool), not one started for the call. */
  warm?: true;
  /**
   * Why the model stopped, as its provider said it (`end_turn`, `stop`, `tool_calls`, `STOP`, …); absent
   * when the provider does not say.
   */
  finishReason?: string;
  /** Non-fatal problems: settings the provider ignored, and the like. */
  warnings: string[];
}

/** What a provider needs to answer one call. */
export interface ProviderCall extends CallRequest {
  /** The model id or alias, as given after the provider name in the spec. */
  model: string;
  /** A base URL given in the spec (`openai@http://127.0.0.1:11434/v1:llama3.2`). */
  baseUrl?: string;
}

/** The interface every provider implements. */
export interface Provider {
  /** The provider's name in specs: `claude`, `anthropic`, `gemini`, `openai`. */
  readonly name: string;
  call(request: ProviderCall): Promise<CallResult>;
  /**
   * Where a call would go (base URL, executable), without secrets. Cooldowns are kept per spec and
   * endpoint, so a dead server never blocks the same spec that another config sends elsewhere.
   */
  endpoint?(request: Pick<ProviderCall, 'model' | 'baseUrl'>): string;
  /**
   * Throws when this provider will not call the base URL a spec names (`INVALID_INPUT`, or
   * `ENDPOINT_NOT_ALLOWED` when only configured endpoints are allowed). `call()` asks it of every
   * entry of a chain before the first attempt, so a refused entry sends and spends nothing.
   */
  checkEndpoint?(request: Pick<ProviderCall, 'model' | 'baseUrl'>): void;
  /**
   * Where the gateway's native lane sends a client's own wire request, and the headers that carry this
   * provider's key: the same endpoint and key binding as `call` (the key goes only to its endpoint).
   * Throws `AUTH` when no key is bound there, `ENDPOINT_NOT_ALLOWED` for an endpoint not configured.
   */
  wireEndpoint?(request: Pick<ProviderCall, 'baseUrl'>, clientCredential?: ClientCredential): WireEndpoint;
  /** Releases processes, pools and sockets. */
  close(): Promise<void>;
}

/**
 * A client's own key for this provider (the gateway's `forward_client_key`): sent in place of the
 * configured key, to the provider's configured endpoint only, in the header the client used.
 */
export interface ClientCredential {
  header: 'x-api-key' | 'authorization';
  value: string;
}

/** A provider's base URL and the credential headers bound to it, for passing a request through as it is. */
export interface WireEndpoint {
  /** The base URL, without a trailing slash (`https://api.anthropic.com`, `http://127.0.0.1:11434/v1`). */
  baseUrl: string;
  /** The credential headers (`x-api-key`, `authorization`); empty for a local server without a key. */
  headers: Readonly<Record<string, string>>;
}

export interface ProviderSpec {
  provider: string;
  model: string;
  /** Base URL given inline: `openai@http://127.0.0.1:11434/v1:llama3.2`. */
  baseUrl?: string;
  /** The spec as written. */
  text: string;
}

/**
 * Parses `provider:model` or `provider@baseUrl:model`. A comma-separated list is a fallback chain;
 * see `parseProviderChain`.
 */
export function parseProviderSpec(text: string): ProviderSpec {
  const trimmed = text.trim();
  const inline = /^([a-z][a-z0-9-]*)@(https?:\/\/[^\s]+):([^:/\s][^\s]*)$/i.exec(trimmed);
  if (inline !== null) {
    return {
      provider: (inline[1] as string).toLowerCase(),
      baseUrl: inline[2] as string,
      model: inline[3] as string,
      text: trimmed,
    };
  }
  const plain = /^([a-z][a-z0-9-]*):([^\s]+)$/i.exec(trimmed);
  if (plain === null) {
    throw new SwitchboardError('INVALID_INPUT', `"${text}" is not a provider spec`, {
      hint: 'write provider:model, e.g. claude:haiku, anthropic:claude-sonnet-4-5 or openai@http://127.0.0.1:11434/v1:llama3.2',
    });
  }
  return { provider: (plain[1] as string).toLowerCase(), model: plain[2] as string, text: trimmed };
}

export function parseProviderChain(text: string): ProviderSpec[] {
  const parts = text.split(',').filter((part) => part.trim() !== '');
  if (parts.length === 0) {
    throw new SwitchboardError('INVALID_INPUT', 'no provider given', {
      hint: 'write provider:model, e.g. claude:haiku',
    });
  }
  return parts.map(parseProviderSpec);
}

export const ZERO_USAGE: TokenUsage = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
});

/** Provider names a spec may start with. */
export const PROVIDER_NAMES = ['claude', 'anthropic', 'gemini', 'openai'] as const;
