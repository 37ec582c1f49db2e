import type { Provider, ProviderSpec } from '../core/call-types.js';
import { SwitchboardError } from '../core/errors.js';

/**
 * The circuit breaker's key for one entry of a chain: the spec plus where its provider sends it (base
 * URL, executable), so a dead server only cools down the spec at that server, not another config's.
 */
export function cooldownKey(target: ProviderSpec, provider: Provider): string {
  const endpoint = endpointOf(target, provider);
  return endpoint === undefined ? target.text : `${target.text} at ${endpoint}`;
}

/**
 * Which credentials a chain entry uses: its provider at its endpoint. After `AUTH`, entries with the
 * same credentials are skipped (they would be refused too); others are still tried.
 */
export function credentialsKey(target: ProviderSpec, provider: Provider): string {
  return `${target.provider} ${endpointOf(target, provider) ?? ''}`;
}

/** Both keys of a chain entry, from one look at its provider's endpoint. */
export interface TargetKeys {
  /** See `cooldownKey`. */
  cooldown: string;
  /** See `credentialsKey`. */
  credentials: string;
}

export function targetKeys(target: ProviderSpec, provider: Provider): TargetKeys {
  const endpoint = endpointOf(target, provider);
  return {
    cooldown: endpoint === undefined ? target.text : `${target.text} at ${endpoint}`,
    credentials: `${target.provider} ${endpoint ?? ''}`,
  };
}

function endpointOf(target: ProviderSpec, provider: Provider): string | undefined {
  return provider.endpoint?.({
    model: target.model,
    ...(target.baseUrl === undefined ? {} : { baseUrl: target.baseUrl }),
  });
}

/** What a caller can do about a cooldown, for messages. */
const COOLDOWN_HINT =
  'wait, pass --ignore-cooldown (ignoreCooldown) to try it now, or set call.cooldown_seconds to cool down for less';

/** The warning a skipped provider leaves in the result. */
export function coolingWarning(target: ProviderSpec, coolingMs: number): string {
  return `${target.text} skipped: cooling down for ${secondsLeft(coolingMs)} s more after repeated failures (--ignore-cooldown tries it anyway)`;
}

/** The error a call ends with when its last provider was skipped for a cooldown. */
export function coolingError(target: ProviderSpec, key: string, coolingMs: number): SwitchboardError {
  const where = key === target.text ? '' : ` (${key.slice(target.text.length + 1)})`;
  return new SwitchboardError(
    'PROVIDER_UNAVAILABLE',
    `${target.text}${where} is cooling down for ${secondsLeft(coolingMs)} s more after repeated failures`,
    { provider: target.provider, retryAfterMs: coolingMs, hint: COOLDOWN_HINT },
  );
}

function secondsLeft(milliseconds: number): number {
  return Math.ceil(milliseconds / 1000);
}
