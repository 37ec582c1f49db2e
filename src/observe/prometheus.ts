import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { isErrorCode, isSwitchboardError, type ErrorCode } from '../core/errors.js';
import { NONE, type RouteDecision, type RouteMethod } from '../core/route-types.js';
import type { CallAttemptRecord, CooldownRecord } from '../store/call-records.js';
import type { Ledger } from '../store/ledger.js';
import { loadPromClient } from '../core/lazy-packages.js';

/**
 * Histogram buckets for routing time, in seconds: 50 µs to 30 s, because the rules and local tiers
 * answer in microseconds and an LLM in seconds, and both must land in a bucket of their own size.
 */
export const ROUTE_DURATION_BUCKETS: readonly number[] = [
  0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
  30,
];

/** The label value used for anything beyond a label's allowed set. */
export const OTHER_LABEL = 'other';

const METHODS: ReadonlySet<string> = new Set<RouteMethod>([
  'cache',
  'rules',
  'local',
  'llm',
  'fallback',
  'default',
]);

/** Why the LLM tier's answer was not used, as a bounded label value. */
export type FallbackReason = 'unsure' | 'out_of_candidates' | 'failed' | Lowercase<ErrorCode>;

/** What `observe` reads from a decision; decisions read back from the ledger have these too. */
export type ObservedDecision = Pick<
  RouteDecision,
  'skill' | 'method' | 'durationMs' | 'costUsd' | 'reasoning'
>;

export interface RouteMetricsOptions {
  /**
   * Where the metrics are registered. Never the global default registry, so that two routers (or a
   * test and a server) in one process do not share counters.
   * @default a new Registry
   */
  registry?: Registry;
  /** Skill names to expect (`none` is always allowed); others share the label value `other` once `maxSkillLabels` is reached. */
  skills?: readonly string[];
  /**
   * Most distinct values of the `skill`, `provider` and `model` labels; later values are counted as
   * `other`, so a misconfigured caller cannot grow the series without bound.
   * @default 200
   */
  maxLabelValues?: number;
}

/** A label's values: the expected ones, then first come first served up to a cap, then `other`. */
class BoundedLabel {
  private readonly seen = new Set<string>();
  private readonly expected: ReadonlySet<string>;
  private readonly max: number;

  constructor(expected: readonly string[], max: number) {
    this.expected = new Set(expected);
    this.max = max;
  }

  value(raw: string): string {
    if (this.expected.has(raw) || this.seen.has(raw)) return raw;
    if (this.seen.size >= this.max) return OTHER_LABEL;
    this.seen.add(raw);
    return raw;
  }
}

/**
 * Routing (and call) metrics in Prometheus form, on a registry of their own. `observe` each decision;
 * serve `metrics()` with `contentType`, or write it to a file for node_exporter's textfile collector.
 */
export class RouteMetrics {
  readonly registry: Registry;
  private readonly decisions: Counter<'method' | 'skill'>;
  private readonly duration: Histogram<'method'>;
  private readonly abstains: Counter;
  private readonly fallbacks: Counter<'reason'>;
  private readonly llmCalls: Counter;
  private readonly llmCost: Counter;
  private readonly errors: Counter<'code'>;
  private readonly callAttempts: Counter<'provider' | 'model' | 'outcome'>;
  private readonly callCost: Counter<'provider'>;
  private readonly skillLabel: BoundedLabel;
  private readonly providerLabel: BoundedLabel;
  private readonly modelLabel: BoundedLabel;
  private readonly breakerLabel: BoundedLabel;
  private breakersWatched = false;
  private decisionCount = 0;
  private abstainCount = 0;
  private fallbackCount = 0;

