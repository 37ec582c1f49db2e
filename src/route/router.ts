import { createHash, hash } from 'node:crypto';
import { timeOrderedId } from '../core/time-ordered-id.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_CONFIDENCE_THRESHOLD, DEFAULT_MARGIN_THRESHOLD } from '../core/config.js';
import { SwitchboardError } from '../core/errors.js';
import {
  type ProviderFailure,
  NONE,
  ROUTE_MODES,
  type LabelledExample,
  type RouteCandidate,
  type RouteDecision,
  type RouteMethod,
  type RouteMode,
  type Skill,
  type SkillThresholds,
} from '../core/route-types.js';
import { openLedger, type Ledger } from '../store/ledger.js';
import { loadDataset } from './datasets.js';
import { hasLearnedExamples, learnedFilePath, usableLearned } from './learn.js';
import { examplesFromSkills } from './model/skill-examples.js';
import { primedTraining } from './prime/primed-training.js';
import { MAX_ROUTED_CHARACTERS, normalizeRequest } from './normalize.js';
import { hashSkills, loadSkills, type SkillProblem } from './skills.js';
import type { RouteTier, TierVerdict } from './tier.js';
import { DecisionCache, type DecisionCacheOptions } from './tiers/cache-tier.js';
import { LocalTier, loadOrTrainModel, type LocalModel } from './tiers/local-tier.js';
import { LlmTier, type LlmTierOptions } from './tiers/llm-tier.js';
import { loadRulesFile, RulesTier, type RouteRule } from './tiers/rules-tier.js';
import { tracingEnabled, withSpan } from '../observe/tracing.js';

export interface RouterOptions {
  /** A skills folder, or skills already loaded. Optional when `training` supplies the routes. */
  skills?: string | readonly Skill[];
  /**
   * `rules-only`: patterns only. `local`: patterns, then the learned model.
   * @default 'local'
   */
  mode?: RouteMode;
  /**
   * Abstain when the model's top probability is below this.
   * @default 0.3 (env SWITCHBOARD_ROUTE_CONFIDENCE_THRESHOLD through the CLI)
   */
  confidenceThreshold?: number;
  /**
   * Abstain when the top probability leads the runner-up by less than this.
   * @default 0.05 (env SWITCHBOARD_ROUTE_MARGIN_THRESHOLD through the CLI)
   */
  marginThreshold?: number;
  /**
   * Thresholds of their own for some skills, by name: a request whose top candidate is such a skill
   * is judged by them (a field left out falls back to the skill's front matter, then the global one).
   * They win over the skills' front matter (`confidence_threshold`, `margin_threshold`).
   * @default none (route.skill_thresholds in switchboard.yaml through the CLI)
   */
  skillThresholds?: Readonly<Record<string, SkillThresholds>>;
  /**
   * Labelled examples for the model besides the skills' own: file paths (JSONL `{text, expected}` or
   * CLINC150 JSON) or rows. Rows labelled `none` teach the model what to refuse. Without `skills`, the
   * labels become the routes.
   */
  training?: readonly (string | LabelledExample)[];
  /** Rules checked before the skills' own patterns. */
  rules?: readonly RouteRule[];
  /** A YAML/JSON file of rules, checked before `rules`. */
  rulesFile?: string;
  /** Fail when any skill file is invalid instead of loading the rest. @default false */
  strict?: boolean;
  /**
   * Decision cache settings, or false to turn it off. With a ledger the cache lives in it too, so
   * decisions are reused across processes within the TTL.
   * @default { ttlMs: 3_600_000, maxEntries: 10_000 }
   */
  cache?: DecisionCacheOptions | false;
  /**
   * Where the ledger, trained models and `learned.jsonl` live (the CLI passes `./.switchboard`).
   * Without it the router keeps nothing on disk: no ledger unless `ledger` is given, models trained in
   * memory, no learned examples. A library never litters its caller's folder unasked.
   * @default undefined
   */
  stateDir?: string;
  /** Keep trained models on disk under `<stateDir>/models` (when there is a `stateDir`). @default true */
  modelCache?: boolean;
  /**
   * An open ledger, or false to record nothing.
   * @default the ledger in `stateDir` when one is given, otherwise none
   */
  ledger?: Ledger | false;
  /** Store request text in the ledger (otherwise only its hash). @default false */
  storeText?: boolean;
  /** Candidates listed in a decision (and shown to the LLM tier). @default 5 */
  topCandidates?: number;
  /**
   * The LLM tier for `hybrid` and `llm-only`: a provider spec or chain and how to call it. Without it,
   * `hybrid` routes as `local` and says so in a warning.
   */
  llm?: Omit<LlmTierOptions, 'skills' | 'required' | 'topK'> & {
    /**
     * Start the LLM at once, beside the local tiers, and cancel it when they are confident: lower
     * latency for the requests that need it, at the price of calls that get cancelled.
     * @default false
     */
    race?: boolean;
  };
  /** Train also on `<stateDir>/learned.jsonl`, written by `switchboard route learn`. @default true */
  learned?: boolean;
  /** Hears of training progress (passes done of total) when the model is trained rather than loaded. */
  onTrainProgress?: (done: number, total: number) => void;
  /** Test seams. */
  _internal?: { now?: () => number; generateId?: () => string };
}

