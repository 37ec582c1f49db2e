import type * as AgentSdkModule from '@anthropic-ai/claude-agent-sdk';
import { SwitchboardError } from '../../core/errors.js';
import { lazySdk } from '../lazy-sdk.js';

/** The Agent SDK's module, as `import('@anthropic-ai/claude-agent-sdk')` gives it. */
export type AgentSdk = typeof AgentSdkModule;

const sdk = lazySdk<AgentSdk>(() => import('@anthropic-ai/claude-agent-sdk'));

/**
 * Loads the Agent SDK at its first use. Its module is large (about a tenth of a second to load), and a
 * program that imports Switchboard to route or to call an API never needs it: nothing in this folder
 * imports it at the top level, only its types.
 */
export async function loadAgentSdk(): Promise<AgentSdk> {
  try {
    return await sdk.load();
  } catch (error) {
    throw new SwitchboardError('PROVIDER_UNAVAILABLE', 'the Claude Agent SDK could not be loaded', {
      hint: 'install it with `npm install @anthropic-ai/claude-agent-sdk`',
      provider: 'claude',
      cause: error,
    });
  }
}
