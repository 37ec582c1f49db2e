import { randomUUID } from 'node:crypto';
import {
  parseProviderChain,
  type CallAttempt,
  type CallRequest,
  type CallResult,
  type Provider,
  type ProviderCall,
  type ProviderSpec,
} from '../core/call-types.js';
import { checkConversation, conversationText } from '../core/conversation.js';
import { formatUsd } from '../core/format-usd.js';
import { isErrorCode, isSwitchboardError, SwitchboardError, type ErrorCode } from '../core/errors.js';
import { MAX_TIMER_MS } from '../core/timer-limit.js';
import { ProviderRegistry } from '../providers/registry.js';
import {
  genAiProviderName,
  messageContent,
  tracingEnabled,
  withSpan,
  type SpanAttributes,
} from '../observe/tracing.js';
import type { CallAttemptRecord } from '../store/call-records.js';
import type { Ledger } from '../store/ledger.js';
import {
  estimateCost,
  reserveBudget,
  type BudgetReservation,
  type BudgetRule,
  type CallBudget,
} from './budget.js';
import { CircuitBreaker, type Admission, type CircuitBreakerSettings } from './circuit-breaker.js';
import { coolingError, coolingWarning, targetKeys, type TargetKeys } from './cooldown.js';
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
  /**
   * Settings of the breaker `call` creates when none is given (`call.breaker` of switchboard.yaml): when it
   * opens (`failureRatio`, `minimumRequests`, `windowMs`) and how it half-opens (`halfOpenAfterMs`, …).
   */
  cooldown?: CircuitBreakerSettings;
  /** Try providers even while their breaker is open (`--ignore-cooldown`); their failures still count. @default false */
  ignoreCooldown?: boolean;
  budget?: CallBudget;
  /** The call's id in the ledger (`call_id` of its rows), when the caller has already named it (the gateway's `x-switchboard-call-id`). */
  callId?: string;
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

/**
 * Recorded errors that count as a provider's failures for its breaker, what `call` itself counts: the
 * provider's side (5xx, overload, rate limit, timeouts, dropped connections, unreadable answers), not
 * the caller's (bad input, budget, refused credentials, an answer that failed the schema, an abort).
 */
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

/** Chains parsed before, by spec: a long-lived caller sends the same few specs again and again. */
const parsedChains = new Map<string, readonly ProviderSpec[]>();
const PARSED_CHAINS_KEPT = 256;

function chainOf(spec: string): readonly ProviderSpec[] {
  let chain = parsedChains.get(spec);
  if (chain === undefined) {
    chain = Object.freeze(parseProviderChain(spec).map((target) => Object.freeze(target)));
    if (parsedChains.size >= PARSED_CHAINS_KEPT) parsedChains.clear();
    parsedChains.set(spec, chain);
  }
  return chain;
}

/** Everything one call keeps while it goes down its chain: settings, clocks, and what happened so far. */
interface CallState {
  readonly request: CallRequest;
  readonly options: CallOptions;
  readonly chain: readonly ProviderSpec[];
  readonly policy: RetryPolicy;
  readonly schemaRetries: number;
  /** What the conversation adds to each request (history, tool definitions), for the cost estimate. */
  readonly conversation: string;
  readonly registry: ProviderRegistry;
  readonly ledger: Ledger | undefined;
  readonly now: () => number;
  readonly wait: (milliseconds: number, signal?: AbortSignal) => Promise<void>;
  readonly generateId: () => string;
  readonly breaker: CircuitBreaker;
  readonly deadline: CallDeadline;
  readonly callId: string;
  readonly tags: Record<string, string>;
  readonly attempts: CallAttempt[];
  readonly warnings: string[];
  spent: number;
  lastError: SwitchboardError | undefined;
  /** The budget reservation of the attempt in flight, released once its attempt (and cost) is recorded. */
  held: BudgetReservation | undefined;
  /** Credentials refused with AUTH in this call: later entries using them are skipped. */
  readonly refused: Set<string>;
  /** The soonest an entry skipped for its open breaker lets requests through again, in milliseconds. */
  breakerWaitMs: number | undefined;
}

/** One chain entry being tried: its provider, its keys, and its retries so far. */
interface TargetRun {
  readonly target: ProviderSpec;
  readonly provider: Provider;
  readonly keys: TargetKeys;
  retries: number;
  resentAfterDrop: boolean;
  /**
   * Streamed text already handed to the caller cannot be taken back: after the first piece, a failure
   * ends the call instead of retrying or falling back.
   */
  delivered: boolean;
  reasks: number;
  /** The prompt of the next attempt: the request's, or a re-ask after an answer failed the schema. */
  prompt: string;
  readonly onText: ((delta: string) => void) | undefined;
}

