import { SwitchboardError } from '../core/errors.js';
import { formatUsd } from '../core/format-usd.js';
import { DEFAULT_PRICES, findPrice, type ModelPrice } from '../core/prices.js';
import { judgeReservation, type CapStanding, type SpendCap } from '../store/budget-reservations.js';
import type { CallAttemptRecord } from '../store/call-records.js';
import type { Ledger } from '../store/ledger.js';

/** A spending cap from the ledger, for one provider, one tag, or everything. */
export interface BudgetRule {
  /** Provider name (`anthropic`); all providers when absent. */
  provider?: string;
  /** A `key=value` tag the call must carry; all calls when absent. */
  tag?: string;
  /** Cap on dollars spent since 00:00 UTC today; 0 blocks every call in the rule's scope. */
  dailyUsd?: number;
  /** Cap on dollars spent since the first of this month, UTC; 0 blocks every call in the rule's scope. */
  monthlyUsd?: number;
  /**
   * Cap on every dollar ever recorded in the rule's scope, whatever the day: a workflow run's
   * `budget_usd`, scoped by its `workflow_run=<id>` tag. 0 blocks every call in the rule's scope.
   */
  totalUsd?: number;
  /** Share of a cap at which calls carry a warning. @default 0.8 */
  warnAt?: number;
}

/** What a call may spend. */
export interface CallBudget {
  /** The most one call may cost, all attempts together: checked against an estimate before each attempt and the real cost after. */
  maxCostUsd?: number;
  rules?: readonly BudgetRule[];
  /**
   * Prices (USD per million tokens) over the built-in table, for the estimates made before each attempt;
   * give the same table as the providers (`prices:` in switchboard.yaml). @default DEFAULT_PRICES
   */
  prices?: Readonly<Record<string, ModelPrice>>;
}

export function startOfDay(now: number): number {
  const date = new Date(now);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate());
}

export function startOfMonth(now: number): number {
  const date = new Date(now);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
}

/** One cap of one rule that applies to a call, with what a person needs to read about it. */
interface ApplicableCap {
  cap: SpendCap;
  period: 'daily' | 'monthly' | 'total';
  scope: string;
  warnAt: number;
}

/** The daily and monthly caps of every rule that applies to this provider and these tags. */
function applicableCaps(
  rules: readonly BudgetRule[],
  provider: string,
  tags: Readonly<Record<string, string>>,
  now: number,
): ApplicableCap[] {
  const caps: ApplicableCap[] = [];
  for (const rule of rules) {
    if (rule.provider !== undefined && rule.provider !== provider) continue;
    if (rule.tag !== undefined) {
      const [key, value] = rule.tag.split('=', 2);
      if (key === undefined || tags[key] !== value) continue;
    }
    const scope = [rule.provider ?? 'all providers', rule.tag === undefined ? undefined : `tag ${rule.tag}`]
      .filter(Boolean)
      .join(', ');
    for (const [period, capUsd, since] of [
      ['daily', rule.dailyUsd, startOfDay(now)],
      ['monthly', rule.monthlyUsd, startOfMonth(now)],
      ['total', rule.totalUsd, 0],
    ] as const) {
      if (capUsd === undefined) continue;
      if (!Number.isFinite(capUsd) || capUsd < 0) {
        throw new SwitchboardError(
          'INVALID_INPUT',
          `Expected "${period}Usd" of the budget rule for ${scope} to be 0 or more dollars, got ${capUsd}`,
          { hint: 'use 0 to block calls, or a positive cap', retryable: false },
        );
      }
      const cap: SpendCap = { since, capUsd };
      if (rule.provider !== undefined) cap.provider = rule.provider;
      if (rule.tag !== undefined) cap.tag = rule.tag;
      caps.push({ cap, period, scope, warnAt: rule.warnAt ?? 0.8 });
    }
  }
  return caps;
}

