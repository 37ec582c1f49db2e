import type { z } from 'zod';
import { PROVIDER_NAMES } from './call-types.js';
import { isSwitchboardError, SwitchboardError } from './errors.js';
import type { loadZod } from './lazy-packages.js';
import { resolveProviderChain, type ProviderName } from './roles.js';

/** Claude Code request classes that `gateway.routes` may send elsewhere (claude-code-router's, bar `default`). */
export const GATEWAY_ROUTE_CLASSES = [
  'background',
  'think',
  'long_context',
  'web_search',
  'subagent',
] as const;

export type GatewayRouteClass = (typeof GATEWAY_ROUTE_CLASSES)[number];

/**
 * Model names every gateway client may ask for, unless a role or `gateway.aliases` defines the same
 * name. Opus is 4.5, the newest Opus the price table knows by name (a later id would be priced at
 * Opus 4's rate through its `claude-opus-4` prefix); Sonnet is the workflows' Anthropic default.
 */
export const BUILT_IN_GATEWAY_ALIASES: Readonly<Record<string, string>> = {
  haiku: 'anthropic:claude-haiku-4-5',
  opus: 'anthropic:claude-opus-4-5',
  sonnet: 'anthropic:claude-sonnet-4-6',
};

/** Input tokens (estimated) above which a request is `long_context`, claude-code-router's default. */
export const DEFAULT_LONG_CONTEXT_TOKENS = 60_000;

/** Client silence after which a stream gets a keep-alive (`gateway.keep_alive_seconds`). */
export const DEFAULT_GATEWAY_KEEP_ALIVE_MS = 15_000;

/** Upstream silence before the first content after which the next provider is tried (`gateway.stall_seconds`). */
export const DEFAULT_GATEWAY_STALL_MS = 120_000;

/** Gateway requests in flight at once, all keys together (`gateway.max_concurrent`). */
export const DEFAULT_GATEWAY_MAX_CONCURRENT = 1024;

/** `anthropic-beta` tokens a provider receives: `all` of the client's, or only those listed. */
export type BetaPolicy = 'all' | readonly string[];

/** The gateway's policy (`gateway:` in switchboard.yaml), defaults applied. */
export interface GatewaySettings {
  /** Client model name → spec, chain or role, beside the roles (a name may not be both). */
  aliases: Record<string, string>;
  /** Request class → role, alias or spec; a class not listed keeps the requested model. */
  routes: Partial<Record<GatewayRouteClass, string>>;
  /** Estimated input tokens above which a request is `long_context`. @default 60000 */
  longContextTokens: number;
  /** `anthropic-beta` tokens passed upstream per provider. @default anthropic: 'all', others: [] */
  betas: Record<ProviderName, BetaPolicy>;
  /** Pass a client's own `sk-ant-` key (never an `sbk_` key) to Anthropic, and only there. @default false */
  forwardClientKey: boolean;
  /**
   * Milliseconds of silence towards a client after which its stream gets a keep-alive (a `ping`
   * event, a `:` comment), so Claude Code's stream watchdog and idle load balancers never cut a long
   * think. @default 15000
   */
  keepAliveMs: number;
  /**
   * Milliseconds of upstream silence before the first content after which an attempt is given up for
   * the chain's next entry. @default 120000
   */
  stallMs: number;
  /**
   * Gateway requests in flight at once, all keys together; one more is refused at once (Anthropic 529
   * `overloaded_error`, OpenAI 429) with `retry-after`, before its key or budget is touched. @default 1024
   */
  maxConcurrent: number;
}

const ALIAS_NAME = /^[a-z0-9][a-z0-9._-]*$/i;

const DEFAULT_BETAS: Readonly<Record<ProviderName, BetaPolicy>> = {
  claude: [],
  anthropic: 'all',
  gemini: [],
  openai: [],
};

/** The `gateway:` section's schema, built from the zod that `loadConfig` loads lazily. */
export function gatewayFileSchema(zod: ReturnType<typeof loadZod>) {
  const target = zod.string().trim().min(1, 'a role, an alias or a provider spec');
  const betas = zod.union([
    zod.literal('all'),
    zod.array(
      zod.string().regex(/^[a-z0-9][a-z0-9-]*$/i, 'an anthropic-beta token such as context-1m-2025-08-07'),
    ),
  ]);
  return zod.strictObject({
    // Alias names are checked in `gatewaySettings`: zod reports a bad record key without naming it.
    aliases: zod.record(zod.string(), target).optional(),
    routes: zod
      .strictObject(Object.fromEntries(GATEWAY_ROUTE_CLASSES.map((name) => [name, target.optional()])))
      .optional(),
    long_context_tokens: zod.number().int().positive().optional(),
    betas: zod
      .strictObject(Object.fromEntries(PROVIDER_NAMES.map((name) => [name, betas.optional()])))
      .optional(),
    forward_client_key: zod.boolean().optional(),
    keep_alive_seconds: zod.number().min(1).max(300).optional(),
    stall_seconds: zod.number().min(1).max(3600).optional(),
    max_concurrent: zod.number().int().min(1).max(1_000_000).optional(),
  });
}