/** What the attempt loop does after a failure. */
type NextStep = 'again' | 'next-provider';

/**
 * Calls a provider spec or a fallback chain (`claude:sonnet,anthropic:claude-sonnet-4-5`): retries
 * transient failures with backoff that honours `retry-after`, moves down the chain when a provider
 * cannot serve, re-asks with a diagnosis when structured output fails its schema, skips providers whose
 * circuit breaker is open, enforces budgets, and records every attempt in the ledger and in
 * `CallResult.attempts`.
 */
export function call(spec: string, request: CallRequest, options: CallOptions = {}): Promise<CallResult> {
  if (!tracingEnabled()) return callChain(spec, request, options);
  return withSpan(`call ${spec}`, { 'switchboard.call.spec': spec }, async (span) => {
    try {
      const result = await callChain(spec, request, options);
      span.set({
        'switchboard.call.id': result.callId,
        'switchboard.call.provider': result.provider,
        'switchboard.call.attempts': result.attempts.length,
        'switchboard.cost_usd': result.costUsd ?? undefined,
      });
      return result;
    } catch (error) {
      const details = isSwitchboardError(error) ? error.details : undefined;
      const attempts = details?.['attempts'];
      const spent = details?.['spentUsd'];
      span.set({
        'switchboard.call.attempts': Array.isArray(attempts) ? attempts.length : undefined,
        'switchboard.cost_usd': typeof spent === 'number' ? spent : undefined,
      });
      throw error;
    }
  });
}

async function callChain(spec: string, request: CallRequest, options: CallOptions): Promise<CallResult> {
  const state = prepareCall(spec, request, options);
  try {
    checkChainEndpoints(state);
    for (const target of state.chain) {
      if (state.deadline.expired()) throw state.deadline.timeoutError(state.lastError);
      const run = await openTarget(state, target);
      if (run === undefined) continue;
      let result: CallResult | undefined;
      try {
        result = await runTarget(state, run);
      } finally {
        // A probe of a half-open breaker that ended without a verdict (an abort, a bad request) frees its place.
        state.breaker.settle(run.keys.cooldown, state.callId);
      }
      if (result !== undefined) return result;
      if (state.attempts.length >= state.policy.maxAttempts) break;
    }
    throw chainFailure(state);
  } catch (error) {
    throw withAttemptsOnce(error, state);
  } finally {
    const ending = endCall(state);
    if (ending !== undefined) await ending;
  }
}

/** Checks the options and sets up the call's state: nothing is sent or recorded yet. */
function prepareCall(spec: string, request: CallRequest, options: CallOptions): CallState {
  const chain = chainOf(spec);
  const policy: RetryPolicy =
    options.retry === undefined ? DEFAULT_RETRY_POLICY : { ...DEFAULT_RETRY_POLICY, ...options.retry };
  const schemaRetries = options.schemaRetries ?? 2;
  if (!Number.isInteger(schemaRetries) || schemaRetries < 0 || schemaRetries > 10) {
    throw new SwitchboardError(
      'INVALID_INPUT',
      `Expected "schemaRetries" to be a whole number from 0 to 10, got ${schemaRetries}`,
    );
  }
  checkConversation(request);
  const conversation = conversationText(request);
  const registry = options.providers ?? new ProviderRegistry();
  const ledger = options.ledger === false ? undefined : options.ledger;
  const now = options._internal?.now ?? Date.now;
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
  return {
    request,
    options,
    chain,
    policy,
    schemaRetries,
    conversation,
    registry,
    ledger,
    now,
    wait: options._internal?.sleep ?? sleep,
    generateId,
    breaker,
    deadline,
    callId: options.callId ?? generateId(),
    tags: request.tags ?? {},
    attempts: [],
    warnings: [],
    spent: 0,
    lastError: undefined,
    held: undefined,
    refused: new Set(),
    breakerWaitMs: undefined,
  };
}

/**
 * A base URL named in the spec is checked for every entry first: a refused one anywhere in the chain
 * refuses the call before anything is sent or spent.
 */
function checkChainEndpoints(state: CallState): void {
  for (const { provider, model, baseUrl } of state.chain) {
    if (baseUrl !== undefined) state.registry.get(provider).checkEndpoint?.({ model, baseUrl });
  }
}

