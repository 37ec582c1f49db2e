import { randomBytes } from 'node:crypto';
import type {
  CallMessage,
  CallRequest,
  CallResult,
  ToolDefinition,
  ToolResult,
} from '../../core/call-types.js';
import { isPlainObject } from '../../core/plain-object.js';
import type { Wire } from './dialects.js';
import { formatEvent } from './sse.js';

// The translated lane: a request on one vendor's wire answered by another vendor's model, through
// `call()`. Only a conversation the other side can take as it is qualifies (`untranslatable` says why
// not); what is not carried over is this one list, documented in docs/gateway.md:
//
//   - sampling settings (`max_tokens`, `temperature`, `top_p`, `top_k`, `stop`/`stop_sequences`,
//     `metadata`, `user`, `n` = 1 only): the target model's defaults apply;
//   - tool call ids are kept as the answering provider gives them.
//
// Refused (the next provider of the chain is tried, or the client is told why): thinking (asked for, or
// thinking blocks in the history: their signatures are the issuing vendor's), server tools, images and
// documents, `cache_control`, a forced named tool, and the Responses wire.

type Json = Record<string, unknown>;

/** Why `body` cannot be translated to another vendor's wire, or undefined when it can. */
export function untranslatable(wire: Wire, body: Json): string | undefined {
  if (wire === 'responses') return 'the Responses wire is passed only to OpenAI-compatible servers';
  return wire === 'anthropic' ? anthropicProblem(body) : chatProblem(body);
}

function anthropicProblem(body: Json): string | undefined {
  const thinking = body['thinking'];
  if (isPlainObject(thinking) && thinking['type'] !== 'disabled') return 'thinking is asked for';
  if (hasCacheControl(body['system'])) return 'the system prompt has cache_control';
  if (body['system'] !== undefined && typeof body['system'] !== 'string' && !textBlocks(body['system']))
    return 'the system prompt is not text';
  const messages = body['messages'];
  if (!Array.isArray(messages) || messages.length === 0) return 'there are no messages';
  for (const [index, message] of messages.entries()) {
    if (!isPlainObject(message)) return `messages.${index} is not an object`;
    const content = message['content'];
    if (typeof content === 'string') continue;
    if (!Array.isArray(content)) return `messages.${index}.content is neither text nor blocks`;
    for (const block of content) {
      if (!isPlainObject(block)) return `messages.${index} has a block that is not an object`;
      if (block['cache_control'] !== undefined) return `messages.${index} has cache_control`;
      const type = block['type'];
      if (type === 'text' || type === 'tool_use') continue;
      if (type === 'tool_result') {
        const result = block['content'];
        if (result === undefined || typeof result === 'string' || textBlocks(result)) continue;
        return `messages.${index} has a tool result that is not text`;
      }
      return `messages.${index} has a ${String(type)} block`;
    }
  }
  const first = messages[0] as Json;
  if (first['role'] !== 'user' || textOf(first['content']) === undefined)
    return 'the first message is not text from the user';
  const tools = body['tools'];
  if (tools !== undefined) {
    if (!Array.isArray(tools)) return 'tools is not a list';
    for (const tool of tools) {
      if (!isPlainObject(tool)) return 'a tool is not an object';
      if (tool['type'] !== undefined && tool['type'] !== 'custom')
        return `the server tool ${String(tool['type'])}`;
      if (tool['cache_control'] !== undefined) return 'a tool has cache_control';
    }
  }
  const choice = body['tool_choice'];
  if (isPlainObject(choice) && choice['type'] !== 'auto' && choice['type'] !== 'any')
    return `tool_choice ${String(choice['type'])}`;
  return undefined;
}

