import { chunkText, type SimAnswer, type SseEvent, type WireFormat } from './answer.js';

const STATUSES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

function usageMetadata(answer: SimAnswer): Record<string, number> {
  const prompt = answer.usage.input + answer.usage.cacheRead;
  return {
    promptTokenCount: prompt,
    candidatesTokenCount: answer.usage.output,
    totalTokenCount: prompt + answer.usage.output,
    cachedContentTokenCount: answer.usage.cacheRead,
  };
}

function parts(answer: SimAnswer, text: string): Record<string, unknown>[] {
  const list: Record<string, unknown>[] = [];
  if (text !== '') list.push({ text });
  for (const call of answer.toolCalls) list.push({ functionCall: { name: call.name, args: call.input } });
  return list;
}

function response(answer: SimAnswer, text: string, final: boolean): Record<string, unknown> {
  const candidate: Record<string, unknown> = {
    content: { role: 'model', parts: parts(answer, text) },
    index: 0,
  };
  if (final) candidate['finishReason'] = answer.stopReason ?? 'STOP';
  return {
    candidates: [candidate],
    usageMetadata: usageMetadata(answer),
    modelVersion: answer.model,
    responseId: answer.id,
  };
}

/** Gemini `generateContent` and `streamGenerateContent?alt=sse`. */
export const geminiWire: WireFormat = {
  overloadStatus: 503,
  json(answer) {
    return response(answer, answer.text, true);
  },
  events(answer) {
    const pieces = chunkText(answer.text);
    if (pieces.length === 0) return [{ data: response(answer, '', true), opensContent: true }];
    return pieces.map((piece, index): SseEvent => {
      const last = index === pieces.length - 1;
      // Tool calls ride on the last chunk, as Gemini sends a function call whole.
      return {
        data: response(last ? answer : { ...answer, toolCalls: [] }, piece, last),
        ...(index === 0 ? { opensContent: true } : {}),
      };
    });
  },
  streamError() {
    return { data: { error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } } };
  },
  error(status, message) {
    return { error: { code: status, message, status: STATUSES[status] ?? 'UNKNOWN' } };
  },
};
