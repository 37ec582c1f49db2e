import { setTimeout as sleep } from 'node:timers/promises';
import type { SDKUserMessage } from '@anthropic-ai/claude-agent-sdk';

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
