import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ProviderRegistry } from '../../providers/registry.js';
import type { Scenario } from '../../sim/scenario.js';
import { startSimulator, type Simulator } from '../../sim/server.js';
import { openLedger } from '../../store/ledger.js';
import { createRouter, type RouterOptions } from '../router.js';

// The LLM tier in the router chain, with the official Anthropic SDK answering from `switchboard sim`.

const skills = join(import.meta.dirname, '../../../test/fixtures/skills');
let sim: Simulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function router(scenario: Scenario, options: Partial<RouterOptions> = {}, { race = false } = {}) {
  sim = await startSimulator({ scenario, maxLifetimeMs: 120_000 });
  const providers = new ProviderRegistry({ anthropic: { apiKey: 'sk-ant-route-test', baseUrl: sim.url } });
  return createRouter({
    skills,
    mode: 'hybrid',
    stateDir: mkdtempSync(join(tmpdir(), 'switchboard-llm-tier-')),
    ledger: false,
    cache: false,
    llm: {
      provider: 'anthropic:claude-haiku-4-5',
      timeoutMs: 2_000,
      race,
      callOptions: {
        providers,
        retry: { retriesPerProvider: 0 },
        _internal: { sleep: async () => undefined },
      },
    },
    ...options,
  });
}

const answer = (skill: string, confidence: number) => ({
  tool: { name: 'emit_output', input: { skill, confidence, reasoning: `looks like ${skill}` } },
  usage: { input: 300, output: 20 },
});

describe('hybrid routing', () => {
  it('asks the LLM only when the local tiers abstain, with the candidates and none as the only choices', async () => {
    const hybrid = await router({
      rules: [{ match: { provider: 'anthropic' }, reply: answer('fix-bug', 0.9) }],
    });
    const confident = await hybrid.route('the app crashes whenever I save');
    expect(confident.method).toBe('local');
    expect(sim?.requests).toHaveLength(0);
    const unsure = await hybrid.route('the gizmo went kaput');
    expect(unsure).toMatchObject({ skill: 'fix-bug', method: 'llm', confidence: 0.9 });
    expect(unsure.costUsd).toBeGreaterThan(0);
    expect(unsure.timings).toHaveProperty('llm');
    // The model's own time is told apart from what routing adds around it.
    expect(unsure.timings.provider).toBeGreaterThan(0);
    expect(unsure.timings.provider).toBeLessThanOrEqual(unsure.timings.llm ?? 0);
    const body = sim?.requests[0]?.body as {
      tools: { input_schema: { properties: { skill: { enum: string[] } } } }[];
    };
    const choices = body.tools[0]?.input_schema.properties.skill.enum ?? [];
    expect(choices).toContain('none');
    expect(choices.length).toBeLessThanOrEqual(6);
    expect(sim?.requests[0]?.text).toContain('the gizmo went kaput');
  });

  it('spends no LLM call on a refusal the earlier tiers are sure of (a none rule, a confident out-of-scope)', async () => {
    const outOfScope = [
      'order a large pepperoni pizza',
      'book a table for two tonight',
      'what is the weather in paris',
      'play some jazz music',
      'set an alarm for 7 am',
      'how tall is mount everest',
    ].map((text) => ({ text, expected: 'none' }));
    const hybrid = await router(
      { rules: [{ match: { provider: 'anthropic' }, reply: answer('fix-bug', 0.9) }] },
      { rules: [{ pattern: 'lottery', skill: 'none' }], training: outOfScope },
    );
    const ruled = await hybrid.route('pick my lottery numbers');
    expect(ruled).toMatchObject({ skill: 'none', method: 'rules' });
    const refused = await hybrid.route('order a pepperoni pizza for tonight');
    expect(refused).toMatchObject({ skill: 'none', method: 'local' });
    expect(refused.reasoning).toMatch(/out of scope/);
    expect(sim?.requests).toHaveLength(0);
    // An abstention (unsure, not a refusal) still goes to the LLM.
    expect(await hybrid.route('the gizmo went kaput')).toMatchObject({ method: 'llm' });
    expect(sim?.requests).toHaveLength(1);
  });

  it('keeps the local decision when the LLM fails, is unsure or answers outside the set', async () => {
    const failing = await router({ rules: [{ match: { provider: 'anthropic' }, fault: { status: 500 } }] });
    const failed = await failing.route('the gizmo went kaput');
    expect(failed).toMatchObject({ skill: 'none', method: 'fallback' });
    expect(failed.reasoning).toMatch(/LLM tier failed/);
    await sim?.close();
    const unsure = await router({
      rules: [{ match: { provider: 'anthropic' }, reply: answer('fix-bug', 0.2) }],
    });
    expect(await unsure.route('the gizmo went kaput')).toMatchObject({ method: 'fallback', skill: 'none' });
    await sim?.close();
    const late = await router({
      rules: [{ match: { provider: 'anthropic' }, reply: { ...answer('fix-bug', 0.9), delayMs: 5_000 } }],
    });
    const slow = await late.route('the gizmo went kaput');
    expect(slow).toMatchObject({ method: 'fallback' });
    expect(slow.durationMs).toBeLessThan(4_000);
  });

  it('runs as local without a provider and says so once', async () => {
    const local = createRouter({
      skills,
      mode: 'hybrid',
      ledger: false,
      stateDir: mkdtempSync(join(tmpdir(), 'switchboard-llm-tier-')),
    });
    expect(local.warnings).toEqual(['no LLM provider configured: hybrid routing runs as local']);
    expect((await local.route('the app crashes whenever I save')).warnings).toEqual([]);
  });
});

