import { SwitchboardError } from '../core/errors.js';
import { findPrice } from '../core/prices.js';
import type { Ledger } from '../store/ledger.js';

/** A spending cap from the ledger, for one provider, one tag, or everything. */
export interface BudgetRule {
  /** Provider name (`anthropic`); all providers when absent. */
  provider?: string;
  /** A `key=value` tag the call must carry; all calls when absent. */
  tag?: string;
  /** Cap on dollars spent since 00:00 UTC today. */
  dailyUsd?: number;
  /** Cap on dollars spent since the first of this month, UTC. */
  monthlyUsd?: number;
  /** Share of a cap at which calls carry a warning. @default 0.8 */
  warnAt?: number;
}

/** What a call may spend. */
export interface CallBudget {
  /** The most one call may cost, all attempts together: checked against an estimate before each attempt and the real cost after. */
  maxCostUsd?: number;
  rules?: readonly BudgetRule[];
}

function startOfDay(now: number): number {
  const date = new Date(now);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate());
}

function startOfMonth(now: number): number {
  const date = new Date(now);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
}

/**
 * Checks the ledger's spending against every rule that applies to this provider and these tags.
 * Throws `BUDGET_EXCEEDED` (before anything is spent) when a cap is reached; returns warnings past `warnAt`.
 */
export function checkBudgetRules(
  ledger: Ledger | undefined,
  rules: readonly BudgetRule[],
  provider: string,
  tags: Readonly<Record<string, string>>,
  now: number,
): string[] {
  const warnings: string[] = [];
  if (ledger === undefined) return warnings;
  for (const rule of rules) {
    if (rule.provider !== undefined && rule.provider !== provider) continue;
    if (rule.tag !== undefined) {
      const [key, value] = rule.tag.split('=', 2);
      if (key === undefined || tags[key] !== value) continue;
    }
    const scope = [rule.provider ?? 'all providers', rule.tag === undefined ? undefined : `tag ${rule.tag}`]
      .filter(Boolean)
      .join(', ');
    for (const [period, cap, since] of [
      ['daily', rule.dailyUsd, startOfDay(now)],
      ['monthly', rule.monthlyUsd, startOfMonth(now)],
    ] as const) {
      if (cap === undefined) continue;
      const filter: { provider?: string; tag?: string } = {};
      if (rule.provider !== undefined) filter.provider = rule.provider;
      if (rule.tag !== undefined) filter.tag = rule.tag;
      const spent = ledger.spendSince(since, filter);
      if (spent >= cap) {
        throw new SwitchboardError(
          'BUDGET_EXCEEDED',
          `the ${period} budget of $${cap} for ${scope} is spent ($${spent.toFixed(4)})`,
          {
            hint: `wait for the ${period === 'daily' ? 'next day' : 'next month'} (UTC), or raise the cap in switchboard.yaml`,
            retryable: false,
            details: { period, cap, spent, scope },
          },
        );
      }
      if (spent >= cap * (rule.warnAt ?? 0.8)) {
        warnings.push(
          `${Math.round((spent / cap) * 100)}% of the ${period} budget of $${cap} for ${scope} is spent`,
        );
      }
    }
  }
  return warnings;
}

/** Output tokens assumed when estimating a call's cost before it is made. */
export const ESTIMATED_OUTPUT_TOKENS = 1_024;

/** A rough cost estimate before a call (four characters a token); undefined when the model has no price. */
export function estimateCost(model: string, prompt: string, system = ''): number | undefined {
  const price = findPrice(model);
  if (price === undefined) return undefined;
  const inputTokens = Math.ceil((prompt.length + system.length) / 4);
  return (inputTokens * price.input + ESTIMATED_OUTPUT_TOKENS * price.output) / 1_000_000;
}
