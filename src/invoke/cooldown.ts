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

/** What a caller can do about an open breaker, for messages. */
const COOLDOWN_HINT =
  'wait, pass --ignore-cooldown (ignoreCooldown) to try it now, or tune call.breaker in switchboard.yaml';

/** An entry's breaker as a caller reads it: how long until it lets requests through again. */
function breakerState(admission: { state: 'open' | 'half-open'; retryAfterMs: number }): string {
  return admission.state === 'open'
    ? `its circuit breaker is open after repeated failures, half-open in ${secondsLeft(admission.retryAfterMs)} s`
    : 'its circuit breaker is half-open and its probe requests are under way';
}

/** The warning a skipped provider leaves in the result. */
export function coolingWarning(
  target: ProviderSpec,
  admission: { state: 'open' | 'half-open'; retryAfterMs: number },
): string {
  return `${target.text} skipped: ${breakerState(admission)} (--ignore-cooldown tries it anyway)`;
}

/**
 * The error a call ends with when its last provider was skipped for its breaker; `retryAfterMs` is the
 * soonest any skipped entry of the chain lets requests through again.
 */
export function coolingError(
  target: ProviderSpec,
  key: string,
  admission: { state: 'open' | 'half-open'; retryAfterMs: number },
  retryAfterMs: number,
): SwitchboardError {
  const where = key === target.text ? '' : ` (${key.slice(target.text.length + 1)})`;
  return new SwitchboardError('PROVIDER_UNAVAILABLE', `${target.text}${where}: ${breakerState(admission)}`, {
    provider: target.provider,
    retryAfterMs,
    hint: COOLDOWN_HINT,
    details: { breaker: admission.state },
  });
}

function secondsLeft(milliseconds: number): number {
  return Math.ceil(milliseconds / 1000);
}
