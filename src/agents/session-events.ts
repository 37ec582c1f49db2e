import type { SDKMessage } from '@anthropic-ai/claude-agent-sdk';
import { costOf } from '../core/prices.js';
import { redactSecrets } from '../core/secrets.js';

/** How much of a tool's arguments an event keeps (characters of their JSON). */
export const TOOL_INPUT_LIMIT = 2_000;
/** How much of a tool's result an event keeps. */
export const TOOL_RESULT_LIMIT = 500;

/** One event of a Claude Code session's work: `model-turn`, `tool-call` or `tool-result`. */
export interface SessionEvent {
  type: 'model-turn' | 'tool-call' | 'tool-result';
  data: Record<string, unknown>;
}

interface ContentBlock {
  type: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: unknown;
  is_error?: boolean;
}

/**
 * Turns a Claude Code session's messages into its work as events, in the order it happened: each model
 * turn (`model-turn`: model, tokens in and out, cache reads and writes, its cost at list price), each
 * tool call (`tool-call`: its id, tool and arguments, cut at 2,000 characters) and each tool's result
 * (`tool-result`: id, tool, whether it failed, the first 500 characters, how long it took). Subagents'
 * turns and calls are included, with `parent` naming the tool call that started them. Workflow steps
 * and agent runs write the same events; their stores redact known secrets.
 */
export function sessionObserver(write: (event: SessionEvent) => void): (message: SDKMessage) => void {
  const turns = new Set<string>();
  const calls = new Map<string, { tool: string; at: number }>();
  return (message) => {
    const parent = (message as { parent_tool_use_id?: string | null }).parent_tool_use_id ?? undefined;
    const nested = parent === undefined ? {} : { parent };
    if (message.type === 'assistant') {
      const body = message.message as unknown as {
        id?: string;
        model?: string;
        content?: ContentBlock[];
        usage?: Record<string, number | null | undefined>;
      };
      // Claude Code sends a turn's content blocks as messages of their own, each with the turn's usage.
      if (body.id !== undefined && !turns.has(body.id) && body.usage !== undefined) {
        turns.add(body.id);
        const usage = {
          inputTokens: body.usage['input_tokens'] ?? 0,
          outputTokens: body.usage['output_tokens'] ?? 0,
          cacheReadTokens: body.usage['cache_read_input_tokens'] ?? 0,
          cacheWriteTokens: body.usage['cache_creation_input_tokens'] ?? 0,
        };
        const costUsd = body.model === undefined ? undefined : costOf(body.model, usage);
        write({
          type: 'model-turn',
          data: {
            ...(body.model === undefined ? {} : { model: body.model }),
            ...usage,
            ...(costUsd === undefined || costUsd === null ? {} : { costUsd }),
            ...nested,
          },
        });
      }
      for (const block of body.content ?? []) {
        if (block.type !== 'tool_use' || block.id === undefined) continue;
        const tool = block.name ?? '?';
        calls.set(block.id, { tool, at: performance.now() });
        write({
          type: 'tool-call',
          data: { id: block.id, tool, input: bounded(block.input, TOOL_INPUT_LIMIT), ...nested },
        });
      }
    } else if (message.type === 'user') {
      const body = message.message as unknown as { content?: ContentBlock[] | string };
      if (!Array.isArray(body.content)) return;
      for (const block of body.content) {
        if (block.type !== 'tool_result' || block.tool_use_id === undefined) continue;
        const call = calls.get(block.tool_use_id);
        calls.delete(block.tool_use_id);
        write({
          type: 'tool-result',
          data: {
            id: block.tool_use_id,
            tool: call?.tool ?? '?',
            error: block.is_error === true,
            result: bounded(resultText(block.content), TOOL_RESULT_LIMIT),
            ...(call === undefined ? {} : { durationMs: Math.round(performance.now() - call.at) }),
            ...nested,
          },
        });
      }
    }
  };
}

/** A tool result's text: a string, or the text parts of a content list. */
function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return content === undefined ? '' : JSON.stringify(content);
  return content
    .map((part: { type?: string; text?: string }) =>
      part.type === 'text' ? (part.text ?? '') : `[${part.type}]`,
    )
    .join('\n');
}

/** A value as text of at most `limit` characters, known secrets redacted, saying how much was cut. */
export function bounded(value: unknown, limit: number): string {
  // Redacted before it is cut: a cut secret would no longer be recognised where it is stored.
  const text = redactSecrets(typeof value === 'string' ? value : JSON.stringify(value ?? null));
  return text.length <= limit ? text : `${text.slice(0, limit)}… (${text.length - limit} more characters)`;
}

/** One line for a session event where a log has a message: `Read ok in 12 ms`, `turn claude-sonnet-4-5: 1200 in, 80 out`. */
export function sessionEventMessage(event: SessionEvent): string {
  const data = event.data;
  if (event.type === 'model-turn') {
    return `turn ${String(data['model'] ?? '')}: ${Number(data['inputTokens'])} in, ${Number(data['outputTokens'])} out`;
  }
  if (event.type === 'tool-call') return `${String(data['tool'])} ${String(data['input']).slice(0, 200)}`;
  const took = typeof data['durationMs'] === 'number' ? ` in ${data['durationMs']} ms` : '';
  return `${String(data['tool'])} ${data['error'] === true ? 'failed' : 'ok'}${took}`;
}
