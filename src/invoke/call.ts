import { randomUUID } from 'node:crypto';
import { parseProviderChain, type CallRequest, type CallResult } from '../core/call-types.js';
import { isSwitchboardError, SwitchboardError } from '../core/errors.js';
import { ProviderRegistry } from '../providers/registry.js';
import { hashText, type Ledger } from '../store/ledger.js';

export interface CallOptions {
  /** Providers to use; a private registry (closed after the call) otherwise. */
  providers?: ProviderRegistry;
  /** Where attempts are recorded, or false for nowhere. */
  ledger?: Ledger | false;
  /** Provider-specific per-call options (Claude Code: `resume`, `allowedTools`, `cwd`, …). */
  providerOptions?: Record<string, unknown>;
  /** Test seams. */
  _internal?: { now?: () => number; generateId?: () => string };
}

/**
 * Makes one call to the provider a spec names (`claude:haiku`) and records the attempt in the ledger.
 * Fallback chains and retry policies build on this.
 */
export async function call(
  spec: string,
  request: CallRequest,
  options: CallOptions = {},
): Promise<CallResult> {
  const chain = parseProviderChain(spec);
  if (chain.length > 1) {
    throw new SwitchboardError(
      'INVALID_INPUT',
      `"${spec}" is a fallback chain, which this version does not run yet`,
      {
        hint: 'give a single provider:model',
      },
    );
  }
  const target = chain[0] as (typeof chain)[number];
  const registry = options.providers ?? new ProviderRegistry();
  const ledger = options.ledger === false ? undefined : options.ledger;
  const now = options._internal?.now ?? Date.now;
  const generateId = options._internal?.generateId ?? randomUUID;
  const callId = generateId();
  const started = performance.now();
  const base = {
    callId,
    attempt: 1,
    createdAt: now(),
    provider: target.provider,
    spec: target.text,
    modelRequested: target.model,
    promptHash: hashText(request.prompt),
    promptText: request.prompt,
    ...(request.tags === undefined ? {} : { tags: request.tags }),
  };
  try {
    const provider = registry.get(target.provider);
    const result = await provider.call({ ...options.providerOptions, ...request, model: target.model });
    result.provider = target.text;
    result.attempts = [{ provider: target.text, model: target.model, durationMs: result.durationMs }];
    ledger?.recordCallAttempt({
      ...base,
      id: generateId(),
      modelUsed: result.modelUsed,
      success: true,
      durationMs: result.durationMs,
      usage: result.usage,
      costUsd: result.costUsd,
      ...(result.sessionId === undefined ? {} : { sessionId: result.sessionId }),
    });
    return result;
  } catch (error) {
    const failure = isSwitchboardError(error)
      ? error
      : new SwitchboardError('PROVIDER_ERROR', error instanceof Error ? error.message : String(error), {
          cause: error,
        });
    ledger?.recordCallAttempt({
      ...base,
      id: generateId(),
      success: false,
      errorCode: failure.code,
      durationMs: performance.now() - started,
      costUsd: null,
    });
    throw failure;
  } finally {
    if (options.providers === undefined) await registry.close();
  }
}
