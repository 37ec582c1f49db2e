import { readDataFile } from '../core/data-file.js';
import { z } from 'zod';
import { SwitchboardError } from '../core/errors.js';

export const SIM_PROVIDERS = ['anthropic', 'gemini', 'openai'] as const;
export type SimProvider = (typeof SIM_PROVIDERS)[number];

/** The wire protocols the simulator speaks: OpenAI has two (chat completions and Responses). */
export const SIM_WIRES = ['anthropic', 'chat', 'responses', 'gemini'] as const;
export type SimWire = (typeof SIM_WIRES)[number];

const usageSchema = z.strictObject({
  input: z.number().int().nonnegative().optional(),
  output: z.number().int().nonnegative().optional(),
  cacheRead: z.number().int().nonnegative().optional(),
  cacheWrite: z.number().int().nonnegative().optional(),
});

const toolCallSchema = z.strictObject({
  name: z.string().min(1),
  input: z.record(z.string(), z.unknown()).default({}),
  id: z.string().optional(),
});

const replySchema = z.strictObject({
  /** Text of the answer. */
  text: z.string().optional(),
  /** Answer with the user's own text (what `match.text` sees), prefixed by `text` when given. */
  echo: z.boolean().optional(),
  /** A JSON value sent as the answer's text (or as Gemini/OpenAI structured output). */
  json: z.unknown().optional(),
  /**
   * Answer a request that asks for structured output with a small value that conforms to the schema
   * it carries: the forced tool's input (Anthropic `tool_choice`, OpenAI and Gemini forced
   * functions, Claude Code's `StructuredOutput` tool), or JSON text for OpenAI `response_format` and
   * Gemini `responseJsonSchema`/`responseSchema`. It replaces `text`, `json` and the tool calls; a
   * request without a schema gets the rest of the reply (`text`, `echo`, …; `ok` when it has none).
   */
  conform: z.boolean().optional(),
  /** A tool call; `tools` for several in one answer. */
  tool: toolCallSchema.optional(),
  tools: z.array(toolCallSchema).optional(),
  usage: usageSchema.optional(),
  /** The model name the response reports (default: the one requested). */
  model: z.string().optional(),
  /** Milliseconds before the response starts. */
  delayMs: z.number().nonnegative().optional(),
  /** Streams only: milliseconds between the headers and the first content. */
  firstTokenDelayMs: z.number().nonnegative().optional(),
  /** Streams only: milliseconds between chunks. */
  chunkDelayMs: z.number().nonnegative().optional(),
  /** Streams only: milliseconds of silence after the stream's opening events (Anthropic `message_start` and its ping) before the first content. */
  contentDelayMs: z.number().nonnegative().optional(),
  stopReason: z.string().optional(),
  /**
   * Anthropic: the answer opens with a `thinking` block of this text, signed by the simulator; a
   * request that sends it back with other text, or another signature, gets a 400.
   */
  thinking: z.string().optional(),
  /** Anthropic: a `redacted_thinking` block (opaque `data` the simulator issued) before the text. */
  redactedThinking: z.boolean().optional(),
  /**
   * Anthropic: a server tool ran before the text: a `server_tool_use` block (`name`, `input`) and its
   * `<name>_tool_result` block (`web_search_tool_result` for `web_search`) with `result` as content.
   */
  serverTool: z
    .strictObject({
      name: z.string().min(1),
      input: z.record(z.string(), z.unknown()).default({}),
      result: z.unknown(),
    })
    .optional(),
});

const faultSchema = z.strictObject({
  /**
   * `status`: an HTTP error (give `status`); `overload`: the provider's overload answer (Anthropic 529,
   * others 503); `drop-before`: the connection closes before any response; `drop-during`: it closes in
   * the middle of the body or stream; `stall`: headers are never sent; `malformed`: 200 with a body
   * that is not valid JSON (or SSE whose data is not); `page`: 200 with an HTML page, as a proxy or
   * captive portal in the way answers (`body` sets the page).
   *
   * After `events` events of a streamed answer: `drop-after` destroys the socket (no terminator);
   * `error-event` sends the wire's mid-stream error (Anthropic `event: error` overloaded_error, OpenAI
   * chat `data: {"error": …}` without `[DONE]`, Responses `response.failed`) and ends cleanly;
   * `garbage-after` writes one `data:` line that is not JSON and ends; `stall-after` goes silent until
   * the client gives up. Asked for JSON, `drop-after` cuts the body like `drop-during`, `error-event`
   * answers the wire's overload error, `garbage-after` a body that is not JSON, and `stall-after`
   * sends the headers and never the body.
   */
  kind: z
    .enum([
      'status',
      'overload',
      'drop-before',
      'drop-during',
      'stall',
      'malformed',
      'page',
      'drop-after',
      'error-event',
      'garbage-after',
      'stall-after',
    ])
    .default('status'),
  /** `drop-after`, `error-event`, `garbage-after`, `stall-after`: how many SSE events go out first. @default 0 */
  events: z.number().int().nonnegative().optional(),
  status: z.number().int().min(100).max(599).optional(),
  /** Response body; default: the provider's own error shape. */
  body: z.unknown().optional(),
  message: z.string().optional(),
  /** Append the credential the request carried to the message, as some servers do (for redaction tests). */
  echoKey: z.boolean().optional(),
  /** Seconds, sent as `retry-after`. */
  retryAfter: z.number().nonnegative().optional(),
  /** Milliseconds, sent as `retry-after-ms`. */
  retryAfterMs: z.number().nonnegative().optional(),
  /** Extra response headers. */
  headers: z.record(z.string(), z.string()).optional(),
  delayMs: z.number().nonnegative().optional(),
});

