import { chunkText, type SimAnswer, type SseEvent, type WireFormat } from './answer.js';

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

function usage(answer: SimAnswer, output: number): Record<string, number> {
  return {
    input_tokens: answer.usage.input,
    output_tokens: output,
    cache_creation_input_tokens: answer.usage.cacheWrite,
    cache_read_input_tokens: answer.usage.cacheRead,
  };
}

function stopReason(answer: SimAnswer): string {
  return answer.stopReason ?? (answer.toolCalls.length > 0 ? 'tool_use' : 'end_turn');
}

function blocks(answer: SimAnswer): Record<string, unknown>[] {
  const content: Record<string, unknown>[] = [];
  if (answer.thinking !== undefined) {
    content.push({ type: 'thinking', thinking: answer.thinking.text, signature: answer.thinking.signature });
  }
  if (answer.redactedThinking !== undefined)
    content.push({ type: 'redacted_thinking', data: answer.redactedThinking });
  if (answer.serverTool !== undefined) {
    const { id, name, input, result } = answer.serverTool;
    content.push(
      { type: 'server_tool_use', id, name, input },
      { type: `${name}_tool_result`, tool_use_id: id, content: result },
    );
  }
  if (answer.text !== '' || answer.toolCalls.length === 0) content.push({ type: 'text', text: answer.text });
  for (const call of answer.toolCalls)
    content.push({ type: 'tool_use', id: call.id, name: call.name, input: call.input });
  return content;
}

const delta = (index: number, value: Record<string, unknown>): SseEvent => ({
  event: 'content_block_delta',
  data: { type: 'content_block_delta', index, delta: value },
});

/** One content block as a stream: its start (empty, or whole when it has no delta form), deltas, stop. */
function blockEvents(block: Record<string, unknown>, index: number): SseEvent[] {
  const start = (contentBlock: Record<string, unknown>): SseEvent => ({
    event: 'content_block_start',
    data: { type: 'content_block_start', index, content_block: contentBlock },
  });
  const events: SseEvent[] = [];
  switch (block['type']) {
    case 'text':
      events.push(start({ type: 'text', text: '' }));
      for (const piece of chunkText(String(block['text'])))
        events.push(delta(index, { type: 'text_delta', text: piece }));
      break;
    case 'thinking':
      events.push(start({ type: 'thinking', thinking: '', signature: '' }));
      for (const piece of chunkText(String(block['thinking'])))
        events.push(delta(index, { type: 'thinking_delta', thinking: piece }));
      events.push(delta(index, { type: 'signature_delta', signature: block['signature'] }));
      break;
    case 'tool_use':
    case 'server_tool_use':
      events.push(start({ ...block, input: {} }));
      for (const piece of chunkText(JSON.stringify(block['input'])))
        events.push(delta(index, { type: 'input_json_delta', partial_json: piece }));
      break;
    default:
      events.push(start(block));
  }
  events.push({ event: 'content_block_stop', data: { type: 'content_block_stop', index } });
  return events;
}

/** Anthropic Messages API: a `message` object, or the SSE event sequence of a streamed one. */
export const anthropicWire: WireFormat = {
  overloadStatus: 529,
  json(answer) {
    return {
      id: answer.id,
      type: 'message',
      role: 'assistant',
      model: answer.model,
      content: blocks(answer),
      stop_reason: stopReason(answer),
      stop_sequence: null,
      usage: usage(answer, answer.usage.output),
    };
  },
  events(answer) {
    const events: SseEvent[] = [
      {
        event: 'message_start',
        data: {
          type: 'message_start',
          message: {
            id: answer.id,
            type: 'message',
            role: 'assistant',
            model: answer.model,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: usage(answer, 1),
          },
        },
      },
      { event: 'ping', data: { type: 'ping' } },
    ];
    blocks(answer).forEach((block, index) => {
      const [first, ...rest] = blockEvents(block, index);
      if (first !== undefined) events.push(index === 0 ? { ...first, opensContent: true } : first, ...rest);
    });
    events.push(
      {
        event: 'message_delta',
        data: {
          type: 'message_delta',
          delta: { stop_reason: stopReason(answer), stop_sequence: null },
          usage: { output_tokens: answer.usage.output },
        },
      },
      { event: 'message_stop', data: { type: 'message_stop' } },
    );
    return events;
  },
  error(status, message) {
    return { type: 'error', error: { type: ERROR_TYPES[status] ?? 'api_error', message } };
  },
  streamError() {
    return {
      event: 'error',
      data: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
    };
  },
};
