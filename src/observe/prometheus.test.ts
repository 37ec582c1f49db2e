import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { parsePrometheus, sampleValue, samplesOf } from '../../test/helpers/prometheus-text.js';
import { SwitchboardError } from '../core/errors.js';
import type { RouteDecision } from '../core/route-types.js';
import { ProviderRegistry } from '../providers/registry.js';
import { createRouter } from '../route/router.js';
import { startSimulator, type Simulator } from '../sim/server.js';
import { openLedger } from '../store/ledger.js';
import { fallbackReason, metricsFromLedger, RouteMetrics, type ObservedDecision } from './prometheus.js';

const skills = join(import.meta.dirname, '../../test/fixtures/skills');

function decision(fields: Partial<ObservedDecision>): ObservedDecision {
  return { skill: 'fix-bug', method: 'local', durationMs: 1, costUsd: 0, reasoning: 'model', ...fields };
}

async function scrape(metrics: RouteMetrics) {
  return parsePrometheus(await metrics.metrics());
}

describe('RouteMetrics', () => {
  it('counts decisions, abstains, fallbacks and LLM spend, with ratios computed at scrape time', async () => {
    const metrics = new RouteMetrics({ skills: ['fix-bug', 'add-feature', 'write-docs'] });
    expect(sampleValue(await scrape(metrics), 'switchboard_route_abstain_ratio')).toBe(0);
    metrics.observe(decision({ method: 'rules', durationMs: 0.08 }));
    metrics.observe(decision({ skill: 'add-feature', durationMs: 2 }));
    metrics.observe(decision({ skill: 'none', durationMs: 3 }));
    metrics.observe(
      decision({
        skill: 'none',
        method: 'fallback',
        durationMs: 900,
        costUsd: 0.001,
        reasoning: 'below threshold; the model was unsure (0.20 < 0.5), so the local decision stands',
      }),
    );
    metrics.observe(decision({ method: 'llm', durationMs: 1_500, costUsd: 0.002 }));
    metrics.observe(decision({ method: 'cache', durationMs: 0.01 }));

    const samples = await scrape(metrics);
    const count = (labels: Record<string, string>) =>
      sampleValue(samples, 'switchboard_route_decisions_total', labels);
    expect(count({ method: 'rules', skill: 'fix-bug' })).toBe(1);
    expect(count({ method: 'local', skill: 'add-feature' })).toBe(1);
    expect(count({ method: 'local', skill: 'none' })).toBe(1);
    expect(count({ method: 'fallback', skill: 'none' })).toBe(1);
    expect(count({ method: 'llm', skill: 'fix-bug' })).toBe(1);
    expect(count({ method: 'cache', skill: 'fix-bug' })).toBe(1);
    expect(sampleValue(samples, 'switchboard_route_abstains_total')).toBe(2);
    expect(sampleValue(samples, 'switchboard_route_fallbacks_total', { reason: 'unsure' })).toBe(1);
    expect(sampleValue(samples, 'switchboard_route_abstain_ratio')).toBeCloseTo(2 / 6);
    expect(sampleValue(samples, 'switchboard_route_fallback_ratio')).toBeCloseTo(1 / 6);
    expect(sampleValue(samples, 'switchboard_route_llm_calls_total')).toBe(2);
    expect(sampleValue(samples, 'switchboard_route_llm_cost_usd_total')).toBeCloseTo(0.003);

    // Microsecond tiers and second-long LLM calls land in buckets of their own.
    const bucket = (method: string, le: string) =>
      sampleValue(samples, 'switchboard_route_duration_seconds_bucket', { method, le });
    expect(bucket('cache', '0.00005')).toBe(1);
    expect(bucket('rules', '0.00005')).toBe(0);
    expect(bucket('rules', '0.0001')).toBe(1);
    expect(bucket('local', '0.0025')).toBe(1);
    expect(bucket('local', '0.001')).toBe(0);
    expect(bucket('llm', '1')).toBe(0);
    expect(bucket('llm', '2.5')).toBe(1);
    expect(bucket('llm', '+Inf')).toBe(1);
    expect(sampleValue(samples, 'switchboard_route_duration_seconds_count', { method: 'local' })).toBe(2);
    expect(sampleValue(samples, 'switchboard_route_duration_seconds_sum', { method: 'llm' })).toBeCloseTo(
      1.5,
    );
  });

  it('keeps label values bounded whatever the decisions say', async () => {
    const metrics = new RouteMetrics({ skills: ['fix-bug'], maxLabelValues: 3 });
    for (let index = 0; index < 50; index++) {
      metrics.observe(decision({ skill: `skill-${index}` }));
      metrics.observe(decision({ skill: 'fix-bug', method: 'surprise' as RouteDecision['method'] }));
      metrics.observeCallAttempts({
        provider: `provider-${index}`,
        model: `model-${index}`,
        outcome: 'success',
      });
    }
    metrics.observe(decision({ skill: 'none' }));
    const samples = await scrape(metrics);
    const skillValues = new Set(
      samplesOf(samples, 'switchboard_route_decisions_total').map((sample) => sample.labels['skill']),
    );
    expect(skillValues).toEqual(new Set(['fix-bug', 'none', 'skill-0', 'skill-1', 'skill-2', 'other']));
    expect(
      sampleValue(samples, 'switchboard_route_decisions_total', { method: 'local', skill: 'other' }),
    ).toBe(47);
    expect(
      sampleValue(samples, 'switchboard_route_decisions_total', { method: 'other', skill: 'fix-bug' }),
    ).toBe(50);
    expect(samplesOf(samples, 'switchboard_call_attempts_total')).toHaveLength(4);
    const methods = new Set(
      samplesOf(samples, 'switchboard_route_duration_seconds_count').map((sample) => sample.labels['method']),
    );
    expect(methods).toEqual(new Set(['local', 'other']));
  });

  it('uses its own registry, never the global one, and counts errors by code', async () => {
    const registry = new Registry();
    const first = new RouteMetrics({ registry });
    const second = new RouteMetrics();
    first.observe(decision({}));
    first.observeError(new SwitchboardError('INVALID_INPUT', 'the request is empty'));
    first.observeError(new Error('boom'));
    expect(sampleValue(await scrape(second), 'switchboard_route_abstains_total')).toBe(0);
    const samples = parsePrometheus(await registry.metrics());
    expect(sampleValue(samples, 'switchboard_route_errors_total', { code: 'INVALID_INPUT' })).toBe(1);
    expect(sampleValue(samples, 'switchboard_route_errors_total', { code: 'INTERNAL' })).toBe(1);
    expect(first.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(() => new RouteMetrics({ maxLabelValues: 0 })).toThrow(/maxLabelValues/);
  });

  it('shows open and half-open circuit breakers, read at each scrape; closed ones have no series', async () => {
    const metrics = new RouteMetrics();
    let rows = [
      { spec: 'anthropic:claude-haiku-4-5', until: 2_000, failures: 20, reason: 'OVERLOADED' },
      { spec: 'openai:gpt-4.1-mini at http://127.0.0.1:1/v1', until: 500, failures: 1, reason: 'TIMEOUT' },
    ];
    metrics.watchBreakers(
      () => Promise.resolve(rows),
      () => 1_000,
    );
    const samples = await scrape(metrics);
    expect(
      sampleValue(samples, 'switchboard_breaker_state', {
        breaker: 'anthropic:claude-haiku-4-5',
        state: 'open',
      }),
    ).toBe(1);
    expect(
      sampleValue(samples, 'switchboard_breaker_state', {
        breaker: 'openai:gpt-4.1-mini at http://127.0.0.1:1/v1',
        state: 'half_open',
      }),
    ).toBe(1);
    rows = [];
    expect(samplesOf(await scrape(metrics), 'switchboard_breaker_state')).toEqual([]);
  });

  it('reads the fallback reason as a bounded value', () => {
    expect(fallbackReason('x; the LLM tier failed (TIMEOUT: late), so the local decision stands')).toBe(
      'timeout',
    );
    expect(fallbackReason('x; the LLM tier failed (NOT_A_CODE: y)')).toBe('failed');
    expect(fallbackReason('something new')).toBe('failed');
  });
});

describe('metricsFromLedger', () => {
  let sim: Simulator | undefined;
  let stateDir: string | undefined;
  afterEach(async () => {
    await sim?.close();
    sim = undefined;
    if (stateDir !== undefined) rmSync(stateDir, { recursive: true, force: true });
    stateDir = undefined;
  });

  it("includes the ledger's open breakers, and not the closed ones", async () => {
    stateDir = mkdtempSync(join(tmpdir(), 'switchboard-metrics-'));
    const ledger = openLedger({ stateDir });
    const later = Date.now() + 60_000;
    await ledger.setCooldown({ spec: 'gemini:2.5-pro', until: later, failures: 20, reason: 'OVERLOADED' });
    await ledger.setCooldown({ spec: 'openai:gpt-4.1', until: 0, failures: 0, reason: 'TIMEOUT' });
    const samples = await scrape(await metricsFromLedger(ledger));
    await ledger.close();
    expect(samplesOf(samples, 'switchboard_breaker_state')).toEqual([
      expect.objectContaining({ labels: { breaker: 'gemini:2.5-pro', state: 'open' }, value: 1 }),
    ]);
  });

  it('rebuilds the live metrics from a ledger written by a hybrid router, calls included', async () => {
    const answer = (skill: string, confidence: number) => ({
      tool: { name: 'emit_output', input: { skill, confidence, reasoning: `looks like ${skill}` } },
      usage: { input: 300, output: 20 },
    });
    sim = await startSimulator({
      maxLifetimeMs: 120_000,
      scenario: {
        rules: [
          { match: { provider: 'anthropic', text: 'kaput' }, reply: answer('fix-bug', 0.9) },
          { match: { provider: 'anthropic', text: 'wobbly' }, reply: answer('fix-bug', 0.2) },
          { match: { provider: 'anthropic', text: 'outlandish' }, reply: answer('bake-bread', 0.9) },
          { match: { provider: 'anthropic' }, fault: { status: 500 } },
        ],
      },
    });
    stateDir = mkdtempSync(join(tmpdir(), 'switchboard-prometheus-'));
    const ledger = openLedger({ path: join(stateDir, 'ledger.db') });
    const providers = new ProviderRegistry({
      anthropic: { apiKey: 'sk-ant-metrics-test', baseUrl: sim.url },
    });
    const router = createRouter({
      skills,
      mode: 'hybrid',
      stateDir,
      ledger,
      llm: {
        provider: 'anthropic:claude-haiku-4-5',
        timeoutMs: 5_000,
        callOptions: {
          providers,
          ledger,
          retry: { retriesPerProvider: 0 },
          schemaRetries: 0,
          _internal: { sleep: async () => undefined },
        },
      },
    });
    const live = new RouteMetrics();
    const requests = [
      'the app crashes whenever I save',
      'add a dark mode setting',
      'there is a stack trace in the log',
      'the gizmo went kaput',
      'the gizmo is wobbly',
      'the gizmo is outlandish',
      'the gizmo went kaboom',
      'the app crashes whenever I save',
    ];
    const decisions: RouteDecision[] = [];
    for (const text of requests) {
      const routed = await router.route(text);
      decisions.push(routed);
      live.observe(routed);
    }
    await router.close();
    expect(decisions.map((routed) => routed.method)).toEqual([
      'local',
      'local',
      'rules',
      'llm',
      'fallback',
      'fallback',
      'fallback',
      'cache',
    ]);

    const fromLedger = await scrape(await metricsFromLedger(ledger));
    await ledger.close();
    const liveSamples = await scrape(live);
    // Series may appear in another order than observed live: compare them sorted.
    const routeSamples = (samples: typeof liveSamples) =>
      samples
        .filter((sample) => sample.name.startsWith('switchboard_route_'))
        // Sums added up in another order differ in the last bits: compare to nine significant digits.
        .map(
          (sample) => `${sample.name}${JSON.stringify(sample.labels)} ${Number(sample.value).toPrecision(9)}`,
        )
        .sort();
    // Durations and costs are recorded as observed, so the ledger gives back the same numbers.
    expect(routeSamples(fromLedger)).toEqual(routeSamples(liveSamples));

    const reasons = Object.fromEntries(
      samplesOf(fromLedger, 'switchboard_route_fallbacks_total').map((sample) => [
        sample.labels['reason'],
        sample.value,
      ]),
    );
    // An answer outside the candidates fails the call's schema check (the skill is an enum).
    expect(reasons).toEqual({ unsure: 1, schema: 1, provider_error: 1 });
    expect(
      sampleValue(fromLedger, 'switchboard_route_decisions_total', { method: 'local', skill: 'fix-bug' }),
    ).toBe(1);
    expect(sampleValue(fromLedger, 'switchboard_route_llm_calls_total')).toBe(4);
    const routeCost = decisions.reduce((total, routed) => total + routed.costUsd, 0);
    expect(routeCost).toBeGreaterThan(0);
    expect(sampleValue(fromLedger, 'switchboard_route_llm_cost_usd_total')).toBeCloseTo(routeCost, 10);

    const attempts = (outcome: string) =>
      sampleValue(fromLedger, 'switchboard_call_attempts_total', {
        provider: 'anthropic',
        model: 'claude-haiku-4-5',
        outcome,
      });
    // kaput and wobbly answered; outlandish failed the schema check, kaboom got a 500.
    expect(attempts('success')).toBe(2);
    expect(attempts('error')).toBe(2);
    const callCost = sampleValue(fromLedger, 'switchboard_call_cost_usd_total', { provider: 'anthropic' });
    // Three answers were paid for, the one that failed its schema check too: routing reports them all.
    expect(callCost).toBeCloseTo(routeCost, 10);
    expect(decisions[5]?.costUsd).toBeGreaterThan(0);

    // Nothing recorded after the cut-off: every counter is back to zero.
    const reopened = openLedger({ path: join(stateDir, 'ledger.db') });
    const later = await scrape(await metricsFromLedger(reopened, { since: Date.now() + 60_000 }));
    await reopened.close();
    expect(sampleValue(later, 'switchboard_route_abstains_total')).toBe(0);
    expect(samplesOf(later, 'switchboard_route_decisions_total')).toEqual([]);
    expect(samplesOf(later, 'switchboard_call_attempts_total')).toEqual([]);
  });
});
