import { parseProviderChain, PROVIDER_NAMES, type ProviderSpec } from './call-types.js';
import { SwitchboardError } from './errors.js';

/** A provider a spec may name. */
export type ProviderName = (typeof PROVIDER_NAMES)[number];

/** A role name from switchboard.yaml (`drafter`) stands for its provider chain. */
export function resolveRole(spec: string, roles: Readonly<Record<string, string>>): string {
  if (spec.includes(':')) return spec;
  // Own keys only: a role named like an Object method (`constructor`) is not one unless defined.
  const chain = Object.hasOwn(roles, spec) ? roles[spec] : undefined;
  if (chain !== undefined) return chain;
  const known = Object.keys(roles);
  throw new SwitchboardError('INVALID_INPUT', `"${spec}" is neither a provider spec nor a role`, {
    hint:
      known.length === 0
        ? 'write provider:model (e.g. claude:haiku), or define roles in switchboard.yaml'
        : `write provider:model, or one of the roles: ${known.join(', ')}`,
  });
}

/** A parsed spec whose provider is one Switchboard has. */
export type KnownProviderSpec = ProviderSpec & { provider: ProviderName };

/**
 * A spec, a comma chain or a role name, as the specs it stands for. An entry of a chain may be a
 * role, whose own chain must be specs: roles nest one level, as `resolveRole` has them. Every entry
 * names a provider Switchboard has, so a typo fails here rather than at the first attempt.
 */
export function resolveProviderChain(
  text: string,
  roles: Readonly<Record<string, string>>,
): KnownProviderSpec[] {
  const entries = text.split(',').filter((entry) => entry.trim() !== '');
  if (entries.length === 0) {
    throw new SwitchboardError('INVALID_INPUT', 'no provider or model given', {
      hint: 'write provider:model (e.g. anthropic:claude-sonnet-4-6) or a role',
    });
  }
  return entries.flatMap((entry) => {
    const name = entry.trim();
    const resolved = resolveRole(name, roles);
    if (resolved !== name && resolved.split(',').some((part) => part.trim() !== '' && !part.includes(':'))) {
      throw new SwitchboardError('INVALID_INPUT', `role "${name}" names another role (${resolved})`, {
        hint: 'a role is a chain of provider:model specs; roles nest one level only',
      });
    }
    return parseProviderChain(resolved).map(knownProvider);
  });
}

function knownProvider(spec: ProviderSpec): KnownProviderSpec {
  if ((PROVIDER_NAMES as readonly string[]).includes(spec.provider)) return spec as KnownProviderSpec;
  throw new SwitchboardError('INVALID_INPUT', `unknown provider "${spec.provider}" in "${spec.text}"`, {
    hint: `use one of: ${PROVIDER_NAMES.join(', ')} (e.g. anthropic:claude-sonnet-4-6)`,
  });
}
