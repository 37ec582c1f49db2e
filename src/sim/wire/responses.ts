import { chunkText, type SimAnswer, type WireFormat } from './answer.js';
import { openAiWire } from './openai.js';

type Json = Record<string, unknown>;

/** The ids of one answer's response and items, all derived from the answer's own id. */
function ids(answer: SimAnswer): { response: string; message: string; call: (index: number) => string } {
  const suffix = answer.id.replace(/^sim_/, '');
  return {
    response: `resp_${suffix}`,
    message: `msg_${suffix}`,
    call: (index) => `fc_${suffix}_${index}`,
  };
}

function usage(answer: SimAnswer): Json {
  const input = answer.usage.input + answer.usage.cacheRead;
  return {
    input_tokens: input,
    output_tokens: answer.usage.output,
    total_tokens: input + answer.usage.output,
    input_tokens_details: { cached_tokens: answer.usage.cacheRead },
    output_tokens_details: { reasoning_tokens: 0 },
  };
}

const outputText = (text: string): Json => ({ type: 'output_text', text, annotations: [] });

/** The answer's output items, complete: a message when it has text (or nothing else), then function calls. */
function outputItems(answer: SimAnswer): Json[] {
  const id = ids(answer);
  const items: Json[] = [];
  if (answer.text !== '' || answer.toolCalls.length === 0) {
    items.push({
      type: 'message',
      id: id.message,
      role: 'assistant',
      status: 'completed',
      content: [outputText(answer.text)],
    });
  }
  answer.toolCalls.forEach((call, index) =>
    items.push({
      type: 'function_call',
      id: id.call(index),
      call_id: call.id,
      name: call.name,
      arguments: JSON.stringify(call.input),
      status: 'completed',
    }),
  );
  return items;
}

/** A `response` object; `status` other than completed carries no output or usage yet. */
function responseObject(answer: SimAnswer, createdAt: number, status: string, extra: Json = {}): Json {
  const done = status === 'completed' || status === 'incomplete';
  return {
    id: ids(answer).response,
    object: 'response',
    created_at: createdAt,
    status,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: answer.stopReason } : null,
    instructions: null,
    metadata: {},
    model: answer.model,
    output: done ? outputItems(answer) : [],
    parallel_tool_calls: true,
    temperature: null,
    tool_choice: 'auto',
    tools: [],
    top_p: null,
    usage: done ? usage(answer) : null,
    ...extra,
  };
}

/** `max_output_tokens` (or `content_filter`) as the stop reason makes the response incomplete. */
function finalStatus(answer: SimAnswer): string {
  return answer.stopReason === 'max_output_tokens' || answer.stopReason === 'content_filter'
    ? 'incomplete'
    : 'completed';
}

/** The events of one output item, from `output_item.added` to `output_item.done`. */
function itemEvents(item: Json, outputIndex: number): Json[] {
  const itemId = item['id'];
  const at = { item_id: itemId, output_index: outputIndex };
  if (item['type'] === 'function_call') {
    const argumentsText = String(item['arguments']);
    return [
      {
        type: 'response.output_item.added',
        output_index: outputIndex,
        item: { ...item, arguments: '', status: 'in_progress' },
      },
      ...chunkText(argumentsText).map((piece) => ({
        type: 'response.function_call_arguments.delta',
        ...at,
        delta: piece,
      })),
      { type: 'response.function_call_arguments.done', ...at, arguments: argumentsText },
      { type: 'response.output_item.done', output_index: outputIndex, item },
    ];
  }
  const content = (item['content'] as Json[])[0] ?? outputText('');
  const text = String(content['text']);
  const part = { ...at, content_index: 0 };
  return [
    {
      type: 'response.output_item.added',
      output_index: outputIndex,
      item: { ...item, status: 'in_progress', content: [] },
    },
    { type: 'response.content_part.added', ...part, part: outputText('') },
    ...chunkText(text).map((piece) => ({
      type: 'response.output_text.delta',
      ...part,
      delta: piece,
      logprobs: [],
    })),
    { type: 'response.output_text.done', ...part, text, logprobs: [] },
    { type: 'response.content_part.done', ...part, part: content },
    { type: 'response.output_item.done', output_index: outputIndex, item },
  ];
}

/** OpenAI Responses (`POST /v1/responses`): a `response` object, or its typed, numbered SSE events. */
export const responsesWire: WireFormat = {
  overloadStatus: 503,
  json(answer) {
    return responseObject(answer, Math.floor(Date.now() / 1000), finalStatus(answer));
  },
  events(answer) {
    const createdAt = Math.floor(Date.now() / 1000);
    const status = finalStatus(answer);
    const data: Json[] = [
      { type: 'response.created', response: responseObject(answer, createdAt, 'in_progress') },
      { type: 'response.in_progress', response: responseObject(answer, createdAt, 'in_progress') },
      ...outputItems(answer).flatMap(itemEvents),
      {
        type: status === 'completed' ? 'response.completed' : 'response.incomplete',
        response: responseObject(answer, createdAt, status),
      },
    ];
    return data.map((event, sequence) => ({
      event: String(event['type']),
      data: { ...event, sequence_number: sequence },
      ...(sequence === 2 ? { opensContent: true } : {}),
    }));
  },
  streamError(answer, sent) {
    const response = responseObject(answer, Math.floor(Date.now() / 1000), 'failed', {
      error: { code: 'server_error', message: 'The server had an error while processing your request.' },
    });
    return { event: 'response.failed', data: { type: 'response.failed', response, sequence_number: sent } };
  },
  error(status, message) {
    return openAiWire.error(status, message);
  },
};