export interface Router {
  readonly mode: RouteMode;
  readonly skills: readonly Skill[];
  /** Skill files that failed to load, with the reason. */
  readonly problems: readonly SkillProblem[];
  /** Said once for the router, not per decision (e.g. hybrid running as local without a provider). */
  readonly warnings: readonly string[];
  /** The learned model, when the mode uses one. */
  readonly model: LocalModel | undefined;
  /**
   * The examples from `<stateDir>/learned.jsonl` the model trained on besides the given ones, so
   * measurements can say so; undefined when none were used (no file, `learned: false`, no model).
   */
  readonly learned: { file: string; examples: number } | undefined;
  /**
   * The examples from the skills folder's `.switchboard-examples.jsonl` (`route prime`) the model
   * trained on; undefined when none were (no file, no current rows, no model).
   */
  readonly primed: { file: string; examples: number } | undefined;
  /**
   * Each skill's own thresholds in effect, by name: `skillThresholds` over its front matter, field by
   * field. Skills not listed use the global thresholds.
   */
  readonly skillThresholds: Readonly<Record<string, SkillThresholds>>;
  /** Hash identifying the skill set (recorded in the ledger). */
  readonly skillsHash: string;
  route(
    text: string,
    options?: { abortSignal?: AbortSignal; tags?: Record<string, string> },
  ): Promise<RouteDecision>;
  /**
   * Every skill's raw score for a request before any threshold: the matching rule's skill at score 1
   * (rules are not subject to thresholds), otherwise the model's full distribution, `none` included.
   * What `switchboard fit` tunes thresholds on. Uses neither the cache nor the ledger.
   */
  rank(text: string): { method: RouteMethod; candidates: RouteCandidate[] };
  /** Closes the ledger the router opened itself (not one it was given) and empties the cache. */
  close(): Promise<void>;
}

/**
 * Builds a router, one named stage after another: check the options, load the routes (skills or the
 * labels of training data), gather the extra training (`route learn`, `route prime`), build the tiers
 * (rules, the local model, the LLM), open the ledger, and key the decision cache. `route` then runs its
 * own stages: look the request up in the cache, ask the tiers in turn, record the decision.
 */
