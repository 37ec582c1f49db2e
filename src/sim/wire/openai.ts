import { chunkText, type SimAnswer, type SseEvent, type WireFormat } from './answer.js';

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'invalid_api_key',
  403: 'permission_denied',
  404: 'not_found',
  429: 'rate_limit_exceeded',
  500: 'server_error',
  503: 'service_unavailable',
};

function usage(answer: SimAnswer): Record<string, unknown> {
  return {
    prompt_tokens: answer.usage.input + answer.usage.cacheRead,
    completion_tokens: answer.usage.output,
    total_tokens: answer.usage.input + answer.usage.cacheRead + answer.usage.output,
    prompt_tokens_details: { cached_tokens: answer.usage.cacheRead },
  };
}

function finishReason(answer: SimAnswer): string {
  return answer.stopReason ?? (answer.toolCalls.length > 0 ? 'tool_calls' : 'stop');
}

function toolCalls(answer: SimAnswer): Record<string, unknown>[] {
  return answer.toolCalls.map((call) => ({
    id: call.id,
    type: 'function',
    function: { name: call.name, arguments: JSON.stringify(call.input) },
  }));
}

/** OpenAI chat completions (also what vLLM, Ollama and llama.cpp serve). */
export const openAiWire: WireFormat = {
  overloadStatus: 503,
  terminator: '[DONE]',
  json(answer) {
    const message: Record<string, unknown> = {
      role: 'assistant',
      content: answer.text === '' ? null : answer.text,
    };
    if (answer.toolCalls.length > 0) message['tool_calls'] = toolCalls(answer);
    return {
      id: answer.id,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: answer.model,
      choices: [{ index: 0, message, finish_reason: finishReason(answer), logprobs: null }],
      usage: usage(answer),
    };
  },
  events(answer) {
    const base = {
      id: answer.id,
      object: 'chat.completion.chunk',
      created: Math.floor(Date.now() / 1000),
      model: answer.model,
    };
    const chunk = (delta: Record<string, unknown>, finish: string | null = null): SseEvent => ({
      data: { ...base, choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] },
    });
    const events: SseEvent[] = [chunk({ role: 'assistant', content: '' })];
    for (const piece of chunkText(answer.text)) events.push(chunk({ content: piece }));
    toolCalls(answer).forEach((call, index) => events.push(chunk({ tool_calls: [{ index, ...call }] })));
    events.push(chunk({}, finishReason(answer)));
    const first = events[1];
    if (first !== undefined) events[1] = { ...first, opensContent: true };
    events.push({ data: { ...base, choices: [], usage: usage(answer) } });
    return events;
  },
  streamError() {
    return {
      data: {
        error: {
          message: 'The server had an error while processing your request.',
          type: 'server_error',
          param: null,
          code: 'server_error',
        },
      },
    };
  },
  error(status, message) {
    return {
      error: {
        message,
        type: ERROR_TYPES[status] ?? 'server_error',
        param: null,
        code: ERROR_TYPES[status] ?? null,
      },
    };
  },
};