/** The entry's provider and keys, unless its credentials were refused earlier or its breaker is open. */
async function openTarget(state: CallState, target: ProviderSpec): Promise<TargetRun | undefined> {
  const provider = state.registry.get(target.provider);
  const keys = targetKeys(target, provider);
  if (state.refused.has(keys.credentials)) {
    state.warnings.push(`${target.text} skipped: its credentials were refused earlier in this call`);
    return undefined;
  }
  if (state.options.ignoreCooldown !== true) {
    const admitted = state.breaker.admit(keys.cooldown, state.callId);
    const admission: Admission = admitted instanceof Promise ? await admitted : admitted;
    if (!admission.allowed) {
      // Falls through to the next entry; the call fails only when every entry is open, and then says
      // when the first of them lets requests through again.
      const waitMs = Math.min(state.breakerWaitMs ?? Infinity, admission.retryAfterMs);
      state.breakerWaitMs = waitMs;
      state.warnings.push(coolingWarning(target, admission));
      state.lastError = coolingError(target, keys.cooldown, admission, waitMs);
      return undefined;
    }
  }
  const onText = state.request.onText;
  const run: TargetRun = {
    target,
    provider,
    keys,
    retries: 0,
    resentAfterDrop: false,
    delivered: false,
    reasks: 0,
    prompt: state.request.prompt,
    onText:
      onText === undefined
        ? undefined
        : (delta) => {
            run.delivered = true;
            onText(delta);
          },
  };
  return run;
}

/**
 * Attempts at one chain entry until one answers, or the entry is given up (the result is then
 * undefined and `state.lastError` says why). Throws when the whole call must end.
 */
async function runTarget(state: CallState, run: TargetRun): Promise<CallResult | undefined> {
  while (state.attempts.length < state.policy.maxAttempts) {
    if (state.deadline.expired()) throw state.deadline.timeoutError(state.lastError);
    const estimate = estimateAttempt(state, run);
    if (estimate === false) return undefined;
    const timeoutMs = state.deadline.attemptTimeoutMs();
    // Without budget rules nothing is held: no reservation to make or release.
    const rules = state.options.budget?.rules;
    if (
      rules !== undefined &&
      rules.length > 0 &&
      !(await reserveAttempt(state, run, rules, estimate, timeoutMs))
    )
      return undefined;
    const started = performance.now();
    let result: CallResult;
    try {
      result = await attempt(state, run, providerRequest(state, run, timeoutMs));
    } catch (error) {
      const failure = await recordFailure(state, run, error, performance.now() - started);
      if ((await nextStep(state, run, failure)) === 'next-provider') return undefined;
      continue;
    }
    // Outside the try: an answer whose row cannot be written ends the call, it is not asked again.
    return await acceptResult(state, run, result);
  }
  return undefined;
}

/** One request to the entry's provider, in a GenAI client span when tracing is on. */
function attempt(state: CallState, run: TargetRun, request: ProviderCall): Promise<CallResult> {
  if (!tracingEnabled()) return run.provider.call(request);
  const { target } = run;
  return withSpan(
    `chat ${target.model}`,
    attemptAttributes(state, run, request),
    async (span) => {
      const result = await run.provider.call(request);
      span.set({
        'gen_ai.response.model': result.modelUsed,
        'gen_ai.usage.input_tokens': result.usage.inputTokens,
        'gen_ai.usage.output_tokens': result.usage.outputTokens,
        'gen_ai.usage.cache_read.input_tokens': result.usage.cacheReadTokens || undefined,
        'gen_ai.usage.cache_creation.input_tokens': result.usage.cacheWriteTokens || undefined,
        'gen_ai.response.finish_reasons':
          result.finishReason === undefined ? undefined : [result.finishReason],
        'gen_ai.conversation.id': result.sessionId,
        'switchboard.cost_usd': result.costUsd ?? undefined,
        ...messageContent('gen_ai.output.messages', 'assistant', result.text),
      });
      return result;
    },
    { kind: 'client' },
  );
}

function attemptAttributes(state: CallState, { target }: TargetRun, request: ProviderCall): SpanAttributes {
  return {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': genAiProviderName(target.provider),
    'gen_ai.request.model': target.model,
    'switchboard.provider.spec': target.text,
    'switchboard.call.id': state.callId,
    'switchboard.attempt': state.attempts.length + 1,
    ...messageContent('gen_ai.system_instructions', 'system', request.system),
    ...messageContent('gen_ai.input.messages', 'user', request.prompt),
  };
}