export function createRouter({
  skills: skillsSource,
  mode = 'local',
  confidenceThreshold = DEFAULT_CONFIDENCE_THRESHOLD,
  marginThreshold = DEFAULT_MARGIN_THRESHOLD,
  skillThresholds: configuredThresholds = {},
  training = [],
  rules = [],
  rulesFile,
  strict = false,
  cache: cacheOptions = {},
  stateDir,
  modelCache = true,
  ledger: ledgerOption,
  storeText = false,
  topCandidates = 5,
  llm,
  learned = true,
  onTrainProgress,
  _internal = {},
}: RouterOptions = {}): Router {
  checkOptions({ mode, confidenceThreshold, marginThreshold, topCandidates });
  const modelDir = modelCache && stateDir !== undefined ? join(stateDir, 'models') : undefined;
  const { skills, problems, labelled } = loadRoutes(skillsSource, training, { strict, modelDir });
  const extra = extraTraining({ skillsSource, skills, mode, stateDir, learned });
  labelled.push(...extra.examples);
  const routerWarnings: string[] = [...extra.warnings];
  const skillThresholds = resolveSkillThresholds(skills, configuredThresholds, routerWarnings);

  const allRules = [...(rulesFile === undefined ? [] : loadRulesFile(rulesFile)), ...rules];
  const rulesTier = new RulesTier(skills, allRules, rulesFile ?? 'rules');
  const tiers: RouteTier[] = [rulesTier];
  const model =
    mode === 'local' || mode === 'hybrid'
      ? loadOrTrainModel(
          [
            ...examplesFromSkills(skills),
            ...labelled.map((row) => ({ text: row.text, label: row.expected })),
          ],
          modelDir,
          onTrainProgress,
        )
      : undefined;
  if (model !== undefined) {
    tiers.push(
      new LocalTier(model.classifier, {
        confidenceThreshold,
        marginThreshold,
        skills: skillThresholds,
        topCandidates,
      }),
    );
  }
  const ledger =
    ledgerOption === false
      ? undefined
      : (ledgerOption ?? (stateDir === undefined ? undefined : openLedger({ stateDir, storeText })));
  const ownsLedger = ledgerOption === undefined;
  const llmTier = addLlmTier(tiers, { mode, llm, ledger, skills, topCandidates, warnings: routerWarnings });
  const raceLlm = mode === 'hybrid' && llm?.race === true && llmTier !== undefined;

  const skillsHash = hashSkills(skills);
  // Decisions persist in the ledger, keyed by everything that shapes them, so a later process (or a
  // router with other settings) never reuses a decision these settings would not make.
  const cache = cacheOptions === false ? undefined : new DecisionCache(cacheOptions, ledger);
  const cacheKey = decisionCacheKeys({
    mode,
    confidenceThreshold,
    marginThreshold,
    skillThresholds,
    topCandidates,
    skillsHash,
    model: model?.key,
    rules: allRules,
    llm: llm === undefined ? undefined : [llm.provider, llm.confidenceThreshold],
  });
  const now = _internal.now ?? (() => performance.now());
  const generateId = _internal.generateId ?? timeOrderedId;

  function route(
    text: string,
    options: { abortSignal?: AbortSignal; tags?: Record<string, string> } = {},
  ): Promise<RouteDecision> {
    if (!tracingEnabled()) return decide(text, options);
    return withSpan('route', { 'switchboard.route.mode': mode }, async (span) => {
      const decision = await decide(text, options);
      span.set({
        'switchboard.route.decision.id': decision.id,
        'switchboard.route.skill': decision.skill,
        'switchboard.route.method': decision.method,
        'switchboard.route.confidence': decision.confidence,
        'switchboard.cost_usd': decision.costUsd,
      });
      return decision;
    });
  }

  async function decide(
    text: string,
    { abortSignal, tags }: { abortSignal?: AbortSignal; tags?: Record<string, string> },
  ): Promise<RouteDecision> {
    checkRequest(text);
    abortSignal?.throwIfAborted();
    const started = now();
    const request = prepareRequest(text);
    const timings: Record<string, number> = {};
    const key = cache === undefined ? undefined : cacheKey(request.normalized);
    const context = { ...request, timings, now, generateId };
    let decision =
      cache === undefined || key === undefined ? undefined : await fromCache(cache, key, context);
    let caching: Promise<void> | undefined;
    if (decision === undefined) {
      decision = await throughTiers(tiers, {
        ...context,
        llmTier,
        raceLlm,
        ...(abortSignal === undefined ? {} : { abortSignal }),
      });
      // A decision made while the LLM failed is not worth repeating once it is back.
      if (decision.method !== 'fallback' && key !== undefined) caching = cache?.set(key, decision);
    }
    decision.durationMs = now() - started;
    // The cache entry and the decision go into one group commit; the decision is handed back only once
    // its row is committed (a caller may quote its id, e.g. to `switchboard feedback`).
    await Promise.all([
      caching,
      ledger?.recordRouteDecision(decision, {
        requestText: text,
        normalizedText: request.normalized,
        mode,
        skillsHash,
        ...(tags === undefined ? {} : { tags }),
      }),
    ]);
    return decision;
  }

  function rank(text: string): { method: RouteMethod; candidates: RouteCandidate[] } {
    const routedText = text.slice(0, MAX_ROUTED_CHARACTERS);
    const rule = rulesTier.decide({
      text: routedText,
      normalized: normalizeRequest(routedText),
      candidates: [],
    });
    if (rule !== undefined) return { method: 'rules', candidates: [{ skill: rule.skill, score: 1 }] };
    if (model === undefined) return { method: 'default', candidates: [] };
    const candidates = model.classifier
      .predict(routedText)
      .map((prediction) => ({ skill: prediction.label, score: prediction.probability }));
    return { method: 'local', candidates };
  }

  return {
    mode,
    skills,
    problems,
    warnings: routerWarnings,
    model,
    learned: extra.learned,
    primed: extra.primed,
    skillThresholds,
    skillsHash,
    route,
    rank,
    async close() {
      if (ownsLedger) await ledger?.close();
      cache?.clear();
    },
  };
}

