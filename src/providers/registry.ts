import { PROVIDER_NAMES, type Provider } from '../core/call-types.js';
import { SwitchboardError } from '../core/errors.js';
import { createAnthropicProvider, type AnthropicProviderOptions } from './anthropic/anthropic-provider.js';
import {
  createClaudeCodeProvider,
  type ClaudeCodeProviderOptions,
} from './claude-code/claude-code-provider.js';
import { createGeminiProvider, type GeminiProviderOptions } from './gemini/gemini-provider.js';
import { createOpenAiProvider, type OpenAiProviderOptions } from './openai/openai-provider.js';

export { PROVIDER_NAMES };

export interface ProviderRegistryOptions {
  claude?: ClaudeCodeProviderOptions;
  anthropic?: AnthropicProviderOptions;
  gemini?: GeminiProviderOptions;
  openai?: OpenAiProviderOptions;
}

/** Creates providers on first use and closes them together. */
export class ProviderRegistry {
  private readonly providers = new Map<string, Provider>();
  private readonly options: ProviderRegistryOptions;

  constructor(options: ProviderRegistryOptions = {}) {
    this.options = options;
  }

  /** Adds a provider of your own (or replaces a built-in one) under its `name`. */
  register(provider: Provider): void {
    this.providers.set(provider.name, provider);
  }

  get(name: string): Provider {
    const existing = this.providers.get(name);
    if (existing !== undefined) return existing;
    let provider: Provider;
    switch (name) {
      case 'claude':
        provider = createClaudeCodeProvider(this.options.claude);
        break;
      case 'anthropic':
        provider = createAnthropicProvider(this.options.anthropic);
        break;
      case 'gemini':
        provider = createGeminiProvider(this.options.gemini);
        break;
      case 'openai':
        provider = createOpenAiProvider(this.options.openai);
        break;
      default:
        throw new SwitchboardError('INVALID_INPUT', `unknown provider "${name}"`, {
          hint: `use one of: ${PROVIDER_NAMES.join(', ')} (e.g. claude:haiku)`,
        });
    }
    this.providers.set(name, provider);
    return provider;
  }

  async close(): Promise<void> {
    await Promise.all([...this.providers.values()].map((provider) => provider.close()));
    this.providers.clear();
  }
}
