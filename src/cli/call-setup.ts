import { parseProviderChain, type CallRequest } from '../core/call-types.js';
import type { BoundEndpoint } from '../core/base-url.js';
import type { SwitchboardConfig } from '../core/config.js';
import type { CallOptions } from '../invoke/call.js';
import type { ClaudeCodeProviderOptions } from '../providers/claude-code/claude-code-provider.js';
import type { WarmPoolOptions } from '../providers/claude-code/warm-pool.js';
import { ProviderRegistry } from '../providers/registry.js';
import type { Ledger } from '../store/ledger.js';
import type { CallBody } from '../serve/call-body.js';

// What `switchboard call` (in process) and `switchboard serve` (POST /call) build a call from, so both
// run the same chain with the same retries, budgets and cooldowns from the same config.

/** Moved to core (serve and the gateway use it too); kept here for the CLI's imports. */
export { resolveRole } from '../core/roles.js';

/** Settings beyond the config: a command's flags, a server's warm pool and caution. */
export interface ClaudeOverrides {
  executable?: string;
  baseUrl?: string;
  pool?: WarmPoolOptions;
  /**
   * A server's registry: its callers choose specs, so a spec may name only a base URL the config
   * allows (`providers.openai.endpoints`, or one written in the config's own roles and maps).
   */
  listedEndpointsOnly?: boolean;
}

/** One registry for every provider the config describes (created on first use, closed together). */
export function providerRegistry(
  config: SwitchboardConfig,
  overrides: ClaudeOverrides = {},
): ProviderRegistry {
  const claude: ClaudeCodeProviderOptions = {};
  const executable = overrides.executable ?? config.claude.executable;
  if (executable !== undefined) claude.executable = executable;
  const baseUrl = overrides.baseUrl ?? config.claude.baseUrl;
  if (baseUrl !== undefined) claude.baseUrl = baseUrl;
  if (config.claude.maxRetries !== undefined) claude.maxRetries = config.claude.maxRetries;
  if (config.claude.timeoutMs !== undefined) claude.timeoutMs = config.claude.timeoutMs;
  if (config.claude.idleTimeoutMs !== undefined) claude.idleTimeoutMs = config.claude.idleTimeoutMs;
  if (overrides.pool !== undefined) claude.pool = overrides.pool;
  const { prices } = config.call;
  const priced = Object.keys(prices).length > 0 ? { prices } : {};
  return new ProviderRegistry({
    claude,
    anthropic: { ...priced },
    openai: {
      ...priced,
      endpoints: openAiEndpoints(config, overrides.listedEndpointsOnly === true),
      ...(overrides.listedEndpointsOnly === true ? { inlineEndpoints: 'listed' as const } : {}),
    },
    gemini: { ...priced, ...config.call.gemini },
  });
}

/**
 * `providers.openai.endpoints` with their keys read from the environment, and for a server also the
 * base URLs its config's own specs name (roles, the route provider, the workflow provider map, the
 * gateway's aliases and routes), which its operator chose: allowed, without a key.
 */
function openAiEndpoints(config: SwitchboardConfig, withConfigSpecs: boolean): BoundEndpoint[] {
  const endpoints: BoundEndpoint[] = config.endpoints.openai.map(({ url, apiKeyEnv }) => {
    const key = apiKeyEnv === undefined ? undefined : process.env[apiKeyEnv]?.trim();
    return key === undefined || key === '' ? { url } : { url, apiKey: key };
  });
  if (!withConfigSpecs) return endpoints;
  const specs = [
    ...Object.values(config.call.roles),
    ...Object.values(config.workflows.providerMap),
    ...Object.values(config.gateway.aliases),
    ...Object.values(config.gateway.routes),
    ...(config.route.provider === undefined ? [] : [config.route.provider]),
  ];
  for (const spec of specs) {
    let chain: ReturnType<typeof parseProviderChain> = [];
    try {
      chain = parseProviderChain(spec);
    } catch {
      // A malformed spec (or a role's name) is reported where it is used.
    }
    for (const { provider, baseUrl } of chain) {
      if (provider === 'openai' && baseUrl !== undefined) endpoints.push({ url: baseUrl });
    }
  }
  return endpoints;
}

/** The request of a call body; `timeoutMs` is whatever the caller decided (a server caps it first). */
export function callRequest(
  body: CallBody,
  extra: Pick<CallRequest, 'onText' | 'abortSignal'> = {},
): CallRequest {
  return {
    prompt: body.prompt,
    ...(body.system === undefined ? {} : { system: body.system }),
    ...(body.schema === undefined ? {} : { schema: body.schema }),
    ...(body.reasoning === undefined ? {} : { reasoning: body.reasoning }),
    ...(body.timeoutMs === undefined ? {} : { timeoutMs: body.timeoutMs }),
    ...(body.idleTimeoutMs === undefined ? {} : { idleTimeoutMs: body.idleTimeoutMs }),
    ...(body.tags === undefined || Object.keys(body.tags).length === 0 ? {} : { tags: body.tags }),
    ...(extra.onText === undefined ? {} : { onText: extra.onText }),
    ...(extra.abortSignal === undefined ? {} : { abortSignal: extra.abortSignal }),
  };
}

/** Where the call runs and records: the caller's registry and ledger, plus anything only it knows. */
export interface CallContext {
  providers: ProviderRegistry;
  ledger: Ledger | undefined;
  providerOptions?: Record<string, unknown>;
  onRetryWait?: CallOptions['onRetryWait'];
}

/** The call's options: the body's explicit values win over `call:` and `budgets:` in the config. */
export function callOptions(config: SwitchboardConfig, body: CallBody, context: CallContext): CallOptions {
  return {
    providers: context.providers,
    ledger: context.ledger ?? false,
    ...(context.providerOptions === undefined ? {} : { providerOptions: context.providerOptions }),
    ...(context.onRetryWait === undefined ? {} : { onRetryWait: context.onRetryWait }),
    ...configCallOptions(config, body),
  };
}

/**
 * What `call:` and `budgets:` in the config say about every call (retries, cooldown, budget rules and
 * prices, the per-call cost cap), under a body's explicit values: `switchboard call`, `serve` and every
 * workflow step start from these.
 */
export function configCallOptions(
  config: SwitchboardConfig,
  body: Pick<CallBody, 'schemaRetries' | 'stageTimeoutMs' | 'maxCostUsd' | 'ignoreCooldown'> = {},
): CallOptions {
  const settings = config.call;
  const schemaRetries = body.schemaRetries ?? settings.schemaRetries;
  const stageTimeoutMs = body.stageTimeoutMs ?? settings.stageTimeoutMs;
  const maxCostUsd = body.maxCostUsd ?? settings.maxCostPerCallUsd;
  return {
    retry: {
      ...(settings.maxAttempts === undefined ? {} : { maxAttempts: settings.maxAttempts }),
      ...(settings.retriesPerProvider === undefined
        ? {}
        : { retriesPerProvider: settings.retriesPerProvider }),
    },
    ...(schemaRetries === undefined ? {} : { schemaRetries }),
    ...(stageTimeoutMs === undefined ? {} : { stageTimeoutMs }),
    ...(settings.breaker === undefined ? {} : { cooldown: settings.breaker }),
    ...(body.ignoreCooldown === true ? { ignoreCooldown: true } : {}),
    budget: {
      rules: settings.budgetRules,
      prices: settings.prices,
      ...(maxCostUsd === undefined ? {} : { maxCostUsd }),
    },
  };
}
