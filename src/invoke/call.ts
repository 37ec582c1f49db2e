import { randomUUID } from 'node:crypto';
import {
  parseProviderChain,
  type CallAttempt,
  type CallRequest,
  type CallResult,
  type ProviderSpec,
} from '../core/call-types.js';
import { ERROR_CODES, isSwitchboardError, SwitchboardError, type ErrorCode } from '../core/errors.js';
import { ProviderRegistry } from '../providers/registry.js';
import type { Ledger } from '../store/ledger.js';
import { checkBudgetRules, estimateCost, type CallBudget } from './budget.js';
import { CircuitBreaker } from './circuit-breaker.js';
import { actionFor, backoffDelay, DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry-policy.js';
import { reaskPrompt } from './schema-reask.js';

export interface CallOptions {
  /** Providers to use; a private registry (closed after the call) otherwise. */
  providers?: ProviderRegistry;
  /** Where attempts are recorded, or false for nowhere. */
  ledger?: Ledger | false;
  /** Provider-specific per-call options (Claude Code: `resume`, `allowedTools`, `cwd`, …). */
  providerOptions?: Record<string, unknown>;
  retry?: Partial<RetryPolicy>;
  /** Re-asks with a diagnosis when an answer fails the schema, per provider. @default 2 (0–10) */
  schemaRetries?: number;
  /** Timeout of each provider in the chain (each stage), in milliseconds. @default the request's timeoutMs */
  stageTimeoutMs?: number;
  /** Circuit breaker shared across calls; @default one kept by the registry's process, backed by the ledger. */
  breaker?: CircuitBreaker;
  budget?: CallBudget;
  /**
   * Hears of each wait before a retry (a rate limit's `retry-after`, a backoff), so a terminal can
   * show what the call is waiting for and how long.
   */
  onRetryWait?: (event: { spec: string; errorCode: ErrorCode; retry: number; delayMs: number }) => void;
  /** Test seams. */
  _internal?: {
    now?: () => number;
    sleep?: (milliseconds: number, signal?: AbortSignal) => Promise<void>;
    generateId?: () => string;
  };
}

function sleep(milliseconds: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) return reject(abortError());
    const timer = setTimeout(resolve, milliseconds);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(abortError());
      },
      { once: true },
    );
  });
}

function abortError(): SwitchboardError {
  return new SwitchboardError('ABORTED', 'the call was aborted', { retryable: false });
}

const breakers = new WeakMap<ProviderRegistry, CircuitBreaker>();

/** Recorded errors that count toward a provider's cooldown: what `call` itself counts (not bad input, auth, schema). */
function countsForBreaker(code: string): boolean {
  return (
    code !== 'SCHEMA' &&
    (ERROR_CODES as readonly string[]).includes(code) &&
    actionFor(code as ErrorCode) !== 'stop'
  );
}

/** The error a call ends with: the last failure, carrying every attempt (AI SDK `RetryError` style). */
function withAttempts(
  error: SwitchboardError,
  message: string,
  attempts: CallAttempt[],
  warnings: string[],
  spentUsd: number,
): SwitchboardError {
  return new SwitchboardError(error.code, message, {
    retryable: error.retryable,
    ...(error.hint === undefined ? {} : { hint: error.hint }),
    ...(error.provider === undefined ? {} : { provider: error.provider }),
    ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
    details: { ...error.details, attempts, warnings, spentUsd },
    cause: error,
  });
}

/**
 * Calls a provider spec or a fallback chain (`claude:sonnet,anthropic:claude-sonnet-4-5`): retries
 * transient failures with backoff that honours `retry-after`, moves down the chain when a provider
 * cannot serve, re-asks with a diagnosis when structured output fails its schema, skips providers on
 * cooldown, enforces budgets, and records every attempt in the ledger and in `CallResult.attempts`.
 */
