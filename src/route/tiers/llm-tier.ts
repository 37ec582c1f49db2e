import type { CallAttempt, CallRequest, CallResult } from '../../core/call-types.js';
import type { CallOptions } from '../../invoke/call.js';
// Through the lazy entry point: a router whose requests the local tiers settle, and a program that
// imports the library only to route, never load the provider modules.
import { call } from '../../lazy-api.js';
import { isSwitchboardError, SwitchboardError } from '../../core/errors.js';
import { NONE, type ProviderFailure, type RouteCandidate, type Skill } from '../../core/route-types.js';
import type { RouteTier, TierInput, TierVerdict } from '../tier.js';

export interface LlmTierOptions {
  /** Provider spec or fallback chain, e.g. `claude:haiku` or `anthropic:claude-haiku-4-5,openai:gpt-4.1-mini`. */
  provider: string;
  skills: readonly Skill[];
  /**
   * With more than `SHOW_EVERY_SKILL_UP_TO` skills, the model sees at least this many of the earlier
   * tiers' best candidates (see `shortlist`). @default 5
   */
  topK?: number;
  /** An answer is late after this long and the earlier tiers' decision stands. @default 10_000 */
  timeoutMs?: number;
  /** An answer under this confidence is not trusted. @default 0.5 */
  confidenceThreshold?: number;
  /** Fail the route instead of falling back when the model cannot answer (`llm-only` mode). @default false */
  required?: boolean;
  /** Passed to `call()`: providers, ledger, retry settings. */
  callOptions?: CallOptions;
  /**
   * How the tier reaches a provider. @default `call()`; a workflow's route step passes its own, bound to
   * the run, so the run's budget, tags and deadline hold for the routing call too.
   */
  call?: (spec: string, request: CallRequest, options?: CallOptions) => Promise<CallResult>;
}

/** What the model is asked to return. */
interface LlmAnswer {
  skill: string;
  confidence: number;
  reasoning: string;
}

const EXAMPLES_PER_SKILL = 3;

/** With this many skills or fewer the model sees every one: a flat local ranking must not hide the right one. */
export const SHOW_EVERY_SKILL_UP_TO = 30;

/** With more, a candidate scoring at least this share of the top one's score is shown too (up to the cap). */
const WIDE_MARGIN = 0.25;

/**
 * The LLM as a routing tier: a narrow prompt holding only the candidates (name, description, a few
 * examples) and `none`, with structured output whose `skill` is constrained to those names. A failed,
 * late, out-of-set or unsure answer leaves the earlier tiers' decision in place (the router marks it
 * `fallback`), unless the tier is `required`.
 */
export class LlmTier implements RouteTier {
  readonly method = 'llm' as const;
  private readonly options: Required<Omit<LlmTierOptions, 'callOptions' | 'call'>> & {
    callOptions: CallOptions;
    call: NonNullable<LlmTierOptions['call']>;
  };
  private readonly byName: Map<string, Skill>;

  constructor({
    topK = 5,
    timeoutMs = 10_000,
    confidenceThreshold = 0.5,
    required = false,
    callOptions = {},
    call: callFunction = call,
    ...rest
  }: LlmTierOptions) {
    this.options = {
      topK,
      timeoutMs,
      confidenceThreshold,
      required,
      callOptions,
      call: callFunction,
      ...rest,
    };
    this.byName = new Map(rest.skills.map((skill) => [skill.name, skill]));
  }

