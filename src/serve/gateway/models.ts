import type { SwitchboardConfig } from '../../core/config.js';
import { SwitchboardError } from '../../core/errors.js';
import { BUILT_IN_GATEWAY_ALIASES } from '../../core/gateway-settings.js';
import { resolveProviderChain, type KnownProviderSpec, type ProviderName } from '../../core/roles.js';
import { modelScope, type ModelScope } from '../../keys/model-scope.js';

/** The protocol a client speaks: Anthropic Messages, OpenAI Chat Completions, OpenAI Responses. */
export type Wire = 'anthropic' | 'chat' | 'responses';

/** One entry of the chain a client's model name stands for. */
export interface GatewayTarget {
  provider: ProviderName;
  model: string;
  /** The spec as Switchboard writes it: `anthropic:claude-sonnet-4-5`, `openai@http://x/v1:llama`. */
  spec: string;
  /** A base URL the spec names inline (`openai@URL:model`). */
  baseUrl?: string;
}

/** What a requested model name resolved to, and how. */
export interface GatewayModel {
  chain: GatewayTarget[];
  /** A role of switchboard.yaml, an alias (`gateway.aliases` or built in), a spec or chain, or a bare model name. */
  source: 'role' | 'alias' | 'spec' | 'model';
  /** The name as resolved: the role or alias, the spec as written (trimmed), or the model. */
  name: string;
}

/**
 * The chain a client's `model` stands for, in order: a role (`call.roles`), an alias
 * (`gateway.aliases`, then the built-in `sonnet`, `haiku`, `opus`), a spec or comma chain (whose
 * entries may be roles, one level deep), else a real model on the vendor its name belongs to:
 * `claude-` on Anthropic; `gpt-`, `o1`, `o3`, `o4`, `chatgpt-`, `text-embedding` on OpenAI; `gemini-`
 * on Gemini; any other name on OpenAI from a Chat or Responses client (an OpenAI-compatible server
 * such as Ollama), on Anthropic from a Messages client.
 * @throws SwitchboardError INVALID_INPUT on an empty name, an unknown provider or role in a chain.
 */
export function resolveGatewayModel(requested: string, wire: Wire, config: SwitchboardConfig): GatewayModel {
  const name = typeof requested === 'string' ? requested.trim() : '';
  if (name === '') {
    throw new SwitchboardError('INVALID_INPUT', 'the request names no model', {
      hint: 'set "model" to a role, an alias (sonnet, haiku, opus) or a model id',
    });
  }
  const { roles } = config.call;
  if (Object.hasOwn(roles, name)) return { chain: targets(name, roles), source: 'role', name };
  const alias = aliasOf(name, config);
  if (alias !== undefined) return { chain: targets(alias, roles), source: 'alias', name };
  if (name.includes(':') || name.includes(',')) return { chain: targets(name, roles), source: 'spec', name };
  if (/[\s\p{Cc}]/u.test(name)) {
    throw new SwitchboardError('INVALID_INPUT', `${JSON.stringify(name)} is not a model name`, {
      hint: 'a model name has no spaces or control characters',
    });
  }
  const provider = vendorOf(name, wire);
  return { chain: [{ provider, model: name, spec: `${provider}:${name}` }], source: 'model', name };
}

/**
 * A key's `--models` as the gateway reads them: an entry that is a role, an alias or a spec stands for
 * the chain it resolves to on this wire, any other for the model ids it names (`modelScope`).
 */
export function gatewayScope(
  models: readonly string[] | undefined,
  wire: Wire,
  config: SwitchboardConfig,
): ModelScope {
  return modelScope(models, (entry) => {
    try {
      const resolved = resolveGatewayModel(entry, wire, config);
      return resolved.source === 'model' ? undefined : resolved.chain;
    } catch {
      return undefined;
    }
  });
}

/** The spec or chain an alias stands for: the config's own, else a built-in one. */
function aliasOf(name: string, config: SwitchboardConfig): string | undefined {
  const { aliases } = config.gateway;
  if (Object.hasOwn(aliases, name)) return aliases[name];
  return Object.hasOwn(BUILT_IN_GATEWAY_ALIASES, name) ? BUILT_IN_GATEWAY_ALIASES[name] : undefined;
}