  constructor({ registry, skills = [], maxLabelValues = 200 }: RouteMetricsOptions = {}) {
    const { Counter, Gauge, Histogram, Registry } = loadPromClient();
    registry ??= new Registry();
    if (!Number.isInteger(maxLabelValues) || maxLabelValues < 1) {
      throw new TypeError(`Expected "maxLabelValues" to be a positive integer, got ${maxLabelValues}`);
    }
    this.registry = registry;
    const registers = [registry];
    this.skillLabel = new BoundedLabel([...skills, NONE], maxLabelValues);
    this.providerLabel = new BoundedLabel([], maxLabelValues);
    this.modelLabel = new BoundedLabel([], maxLabelValues);
    this.breakerLabel = new BoundedLabel([], maxLabelValues);

    this.decisions = new Counter({
      name: 'switchboard_route_decisions_total',
      help: 'Route decisions, by the tier that decided and the chosen skill (none when the router abstained).',
      labelNames: ['method', 'skill'],
      registers,
    });
    this.duration = new Histogram({
      name: 'switchboard_route_duration_seconds',
      help: 'Time to route one request, by the tier that decided.',
      labelNames: ['method'],
      buckets: [...ROUTE_DURATION_BUCKETS],
      registers,
    });
    this.abstains = new Counter({
      name: 'switchboard_route_abstains_total',
      help: 'Route decisions that chose no skill (skill none).',
      registers,
    });
    this.fallbacks = new Counter({
      name: 'switchboard_route_fallbacks_total',
      help: 'Route decisions where the LLM tier failed or was not trusted and the local decision stood, by reason.',
      labelNames: ['reason'],
      registers,
    });
    this.llmCalls = new Counter({
      name: 'switchboard_route_llm_calls_total',
      help: 'Route decisions that consulted the LLM tier (answered or fell back).',
      registers,
    });
    this.llmCost = new Counter({
      name: 'switchboard_route_llm_cost_usd_total',
      help: 'Dollars spent by the LLM tier on routing, as reported by the providers.',
      registers,
    });
    this.errors = new Counter({
      name: 'switchboard_route_errors_total',
      help: 'Requests that could not be routed, by error code.',
      labelNames: ['code'],
      registers,
    });
    // Ratios over everything observed, computed when scraped, for dashboards without recording rules.
    const ratio = (count: () => number) => (this.decisionCount === 0 ? 0 : count() / this.decisionCount);
    const abstainRatio: Gauge = new Gauge({
      name: 'switchboard_route_abstain_ratio',
      help: 'Share of observed route decisions that chose no skill (0 before the first decision).',
      registers,
      collect: () => abstainRatio.set(ratio(() => this.abstainCount)),
    });
    const fallbackRatio: Gauge = new Gauge({
      name: 'switchboard_route_fallback_ratio',
      help: 'Share of observed route decisions where the LLM tier fell back to the local decision (0 before the first decision).',
      registers,
      collect: () => fallbackRatio.set(ratio(() => this.fallbackCount)),
    });
    this.callAttempts = new Counter({
      name: 'switchboard_call_attempts_total',
      help: 'Provider call attempts (retries and fallbacks count separately), by provider, requested model and outcome.',
      labelNames: ['provider', 'model', 'outcome'],
      registers,
    });
    this.callCost = new Counter({
      name: 'switchboard_call_cost_usd_total',
      help: 'Dollars spent on provider calls with a known price, by provider.',
      labelNames: ['provider'],
      registers,
    });
  }

  /** Counts one route decision: its method, skill, duration, and whether it abstained, fell back or paid an LLM. */
  observe(decision: ObservedDecision): void {
    const method = METHODS.has(decision.method) ? decision.method : OTHER_LABEL;
    this.decisions.inc({ method, skill: this.skillLabel.value(decision.skill) });
    this.duration.observe({ method }, Math.max(0, decision.durationMs) / 1000);
    this.decisionCount++;
    if (decision.skill === NONE) {
      this.abstains.inc();
      this.abstainCount++;
    }
    if (decision.method === 'fallback') {
      this.fallbacks.inc({ reason: fallbackReason(decision.reasoning) });
      this.fallbackCount++;
    }
    // The LLM tier ran exactly when it decided or fell back; a cache hit reuses a decision for free.
    if (decision.method === 'llm' || decision.method === 'fallback') {
      this.llmCalls.inc();
      if (Number.isFinite(decision.costUsd) && decision.costUsd > 0) this.llmCost.inc(decision.costUsd);
    }
  }

  /** Counts a request the router could not decide on (invalid input, a required LLM that failed, …). */
  observeError(error: unknown): void {
    const code = isSwitchboardError(error) && isErrorCode(error.code) ? error.code : 'INTERNAL';
    this.errors.inc({ code });
  }

  /**
   * Adds `count` call attempts with one outcome. `costUsd` is their total known cost; leave it out
   * when unknown rather than passing 0 for a priced model.
   */
  observeCallAttempts({
    provider,
    model,
    outcome,
    count = 1,
    costUsd = 0,
  }: {
    provider: string;
    model: string;
    outcome: 'success' | 'error';
    count?: number;
    costUsd?: number;
  }): void {
    const providerValue = this.providerLabel.value(provider);
    if (count > 0) {
      this.callAttempts.inc({ provider: providerValue, model: this.modelLabel.value(model), outcome }, count);
    }
    if (Number.isFinite(costUsd) && costUsd > 0) this.callCost.inc({ provider: providerValue }, costUsd);
  }

  /**
   * Counts one gateway attempt: `switchboard_gateway_attempts_total{wire, key, lane, outcome}`, its time
   * to first byte, and the call counters by provider and model (with its cost when known).
   */
  observeGatewayAttempt(row: CallAttemptRecord, wire: string): void {
    const tags = row.tags ?? {};
    const outcome = row.success ? 'success' : 'error';
    this.gatewayAttempts ??= this.gatewayCounters();
    this.gatewayAttempts.attempts.inc({
      wire,
      key: this.keyLabel.value(tags['switchboard.key_name'] ?? 'unknown'),
      lane: tags['switchboard.lane'] ?? 'native',
      outcome,
    });
    const ttfb = Number(tags['switchboard.ttfb_ms']);
    if (Number.isFinite(ttfb)) this.gatewayAttempts.ttfb.observe({ wire }, ttfb / 1000);
    this.observeCallAttempts({
      provider: row.provider,
      model: row.modelRequested,
      outcome,
      ...(row.costUsd === null ? {} : { costUsd: row.costUsd }),
    });
  }