describe('racing', () => {
  it('starts the LLM at once and cancels it when the local tiers are confident', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'switchboard-llm-tier-'));
    const ledger = openLedger({ stateDir });
    const raced = await router(
      { rules: [{ match: { provider: 'anthropic' }, reply: { ...answer('fix-bug', 0.9), delayMs: 400 } }] },
      { ledger },
      { race: true },
    );
    const confident = await raced.route('the app crashes whenever I save');
    expect(confident.method).toBe('local');
    // The cancelled race never produced an answer that counted.
    expect(confident.costUsd).toBe(0);
    // The LLM was asked before the local tiers were done (it cannot have known they would be
    // confident) and cancelled before it answered: the aborted call is in the ledger. An LLM started
    // after them is never asked here; a router that waited for its answer would record a success.
    await waitFor(async () => (await ledger.callStats()).calls > 0);
    expect(await ledger.callStats()).toMatchObject({
      calls: 1,
      successfulCalls: 0,
      errorCodes: { ABORTED: 1 },
    });
    const unsure = await raced.route('the gizmo went kaput');
    expect(unsure).toMatchObject({ method: 'llm', skill: 'fix-bug' });
    // Its timing is counted from the start of the request, so it covers the whole simulated answer.
    expect(unsure.timings['llm']).toBeGreaterThanOrEqual(390);
    raced.close();
    await ledger.close();
  });
});

async function waitFor(condition: () => Promise<boolean>, withinMs = 10_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!(await condition())) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${withinMs} ms waiting for ${String(condition)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('llm-only routing', () => {
  it('asks the LLM about every request and fails when it cannot answer', async () => {
    const only = await router(
      {
        rules: [
          { match: { provider: 'anthropic', text: 'kaboom' }, fault: { status: 500 } },
          { match: { provider: 'anthropic' }, reply: answer('write-docs', 0.8) },
        ],
      },
      { mode: 'llm-only' },
    );
    expect(await only.route('the app crashes whenever I save')).toMatchObject({
      skill: 'write-docs',
      method: 'llm',
    });
    await expect(only.route('kaboom')).rejects.toMatchObject({ code: 'PROVIDER_ERROR' });
    expect(() => createRouter({ skills, mode: 'llm-only', ledger: false })).toThrow(/needs a provider/);
  });
});