export async function call(
  spec: string,
  request: CallRequest,
  options: CallOptions = {},
): Promise<CallResult> {
  const chain = parseProviderChain(spec);
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
  const schemaRetries = options.schemaRetries ?? 2;
  if (!Number.isInteger(schemaRetries) || schemaRetries < 0 || schemaRetries > 10) {
    throw new SwitchboardError(
      'INVALID_INPUT',
      `Expected "schemaRetries" to be a whole number from 0 to 10, got ${schemaRetries}`,
    );
  }
  const registry = options.providers ?? new ProviderRegistry();
  const ledger = options.ledger === false ? undefined : options.ledger;
  const now = options._internal?.now ?? Date.now;
  const wait = options._internal?.sleep ?? sleep;
  const generateId = options._internal?.generateId ?? randomUUID;
  let breaker = options.breaker ?? breakers.get(registry);
  if (breaker === undefined) {
    breaker = new CircuitBreaker({}, ledger, now);
    breakers.set(registry, breaker);
  }
  const callId = generateId();
  const tags = request.tags ?? {};
  const attempts: CallAttempt[] = [];
  const warnings: string[] = [];
  let spent = 0;
  let lastError: SwitchboardError | undefined;

  const record = (
    target: ProviderSpec,
    attempt: CallAttempt,
    extra: { result?: CallResult; prompt: string; failure?: SwitchboardError },
  ) => {
    attempts.push(attempt);
    const result = extra.result;
    // A failure after an answer (schema, downgrade) was still billed: keep what the provider reported.
    const billedCost = extra.failure?.details?.['costUsd'];
    const billedUsage = extra.failure?.details?.['usage'] as CallResult['usage'] | undefined;
    ledger?.recordCallAttempt({
      id: generateId(),
      callId,
      attempt: attempts.length,
      createdAt: now(),
      provider: target.provider,
      spec: target.text,
      modelRequested: target.model,
      success: attempt.errorCode === undefined,
      durationMs: attempt.durationMs,
      costUsd: result?.costUsd ?? (typeof billedCost === 'number' ? billedCost : null),
      promptText: extra.prompt,
      ...(billedUsage === undefined ? {} : { usage: billedUsage }),
      tags,
      ...(attempt.errorCode === undefined ? {} : { errorCode: attempt.errorCode }),
      ...(result === undefined ? {} : { modelUsed: result.modelUsed, usage: result.usage }),
      ...(result?.sessionId === undefined ? {} : { sessionId: result.sessionId }),
    });
  };

  try {
    for (const target of chain) {
      const cooling = breaker.coolingFor(target.text);
      if (cooling > 0) {
        warnings.push(
          `${target.text} skipped: cooling down for ${Math.ceil(cooling / 1000)} s after repeated failures`,
        );
        lastError = new SwitchboardError(
          'PROVIDER_UNAVAILABLE',
          `${target.text} is cooling down after repeated failures`,
          {
            provider: target.provider,
            retryAfterMs: cooling,
          },
        );
        continue;
      }
      try {
        warnings.push(...checkBudgetRules(ledger, options.budget?.rules ?? [], target.provider, tags, now()));
      } catch (error) {
        // A tag cap applies whatever the provider; a provider cap lets the next provider try.
        if (
          !isSwitchboardError(error) ||
          chain.length === 1 ||
          (error.details?.['scope'] as string).includes('tag')
        )
          throw error;
        lastError = error;
        continue;
      }
      const provider = registry.get(target.provider);
      let retries = 0;
      // Streamed text already handed to the caller cannot be taken back: after the first piece, a
      // failure ends the call instead of retrying or falling back.
      let delivered = false;
      const onText = request.onText;
      const streaming =
        onText === undefined
          ? {}
          : {
              onText: (delta: string) => {
                delivered = true;
                onText(delta);
              },
            };
      let reasks = 0;
      let prompt = request.prompt;
      while (attempts.length < policy.maxAttempts) {
        const maxCost = options.budget?.maxCostUsd;
        if (maxCost !== undefined) {
          const estimate = estimateCost(target.model, prompt, request.system);
          if (spent + (estimate ?? 0) > maxCost) {
            lastError = new SwitchboardError(
              'BUDGET_EXCEEDED',
              `${target.text} would cost about $${(estimate ?? 0).toFixed(4)}, over the $${maxCost} left for this call`,
              {
                hint: 'raise the per-call budget or use a cheaper model',
                retryable: false,
              },
            );
            break;
          }
        }
        const started = performance.now();
        try {
          const timeoutMs = options.stageTimeoutMs ?? request.timeoutMs;
          const result = await provider.call({
            ...options.providerOptions,
            ...request,
            ...streaming,
            prompt,
            model: target.model,
            ...(timeoutMs === undefined ? {} : { timeoutMs }),
            ...(target.baseUrl === undefined ? {} : { baseUrl: target.baseUrl }),
          });
          const attempt: CallAttempt = {
            provider: target.text,
            model: target.model,
            durationMs: result.durationMs,
          };
          record(target, attempt, { result, prompt });
          breaker.recordSuccess(target.text);
          spent += result.costUsd ?? 0;
          if (maxCost !== undefined && spent > maxCost)
            warnings.push(`this call cost $${spent.toFixed(4)}, over its budget of $${maxCost}`);
          result.provider = target.text;
          result.attempts = attempts;
          result.warnings.push(...warnings);
          return result;
        } catch (error) {
          const failure = isSwitchboardError(error)
            ? error
            : new SwitchboardError('PROVIDER_ERROR', error instanceof Error ? error.message : String(error), {
                cause: error,
              });
          lastError = failure;
          record(
            target,
            {
              provider: target.text,
              model: target.model,
              durationMs: performance.now() - started,
              errorCode: failure.code,
              errorMessage: failure.message,
            },
            { prompt, failure },
          );
          // Failures after an answer (schema, downgrade) were still billed.
          const failedCost = failure.details?.['costUsd'];
          if (typeof failedCost === 'number') spent += failedCost;
          const raw = failure.details?.['raw'];
          if (failure.code === 'SCHEMA' && typeof raw === 'string' && reasks < schemaRetries) {
            reasks++;
            const errors = Array.isArray(failure.details?.['errors'])
              ? (failure.details['errors'] as string[])
              : [];
            prompt = reaskPrompt(request.prompt, raw, errors);
            continue;
          }
          if (delivered) {
            throw new SwitchboardError(
              failure.code,
              `${failure.message} (after part of the answer was streamed; not retried)`,
              {
                retryable: false,
                ...(failure.hint === undefined ? {} : { hint: failure.hint }),
                ...(failure.provider === undefined ? {} : { provider: failure.provider }),
                details: { ...failure.details, streamed: true },
                cause: failure,
              },
            );
          }
          const action = actionFor(failure.code);
          if (action === 'stop') throw failure;
          if (failure.code !== 'SCHEMA') breaker.recordFailure(target.text, failure.code, countsForBreaker);
          if (action === 'retry' && retries < policy.retriesPerProvider) {
            const delay = backoffDelay(retries, policy, failure.retryAfterMs);
            if (delay <= policy.maxDelayMs) {
              retries++;
              options.onRetryWait?.({
                spec: target.text,
                errorCode: failure.code,
                retry: retries,
                delayMs: delay,
              });
              await wait(delay, request.abortSignal);
              continue;
            }
          }
          break;
        }
      }
      if (attempts.length >= policy.maxAttempts) break;
    }
    const final = lastError ?? new SwitchboardError('PROVIDER_UNAVAILABLE', 'no provider could be tried');
    throw withAttempts(
      final,
      chain.length > 1 ? `every provider failed; last: ${final.message}` : final.message,
      attempts,
      warnings,
      spent,
    );
  } catch (error) {
    if (isSwitchboardError(error) && error.details?.['attempts'] === undefined) {
      throw withAttempts(error, error.message, attempts, warnings, spent);
    }
    throw error;
  } finally {
    if (options.providers === undefined) await registry.close();
  }
}