function chatProblem(body: Json): string | undefined {
  const messages = body['messages'];
  if (!Array.isArray(messages) || messages.length === 0) return 'there are no messages';
  for (const [index, message] of messages.entries()) {
    if (!isPlainObject(message)) return `messages.${index} is not an object`;
    const content = message['content'];
    if (content === null || content === undefined || typeof content === 'string') continue;
    if (!Array.isArray(content) || !content.every((part) => isPlainObject(part) && part['type'] === 'text'))
      return `messages.${index} has content that is not text`;
  }
  if (typeof body['n'] === 'number' && body['n'] !== 1) return 'n is not 1';
  const tools = body['tools'];
  if (tools !== undefined) {
    if (!Array.isArray(tools)) return 'tools is not a list';
    if (
      !tools.every(
        (tool) => isPlainObject(tool) && tool['type'] === 'function' && isPlainObject(tool['function']),
      )
    )
      return 'a tool is not a function';
  }
  const choice = body['tool_choice'];
  if (choice !== undefined && choice !== 'auto' && choice !== 'required')
    return 'tool_choice names a tool or none';
  const format = body['response_format'];
  if (isPlainObject(format) && format['type'] !== 'text') return 'response_format asks for JSON';
  return undefined;
}

function hasCacheControl(value: unknown): boolean {
  return (
    Array.isArray(value) &&
    value.some((block) => isPlainObject(block) && block['cache_control'] !== undefined)
  );
}

function textBlocks(value: unknown): boolean {
  return Array.isArray(value) && value.every((block) => isPlainObject(block) && block['type'] === 'text');
}

/** The text of a string or of text blocks/parts; undefined when there is other content. */
function textOf(content: unknown): string | undefined {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return undefined;
  const texts: string[] = [];
  for (const block of content) {
    if (!isPlainObject(block) || block['type'] !== 'text' || typeof block['text'] !== 'string')
      return undefined;
    texts.push(block['text']);
  }
  return texts.join('\n');
}

/** The client's conversation as one `call()` request (the caller adds the signal, tags and streaming). */
export function toCallRequest(wire: Wire, body: Json): CallRequest {
  return wire === 'anthropic' ? fromAnthropic(body) : fromChat(body);
}

function fromAnthropic(body: Json): CallRequest {
  const [first, ...rest] = body['messages'] as Json[];
  const request: CallRequest = { prompt: textOf((first as Json)['content']) ?? '' };
  const system = body['system'];
  if (system !== undefined) request.system = textOf(system) ?? '';
  const names = new Map<string, string>();
  const messages: CallMessage[] = [];
  for (const message of rest) {
    const content = message['content'];
    const blocks: Json[] =
      typeof content === 'string' ? [{ type: 'text', text: content }] : (content as Json[]);
    if (message['role'] === 'assistant') {
      const text = blocks
        .filter((block) => block['type'] === 'text')
        .map((block) => String(block['text']))
        .join('');
      const toolCalls = blocks
        .filter((block) => block['type'] === 'tool_use')
        .map((block) => {
          names.set(String(block['id']), String(block['name']));
          return {
            id: String(block['id']),
            name: String(block['name']),
            input: isPlainObject(block['input']) ? block['input'] : {},
          };
        });
      messages.push(
        toolCalls.length === 0 ? { role: 'assistant', text } : { role: 'assistant', text, toolCalls },
      );
      continue;
    }
    const results: ToolResult[] = blocks
      .filter((block) => block['type'] === 'tool_result')
      .map((block) => {
        const id = String(block['tool_use_id']);
        const result: ToolResult = { id, name: names.get(id) ?? '', content: textOf(block['content']) ?? '' };
        if (block['is_error'] === true) result.isError = true;
        return result;
      });
    if (results.length > 0) messages.push({ role: 'tool', results });
    const text = blocks
      .filter((block) => block['type'] === 'text')
      .map((block) => String(block['text']))
      .join('\n');
    if (text !== '') messages.push({ role: 'user', text });
  }
  if (messages.length > 0) request.messages = messages;
  const tools = body['tools'];
  if (Array.isArray(tools) && tools.length > 0) {
    request.tools = (tools as Json[]).map((tool): ToolDefinition => ({
      name: String(tool['name']),
      description: typeof tool['description'] === 'string' ? tool['description'] : '',
      inputSchema: isPlainObject(tool['input_schema']) ? tool['input_schema'] : { type: 'object' },
    }));
    const choice = body['tool_choice'];
    if (isPlainObject(choice) && choice['type'] === 'any') request.toolChoice = 'required';
  }
  return request;
}