const matchSchema = z.strictObject({
  provider: z.enum(SIM_PROVIDERS).optional(),
  /** The wire protocol: `anthropic`, `chat` (OpenAI chat completions), `responses` (OpenAI Responses), `gemini`. */
  wire: z.enum(SIM_WIRES).optional(),
  /** Regex (case-insensitive) on the requested model. */
  model: z.string().optional(),
  /** Regex (case-insensitive) on the text of the last user message. */
  text: z.string().optional(),
  /** Regex (case-insensitive) on the system prompt. */
  system: z.string().optional(),
  /** true: the request offers tools; false: it offers none; a string: a regex one tool name must match. */
  tools: z.union([z.boolean(), z.string()]).optional(),
  /** 1-based number of user turns in the request (a tool result counts as a turn). */
  turn: z.number().int().positive().optional(),
  stream: z.boolean().optional(),
});

const ruleSchema = z
  .strictObject({
    name: z.string().optional(),
    match: matchSchema.default({}),
    /** The rule stops matching after it has fired this many times. */
    times: z.number().int().positive().optional(),
    /** The rule matches only once it has been passed over (matched but skipped) this many times. */
    after: z.number().int().nonnegative().optional(),
    reply: replySchema.optional(),
    fault: faultSchema.optional(),
  })
  .refine((rule) => (rule.reply === undefined) !== (rule.fault === undefined), {
    message: 'a rule needs exactly one of "reply" or "fault"',
  });

export const scenarioSchema = z.strictObject({
  rules: z.array(ruleSchema).default([]),
  /** The answer when no rule matches. @default { text: 'ok' } */
  fallback: replySchema.optional(),
});

export type Scenario = z.input<typeof scenarioSchema>;
export type ScenarioRule = z.output<typeof ruleSchema>;
export type ScenarioReply = z.output<typeof replySchema>;
export type ScenarioFault = z.output<typeof faultSchema>;
export type ScenarioMatch = z.output<typeof matchSchema>;
export type ParsedScenario = z.output<typeof scenarioSchema>;

/** Validates a scenario given as an object, naming the bad key. */
export function parseScenario(value: unknown, source = 'scenario'): ParsedScenario {
  const result = scenarioSchema.safeParse(value ?? {});
  if (!result.success) {
    const issue = result.error.issues[0];
    const where = issue === undefined || issue.path.length === 0 ? '' : ` at "${issue.path.join('.')}"`;
    throw new SwitchboardError(
      'CONFIG_INVALID',
      `${source}${where}: ${issue?.message ?? 'invalid scenario'}`,
      {
        hint: 'see "switchboard sim" in the README for the scenario format',
      },
    );
  }
  for (const [index, rule] of result.data.rules.entries()) {
    for (const [key, pattern] of Object.entries({
      model: rule.match.model,
      text: rule.match.text,
      system: rule.match.system,
    })) {
      if (pattern === undefined) continue;
      try {
        new RegExp(pattern, 'i');
      } catch (error) {
        throw new SwitchboardError(
          'CONFIG_INVALID',
          `${source} at "rules.${index}.match.${key}": invalid regex ${JSON.stringify(pattern)}`,
          {
            hint: 'fix the regular expression',
            cause: error,
          },
        );
      }
    }
  }
  return result.data;
}

/** Reads a scenario file (YAML or JSON). */
export function loadScenario(file: string): ParsedScenario {
  const data = readDataFile(file, {
    code: 'CONFIG_INVALID',
    kind: 'scenario file',
    readHint: 'check the --scenario path',
  });
  return parseScenario(data, file);
}
