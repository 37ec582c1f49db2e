import { randomUUID } from 'node:crypto';
import {
  parseProviderChain,
  type CallAttempt,
  type CallRequest,
  type CallResult,
  type ProviderSpec,
} from '../core/call-types.js';
import { checkConversation, conversationText } from '../core/conversation.js';
import { formatUsd } from '../core/format-usd.js';
import { isErrorCode, isSwitchboardError, SwitchboardError, type ErrorCode } from '../core/errors.js';
import { MAX_TIMER_MS } from '../core/timer-limit.js';
import { ProviderRegistry } from '../providers/registry.js';
import type { Ledger } from '../store/ledger.js';
import { estimateCost, reserveBudget, type BudgetReservation, type CallBudget } from './budget.js';
import { CircuitBreaker, type CircuitBreakerOptions } from './circuit-breaker.js';
import { cooldownKey, coolingError, coolingWarning, credentialsKey } from './cooldown.js';
import { CallDeadline } from './deadline.js';
import { droppedAfterSending } from './dropped-connection.js';
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
  /**
   * Limit of each attempt, in milliseconds. The request's `timeoutMs` is the limit of the whole call
   * (retries, backoff and the rest of the chain share it); an attempt never gets more than is left of it.
   * @default no limit of its own: what is left of the request's timeoutMs
   */
  stageTimeoutMs?: number;
  /** Circuit breaker shared across calls; @default one kept per registry and ledger in this process, backed by that ledger. */
  breaker?: CircuitBreaker;
  /** Settings of the breaker `call` creates when none is given (`call.cooldown_seconds`). */
  cooldown?: Partial<CircuitBreakerOptions>;
  /** Try providers even while they cool down (`--ignore-cooldown`); their failures still count. @default false */
  ignoreCooldown?: boolean;
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

/**
 * Breakers per registry and per ledger: a breaker reads and writes cooldowns in the ledger it was made
 * with, so a call with another ledger (the workflow engine opens one per run) gets its own, and a
 * closed ledger is never read again. Weak on both, so ledgers closed long ago are let go.
 */
const breakers = new WeakMap<
  ProviderRegistry,
  { byLedger: WeakMap<Ledger, CircuitBreaker>; withoutLedger?: CircuitBreaker }
>();

function sharedBreaker(
  registry: ProviderRegistry,
  ledger: Ledger | undefined,
  create: () => CircuitBreaker,
): CircuitBreaker {
  let entry = breakers.get(registry);
  if (entry === undefined) {
    entry = { byLedger: new WeakMap() };
    breakers.set(registry, entry);
  }
  if (ledger === undefined) return (entry.withoutLedger ??= create());
  let breaker = entry.byLedger.get(ledger);
  if (breaker === undefined) {
    breaker = create();
    entry.byLedger.set(ledger, breaker);
  }
  return breaker;
}