export type GatewayFile = z.infer<ReturnType<typeof gatewayFileSchema>>;

/**
 * The settings of a parsed `gateway:` section, checked against the roles: a name may not be both a
 * role and an alias, an alias must resolve, and a route must name a role, an alias or a spec.
 * `file` names the config file in errors.
 */
export function gatewaySettings(
  gateway: GatewayFile | undefined,
  roles: Readonly<Record<string, string>>,
  file: string,
): GatewaySettings {
  const aliases: Record<string, string> = { ...gateway?.aliases };
  for (const [name, value] of Object.entries(aliases)) {
    if (!ALIAS_NAME.test(name)) {
      throw new SwitchboardError(
        'CONFIG_INVALID',
        `${file} at "gateway.aliases.${name}": alias names are letters, digits, ., - and _ (no : or ,)`,
        { hint: 'a name with : or , would read as a provider spec or a chain' },
      );
    }
    if (Object.hasOwn(roles, name)) {
      throw new SwitchboardError(
        'CONFIG_INVALID',
        `${file} at "gateway.aliases.${name}": "${name}" is both a role (roles.${name}) and an alias (gateway.aliases.${name})`,
        { hint: 'rename one of them; the gateway would not know which you meant' },
      );
    }
    checkResolves(value, roles, file, `gateway.aliases.${name}`);
  }
  const routes: GatewaySettings['routes'] = {};
  for (const name of GATEWAY_ROUTE_CLASSES) {
    const value = gateway?.routes?.[name];
    if (value === undefined) continue;
    const named = [roles, aliases, BUILT_IN_GATEWAY_ALIASES].some((names) => Object.hasOwn(names, value));
    if (!named) checkRouteSpec(value, roles, aliases, file, `gateway.routes.${name}`);
    routes[name] = value;
  }
  const betas = { ...DEFAULT_BETAS };
  for (const name of PROVIDER_NAMES) {
    const policy = gateway?.betas?.[name];
    if (policy !== undefined) betas[name] = policy === 'all' ? 'all' : [...policy];
  }
  return {
    aliases,
    routes,
    longContextTokens: gateway?.long_context_tokens ?? DEFAULT_LONG_CONTEXT_TOKENS,
    betas,
    forwardClientKey: gateway?.forward_client_key ?? false,
    keepAliveMs: secondsToMs(gateway?.keep_alive_seconds) ?? DEFAULT_GATEWAY_KEEP_ALIVE_MS,
    stallMs: secondsToMs(gateway?.stall_seconds) ?? DEFAULT_GATEWAY_STALL_MS,
    maxConcurrent: gateway?.max_concurrent ?? DEFAULT_GATEWAY_MAX_CONCURRENT,
  };
}

function secondsToMs(seconds: number | undefined): number | undefined {
  return seconds === undefined ? undefined : Math.round(seconds * 1000);
}

function checkResolves(
  value: string,
  roles: Readonly<Record<string, string>>,
  file: string,
  key: string,
): void {
  try {
    resolveProviderChain(value, roles);
  } catch (error) {
    if (!isSwitchboardError(error)) throw error;
    const { message, hint } = error;
    throw new SwitchboardError(
      'CONFIG_INVALID',
      `${file} at "${key}": ${message}`,
      hint === undefined ? {} : { hint },
    );
  }
}

function checkRouteSpec(
  value: string,
  roles: Readonly<Record<string, string>>,
  aliases: Readonly<Record<string, string>>,
  file: string,
  key: string,
): void {
  if (value.includes(':') || value.includes(',')) {
    checkResolves(value, roles, file, key);
    return;
  }
  const names = [
    ...new Set([...Object.keys(roles), ...Object.keys(aliases), ...Object.keys(BUILT_IN_GATEWAY_ALIASES)]),
  ];
  throw new SwitchboardError(
    'CONFIG_INVALID',
    `${file} at "${key}": "${value}" is neither a role, an alias nor a provider spec`,
    {
      hint: `use one of ${names.sort().join(', ')}, or provider:model such as anthropic:claude-haiku-4-5`,
    },
  );
}
