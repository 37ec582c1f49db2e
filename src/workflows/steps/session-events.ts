import type { SDKMessage } from '@anthropic-ai/claude-agent-sdk';
import type { StepContext, WorkflowEvent } from '../step-executor.js';

/** How much of a tool's arguments an event keeps (characters of their JSON). */
export const INPUT_LIMIT = 2_000;
/** How much of a tool's result an event keeps. */
export const RESULT_LIMIT = 500;

/** A Claude Code session's work as the step's events, written in the order it happened. */
export interface SessionEvents {
  /** Give it every message of the session (`ClaudeCallOptions.onMessage`). */
  observe(message: SDKMessage): void;
  /** Resolves once every event so far is written. */
  flushed(): Promise<void>;
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
 * Writes, for a step whose model is a Claude Code session: each model turn (`model-turn`: model,
 * tokens in and out, cache reads and writes), each tool call (`tool-call`: its id, tool and arguments,
 * cut at 2,000 characters) and each tool's result (`tool-result`: id, tool, whether it failed, the
 * first 500 characters, how long it took). The store redacts known secrets from every event.
 */
export function sessionEvents(context: StepContext): SessionEvents {
  const where = { step: context.step.name, key: context.key };
  let chain: Promise<void> = Promise.resolve();
  const write = (event: WorkflowEvent): void => {
    chain = chain.then(() => context.emit({ ...where, ...event }));
  };
  const turns = new Set<string>();
  const calls = new Map<string, { tool: string; at: number }>();
  return {
    observe(message) {
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
          write({
            type: 'model-turn',
            data: {
              ...(body.model === undefined ? {} : { model: body.model }),
              inputTokens: body.usage['input_tokens'] ?? 0,
              outputTokens: body.usage['output_tokens'] ?? 0,
              cacheReadTokens: body.usage['cache_read_input_tokens'] ?? 0,
              cacheWriteTokens: body.usage['cache_creation_input_tokens'] ?? 0,
            },
          });
        }
        for (const block of body.content ?? []) {
          if (block.type !== 'tool_use' || block.id === undefined) continue;
          const tool = block.name ?? '?';
          calls.set(block.id, { tool, at: performance.now() });
          write({
            type: 'tool-call',
            data: { id: block.id, tool, input: bounded(block.input, INPUT_LIMIT) },
          });
        }
      } else if (message.type === 'user') {
        const body = message.message as unknown as { content?: ContentBlock[] | string };
        if (!Array.isArray(body.content)) return;
        for (const block of body.content) {
          if (block.type !== 'tool_result' || block.tool_use_id === undefined) continue;
          const call = calls.get(block.tool_use_id);
          write({
            type: 'tool-result',
            data: {
              id: block.tool_use_id,
              tool: call?.tool ?? '?',
              error: block.is_error === true,
              result: bounded(resultText(block.content), RESULT_LIMIT),
              ...(call === undefined ? {} : { durationMs: Math.round(performance.now() - call.at) }),
            },
          });
        }
      }
    },
    flushed: () => chain,
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

/** A value as text of at most `limit` characters, saying how much was cut. */
export function bounded(value: unknown, limit: number): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value ?? null);
  return text.length <= limit ? text : `${text.slice(0, limit)}… (${text.length - limit} more characters)`;
}
