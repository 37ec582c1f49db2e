import type { SimProvider, SimWire } from './scenario.js';

/** What the simulator understood of one request, whatever the provider's wire format. */
export interface SimRequestView {
  provider: SimProvider;
  wire: SimWire;
  model: string;
  stream: boolean;
  /** Text of the last user message (tool results included as text; Claude Code's reminders left out). */
  text: string;
  system: string;
  /** Names of the tools the request offers. */
  tools: string[];
  /** 1-based number of user turns (tool results count). */
  turn: number;
  /** Whether the request asks for JSON output (OpenAI `response_format`, Gemini `responseSchema`). */
  wantsJson: boolean;
}

type Json = Record<string, unknown>;

const asObject = (value: unknown): Json =>
  typeof value === 'object' && value !== null ? (value as Json) : {};
const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const asString = (value: unknown): string => (typeof value === 'string' ? value : '');

/**
 * Markup Claude Code wraps around a user's words: system reminders (environment, date, token budget)
 * and the echo of local commands such as `/clear`. Rules match what the user wrote, not this.
 */
const HARNESS_MARKUP =
  /<(system-reminder|local-command-caveat|local-command-stdout|local-command-stderr|command-name|command-message|command-args)>[\s\S]*?<\/\1>/g;

/** The user's own words in a message text. */
export function stripHarnessMarkup(text: string): string {
  return text.replace(HARNESS_MARKUP, '').trim();
}

/** Text inside Anthropic/OpenAI content: a string, or a list of blocks with `text` / `content`. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  return asArray(content)
    .map((block) => {
      const item = asObject(block);
      if (typeof item['text'] === 'string') return item['text'];
      if (item['content'] !== undefined) return contentText(item['content']);
      return '';
    })
    .filter((text) => text !== '')
    .join('\n');
}

export function viewAnthropicRequest(body: Json): SimRequestView {
  const messages = asArray(body['messages']).map(asObject);
  const users = messages.filter((message) => message['role'] === 'user');
  return {
    provider: 'anthropic',
    wire: 'anthropic',
    model: asString(body['model']),
    stream: body['stream'] === true,
    text: stripHarnessMarkup(contentText(users.at(-1)?.['content'])),
    system: contentText(body['system']),
    tools: asArray(body['tools']).map((tool) => asString(asObject(tool)['name'])),
    turn: Math.max(1, users.length),
    wantsJson: false,
  };
}

export function viewOpenAiRequest(body: Json): SimRequestView {
  const messages = asArray(body['messages']).map(asObject);
  const users = messages.filter((message) => message['role'] === 'user' || message['role'] === 'tool');
  const format = asObject(body['response_format']);
  return {
    provider: 'openai',
    wire: 'chat',
    model: asString(body['model']),
    stream: body['stream'] === true,
    text: contentText(users.at(-1)?.['content']),
    system: messages
      .filter((message) => message['role'] === 'system' || message['role'] === 'developer')
      .map((message) => contentText(message['content']))
      .join('\n'),
    tools: asArray(body['tools']).map((tool) => asString(asObject(asObject(tool)['function'])['name'])),
    turn: Math.max(1, users.length),
    wantsJson: format['type'] === 'json_schema' || format['type'] === 'json_object',
  };
}

export function viewGeminiRequest(body: Json, model: string, stream: boolean): SimRequestView {
  const contents = asArray(body['contents']).map(asObject);
  const users = contents.filter((content) => content['role'] === 'user' || content['role'] === undefined);
  const partsText = (content: Json | undefined): string =>
    asArray(content?.['parts'])
      .map((part) => {
        const item = asObject(part);
        if (typeof item['text'] === 'string') return item['text'];
        const response = item['functionResponse'];
        return response === undefined ? '' : JSON.stringify(asObject(response)['response'] ?? {});
      })
      .filter((text) => text !== '')
      .join('\n');
  const config = asObject(body['generationConfig']);
  return {
    provider: 'gemini',
    wire: 'gemini',
    model,
    stream,
    text: partsText(users.at(-1)),
    system: partsText(asObject(body['systemInstruction'])),
    tools: asArray(body['tools']).flatMap((tool) =>
      asArray(asObject(tool)['functionDeclarations']).map((declaration) =>
        asString(asObject(declaration)['name']),
      ),
    ),
    turn: Math.max(1, users.length),
    wantsJson:
      config['responseMimeType'] === 'application/json' ||
      config['responseSchema'] !== undefined ||
      config['responseJsonSchema'] !== undefined,
  };
}

/**
 * OpenAI Responses: `input` is a string or a list of items (messages with `input_text` /
 * `output_text` parts or string content, `function_call`, `function_call_output`); `instructions`
 * is the system prompt. A function's output counts as a user turn, as a chat `tool` message does.
 */
export function viewResponsesRequest(body: Json): SimRequestView {
  const input = body['input'];
  const items = typeof input === 'string' ? [{ role: 'user', content: input }] : asArray(input).map(asObject);
  const users = items.filter(
    (item) =>
      ((item['type'] === undefined || item['type'] === 'message') && item['role'] === 'user') ||
      item['type'] === 'function_call_output',
  );
  const last = users.at(-1);
  const format = asObject(asObject(body['text'])['format']);
  return {
    provider: 'openai',
    wire: 'responses',
    model: asString(body['model']),
    stream: body['stream'] === true,
    text:
      last?.['type'] === 'function_call_output'
        ? typeof last['output'] === 'string'
          ? last['output']
          : contentText(last['output'])
        : contentText(last?.['content']),
    system: [
      asString(body['instructions']),
      ...items
        .filter((item) => item['role'] === 'system' || item['role'] === 'developer')
        .map((item) => contentText(item['content'])),
    ]
      .filter((text) => text !== '')
      .join('\n'),
    tools: asArray(body['tools'])
      .map(asObject)
      .filter((tool) => tool['type'] === 'function')
      .map((tool) => asString(tool['name'])),
    turn: Math.max(1, users.length),
    wantsJson: format['type'] === 'json_schema' || format['type'] === 'json_object',
  };
}
