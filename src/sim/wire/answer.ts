/** A simulated answer, before it is put into a provider's wire format. */
export interface SimAnswer {
  id: string;
  model: string;
  text: string;
  toolCalls: { id: string; name: string; input: Record<string, unknown> }[];
  usage: { input: number; output: number; cacheRead: number; cacheWrite: number };
  stopReason: string | undefined;
  /** Anthropic only: a signed thinking block opening the answer. */
  thinking?: { text: string; signature: string } | undefined;
  /** Anthropic only: a redacted thinking block's opaque data. */
  redactedThinking?: string | undefined;
  /** Anthropic only: a server tool call and its result, before the text. */
  serverTool?: { id: string; name: string; input: Record<string, unknown>; result: unknown } | undefined;
}

/** One server-sent event: `event:` line (optional) and its JSON data (or raw text). */
export interface SseEvent {
  event?: string;
  data: unknown;
  /** The first event carrying content: `contentDelayMs` is waited before it. */
  opensContent?: boolean;
}

/** A provider's wire format for answers and errors. */
export interface WireFormat {
  json(answer: SimAnswer): unknown;
  events(answer: SimAnswer): SseEvent[];
  /** The final SSE line some providers send after the last event (OpenAI's `[DONE]`). */
  terminator?: string;
  error(status: number, message: string): unknown;
  /** The error a stream carries when it fails after `sent` events, as the provider sends it. */
  streamError(answer: SimAnswer, sent: number): SseEvent;
  /** The overload answer's status. */
  overloadStatus: number;
}

/** Splits text into a few stream chunks, so clients see several deltas. */
export function chunkText(text: string, size = 24): string[] {
  if (text === '') return [];
  const chunks: string[] = [];
  for (let index = 0; index < text.length; index += size) chunks.push(text.slice(index, index + size));
  return chunks;
}
