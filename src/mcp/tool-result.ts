import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { exitCodeFor, isSwitchboardError, SwitchboardError } from '../core/errors.js';
import { redactDeep, redactSecrets } from '../core/secrets.js';

/**
 * A tool's answer: `structured` as structuredContent (checked against the tool's output schema by the
 * SDK) and, for clients that read only text, `text` (the structured value as JSON by default). Both pass
 * through `redactSecrets`, as serve's answers do: a model that echoes a key cannot leak it here.
 */
export function toolResult(structured: Record<string, unknown>, text?: string): CallToolResult {
  // Through JSON first: what the client receives is JSON, so `undefined` fields go and dates are strings.
  const redacted = redactDeep(JSON.parse(JSON.stringify(structured)) as Record<string, unknown>);
  return {
    content: [{ type: 'text', text: text === undefined ? JSON.stringify(redacted) : redactSecrets(text) }],
    structuredContent: redacted,
  };
}

/** The Switchboard error an exception stands for (an unknown one is INTERNAL, as the CLI reports it). */
export function asSwitchboardError(error: unknown): SwitchboardError {
  if (isSwitchboardError(error)) return error;
  if (error instanceof Error && error.name === 'AbortError')
    return new SwitchboardError('ABORTED', 'the operation was aborted', { cause: error });
  return new SwitchboardError('INTERNAL', error instanceof Error ? error.message : String(error), {
    hint: 'this is a bug in switchboard; please report it with the tool call that caused it',
    cause: error,
  });
}

/**
 * A tool error (`isError: true`): one line with the code and the exit code the CLI would have used, the
 * message, and the hint on the next line, e.g. `RUN_NOT_FOUND (exit 47): there is no agent run x`.
 */
export function toolError(error: unknown): CallToolResult {
  const known = asSwitchboardError(error);
  const lines = [`${known.code} (exit ${exitCodeFor(known.code)}): ${known.message}`];
  if (known.hint !== undefined) lines.push(`hint: ${known.hint}`);
  return { content: [{ type: 'text', text: redactSecrets(lines.join('\n')) }], isError: true };
}

/** A tool handler whose exceptions come back as tool errors (`toolError`) instead of protocol errors. */
export function guarded<Args extends unknown[]>(
  handler: (...args: Args) => Promise<CallToolResult>,
): (...args: Args) => Promise<CallToolResult> {
  return async (...args) => {
    try {
      return await handler(...args);
    } catch (error) {
      return toolError(error);
    }
  };
}
