// Entry points of the public API whose modules are heavy for a program that does not use them: each
// is imported on its first call, so that `import { createRouter } from 'switchboard'` stays cheap.
import type { AgentInvocation, AgentOutcome } from './agents/claude-agent.js';
import type { CallRequest, CallResult } from './core/call-types.js';
import type { CallOptions } from './invoke/call.js';
import type { Simulator, SimulatorOptions } from './sim/server.js';
import { lazySdk } from './providers/lazy-sdk.js';

// Imported once, then the same promise each call: `import()` of a module already loaded still resolves
// its specifier and takes turns of the event loop every time, a cost on every `call()`.
const invokeModule = lazySdk(() => import('./invoke/call.js'));
const simulatorModule = lazySdk(() => import('./sim/server.js'));
const agentModule = lazySdk(() => import('./agents/claude-agent.js'));

/**
 * Calls a provider spec or a fallback chain (`claude:sonnet,anthropic:claude-sonnet-4-5`): retries
 * transient failures with backoff that honours `retry-after`, moves down the chain when a provider
 * cannot serve, re-asks with a diagnosis when structured output fails its schema, skips providers whose
 * circuit breaker is open, enforces budgets, and records every attempt in the ledger and in
 * `CallResult.attempts`.
 */
export async function call(spec: string, request: CallRequest, options?: CallOptions): Promise<CallResult> {
  const invoke = await invokeModule.load();
  return invoke.call(spec, request, options);
}

/** Starts the LLM API simulator: Anthropic Messages, Gemini generateContent, OpenAI chat completions. */
export async function startSimulator(options?: SimulatorOptions): Promise<Simulator> {
  const simulator = await simulatorModule.load();
  return simulator.startSimulator(options);
}

/**
 * Runs Claude Code as an autonomous agent in `cwd` with hard limits, and says honestly how it ended.
 * Never throws for what happens during the run; invalid options throw `INVALID_INPUT`.
 */
export async function runAgent(invocation: AgentInvocation): Promise<AgentOutcome> {
  const agent = await agentModule.load();
  return agent.runAgent(invocation);
}
