import { setTimeout as sleep } from 'node:timers/promises';
import type { SDKMessage, SDKUserMessage } from '@anthropic-ai/claude-agent-sdk';

/** How often a Claude Code session with a `followUp` asks it for words to send (ms). */
export const FOLLOW_UP_POLL_MS = 500;

/**
 * The prompt as Claude Code's streaming input: the prompt, then each follow-up as it comes (asked
 * every `FOLLOW_UP_POLL_MS`) until the call ends.
 */
export async function* streamingPrompt(
  prompt: string,
  next: () => Promise<string | undefined>,
  signal: AbortSignal,
): AsyncGenerator<SDKUserMessage, void> {
  const message = (text: string): SDKUserMessage => ({
    type: 'user',
    message: { role: 'user', content: text },
    parent_tool_use_id: null,
    session_id: '',
  });
  yield message(prompt);
  while (!signal.aborted) {
    try {
      await sleep(FOLLOW_UP_POLL_MS, undefined, { signal });
    } catch {
      return;
    }
    const text = await next();
    if (text !== undefined && !signal.aborted) yield message(text);
  }
}

/**
 * Counts a session's model turns as it goes: the session's own (not a subagent's) assistant messages
 * by their API message id, since Claude Code sends each content block of one answer (thinking, text,
 * a tool call) as a message of its own, as `sessionObserver` counts them.
 */
export function modelTurnCounter(): { see(message: SDKMessage): void; count(): number } {
  const seen = new Set<string>();
  let unnamed = 0;
  return {
    see(message) {
      if (message.type !== 'assistant' || message.parent_tool_use_id !== null) return;
      const id = (message.message as { id?: unknown }).id;
      if (typeof id === 'string') seen.add(id);
      else unnamed++;
    },
    count: () => seen.size + unnamed,
  };
}
