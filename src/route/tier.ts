import type { ProviderFailure, RouteCandidate, RouteMethod } from '../core/route-types.js';

/** What one tier concluded about a request. */
export interface TierVerdict {
  /** A skill name, or `none` when the tier abstains. */
  skill: string;
  confidence: number;
  reasoning: string;
  candidates: RouteCandidate[];
  costUsd?: number;
  /** Set when the tier could not decide and leaves the earlier tiers' verdict in place, saying why. */
  fallbackReason?: string;
  /** With `fallbackReason`, when a provider call failed: each failed attempt. */
  failures?: ProviderFailure[];
  /**
   * A refusal the tier is sure of (a rule that routes to `none`, or the model's confident out-of-scope
   * answer): it ends the chain like a skill does, so no later tier (no LLM call) is spent on it.
   */
  final?: boolean;
  /**
   * The tier's whole ranking, best first, when it ranks more skills than it lists in `candidates`
   * (the local model scores every skill): a later tier that chooses among them sees beyond the top few.
   */
  ranking?: RouteCandidate[];
  /** Milliseconds spent inside provider calls (the model's own time, over HTTP), for tiers that call one. */
  providerMs?: number;
}

export interface TierInput {
  /** The request as given (cut to the routed length). */
  text: string;
  /** The normalised request (see `normalizeRequest`). */
  normalized: string;
  /** Candidates from the tiers that ran before, best first, for tiers that refine them. */
  candidates: readonly RouteCandidate[];
  /** The earlier tiers' whole ranking, best first (`candidates` when they gave no longer one). */
  ranking?: readonly RouteCandidate[];
  abortSignal?: AbortSignal;
}

/**
 * One step of the routing chain. A tier returns a verdict, or `undefined` when it has nothing to say
 * (no rule matched). A verdict for a skill ends the chain; a verdict of `none` (abstain) is kept as the
 * answer unless a later tier decides. An LLM tier joins the chain by implementing this interface.
 */
export interface RouteTier {
  readonly method: RouteMethod;
  decide(input: TierInput): TierVerdict | undefined | Promise<TierVerdict | undefined>;
}