/**
 * The attempt's cost estimate, or false when it would go over the call's `maxCostUsd` (the entry is
 * then given up with `BUDGET_EXCEEDED`).
 */
function estimateAttempt(state: CallState, { target, prompt }: TargetRun): number | undefined | false {
  const budget = state.options.budget;
  const estimate = estimateCost(
    target.model,
    prompt + state.conversation,
    state.request.system,
    budget?.prices,
  );
  const maxCost = budget?.maxCostUsd;
  if (maxCost === undefined || state.spent + (estimate ?? 0) <= maxCost) return estimate;
  state.lastError = new SwitchboardError(
    'BUDGET_EXCEEDED',
    `${target.text} would cost about ${formatUsd(estimate ?? 0)}, over the $${maxCost} left for this call`,
    {
      hint: 'raise the per-call budget or use a cheaper model',
      retryable: false,
    },
  );
  return false;
}

/**
 * Holds the attempt's estimate against the ledger's budget rules. False when a provider cap refuses it
 * and another provider may try; a tag cap, or a cap on a call without fallbacks, ends the call.
 */
async function reserveAttempt(
  state: CallState,
  { target }: TargetRun,
  rules: readonly BudgetRule[],
  estimate: number | undefined,
  timeoutMs: number | undefined,
): Promise<boolean> {
  try {
    state.held = await reserveBudget(state.ledger, rules, {
      id: state.generateId(),
      provider: target.provider,
      model: target.model,
      tags: state.tags,
      estimateUsd: estimate,
      now: state.now(),
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    });
  } catch (error) {
    if (isSwitchboardError(error) && error.code === 'LEDGER_UNWRITABLE') throw notSent(error);
    // A tag cap applies whatever the provider; a provider cap lets the next provider try.
    const scope = isSwitchboardError(error) ? String(error.details?.['scope'] ?? '') : '';
    if (!isSwitchboardError(error) || error.code !== 'BUDGET_EXCEEDED' || state.chain.length === 1)
      throw error;
    if (scope.includes('tag')) throw error;
    state.lastError = error;
    return false;
  }
  for (const warning of state.held.warnings) {
    if (!state.warnings.includes(warning)) state.warnings.push(warning);
  }
  return true;
}

/** A ledger that cannot hold the budget refuses the call before anything is sent or paid for. */
function notSent(error: SwitchboardError): SwitchboardError {
  return new SwitchboardError('LEDGER_UNWRITABLE', `${error.message}; nothing was sent`, {
    hint: `${error.hint ?? 'make the ledger writable'}, then retry`,
    retryable: false,
    ...(error.details === undefined ? {} : { details: error.details }),
    cause: error,
  });
}

/** What the provider is asked: the request with the attempt's prompt, model, limits and signal. */
function providerRequest(state: CallState, run: TargetRun, timeoutMs: number | undefined): ProviderCall {
  const { request, deadline } = state;
  const signal = deadline.signal;
  return {
    ...state.options.providerOptions,
    ...request,
    ...(run.onText === undefined ? {} : { onText: run.onText }),
    prompt: run.prompt,
    model: run.target.model,
    // No signal when nothing can end the call early (see CallDeadline.signal).
    ...(signal === undefined ? {} : { abortSignal: signal }),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    // A longer idle limit (one meant as "never") would make the providers' timers fire at once.
    ...(request.idleTimeoutMs === undefined
      ? {}
      : { idleTimeoutMs: Math.min(request.idleTimeoutMs, MAX_TIMER_MS) }),
    ...(run.target.baseUrl === undefined ? {} : { baseUrl: run.target.baseUrl }),
  };
}

/**
 * Records the answered attempt and hands the result back with the call's attempts and warnings, once
 * its row is committed. A row the ledger could not write does not lose the answer: the result comes
 * back with a warning that says so (see `recordAttempt`), and the provider is not asked again.
 */
async function acceptResult(state: CallState, run: TargetRun, result: CallResult): Promise<CallResult> {
  const { target } = run;
  const attempt: CallAttempt = { provider: target.text, model: target.model, durationMs: result.durationMs };
  await recordAttempt(state, run, attempt, result);
  const closing = state.breaker.recordSuccess(run.keys.cooldown, state.callId);
  if (closing !== undefined) await closing;
  state.spent += result.costUsd ?? 0;
  const maxCost = state.options.budget?.maxCostUsd;
  if (maxCost !== undefined && state.spent > maxCost)
    state.warnings.push(`this call cost ${formatUsd(state.spent)}, over its budget of $${maxCost}`);
  finishResult(state, target, result);
  return result;
}