function checkOptions({
  mode,
  confidenceThreshold,
  marginThreshold,
  topCandidates,
}: {
  mode: string;
  confidenceThreshold: number;
  marginThreshold: number;
  topCandidates: number;
}): void {
  if (!(ROUTE_MODES as readonly string[]).includes(mode)) {
    throw new SwitchboardError(
      'INVALID_INPUT',
      `"mode" must be one of ${ROUTE_MODES.join(', ')}, got "${mode}"`,
    );
  }
  checkFraction('confidenceThreshold', confidenceThreshold);
  checkFraction('marginThreshold', marginThreshold);
  if (!Number.isInteger(topCandidates) || topCandidates < 1) {
    throw new SwitchboardError('INVALID_INPUT', 'Expected "topCandidates" to be a positive integer');
  }
}

/** The routes: a skills folder, skills given, or the labels of the training data; and that data. */
function loadRoutes(
  skillsSource: RouterOptions['skills'],
  training: readonly (string | LabelledExample)[],
  { strict, modelDir }: { strict: boolean; modelDir: string | undefined },
): { skills: Skill[]; problems: SkillProblem[]; labelled: LabelledExample[] } {
  const labelled = training.flatMap((item) => (typeof item === 'string' ? loadDataset(item) : [item]));
  let skills: Skill[];
  let problems: SkillProblem[] = [];
  if (typeof skillsSource === 'string') {
    ({ skills, problems } = loadSkills(skillsSource, {
      strict,
      ...(modelDir === undefined ? {} : { cacheDir: modelDir }),
    }));
  } else if (skillsSource !== undefined) {
    skills = [...skillsSource];
  } else {
    skills = skillsFromLabels(labelled);
  }
  if (skills.length === 0) {
    throw new SwitchboardError(
      'SKILLS_INVALID',
      'no routes: give a skills folder or labelled training examples',
      {
        hint: 'pass --skills DIR, or --train FILE with {text, expected} rows',
      },
    );
  }
  checkLabels(labelled, skills);
  return { skills, problems, labelled };
}

/**
 * Training beyond the given data, for the modes with a local model: what `switchboard route learn`
 * taught from earlier LLM decisions and corrections, and what `switchboard route prime` wrote beside
 * the skills, for the skills as they are now.
 */
function extraTraining({
  skillsSource,
  skills,
  mode,
  stateDir,
  learned,
}: {
  skillsSource: RouterOptions['skills'];
  skills: readonly Skill[];
  mode: RouteMode;
  stateDir: string | undefined;
  learned: boolean;
}): {
  examples: LabelledExample[];
  warnings: string[];
  learned: Router['learned'];
  primed: Router['primed'];
} {
  const local = mode === 'local' || mode === 'hybrid';
  const examples: LabelledExample[] = [];
  let learnedUsed: Router['learned'];
  if (learned && stateDir !== undefined && local && hasLearnedExamples(stateDir)) {
    const names = new Set(skills.map((skill) => skill.name));
    const file = learnedFilePath(stateDir);
    const rows = usableLearned(readFileSync(file, 'utf8').trim() === '' ? [] : loadDataset(file), names);
    examples.push(...rows);
    if (rows.length > 0) learnedUsed = { file, examples: rows.length };
  }
  const primed =
    typeof skillsSource === 'string' && local ? primedTraining(skillsSource, skills, mode) : undefined;
  examples.push(...(primed?.examples ?? []));
  return {
    examples,
    warnings: [...(primed?.warnings ?? [])],
    learned: learnedUsed,
    primed:
      primed === undefined || primed.examples.length === 0
        ? undefined
        : { file: primed.file, examples: primed.examples.length },
  };
}

/**
 * Adds the LLM tier for `hybrid` and `llm-only` (which asks the model about every request: no rules,
 * no local model in front of it). Without a provider, hybrid routes as local and says so.
 */
