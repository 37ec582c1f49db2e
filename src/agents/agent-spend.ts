import { randomUUID } from 'node:crypto';
import type { ErrorCode } from '../core/errors.js';
import { reserveBudget, type BudgetReservation, type BudgetRule } from '../invoke/budget.js';
import { AGENT_SPEC_PREFIX } from '../store/call-records.js';
import type { Ledger } from '../store/ledger.js';
import type { AgentOutcome } from './claude-agent.js';

// An agent attempt spends against the same budgets as calls: before Claude Code starts, its cost cap is
// held against every cap of switchboard.yaml that applies to provider `claude` (one atomic reservation
// in the ledger, shared by every process and machine); when the attempt ends its real cost is written as
// a call attempt of spec `agent:<model>` and the reservation let go, so `spendSince`, the next
// reservation and `stats` all count it. A runner that dies leaves its reservation to expire with the
// attempt's time limit; whatever its attempts spent is recorded by the next runner of the run
// (`recordUnrecordedSpend`).

/** The provider agent attempts spend under: Claude Code, however it reaches the API. */
export const AGENT_PROVIDER = 'claude';

/** The spec of an agent attempt's ledger row: `agent:<model>` (never a call's spec, so never a breaker's). */
export function agentSpec(model: string | undefined): string {
  return `${AGENT_SPEC_PREFIX}${model ?? 'default'}`;
}

/** Where an agent's attempts are held and recorded. */
export interface AgentSpending {
  ledger: Ledger;
  /** The budget rules that apply (switchboard.yaml's, plus a workflow run's `budget_usd`). */
  rules: readonly BudgetRule[];
  /** The ledger's call id of every attempt of the run: its run id (or workflow step key). */
  callId: string;
  /**
   * Tags of every attempt's row; `runTag` (`key=value`) must be one of them and name this run alone, so
   * `recordUnrecordedSpend` can tell what the run's attempts already recorded.
   */
  tags: Readonly<Record<string, string>>;
  runTag: string;
  /** Spending before this moment (the run's creation) is not the run's. */
  since: number;
}

/** One attempt about to start. */
export interface AgentAttemptStart {
  attempt: number;
  model: string | undefined;
  /** The most the attempt may spend (what is left of the run's `max_cost_usd`). */
  capUsd: number;
  /** The attempt's wall-clock limit: its reservation stops counting a minute after it. */
  timeoutMs: number;
}

/** An attempt's hold on the budgets. */
export interface AgentAttemptHold {
  /** What the attempt may spend: its cap, or less when the budgets have less left. */
  capUsd: number;
  /** Whether `capUsd` is below the attempt's own cap (the budgets had less left). */
  lowered: boolean;
  /** Caps past their warning share. */
  warnings: readonly string[];
  /** Records the attempt's real cost and lets the reservation go. Safe to call twice. */
  settle(outcome: AgentAttemptEnd): Promise<void>;
  /** Lets the reservation go with nothing recorded: the attempt never started. No-op once settled. */
  release(): Promise<void>;
}

/** How an attempt ended, for its ledger row. */
export interface AgentAttemptEnd {
  costUsd: number;
  durationMs: number;
  success: boolean;
  errorCode?: ErrorCode | string;
  sessionId?: string;
}

/** How an agent's outcome settles its attempt: its cost, time, success and error code. */
export function attemptSpend(outcome: AgentOutcome): AgentAttemptEnd {
  return {
    costUsd: outcome.costUsd,
    durationMs: outcome.durationMs,
    success: outcome.status === 'success' && !outcome.isError,
    errorCode: outcome.errorCode ?? outcome.status,
    ...(outcome.sessionId === undefined ? {} : { sessionId: outcome.sessionId }),
  };
}

/**
 * Holds an attempt's cost cap against the budgets before it starts.
 *
 * @throws SwitchboardError `BUDGET_EXCEEDED` when a cap that applies is reached (or is 0)
 */
export async function holdAgentAttempt(
  spending: AgentSpending,
  start: AgentAttemptStart,
): Promise<AgentAttemptHold> {
  const reservation: BudgetReservation = await reserveBudget(spending.ledger, spending.rules, {
    id: holdId(spending, start.attempt),
    provider: AGENT_PROVIDER,
    model: start.model ?? 'default',
    tags: spending.tags,
    estimateUsd: start.capUsd,
    shrinkToFit: true,
    now: Date.now(),
    timeoutMs: start.timeoutMs,
  });
  let settled = false;
  const capUsd = Math.min(start.capUsd, reservation.amountUsd ?? start.capUsd);
  return {
    capUsd,
    lowered: capUsd < start.capUsd,
    warnings: reservation.warnings,
    async settle(outcome) {
      if (settled) return;
      settled = true;
      try {
        await recordAgentAttempt(spending, start.attempt, start.model, outcome);
      } finally {
        // The row goes in before the reservation goes out (release writes pending rows first).
        await reservation.release();
      }
    },
    async release() {
      settled = true;
      await reservation.release();
    },
  };
}

/**
 * Refuses a run whose budgets are already used up, before anything of it starts (its worktree, setup,
 * agent): holds nothing beyond the check.
 *
 * @throws SwitchboardError `BUDGET_EXCEEDED`
 */
export async function checkAgentBudget(spending: AgentSpending): Promise<void> {
  const hold = await holdAgentAttempt(spending, { attempt: 0, model: undefined, capUsd: 0, timeoutMs: 0 });
  await hold.release();
}

async function recordAgentAttempt(
  spending: AgentSpending,
  attempt: number,
  model: string | undefined,
  outcome: AgentAttemptEnd,
): Promise<void> {
  await spending.ledger.recordCallAttempt({
    id: randomUUID(),
    callId: spending.callId,
    attempt,
    createdAt: Date.now(),
    provider: AGENT_PROVIDER,
    spec: agentSpec(model),
    modelRequested: model ?? 'default',
    success: outcome.success,
    durationMs: outcome.durationMs,
    costUsd: outcome.costUsd,
    tags: { ...spending.tags },
    ...(outcome.errorCode === undefined ? {} : { errorCode: outcome.errorCode }),
    ...(outcome.sessionId === undefined ? {} : { sessionId: outcome.sessionId }),
  });
}

/**
 * Records what the run's attempts spent (`spentUsd`, as the run recorded it while its agent worked)
 * beyond what the ledger holds for it: the attempt of a runner that died before it could settle.
 */
export async function recordUnrecordedSpend(
  spending: AgentSpending,
  spentUsd: number,
  attempt: number,
  model: string | undefined,
): Promise<void> {
  const recorded = await spending.ledger.spendSince(spending.since, { tag: spending.runTag });
  const missing = spentUsd - recorded;
  // Below a millionth of a dollar is rounding, not an attempt.
  if (missing >= 1e-6) {
    await recordAgentAttempt(spending, attempt, model, {
      costUsd: missing,
      durationMs: 0,
      success: false,
      errorCode: 'INTERRUPTED',
    });
  }
  // The dead runner's hold counts as spent until something settles it (see `reservationSql`): its
  // attempt's spend is recorded now, so the hold goes, or the attempt would count twice.
  await spending.ledger.releaseReservation(holdId(spending, attempt));
}

/**
 * The id of an attempt's hold, the same in every process: a runner resuming a run whose runner died
 * finds that runner's hold by it and lets it go once it recorded the attempt's spend.
 */
function holdId(spending: AgentSpending, attempt: number): string {
  return `${spending.callId}:attempt-${attempt}`;
}