  /** Counts one gateway request refused at `gateway.max_concurrent`: `switchboard_gateway_overloaded_total{wire}`. */
  observeGatewayOverloaded(wire: string): void {
    this.gatewayOverloaded ??= new (loadPromClient().Counter)({
      name: 'switchboard_gateway_overloaded_total',
      help: 'Gateway requests refused because gateway.max_concurrent were in flight, by client wire.',
      labelNames: ['wire'] as const,
      registers: [this.registry],
    });
    this.gatewayOverloaded.inc({ wire });
  }

  private gatewayOverloaded: Counter<'wire'> | undefined;

  private gatewayAttempts:
    { attempts: Counter<'wire' | 'key' | 'lane' | 'outcome'>; ttfb: Histogram<'wire'> } | undefined;
  private readonly keyLabel = new BoundedLabel([], 200);

  private gatewayCounters() {
    const { Counter, Histogram } = loadPromClient();
    return {
      attempts: new Counter({
        name: 'switchboard_gateway_attempts_total',
        help: 'Gateway attempts (a fallback counts again), by client wire, key name, lane (native or translated) and outcome.',
        labelNames: ['wire', 'key', 'lane', 'outcome'] as const,
        registers: [this.registry],
      }),
      ttfb: new Histogram({
        name: 'switchboard_gateway_ttfb_seconds',
        help: "Time from a gateway attempt's start to the provider's first byte, by client wire.",
        labelNames: ['wire'] as const,
        buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
        registers: [this.registry],
      }),
    };
  }

  /**
   * Adds `switchboard_breaker_state{breaker, state}`: 1 for each provider breaker (spec and endpoint)
   * that is open or half-open, read from the ledger at each scrape (`breakers` returns its breaker
   * rows, as `activeCooldowns(0)` does), so it shows what every process sharing the ledger set.
   * Closed breakers have no series.
   */
  watchBreakers(breakers: () => Promise<readonly CooldownRecord[]>, now: () => number = Date.now): void {
    if (this.breakersWatched) return;
    this.breakersWatched = true;
    const { Gauge } = loadPromClient();
    const label = this.breakerLabel;
    new Gauge({
      name: 'switchboard_breaker_state',
      help: 'Provider circuit breakers that are open (calls skip the provider) or half_open (probes go through), by spec and endpoint.',
      labelNames: ['breaker', 'state'],
      registers: [this.registry],
      async collect() {
        this.reset();
        const at = now();
        for (const row of await breakers()) {
          if (row.until <= 0) continue;
          this.set({ breaker: label.value(row.spec), state: at < row.until ? 'open' : 'half_open' }, 1);
        }
      },
    });
  }

  /** The Prometheus text exposition of every metric in the registry. */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  /** The `Content-Type` to serve `metrics()` with. */
  get contentType(): string {
    return this.registry.contentType;
  }
}

/**
 * The bounded reason behind a fallback, read from the decision's reasoning (the LLM tier writes it
 * there, and the ledger keeps only that): `unsure`, `out_of_candidates`, the error code in lower case
 * when the call failed with one, otherwise `failed`.
 */
export function fallbackReason(reasoning: string): FallbackReason {
  if (/\bthe model was unsure\b/.test(reasoning)) return 'unsure';
  if (/\bthe model answered outside the candidates\b/.test(reasoning)) return 'out_of_candidates';
  const code = /\bthe LLM tier failed \(([A-Z_]+):/.exec(reasoning)?.[1];
  if (isErrorCode(code)) {
    return code.toLowerCase() as FallbackReason;
  }
  return 'failed';
}

export interface MetricsFromLedgerOptions extends RouteMetricsOptions {
  /** Only what was recorded at or after this moment (a Date, epoch milliseconds or an ISO string). */
  since?: Date | number | string;
}

/**
 * The same metrics built from what a ledger recorded (durations and costs as recorded): route
 * decisions and, grouped by provider and requested model, call attempts. For a file export that
 * node_exporter's textfile collector reads; counters then count since `since`, not since a start.
 */
export async function metricsFromLedger(
  ledger: Pick<Ledger, 'eachRouteDecision' | 'callStats' | 'activeCooldowns'>,
  { since, ...options }: MetricsFromLedgerOptions = {},
): Promise<RouteMetrics> {
  const metrics = new RouteMetrics(options);
  // Read now, not at each scrape: the ledger may be closed by then.
  const breakers = await ledger.activeCooldowns(0);
  metrics.watchBreakers(() => Promise.resolve(breakers));
  const range = since === undefined ? {} : { since };
  // Row by row: a ledger of millions of decisions is never in memory at once.
  await ledger.eachRouteDecision(range, (decision) => metrics.observe(decision));
  for (const group of (await ledger.callStats(range)).byProviderModel) {
    const { provider, model } = group;
    metrics.observeCallAttempts({
      provider,
      model,
      outcome: 'success',
      count: group.successes,
      costUsd: group.costUsd,
    });
    metrics.observeCallAttempts({
      provider,
      model,
      outcome: 'error',
      count: group.attempts - group.successes,
    });
  }
  return metrics;
}
