import type { CallRequest } from './call-types.js';
import { SwitchboardError } from './errors.js';

/** Tool names every provider accepts (OpenAI's rule, the strictest of the three). */
export const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Refuses a conversation no provider can send: tools together with a schema (structured output is
 * the answer of a call; a tool loop asks for it as a tool of its own), a tool name a provider would
 * reject, the same name twice, a message of no known role.
 */
export function checkConversation(request: Pick<CallRequest, 'tools' | 'messages' | 'schema'>): void {
  const { tools, messages } = request;
  if (tools !== undefined) {
    if (!Array.isArray(tools)) throw invalid('Expected "tools" to be a list of tool definitions');
    if (tools.length > 0 && request.schema !== undefined) {
      throw invalid('"tools" and "schema" cannot be given together', {
        hint: 'offer the answer as a tool of its own whose arguments are the schema, and read it from CallResult.toolCalls',
      });
    }
    const seen = new Set<string>();
    for (const tool of tools) {
      if (typeof tool?.name !== 'string' || !TOOL_NAME.test(tool.name)) {
        throw invalid(
          `Expected each tool's "name" to be letters, digits, "_" or "-" (at most 64), got ${JSON.stringify(tool?.name)}`,
        );
      }
      if (seen.has(tool.name)) throw invalid(`the tool "${tool.name}" is given twice`);
      seen.add(tool.name);
      if (typeof tool.inputSchema !== 'object' || tool.inputSchema === null) {
        throw invalid(`Expected the "inputSchema" of tool "${tool.name}" to be a JSON Schema object`);
      }
    }
  }
  if (messages === undefined) return;
  if (!Array.isArray(messages)) throw invalid('Expected "messages" to be a list of messages');
  for (const message of messages) {
    const role = (message as { role?: unknown } | null)?.role;
    if (role !== 'assistant' && role !== 'tool' && role !== 'user') {
      throw invalid(
        `Expected each message's "role" to be assistant, tool or user, got ${JSON.stringify(role)}`,
      );
    }
  }
}

/** Everything a conversation sends besides the prompt and the system prompt, as text (for cost estimates). */
export function conversationText(request: Pick<CallRequest, 'tools' | 'messages'>): string {
  if (request.messages === undefined && request.tools === undefined) return '';
  return JSON.stringify([request.messages ?? [], request.tools ?? []]);
}

function invalid(message: string, options: { hint?: string } = {}): SwitchboardError {
  return new SwitchboardError('INVALID_INPUT', message, { retryable: false, ...options });
}