function addLlmTier(
  tiers: RouteTier[],
  {
    mode,
    llm,
    ledger,
    skills,
    topCandidates,
    warnings,
  }: {
    mode: RouteMode;
    llm: RouterOptions['llm'];
    ledger: Ledger | undefined;
    skills: Skill[];
    topCandidates: number;
    warnings: string[];
  },
): LlmTier | undefined {
  if (mode !== 'hybrid' && mode !== 'llm-only') return undefined;
  if (llm === undefined) {
    if (mode === 'llm-only') {
      throw new SwitchboardError('CONFIG_INVALID', 'llm-only routing needs a provider', {
        hint: 'pass --provider (e.g. claude:haiku) or set route.provider in switchboard.yaml',
      });
    }
    warnings.push('no LLM provider configured: hybrid routing runs as local');
    return undefined;
  }
  if (mode === 'llm-only') tiers.length = 0;
  // The LLM's call attempts go to the router's ledger too (cost, errors, cooldowns shared by processes).
  const callOptions = { ...(ledger === undefined ? {} : { ledger }), ...llm.callOptions };
  const llmTier = new LlmTier({
    ...llm,
    callOptions,
    skills,
    topK: topCandidates,
    required: mode === 'llm-only',
  });
  tiers.push(llmTier);
  return llmTier;
}

/** The decision cache's key of a normalised request under these settings (everything that shapes it). */
function decisionCacheKeys(scope: Record<string, unknown>): (normalized: string) => string {
  const cacheScope = createHash('sha256').update(JSON.stringify(scope)).digest('hex');
  // One-shot `hash`: a third of createHash's cost, on every request.
  return (normalized) => hash('sha256', `${cacheScope}\n${normalized}`);
}

function checkRequest(text: string): void {
  if (typeof text !== 'string') {
    throw new SwitchboardError('INVALID_INPUT', 'Expected the request to be a string');
  }
  if (text.trim() === '') {
    throw new SwitchboardError('INVALID_INPUT', 'the request is empty', {
      hint: 'pass the request text as an argument or on standard input',
    });
  }
}

/** A request as the tiers see it: cut to the routed length (with a warning), normalised. */
function prepareRequest(text: string): { routedText: string; normalized: string; warnings: string[] } {
  const warnings: string[] = [];
  if (text.length > MAX_ROUTED_CHARACTERS) {
    warnings.push(
      `request cut to its first ${MAX_ROUTED_CHARACTERS} of ${text.length} characters for routing`,
    );
  }
  const routedText = text.slice(0, MAX_ROUTED_CHARACTERS);
  return { routedText, normalized: normalizeRequest(routedText), warnings };
}

/** What every stage of one `route` call shares. */
interface RouteContext {
  routedText: string;
  normalized: string;
  warnings: string[];
  timings: Record<string, number>;
  now: () => number;
  generateId: () => string;
}

/** A decision cached for this key (by this process or another), as a new decision of method `cache`. */
async function fromCache(
  cache: DecisionCache,
  key: string,
  { timings, warnings, now, generateId }: RouteContext,
): Promise<RouteDecision | undefined> {
  const cacheStarted = now();
  const hit = await cache.get(key);
  timings['cache'] = now() - cacheStarted;
  if (hit === undefined) return undefined;
  return {
    ...hit,
    id: generateId(),
    method: 'cache',
    reasoning: `cached (${hit.method}): ${hit.reasoning}`,
    costUsd: 0,
    timings,
    warnings,
    durationMs: 0,
  };
}

/**
 * Asks the tiers in turn until one names a skill or refuses for good. An LLM that cannot decide leaves
 * the earlier tiers' decision standing, marked as a fallback. Racing, the LLM starts at once beside the
 * local tiers and is cancelled when they are confident.
 */