/** Recorded errors that count toward a provider's cooldown: what `call` itself counts (not bad input, auth, schema). */
function countsForBreaker(code: string): boolean {
  return code !== 'SCHEMA' && code !== 'AUTH' && isErrorCode(code) && actionFor(code) !== 'stop';
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
  checkConversation(request);
  // What the conversation adds to each request (history, tool definitions), for the cost estimate.
  const conversation = conversationText(request);
  const registry = options.providers ?? new ProviderRegistry();
  const ledger = options.ledger === false ? undefined : options.ledger;
  const now = options._internal?.now ?? Date.now;
  const wait = options._internal?.sleep ?? sleep;
  const generateId = options._internal?.generateId ?? randomUUID;
  const breaker =
    options.breaker ??
    sharedBreaker(registry, ledger, () => new CircuitBreaker(options.cooldown ?? {}, ledger, now));
  const deadline = new CallDeadline({
    timeoutMs: request.timeoutMs,
    stageTimeoutMs: options.stageTimeoutMs,
    abortSignal: request.abortSignal,
    now,
  });
  const callId = generateId();
  const tags = request.tags ?? {};
  const attempts: CallAttempt[] = [];
  const warnings: string[] = [];
  let spent = 0;
  let lastError: SwitchboardError | undefined;
  // The budget reservation of the attempt in flight, released once its attempt (and cost) is recorded.
  let held: BudgetReservation | undefined;
  /** Credentials refused with AUTH in this call: later entries using them are skipped. */
  const refused = new Set<string>();

  const record = async (
    target: ProviderSpec,
    attempt: CallAttempt,
    extra: { result?: CallResult; prompt: string; failure?: SwitchboardError; key: string },
  ) => {
    attempts.push(attempt);
    const result = extra.result;
    // A failure after an answer (schema, downgrade) was still billed: keep what the provider reported.
    const billedCost = extra.failure?.details?.['costUsd'];
    const billedUsage = extra.failure?.details?.['usage'] as CallResult['usage'] | undefined;
    await ledger?.recordCallAttempt({
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
      ...(extra.key === target.text ? {} : { cooldownKey: extra.key }),
    });
    const reservation = held;
    held = undefined;
    await reservation?.release();
  };

  try {
    // A base URL named in the spec is checked for every entry first: a refused one anywhere in the
    // chain refuses the call before anything is sent or spent.
    for (const { provider, model, baseUrl } of chain) {
      if (baseUrl !== undefined) registry.get(provider).checkEndpoint?.({ model, baseUrl });
    }
    for (const target of chain) {
      if (deadline.expired()) throw deadline.timeoutError(lastError);
      const provider = registry.get(target.provider);
      const key = cooldownKey(target, provider);
      if (refused.has(credentialsKey(target, provider))) {
        warnings.push(`${target.text} skipped: its credentials were refused earlier in this call`);
        continue;
      }
      const cooling = options.ignoreCooldown === true ? 0 : await breaker.coolingFor(key);
      if (cooling > 0) {
        warnings.push(coolingWarning(target, cooling));
        lastError = coolingError(target, key, cooling);
        continue;
      }
      let retries = 0;
      let resentAfterDrop = false;
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
        if (deadline.expired()) throw deadline.timeoutError(lastError);
        const maxCost = options.budget?.maxCostUsd;
        const estimate = estimateCost(
          target.model,
          prompt + conversation,
          request.system,
          options.budget?.prices,
        );
        if (maxCost !== undefined) {
          if (spent + (estimate ?? 0) > maxCost) {
            lastError = new SwitchboardError(
              'BUDGET_EXCEEDED',
              `${target.text} would cost about ${formatUsd(estimate ?? 0)}, over the $${maxCost} left for this call`,
              {
                hint: 'raise the per-call budget or use a cheaper model',
                retryable: false,
              },
            );
            break;
          }
        }
        const timeoutMs = deadline.attemptTimeoutMs();
        try {
          held = await reserveBudget(ledger, options.budget?.rules ?? [], {
            id: generateId(),
            provider: target.provider,
            model: target.model,
            tags,
            estimateUsd: estimate,
            now: now(),
            ...(timeoutMs === undefined ? {} : { timeoutMs }),
          });
        } catch (error) {
          // A tag cap applies whatever the provider; a provider cap lets the next provider try.
          const scope = isSwitchboardError(error) ? String(error.details?.['scope'] ?? '') : '';
          if (!isSwitchboardError(error) || error.code !== 'BUDGET_EXCEEDED' || chain.length === 1)
            throw error;
          if (scope.includes('tag')) throw error;
          lastError = error;
          break;
        }
        for (const warning of held.warnings) if (!warnings.includes(warning)) warnings.push(warning);
        const started = performance.now();
        try {
          const result = await provider.call({
            ...options.providerOptions,
            ...request,
            ...streaming,
            prompt,
            model: target.model,
            abortSignal: deadline.signal,
            ...(timeoutMs === undefined ? {} : { timeoutMs }),
            // A longer idle limit (one meant as "never") would make the providers' timers fire at once.
            ...(request.idleTimeoutMs === undefined
              ? {}
              : { idleTimeoutMs: Math.min(request.idleTimeoutMs, MAX_TIMER_MS) }),
            ...(target.baseUrl === undefined ? {} : { baseUrl: target.baseUrl }),
          });
          const attempt: CallAttempt = {
            provider: target.text,
            model: target.model,
            durationMs: result.durationMs,
          };
          await record(target, attempt, { result, prompt, key });
          breaker.recordSuccess(key);
          spent += result.costUsd ?? 0;
          if (maxCost !== undefined && spent > maxCost)
            warnings.push(`this call cost ${formatUsd(spent)}, over its budget of $${maxCost}`);
          result.provider = target.text;
          result.attempts = attempts;
          result.warnings.push(...warnings);
          return result;
        } catch (error) {
          let failure = isSwitchboardError(error)
            ? error
            : new SwitchboardError('PROVIDER_ERROR', error instanceof Error ? error.message : String(error), {
                cause: error,
              });
          // The call's own deadline ended the attempt: recorded as the timeout it is, not as the caller's abort.
          if (failure.code === 'ABORTED' && deadline.expired()) failure = deadline.timeoutError(failure);
          lastError = failure;
          await record(
            target,
            {
              provider: target.text,
              model: target.model,
              durationMs: performance.now() - started,
              errorCode: failure.code,
              errorMessage: failure.message,
            },
            { prompt, failure, key },
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
          if (failure.code === 'AUTH') {
            refused.add(credentialsKey(target, provider));
            break;
          }
          if (failure.code !== 'SCHEMA') await breaker.recordFailure(key, failure.code, countsForBreaker);
          if (deadline.expired()) throw deadline.timeoutError(failure);
          // A connection dropped after sending got no answer: sending once more is safe, and cheaper than moving on.
          const resend = action === 'next' && !resentAfterDrop && droppedAfterSending(failure);
          if (resend || (action === 'retry' && retries < policy.retriesPerProvider)) {
            const delay = backoffDelay(retries, policy, failure.retryAfterMs);
            // A wait that would outlive the call's deadline is not worth starting: the next provider may still answer.
            if (delay <= policy.maxDelayMs && deadline.allowsWait(delay)) {
              if (resend) resentAfterDrop = true;
              else retries++;
              options.onRetryWait?.({
                spec: target.text,
                errorCode: failure.code,
                retry: retries + (resend ? 1 : 0),
                delayMs: delay,
              });
              await wait(delay, deadline.signal).catch((error: unknown) => {
                throw deadline.expired() ? deadline.timeoutError(failure) : error;
              });
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
    await held?.release();
    deadline.dispose();
    if (options.providers === undefined) await registry.close();
  }
}