/** A call's estimated cost held against the budget caps while it runs. */
export interface BudgetReservation {
  /** Caps past their `warnAt` share, for the call's warnings. */
  readonly warnings: readonly string[];
  /** Dollars held; undefined when no cap applies (nothing is held). */
  readonly amountUsd?: number;
  /** Ends the reservation once the attempt and its real cost are recorded. Safe to call twice. */
  release(): Promise<void>;
  /**
   * Records the attempt and ends the reservation in one write (`Ledger.settleReservation`); with nothing
   * held, only records it. When the write fails the reservation is not released: it stays, counting as
   * spent at its amount, while the ledger keeps trying the write.
   */
  settle(record: CallAttemptRecord): Promise<void>;
}

/** How long a reservation counts when the call gives no timeout. */
export const DEFAULT_RESERVATION_TTL_MS = 15 * 60_000;

/** How long past its attempt's timeout a reservation still counts (the attempt's own clean-up). */
const RESERVATION_GRACE_MS = 60_000;

/** What an attempt is about to spend, for `reserveBudget`. */
export interface BudgetAttempt {
  id: string;
  provider: string;
  model: string;
  tags: Readonly<Record<string, string>>;
  /** From `estimateCost`; undefined when the model has no price. */
  estimateUsd: number | undefined;
  now: number;
  /** The attempt's timeout: the reservation stops counting a minute after it, in case the process died. */
  timeoutMs?: number;
  /**
   * Hold what is left under the tightest cap when that is less than `estimateUsd`, rather than refuse:
   * for an attempt that can be held to the amount it gets (an agent's cost cap). @default false
   */
  shrinkToFit?: boolean;
}

/**
 * Holds the attempt's estimated cost against every cap of every rule that applies to it, atomically in
 * the ledger (so parallel calls, in this process or others sharing the ledger, cannot all pass a cap that
 * allows one). Throws `BUDGET_EXCEEDED` before anything is spent when a cap is reached, is 0, or has less
 * room left than the estimate. A model with no price holds all the room left under its tightest cap, so
 * such calls run one at a time under a cap rather than unchecked.
 */
export async function reserveBudget(
  ledger: Ledger | undefined,
  rules: readonly BudgetRule[],
  attempt: BudgetAttempt,
): Promise<BudgetReservation> {
  const applicable = applicableCaps(rules, attempt.provider, attempt.tags, attempt.now);
  const recordOnly = async (record: CallAttemptRecord) => {
    await ledger?.recordCallAttempt(record);
  };
  if (applicable.length === 0) return { warnings: [], async release() {}, settle: recordOnly };
  if (ledger === undefined) {
    // No ledger knows what was spent, but a cap of 0 still blocks and an estimate over a cap is still refused.
    const nothing: CapStanding = { spentUsd: 0, reservedUsd: 0 };
    const verdict = judgeReservation(
      applicable.map((entry) => entry.cap),
      applicable.map(() => nothing),
      attempt.estimateUsd,
      attempt.shrinkToFit,
    );
    if (!verdict.reserved) {
      throw budgetError(applicable[verdict.capIndex] as ApplicableCap, nothing, attempt);
    }
    return { warnings: [], amountUsd: verdict.amountUsd, async release() {}, settle: recordOnly };
  }
  const outcome = await ledger.reserveSpend({
    id: attempt.id,
    provider: attempt.provider,
    tags: attempt.tags,
    createdAt: attempt.now,
    expiresAt:
      attempt.now +
      (attempt.timeoutMs === undefined
        ? DEFAULT_RESERVATION_TTL_MS
        : attempt.timeoutMs + RESERVATION_GRACE_MS),
    ...(attempt.estimateUsd === undefined ? {} : { amountUsd: attempt.estimateUsd }),
    ...(attempt.shrinkToFit === true ? { shrinkToFit: true } : {}),
    caps: applicable.map((entry) => entry.cap),
  });
  if (!outcome.reserved) {
    const refused = applicable[outcome.capIndex] as ApplicableCap;
    throw budgetError(refused, outcome.standings[outcome.capIndex] as CapStanding, attempt);
  }
  const warnings = applicable.flatMap(({ cap, period, scope, warnAt }, index) => {
    const spent = (outcome.standings[index] as CapStanding).spentUsd;
    return spent >= cap.capUsd * warnAt
      ? [
          `${Math.round((spent / cap.capUsd) * 100)}% of the ${period} budget of $${cap.capUsd} for ${scope} is spent`,
        ]
      : [];
  });
  if (attempt.estimateUsd === undefined) {
    warnings.push(
      `${attempt.model} has no price: it holds the rest of its budget while it runs, so such calls run one at a time`,
    );
  }
  let open = true;
  return {
    warnings,
    amountUsd: outcome.amountUsd,
    async release() {
      if (!open) return;
      open = false;
      await ledger.releaseReservation(attempt.id);
    },
    async settle(record) {
      if (!open) return recordOnly(record);
      open = false;
      await ledger.settleReservation(attempt.id, record);
    },
  };
}