function finishResult(state: CallState, target: ProviderSpec, result: CallResult): void {
  result.provider = target.text;
  result.callId = state.callId;
  result.attempts = state.attempts;
  result.warnings.push(...state.warnings);
}

/** The failed attempt as a coded error, recorded in the ledger with what it was billed. */
async function recordFailure(
  state: CallState,
  run: TargetRun,
  error: unknown,
  durationMs: number,
): Promise<SwitchboardError> {
  let failure = isSwitchboardError(error)
    ? error
    : new SwitchboardError('PROVIDER_ERROR', error instanceof Error ? error.message : String(error), {
        cause: error,
      });
  // The call's own deadline ended the attempt: recorded as the timeout it is, not as the caller's abort.
  if (failure.code === 'ABORTED' && state.deadline.expired()) failure = state.deadline.timeoutError(failure);
  state.lastError = failure;
  await recordAttempt(
    state,
    run,
    {
      provider: run.target.text,
      model: run.target.model,
      durationMs,
      errorCode: failure.code,
      errorMessage: failure.message,
    },
    undefined,
    failure,
  );
  // Failures after an answer (schema, downgrade) were still billed.
  const failedCost = failure.details?.['costUsd'];
  if (typeof failedCost === 'number') state.spent += failedCost;
  return failure;
}

/**
 * After a failed attempt: re-ask with the schema's errors, wait and retry, resend a dropped request, or
 * give the entry up. Throws when the failure ends the call (streamed text, a stop error, the deadline).
 */
async function nextStep(state: CallState, run: TargetRun, failure: SwitchboardError): Promise<NextStep> {
  const raw = failure.details?.['raw'];
  if (failure.code === 'SCHEMA' && typeof raw === 'string' && run.reasks < state.schemaRetries) {
    run.reasks++;
    const errors = Array.isArray(failure.details?.['errors']) ? (failure.details['errors'] as string[]) : [];
    run.prompt = reaskPrompt(state.request.prompt, raw, errors);
    return 'again';
  }
  if (run.delivered) {
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
    state.refused.add(run.keys.credentials);
    return 'next-provider';
  }
  if (failure.code !== 'SCHEMA') {
    const key = run.keys.cooldown;
    await state.breaker.recordFailure(key, state.callId, failure.code, countsForBreaker);
    // An open breaker (this failure's doing or another request's) sends the rest of the call on at once.
    if (state.options.ignoreCooldown !== true && state.breaker.stateOf(key) !== 'closed')
      return 'next-provider';
  }
  const { deadline, policy } = state;
  if (deadline.expired()) throw deadline.timeoutError(failure);
  // A connection dropped after sending got no answer: sending once more is safe, and cheaper than moving on.
  const resend = action === 'next' && !run.resentAfterDrop && droppedAfterSending(failure);
  if (!resend && !(action === 'retry' && run.retries < policy.retriesPerProvider)) return 'next-provider';
  const delay = backoffDelay(run.retries, policy, failure.retryAfterMs);
  // A wait that would outlive the call's deadline is not worth starting: the next provider may still answer.
  if (delay > policy.maxDelayMs || !deadline.allowsWait(delay)) return 'next-provider';
  if (resend) run.resentAfterDrop = true;
  else run.retries++;
  state.options.onRetryWait?.({
    spec: run.target.text,
    errorCode: failure.code,
    retry: run.retries + (resend ? 1 : 0),
    delayMs: delay,
  });
  await state.wait(delay, deadline.signal).catch((error: unknown) => {
    throw deadline.expired() ? deadline.timeoutError(failure) : error;
  });
  return 'again';
}

/**
 * Adds an attempt to the call's list and the ledger, settling its budget reservation with its real cost.
 * A ledger that cannot take the record (a full disk, a read-only folder) does not fail the call: the
 * provider has answered and been paid, and a failed call would be sent (and paid) again. It becomes a
 * warning; the reservation stays, counting as spent, and the ledger writes the record when it can.
 */
