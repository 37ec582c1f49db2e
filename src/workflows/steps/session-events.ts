import type { SDKMessage } from '@anthropic-ai/claude-agent-sdk';
import { sessionObserver } from '../../agents/session-events.js';
import type { StepContext } from '../step-executor.js';

/** A Claude Code session's work as the step's events, written in the order it happened. */
export interface SessionEvents {
  /** Give it every message of the session (`ClaudeCallOptions.onMessage`, `AgentInvocation.onMessage`). */
  observe(message: SDKMessage): void;
  /** Resolves once every event so far is written. */
  flushed(): Promise<void>;
}

/**
 * Writes a step's Claude Code session as events of the step (`model-turn`, `tool-call`, `tool-result`:
 * see `sessionObserver`), one after another in the order they came.
 */
export function sessionEvents(context: StepContext): SessionEvents {
  const where = { step: context.step.name, key: context.key };
  let chain: Promise<void> = Promise.resolve();
  return {
    observe: sessionObserver((event) => {
      chain = chain.then(() => context.emit({ ...where, ...event }));
    }),
    flushed: () => chain,
  };
}