function fromChat(body: Json): CallRequest {
  const all = body['messages'] as Json[];
  const systems = all.filter((message) => message['role'] === 'system' || message['role'] === 'developer');
  const rest = all.filter((message) => message['role'] !== 'system' && message['role'] !== 'developer');
  const [first, ...later] = rest;
  const request: CallRequest = { prompt: textOf(first?.['content']) ?? '' };
  if (systems.length > 0)
    request.system = systems.map((message) => textOf(message['content']) ?? '').join('\n\n');
  const names = new Map<string, string>();
  const messages: CallMessage[] = [];
  for (const message of later) {
    const role = message['role'];
    if (role === 'assistant') {
      const calls = Array.isArray(message['tool_calls']) ? (message['tool_calls'] as Json[]) : [];
      const toolCalls = calls.map((call) => {
        const fn = isPlainObject(call['function']) ? call['function'] : {};
        names.set(String(call['id']), String(fn['name']));
        let input: unknown;
        try {
          input = JSON.parse(String(fn['arguments'] ?? '{}'));
        } catch {
          input = {};
        }
        return { id: String(call['id']), name: String(fn['name']), input: isPlainObject(input) ? input : {} };
      });
      const text = textOf(message['content']) ?? '';
      messages.push(
        toolCalls.length === 0 ? { role: 'assistant', text } : { role: 'assistant', text, toolCalls },
      );
    } else if (role === 'tool') {
      const id = String(message['tool_call_id']);
      const result: ToolResult = { id, name: names.get(id) ?? '', content: textOf(message['content']) ?? '' };
      const last = messages.at(-1);
      if (last?.role === 'tool') last.results.push(result);
      else messages.push({ role: 'tool', results: [result] });
    } else {
      messages.push({ role: 'user', text: textOf(message['content']) ?? '' });
    }
  }
  if (messages.length > 0) request.messages = messages;
  const tools = body['tools'];
  if (Array.isArray(tools) && tools.length > 0) {
    request.tools = (tools as Json[]).map((tool): ToolDefinition => {
      const fn = tool['function'] as Json;
      return {
        name: String(fn['name']),
        description: typeof fn['description'] === 'string' ? fn['description'] : '',
        inputSchema: isPlainObject(fn['parameters']) ? fn['parameters'] : { type: 'object' },
      };
    });
    if (body['tool_choice'] === 'required') request.toolChoice = 'required';
  }
  return request;
}

function newId(prefix: string): string {
  return `${prefix}${randomBytes(12).toString('hex')}`;
}

/** What a translated answer writes on the client's wire: a whole JSON answer, or a stream piece by piece. */
export interface TranslatedWriter {
  /** A complete JSON answer. */
  answer(result: CallResult): unknown;
  /** The stream's opening event (message_start, the role chunk), before the first text. */
  open(inputEstimate: number): string;
  /** A piece of text (its block opened first when it is the first piece). */
  text(delta: string): string;
  /** The rest: text not streamed, tool calls, the stop reason, usage, and the clean end (sent after the ledger row). */
  close(result: CallResult): { body: string; end: string };
}

export function translatedWriter(wire: Wire, model: string, clientWantsUsage: boolean): TranslatedWriter {
  return wire === 'anthropic' ? anthropicWriter(model) : chatWriter(model, clientWantsUsage);
}

function anthropicUsage(result: CallResult): Json {
  return {
    input_tokens: result.usage.inputTokens,
    output_tokens: result.usage.outputTokens,
    cache_read_input_tokens: result.usage.cacheReadTokens,
    cache_creation_input_tokens: result.usage.cacheWriteTokens,
  };
}