/** Why a cap refused an attempt, in one line with what to do. */
function budgetError(
  refused: ApplicableCap,
  standing: CapStanding,
  attempt: BudgetAttempt,
): SwitchboardError {
  const { cap, period, scope } = refused;
  const { spentUsd: spent, reservedUsd: reserved } = standing;
  const later = period === 'daily' ? 'the next day' : period === 'monthly' ? 'the next month' : undefined;
  const details = { period, cap: cap.capUsd, spent, reserved, estimate: attempt.estimateUsd, scope };
  const budget = `the ${period} budget of $${cap.capUsd} for ${scope}`;
  if (cap.capUsd === 0) {
    return new SwitchboardError('BUDGET_EXCEEDED', `${budget} blocks every call`, {
      hint: `raise ${period}_usd for ${scope} in switchboard.yaml to allow calls`,
      retryable: false,
      details,
    });
  }
  const held = reserved > 0 ? `, ${formatUsd(reserved)} held by calls in flight` : '';
  const message =
    spent + reserved >= cap.capUsd
      ? `${budget} is used up (${formatUsd(spent)} spent${held})`
      : `${budget} has ${formatUsd(cap.capUsd - spent - reserved)} left (${formatUsd(spent)} spent${held}), ` +
        `less than this call's estimate of ${formatUsd(attempt.estimateUsd ?? 0)}`;
  return new SwitchboardError('BUDGET_EXCEEDED', message, {
    hint:
      later === undefined
        ? 'raise the budget (a workflow run: resume it with a higher budget_usd)'
        : reserved > 0
          ? `retry when the calls in flight finish, wait for ${later} (UTC), or raise the cap in switchboard.yaml`
          : `wait for ${later} (UTC), raise the cap in switchboard.yaml, or use a cheaper model`,
    retryable: false,
    details,
  });
}

/** Output tokens assumed when estimating a call's cost before it is made. */
export const ESTIMATED_OUTPUT_TOKENS = 1_024;

/**
 * Claude Code's model aliases, estimated at the dearest model they may stand for, so a budget errs on
 * the side of refusing.
 */
const ALIAS_PRICE_KEYS: ReadonlyMap<string, string> = new Map([
  ['haiku', 'claude-haiku-4'],
  ['sonnet', 'claude-sonnet-4'],
  ['opus', 'claude-opus-4'],
]);

/**
 * The same estimate from the size of a request as it is (the gateway's: a client's whole JSON body),
 * without building a string of it.
 */
export function estimateCostOfChars(
  model: string,
  characters: number,
  prices?: Readonly<Record<string, ModelPrice>>,
): number | undefined {
  const table =
    prices === undefined || Object.keys(prices).length === 0
      ? DEFAULT_PRICES
      : { ...DEFAULT_PRICES, ...prices };
  const price = findPrice(ALIAS_PRICE_KEYS.get(model) ?? model, table);
  if (price === undefined) return undefined;
  return (Math.ceil(characters / 4) * price.input + ESTIMATED_OUTPUT_TOKENS * price.output) / 1_000_000;
}

/** A rough cost estimate before a call (four characters a token); undefined when the model has no price. */
export function estimateCost(
  model: string,
  prompt: string,
  system = '',
  prices?: Readonly<Record<string, ModelPrice>>,
): number | undefined {
  const table = prices === undefined ? DEFAULT_PRICES : { ...DEFAULT_PRICES, ...prices };
  const price = findPrice(ALIAS_PRICE_KEYS.get(model) ?? model, table);
  if (price === undefined) return undefined;
  const inputTokens = Math.ceil((prompt.length + system.length) / 4);
  return (inputTokens * price.input + ESTIMATED_OUTPUT_TOKENS * price.output) / 1_000_000;
}
