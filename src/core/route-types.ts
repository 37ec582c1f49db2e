/** The skill name a router answers with when no skill should handle the request. */
export const NONE = 'none';

/** Which tier produced a decision. */
export type RouteMethod = 'cache' | 'rules' | 'local' | 'llm' | 'fallback' | 'default';

/**
 * Routing modes. `rules-only`: cache and rules. `local`: then the learned model. `hybrid`: then an LLM
 * for the requests the local tiers abstain on. `llm-only`: cache, then the LLM, which must answer.
 */
export const ROUTE_MODES = ['rules-only', 'local', 'hybrid', 'llm-only'] as const;
export type RouteMode = (typeof ROUTE_MODES)[number];

/**
 * Abstain thresholds one skill sets for itself (front matter `confidence_threshold` /
 * `margin_threshold`, or `route.skill_thresholds` in switchboard.yaml). They apply when the model's
 * top candidate is this skill; a field left out falls back to the global threshold.
 */
export interface SkillThresholds {
  /** Abstain when this skill leads with a probability below this. */
  confidenceThreshold?: number;
  /** Abstain when this skill leads the runner-up by less than this. */
  marginThreshold?: number;
}

/** A skill as discovered from a skills folder. */
export interface Skill {
  name: string;
  description: string;
  /** Example requests this skill should receive. */
  examples: string[];
  /** Regular expressions (source text, case-insensitive) that route straight to this skill. */
  patterns: string[];
  category?: string;
  /**
   * The markdown after the front matter (the skill's instructions), when the file has any; the
   * local model learns from its opening prose as well as from the description.
   */
  body?: string;
  /** The skill's own abstain thresholds from its front matter, when it sets any. */
  thresholds?: SkillThresholds;
  /** Absolute path of the file the skill came from. */
  file: string;
}

export interface RouteCandidate {
  skill: string;
  /** Probability or rule confidence in [0, 1]. */
  score: number;
}

export interface RouteDecision {
  /** Unique id, also the ledger row's id. */
  id: string;
  /** The chosen skill, or `none` when the router abstains. */
  skill: string;
  /** Confidence in [0, 1] of the chosen skill (for `none`: the top candidate's score). */
  confidence: number;
  reasoning: string;
  method: RouteMethod;
  /** Top candidates, best first. */
  candidates: RouteCandidate[];
  costUsd: number;
  durationMs: number;
  /**
   * Milliseconds spent in each tier that ran, by tier name; `provider` is the part of the `llm` tier
   * spent inside provider calls (the model's own time), so the rest is what routing adds.
   */
  timings: Record<string, number>;
  /** Non-fatal problems, such as skill files that failed to load. */
  warnings: string[];
  /** When the LLM tier's call failed and the local decision stands: each failed attempt. */
  llmFailures?: ProviderFailure[];
}

/** A failed attempt of a provider call: the provider's name (`anthropic`) and the error code (`AUTH`). */
export interface ProviderFailure {
  provider: string;
  code: string;
}

/** One labelled routing example. `expected` is a skill name or `none` (must be refused). */
export interface LabelledExample {
  text: string;
  expected: string;
  /** Other skills that also count as correct. */
  alternates?: string[];
}
