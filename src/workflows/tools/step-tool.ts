import type { ToolDefinition } from '../../core/call-types.js';

/** What a tool answered: its text for the model, and whether it failed. */
export interface ToolOutcome {
  content: string;
  isError?: boolean;
}

/** A tool Switchboard runs for the model of an LLM step on an API provider. */
export interface StepTool {
  definition: ToolDefinition;
  /** Never throws for a bad call: a refusal or failure is an outcome with `isError`, which the model reads. */
  run(input: Record<string, unknown>, signal: AbortSignal): Promise<ToolOutcome>;
}

/** The longest result a tool hands the model, in characters; the rest is cut, saying how much. */
export const MAX_TOOL_RESULT_CHARS = 100_000;

/** A result cut to `MAX_TOOL_RESULT_CHARS`, with a note of what was left out. */
export function boundedResult(text: string, limit = MAX_TOOL_RESULT_CHARS): string {
  if (text.length <= limit) return text;
  return `${text.slice(0, limit)}\n[cut: ${text.length - limit} more characters not shown]`;
}

/** A failed call as the model reads it. */
export function toolError(message: string): ToolOutcome {
  return { content: message, isError: true };
}