async function recordAttempt(
  state: CallState,
  run: TargetRun,
  attempt: CallAttempt,
  result: CallResult | undefined,
  failure?: SwitchboardError,
): Promise<void> {
  state.attempts.push(attempt);
  const record = attemptRecord(state, run, attempt, result, failure);
  const reservation = state.held;
  state.held = undefined;
  try {
    if (reservation === undefined) await state.ledger?.recordCallAttempt(record);
    else await reservation.settle(record);
  } catch (error) {
    const warning = unrecordedWarning(error, reservation?.amountUsd);
    if (warning === undefined) throw error;
    if (!state.warnings.includes(warning)) state.warnings.push(warning);
  }
}

/** Ledger failures that, after an attempt was made, leave the call's outcome as it is and warn. */
const UNRECORDED_IS_A_WARNING: ReadonlySet<ErrorCode> = new Set([
  'LEDGER_UNWRITABLE',
  'STORE_ERROR',
  'DATABASE_UNREACHABLE',
]);

/** How the warning of a call the ledger did not record begins. */
export const UNRECORDED_WARNING_START = 'the ledger did not record this call';

/**
 * The warning for a ledger failure after an attempt was made (one line: what could not be written, where
 * the spend is kept meanwhile, what to do), or undefined when `error` is no such failure.
 */
export function unrecordedWarning(error: unknown, reservedUsd?: number): string | undefined {
  if (!isSwitchboardError(error) || !UNRECORDED_IS_A_WARNING.has(error.code)) return undefined;
  const kept =
    reservedUsd === undefined
      ? 'its cost is missing from budgets and stats'
      : `its reservation of ${formatUsd(reservedUsd)} counts as spent until the record is written (tried again while this process runs)`;
  return `${UNRECORDED_WARNING_START} (${error.message}); ${kept}${error.hint === undefined ? '' : `: ${error.hint}`}`;
}

/** The ledger row of an attempt. */
function attemptRecord(
  state: CallState,
  { target, prompt, keys }: TargetRun,
  attempt: CallAttempt,
  result: CallResult | undefined,
  failure: SwitchboardError | undefined,
): CallAttemptRecord {
  // A failure after an answer (schema, downgrade) was still billed: keep what the provider reported.
  const billedCost = failure?.details?.['costUsd'];
  const billedUsage = failure?.details?.['usage'] as CallResult['usage'] | undefined;
  return {
    id: state.generateId(),
    callId: state.callId,
    attempt: state.attempts.length,
    createdAt: state.now(),
    provider: target.provider,
    spec: target.text,
    modelRequested: target.model,
    success: attempt.errorCode === undefined,
    durationMs: attempt.durationMs,
    costUsd: result?.costUsd ?? (typeof billedCost === 'number' ? billedCost : null),
    promptText: prompt,
    ...(billedUsage === undefined ? {} : { usage: billedUsage }),
    tags: state.tags,
    ...(attempt.errorCode === undefined ? {} : { errorCode: attempt.errorCode }),
    ...(result === undefined ? {} : { modelUsed: result.modelUsed, usage: result.usage }),
    ...(result?.sessionId === undefined ? {} : { sessionId: result.sessionId }),
    ...(keys.cooldown === target.text ? {} : { cooldownKey: keys.cooldown }),
  };
}

/** The error a call ends with when no entry answered. */
function chainFailure(state: CallState): SwitchboardError {
  const final = state.lastError ?? new SwitchboardError('PROVIDER_UNAVAILABLE', 'no provider could be tried');
  return withAttempts(
    final,
    state.chain.length > 1 ? `every provider failed; last: ${final.message}` : final.message,
    state.attempts,
    state.warnings,
    state.spent,
  );
}

/** A Switchboard error leaving the call carries its attempts, warnings and spend (once). */
function withAttemptsOnce(error: unknown, state: CallState): unknown {
  if (isSwitchboardError(error) && error.details?.['attempts'] === undefined) {
    return withAttempts(error, error.message, state.attempts, state.warnings, state.spent);
  }
  return error;
}

/**
 * Releases what the call still holds: a reservation, the deadline's timer, a private registry. Returns
 * nothing to wait for when there is none of the first and last, the usual case.
 */
function endCall(state: CallState): Promise<void> | undefined {
  state.deadline.dispose();
  const held = state.held;
  const privateRegistry = state.options.providers === undefined;
  if (held === undefined && !privateRegistry) return undefined;
  return (async () => {
    // A release that fails leaves the reservation counting as spent: the safe side, not worth an error.
    await held?.release().catch(() => undefined);
    if (privateRegistry) await state.registry.close();
  })();
}