function targets(text: string, roles: Readonly<Record<string, string>>): GatewayTarget[] {
  return resolveProviderChain(text, roles).map(toTarget);
}

function toTarget({ provider, model, text, baseUrl }: KnownProviderSpec): GatewayTarget {
  return baseUrl === undefined ? { provider, model, spec: text } : { provider, model, spec: text, baseUrl };
}

const OPENAI_MODEL = /^(gpt-|o1|o3|o4|chatgpt-|text-embedding)/i;

function vendorOf(model: string, wire: Wire): ProviderName {
  if (/^claude-/i.test(model)) return 'anthropic';
  if (OPENAI_MODEL.test(model)) return 'openai';
  if (/^gemini-/i.test(model)) return 'gemini';
  return wire === 'anthropic' ? 'anthropic' : 'openai';
}

/** `GET /v1/models` as the Anthropic API answers it. */
export interface AnthropicModelList {
  data: { type: 'model'; id: string; display_name: string; created_at: string }[];
  has_more: false;
  first_id: string | null;
  last_id: string | null;
}

/** `GET /v1/models` as the OpenAI API answers it. */
export interface OpenAiModelList {
  object: 'list';
  data: { id: string; object: 'model'; created: number; owned_by: 'switchboard' }[];
}

// The names are Switchboard's, not a vendor's releases: they carry no date of their own, so the epoch
// stands in and the listing stays the same from one request to the next.
const LISTED_AT = new Date(0);

/**
 * The body of `GET /v1/models`: the roles, aliases and built-in aliases whose whole chain `mayReach`
 * lets a key reach (the test a request for the name passes), sorted and each once. Real model ids are
 * not listed; a key may still send one it may use.
 */
export function listGatewayModels(
  config: SwitchboardConfig,
  mayReach: (chain: readonly GatewayTarget[]) => boolean,
  shape: 'anthropic',
): AnthropicModelList;
export function listGatewayModels(
  config: SwitchboardConfig,
  mayReach: (chain: readonly GatewayTarget[]) => boolean,
  shape: 'openai',
): OpenAiModelList;
export function listGatewayModels(
  config: SwitchboardConfig,
  mayReach: (chain: readonly GatewayTarget[]) => boolean,
  shape: 'anthropic' | 'openai',
): AnthropicModelList | OpenAiModelList;
export function listGatewayModels(
  config: SwitchboardConfig,
  mayReach: (chain: readonly GatewayTarget[]) => boolean,
  shape: 'anthropic' | 'openai',
): AnthropicModelList | OpenAiModelList {
  const named = [
    ...Object.keys(config.call.roles),
    ...Object.keys(config.gateway.aliases),
    ...Object.keys(BUILT_IN_GATEWAY_ALIASES),
  ];
  // The models those names stand for on the listing's own vendor, too: a client may ask for them by
  // name, and Claude Code's gateway model discovery keeps only ids that name a Claude model, which a
  // role's name seldom does.
  const vendor = shape === 'anthropic' ? 'anthropic' : 'openai';
  const listed = named.flatMap((name) => {
    let chain: GatewayTarget[];
    try {
      chain = resolveGatewayModel(name, shape === 'anthropic' ? 'anthropic' : 'chat', config).chain;
    } catch {
      return [];
    }
    if (!mayReach(chain)) return [];
    const models = chain
      .filter((target) => target.provider === vendor && target.baseUrl === undefined)
      .map((target) => target.model);
    return [name, ...models];
  });
  const names = [...new Set(listed)].sort();
  if (shape === 'openai') {
    const created = Math.floor(LISTED_AT.getTime() / 1000);
    return {
      object: 'list',
      data: names.map((id) => ({ id, object: 'model' as const, created, owned_by: 'switchboard' as const })),
    };
  }
  const createdAt = LISTED_AT.toISOString();
  return {
    data: names.map((id) => ({ type: 'model' as const, id, display_name: id, created_at: createdAt })),
    has_more: false,
    first_id: names[0] ?? null,
    last_id: names.at(-1) ?? null,
  };
}