async function throughTiers(
  tiers: readonly RouteTier[],
  {
    routedText,
    normalized,
    warnings,
    timings,
    now,
    generateId,
    llmTier,
    raceLlm,
    abortSignal,
  }: RouteContext & { llmTier: LlmTier | undefined; raceLlm: boolean; abortSignal?: AbortSignal },
): Promise<RouteDecision> {
  let verdict: TierVerdict | undefined;
  let method: RouteMethod = 'default';
  let candidates: readonly RouteCandidate[] = [];
  let ranking: readonly RouteCandidate[] = [];
  let fallbackReason: string | undefined;
  let fallbackCost = 0;
  let llmFailures: ProviderFailure[] | undefined;
  const race = raceLlm && llmTier !== undefined ? new AbortController() : undefined;
  const raceStarted = now();
  const raced =
    race === undefined || llmTier === undefined
      ? undefined
      : llmTier.decide({
          text: routedText,
          normalized,
          candidates: [],
          abortSignal: abortSignal === undefined ? race.signal : AbortSignal.any([race.signal, abortSignal]),
        });
  // A cancelled race must not surface as an unhandled rejection.
  raced?.catch(() => undefined);
  for (const tier of tiers) {
    abortSignal?.throwIfAborted();
    const tierStarted = now();
    const input =
      abortSignal === undefined
        ? { text: routedText, normalized, candidates, ranking }
        : { text: routedText, normalized, candidates, ranking, abortSignal };
    const result = tier === llmTier && raced !== undefined ? await raced : await tier.decide(input);
    timings[tier.method] = now() - (tier === llmTier && raced !== undefined ? raceStarted : tierStarted);
    if (result === undefined) continue;
    // The model's own time, so reports can tell what routing adds around it.
    if (result.providerMs !== undefined) timings.provider = result.providerMs;
    if (result.fallbackReason !== undefined) {
      fallbackReason = result.fallbackReason;
      fallbackCost += result.costUsd ?? 0;
      if (result.failures !== undefined) llmFailures = result.failures;
      continue;
    }
    verdict = result;
    method = tier.method;
    if (result.candidates.length > 0) candidates = result.candidates;
    if (result.candidates.length > 0) ranking = result.ranking ?? result.candidates;
    if (result.skill !== NONE || result.final === true) break;
  }
  if (race !== undefined && method !== 'llm') race.abort();
  const reasoning = verdict?.reasoning ?? 'no rule matched';
  return {
    id: generateId(),
    skill: verdict?.skill ?? NONE,
    confidence: verdict?.confidence ?? 0,
    reasoning:
      fallbackReason === undefined
        ? reasoning
        : `${reasoning}; ${fallbackReason}, so the local decision stands`,
    method: fallbackReason === undefined ? method : 'fallback',
    candidates: [...(verdict?.candidates ?? candidates)],
    costUsd: (verdict?.costUsd ?? 0) + fallbackCost,
    durationMs: 0,
    timings,
    warnings,
    ...(llmFailures === undefined ? {} : { llmFailures }),
  };
}

function checkFraction(name: string, value: number): void {
  if (typeof value !== 'number' || !(value >= 0 && value <= 1)) {
    throw new SwitchboardError(
      'INVALID_INPUT',
      `Expected "${name}" to be a number between 0 and 1, got ${value}`,
    );
  }
}

/**
 * Each skill's own thresholds: the configured ones over its front matter, field by field. A configured
 * name that is no skill is most likely a typo or a renamed skill, so it is said once, not ignored.
 */
function resolveSkillThresholds(
  skills: readonly Skill[],
  configured: Readonly<Record<string, SkillThresholds>>,
  warnings: string[],
): Record<string, SkillThresholds> {
  const names = new Set(skills.map((skill) => skill.name));
  for (const [name, thresholds] of Object.entries(configured)) {
    checkFraction(`skillThresholds.${name}.confidenceThreshold`, thresholds.confidenceThreshold ?? 0);
    checkFraction(`skillThresholds.${name}.marginThreshold`, thresholds.marginThreshold ?? 0);
    if (!names.has(name))
      warnings.push(`thresholds are set for "${name}", which is not a skill here; they do nothing`);
  }
  const resolved: Record<string, SkillThresholds> = {};
  for (const skill of skills) {
    const merged = {
      ...skill.thresholds,
      ...(Object.hasOwn(configured, skill.name) ? configured[skill.name] : {}),
    };
    if (Object.keys(merged).length > 0) resolved[skill.name] = merged;
  }
  return resolved;
}

/** Routes named by a training set's labels, for routing without a skills folder. */
function skillsFromLabels(rows: readonly LabelledExample[]): Skill[] {
  const names = [...new Set(rows.map((row) => row.expected))].filter((name) => name !== NONE);
  return names.map((name) => ({ name, description: '', examples: [], patterns: [], file: '' }));
}

function checkLabels(rows: readonly LabelledExample[], skills: readonly Skill[]): void {
  const known = new Set(skills.map((skill) => skill.name));
  const unknown = new Map<string, number>();
  for (const row of rows) {
    if (row.expected !== NONE && !known.has(row.expected)) {
      unknown.set(row.expected, (unknown.get(row.expected) ?? 0) + 1);
    }
  }
  if (unknown.size > 0) {
    const listed = [...unknown.entries()]
      .slice(0, 5)
      .map(([label, count]) => `"${label}" (${count})`)
      .join(', ');
    throw new SwitchboardError(
      'DATASET_INVALID',
      `training examples use labels that are not skills: ${listed}`,
      {
        hint: `label each example with a skill name or "${NONE}"`,
        details: { unknownLabels: Object.fromEntries(unknown) },
      },
    );
  }
}