function anthropicWriter(model: string): TranslatedWriter {
  const id = newId('msg_sb_');
  const stopReason = (result: CallResult) => ((result.toolCalls?.length ?? 0) > 0 ? 'tool_use' : 'end_turn');
  let textOpen = false;
  return {
    answer(result) {
      const content: Json[] = [];
      if (result.text !== '' || (result.toolCalls?.length ?? 0) === 0)
        content.push({ type: 'text', text: result.text });
      for (const call of result.toolCalls ?? [])
        content.push({ type: 'tool_use', id: call.id, name: call.name, input: call.input });
      return {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content,
        stop_reason: stopReason(result),
        stop_sequence: null,
        usage: anthropicUsage(result),
      };
    },
    open(inputEstimate) {
      return formatEvent('message_start', {
        type: 'message_start',
        message: {
          id,
          type: 'message',
          role: 'assistant',
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: inputEstimate, output_tokens: 1 },
        },
      });
    },
    text(delta) {
      const start = textOpen
        ? ''
        : formatEvent('content_block_start', {
            type: 'content_block_start',
            index: 0,
            content_block: { type: 'text', text: '' },
          });
      textOpen = true;
      return (
        start +
        formatEvent('content_block_delta', {
          type: 'content_block_delta',
          index: 0,
          delta: { type: 'text_delta', text: delta },
        })
      );
    },
    close(result) {
      let body = '';
      if (!textOpen && (result.text !== '' || (result.toolCalls?.length ?? 0) === 0))
        body += this.text(result.text);
      if (textOpen) body += formatEvent('content_block_stop', { type: 'content_block_stop', index: 0 });
      let index = textOpen ? 1 : 0;
      for (const call of result.toolCalls ?? []) {
        body += formatEvent('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} },
        });
        body += formatEvent('content_block_delta', {
          type: 'content_block_delta',
          index,
          delta: { type: 'input_json_delta', partial_json: JSON.stringify(call.input) },
        });
        body += formatEvent('content_block_stop', { type: 'content_block_stop', index });
        index += 1;
      }
      body += formatEvent('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: stopReason(result), stop_sequence: null },
        usage: anthropicUsage(result),
      });
      return { body, end: formatEvent('message_stop', { type: 'message_stop' }) };
    },
  };
}

function chatUsage(result: CallResult): Json {
  const prompt = result.usage.inputTokens + result.usage.cacheReadTokens;
  return {
    prompt_tokens: prompt,
    completion_tokens: result.usage.outputTokens,
    total_tokens: prompt + result.usage.outputTokens,
    prompt_tokens_details: { cached_tokens: result.usage.cacheReadTokens },
  };
}

function chatWriter(model: string, clientWantsUsage: boolean): TranslatedWriter {
  const id = newId('chatcmpl-sb');
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: Json, finish: string | null = null) =>
    formatEvent(undefined, {
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
    });
  const finish = (result: CallResult) => ((result.toolCalls?.length ?? 0) > 0 ? 'tool_calls' : 'stop');
  let streamedText = false;
  const toolCalls = (result: CallResult) =>
    (result.toolCalls ?? []).map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: JSON.stringify(call.input) },
    }));
  return {
    answer(result) {
      const message: Json = { role: 'assistant', content: result.text === '' ? null : result.text };
      if ((result.toolCalls?.length ?? 0) > 0) message['tool_calls'] = toolCalls(result);
      return {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [{ index: 0, message, finish_reason: finish(result), logprobs: null }],
        usage: chatUsage(result),
      };
    },
    open() {
      return chunk({ role: 'assistant', content: '' });
    },
    text(delta) {
      streamedText = true;
      return chunk({ content: delta });
    },
    close(result) {
      let body = '';
      if (!streamedText && result.text !== '') body += chunk({ content: result.text });
      toolCalls(result).forEach((call, index) => (body += chunk({ tool_calls: [{ index, ...call }] })));
      body += chunk({}, finish(result));
      if (clientWantsUsage)
        body += formatEvent(undefined, {
          id,
          object: 'chat.completion.chunk',
          created,
          model,
          choices: [],
          usage: chatUsage(result),
        });
      return { body, end: 'data: [DONE]\n\n' };
    },
  };
}
