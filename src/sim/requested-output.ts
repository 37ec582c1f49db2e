import { OUTPUT_TOOL_NAME } from '../core/call-types.js';
import type { SimWire } from './scenario.js';
import { thinkingEnabled } from './thinking.js';

type Json = Record<string, unknown>;

const asObject = (value: unknown): Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};
const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** The structured output a request asks for: a tool to call with conforming input, or JSON text. */
export type RequestedOutput =
  { kind: 'tool'; name: string; schema: unknown } | { kind: 'json'; schema: unknown };

/** Claude Code's tool for structured output (`--json-schema`, the Agent SDK's `outputFormat`). */
const CLAUDE_CODE_OUTPUT_TOOL = 'StructuredOutput';

/** Any JSON object: what a request for JSON without a schema accepts. */
const ANY_OBJECT = { type: 'object' };

/**
 * What structured output a request carries, in its wire format; undefined when it asks for
 * none, or when the conversation already holds the call it asked for (Claude Code asks again after
 * its `StructuredOutput` tool ran, and wants the turn to end).
 */
export function requestedOutput(wire: SimWire, body: Json): RequestedOutput | undefined {
  switch (wire) {
    case 'anthropic':
      return anthropicOutput(body);
    case 'chat':
      return openAiOutput(body);
    case 'responses':
      return responsesOutput(body);
    case 'gemini':
      return geminiOutput(body);
  }
}

/**
 * Anthropic: a forced tool (`tool_choice: {type: tool}`, how Switchboard asks), `emit_output` under
 * `tool_choice: {type: any}` (the tool loop), Claude Code's `StructuredOutput` tool when offered, or
 * the JSON-schema output format.
 */
function anthropicOutput(body: Json): RequestedOutput | undefined {
  const tools = asArray(body['tools']).map(asObject);
  const choice = asObject(body['tool_choice']);
  // With thinking on the API allows no forced tool, so `emit_output` is only offered: answer it then too.
  const forced =
    choice['type'] === 'tool'
      ? choice['name']
      : choice['type'] === 'any' || thinkingEnabled(body)
        ? OUTPUT_TOOL_NAME
        : undefined;
  const tool =
    tools.find((candidate) => forced !== undefined && candidate['name'] === forced) ??
    tools.find((candidate) => candidate['name'] === CLAUDE_CODE_OUTPUT_TOOL);
  if (tool !== undefined) {
    const name = String(tool['name']);
    const messages = asArray(body['messages']).map(asObject);
    const last = messages.filter((message) => message['role'] === 'assistant').at(-1);
    const called = asArray(last?.['content']).some((block) => {
      const item = asObject(block);
      return item['type'] === 'tool_use' && item['name'] === name;
    });
    return called ? undefined : { kind: 'tool', name, schema: tool['input_schema'] };
  }
  const format = asObject(body['output_format'] ?? asObject(body['output_config'])['format']);
  return format['type'] === 'json_schema' ? { kind: 'json', schema: format['schema'] } : undefined;
}

/**
 * OpenAI chat completions: a forced function, `emit_output` under `tool_choice: required`, else
 * `response_format` (`json_schema` or `json_object`).
 */
function openAiOutput(body: Json): RequestedOutput | undefined {
  const choice =
    body['tool_choice'] === 'required'
      ? { name: OUTPUT_TOOL_NAME }
      : asObject(asObject(body['tool_choice'])['function']);
  if (typeof choice['name'] === 'string') {
    const name = choice['name'];
    const tool = asArray(body['tools'])
      .map((entry) => asObject(asObject(entry)['function']))
      .find((candidate) => candidate['name'] === name);
    const last = asArray(body['messages'])
      .map(asObject)
      .filter((message) => message['role'] === 'assistant')
      .at(-1);
    const called = asArray(last?.['tool_calls']).some(
      (call) => asObject(asObject(call)['function'])['name'] === name,
    );
    if (tool !== undefined && !called) return { kind: 'tool', name, schema: tool['parameters'] };
  }
  const format = asObject(body['response_format']);
  if (format['type'] === 'json_schema') {
    return { kind: 'json', schema: asObject(format['json_schema'])['schema'] ?? ANY_OBJECT };
  }
  return format['type'] === 'json_object' ? { kind: 'json', schema: ANY_OBJECT } : undefined;
}

/**
 * OpenAI Responses: a forced function (`tool_choice: {type: function, name}`), `emit_output` under
 * `tool_choice: required`, else `text.format`.
 */
function responsesOutput(body: Json): RequestedOutput | undefined {
  const choice =
    body['tool_choice'] === 'required'
      ? { type: 'function', name: OUTPUT_TOOL_NAME }
      : asObject(body['tool_choice']);
  if (choice['type'] === 'function' && typeof choice['name'] === 'string') {
    const name = choice['name'];
    const tool = asArray(body['tools'])
      .map(asObject)
      .find((candidate) => candidate['type'] === 'function' && candidate['name'] === name);
    const called = asArray(body['input']).some((item) => {
      const entry = asObject(item);
      return entry['type'] === 'function_call' && entry['name'] === name;
    });
    if (tool !== undefined && !called) return { kind: 'tool', name, schema: tool['parameters'] };
  }
  const format = asObject(asObject(body['text'])['format']);
  if (format['type'] === 'json_schema') return { kind: 'json', schema: format['schema'] ?? ANY_OBJECT };
  return format['type'] === 'json_object' ? { kind: 'json', schema: ANY_OBJECT } : undefined;
}

/**
 * Gemini: a forced function (`functionCallingConfig` mode `ANY` with one allowed name, or
 * `emit_output` under `ANY` without names), else
 * `responseJsonSchema` / `responseSchema` (or `responseMimeType: application/json` alone).
 */
function geminiOutput(body: Json): RequestedOutput | undefined {
  const calling = asObject(asObject(body['toolConfig'])['functionCallingConfig']);
  const allowed = asArray(calling['allowedFunctionNames']);
  const named = allowed.length === 1 && typeof allowed[0] === 'string' ? allowed[0] : undefined;
  if (calling['mode'] === 'ANY' && (named !== undefined || allowed.length === 0)) {
    const name = named ?? OUTPUT_TOOL_NAME;
    const declaration = asArray(body['tools'])
      .flatMap((tool) => asArray(asObject(tool)['functionDeclarations']).map(asObject))
      .find((candidate) => candidate['name'] === name);
    if (declaration !== undefined) {
      return {
        kind: 'tool',
        name,
        schema: declaration['parametersJsonSchema'] ?? declaration['parameters'],
      };
    }
  }
  const config = asObject(body['generationConfig']);
  const schema = config['responseJsonSchema'] ?? config['responseSchema'];
  if (schema !== undefined) return { kind: 'json', schema };
  return config['responseMimeType'] === 'application/json' ? { kind: 'json', schema: ANY_OBJECT } : undefined;
}