  async decide({ text, candidates, ranking, abortSignal }: TierInput): Promise<TierVerdict | undefined> {
    const shortlist = this.shortlist(ranking !== undefined && ranking.length > 0 ? ranking : candidates);
    const names = [...shortlist.map((skill) => skill.name), NONE];
    const schema = {
      type: 'object',
      properties: {
        skill: { type: 'string', enum: names },
        confidence: { type: 'number', minimum: 0, maximum: 1 },
        reasoning: { type: 'string' },
      },
      required: ['skill', 'confidence', 'reasoning'],
    };
    const listing = shortlist
      .map((skill) => {
        const examples = skill.examples
          .slice(0, EXAMPLES_PER_SKILL)
          .map((example) => `"${example}"`)
          .join('; ');
        return `- ${skill.name}: ${skill.description}${examples === '' ? '' : ` Examples: ${examples}.`}`;
      })
      .join('\n');
    const prompt = [
      'Choose the one skill that should handle the request below, or "none" if no skill fits.',
      '',
      'Skills:',
      listing,
      '',
      'Request:',
      text,
    ].join('\n');
    try {
      const result = await this.options.call(
        this.options.provider,
        {
          prompt,
          system: 'You route requests to skills. Answer only with the requested JSON.',
          schema,
          timeoutMs: this.options.timeoutMs,
          tags: { purpose: 'route' },
          ...(abortSignal === undefined ? {} : { abortSignal }),
        },
        this.options.callOptions,
      );
      const answer = result.structured as LlmAnswer | undefined;
      const cost = result.costUsd ?? 0;
      const providerMs = timeInProviders(result.attempts);
      if (answer === undefined || !names.includes(answer.skill)) {
        return this.unusable(
          `the model answered outside the candidates (${String(answer?.skill)})`,
          cost,
          providerMs,
        );
      }
      if (answer.confidence < this.options.confidenceThreshold) {
        return this.unusable(
          `the model was unsure (${answer.confidence.toFixed(2)} < ${this.options.confidenceThreshold})`,
          cost,
          providerMs,
        );
      }
      return {
        skill: answer.skill,
        confidence: answer.confidence,
        reasoning: `llm (${result.provider}): ${answer.reasoning}`,
        candidates: [{ skill: answer.skill, score: answer.confidence }],
        costUsd: cost,
        providerMs,
      };
    } catch (error) {
      if (this.options.required) throw error;
      const reason = isSwitchboardError(error) ? `${error.code}: ${error.message}` : String(error);
      // Answers that failed validation were still billed: what every attempt of the call cost.
      const billed = isSwitchboardError(error) ? error.details?.['spentUsd'] : undefined;
      const attempts = isSwitchboardError(error) ? error.details?.['attempts'] : undefined;
      const providerMs = Array.isArray(attempts) ? timeInProviders(attempts as CallAttempt[]) : undefined;
      return this.unusable(
        `the LLM tier failed (${reason})`,
        typeof billed === 'number' ? billed : 0,
        providerMs,
        failedAttempts(error, this.options.provider),
      );
    }
  }

  /**
   * The skills the model chooses among, best ranked first. Every skill when there are at most
   * `SHOW_EVERY_SKILL_UP_TO` (or no ranking, in `llm-only`). With more: the top `topK` of the earlier
   * tiers' ranking, then every further one scoring at least a quarter of the top score, up to
   * `SHOW_EVERY_SKILL_UP_TO` in all, so a flat ranking shows many and a sharp one few.
   */
  private shortlist(ranking: readonly RouteCandidate[]): Skill[] {
    const ranked = ranking.flatMap((candidate) => {
      const skill = candidate.skill === NONE ? undefined : this.byName.get(candidate.skill);
      return skill === undefined ? [] : [{ skill, score: candidate.score }];
    });
    const everySkill = [...this.byName.values()];
    if (ranked.length === 0) return everySkill;
    if (everySkill.length <= SHOW_EVERY_SKILL_UP_TO) {
      const first = ranked.map((entry) => entry.skill);
      return [...first, ...everySkill.filter((skill) => !first.includes(skill))];
    }
    const floor = (ranked[0]?.score ?? 0) * WIDE_MARGIN;
    return ranked
      .filter((entry, index) => index < this.options.topK || entry.score >= floor)
      .slice(0, Math.max(this.options.topK, SHOW_EVERY_SKILL_UP_TO))
      .map((entry) => entry.skill);
  }

  private unusable(
    reason: string,
    costUsd: number,
    providerMs?: number,
    failures?: ProviderFailure[],
  ): TierVerdict {
    if (this.options.required) {
      throw new SwitchboardError('PROVIDER_ERROR', `the LLM router could not decide: ${reason}`, {
        hint: 'check the provider, or route in hybrid mode to fall back to the local tiers',
        retryable: false,
      });
    }
    // The earlier tiers' decision stands; the router records why, and what the attempt cost.
    return {
      skill: NONE,
      confidence: 0,
      reasoning: reason,
      candidates: [],
      costUsd,
      fallbackReason: reason,
      ...(providerMs === undefined ? {} : { providerMs }),
      ...(failures === undefined ? {} : { failures }),
    };
  }
}

/**
 * The failed attempts of a call that threw, by provider name and error code; the error itself when
 * it made no attempt (a provider cooling down). Empty when the error is not a provider call's.
 */
export function failedAttempts(error: unknown, spec: string): ProviderFailure[] {
  if (!isSwitchboardError(error)) return [{ provider: providerName(spec), code: 'UNKNOWN' }];
  const attempts = error.details?.['attempts'];
  const failed = Array.isArray(attempts)
    ? (attempts as CallAttempt[]).flatMap((attempt) =>
        attempt.errorCode === undefined
          ? []
          : [{ provider: providerName(attempt.provider), code: attempt.errorCode }],
      )
    : [];
  return failed.length > 0 ? failed : [{ provider: providerName(error.provider ?? spec), code: error.code }];
}

/** `anthropic` of `anthropic:claude-haiku-4-5` or `openai@http://…:llama`. */
function providerName(spec: string): string {
  return spec.split(/[:@]/, 1)[0] ?? spec;
}

/** Milliseconds a call spent inside provider calls: its attempts' durations added up. */
function timeInProviders(attempts: readonly Pick<CallAttempt, 'durationMs'>[]): number {
  return attempts.reduce((total, attempt) => total + attempt.durationMs, 0);
}
