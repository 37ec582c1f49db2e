import type * as AgentSdkModule from '@anthropic-ai/claude-agent-sdk';
import { SwitchboardError } from '../../core/errors.js';

/** The Agent SDK's module, as `import('@anthropic-ai/claude-agent-sdk')` gives it. */
export type AgentSdk = typeof AgentSdkModule;

let loading: Promise<AgentSdk> | undefined;

/**
 * Loads the Agent SDK at its first use. Its module is large (about a tenth of a second to load), and a
 * program that imports Switchboard to route or to call an API never needs it: nothing in this folder
 * imports it at the top level, only its types.
 */
export function loadAgentSdk(): Promise<AgentSdk> {
  loading ??= import('@anthropic-ai/claude-agent-sdk').catch((error: unknown) => {
    // Tried again on the next call, so that an install in between is picked up.
    loading = undefined;
    throw new SwitchboardError('PROVIDER_UNAVAILABLE', 'the Claude Agent SDK could not be loaded', {
      hint: 'install it with `npm install @anthropic-ai/claude-agent-sdk`',
      provider: 'claude',
      cause: error,
    });
  });
  return loading;
}
