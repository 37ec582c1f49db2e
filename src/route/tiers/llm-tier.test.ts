import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
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

  it('trusts an answer exactly at the confidence threshold, and not one just under it', async () => {
    // docs/route.md: an "unsure (< 0.5)" answer falls back, so 0.5 itself is trusted.
    const atThreshold = await router({
      rules: [{ match: { provider: 'anthropic' }, reply: answer('fix-bug', 0.5) }],
    });
    expect(await atThreshold.route('the gizmo went kaput')).toMatchObject({
      method: 'llm',
      skill: 'fix-bug',
    });
    await sim?.close();
    const under = await router({
      rules: [{ match: { provider: 'anthropic' }, reply: answer('fix-bug', 0.4999) }],
    });
    const fellBack = await under.route('the gizmo went kaput');
    expect(fellBack).toMatchObject({ method: 'fallback', skill: 'none' });
    expect(fellBack.reasoning).toMatch(/unsure/);
  });

  it('shows the model every skill when there are few, however flat the local ranking', async () => {
    const folder = skillsFolder(12);
    const probe = await router({ rules: [] }, { skills: folder });
    const ranking = probe.rank('the gizmo went kaput').candidates.map((candidate) => candidate.skill);
    const last = ranking.filter((skill) => skill !== 'none').at(-1) ?? '';
    expect(ranking.indexOf(last)).toBeGreaterThanOrEqual(5);
    await sim?.close();
    const hybrid = await router(
      { rules: [{ match: { provider: 'anthropic' }, reply: answer(last, 0.9) }] },
      { skills: folder },
    );
    expect(await hybrid.route('the gizmo went kaput')).toMatchObject({ method: 'llm', skill: last });
    const choices = offered(sim?.requests[0]?.body);
    expect(choices).toHaveLength(13);
    expect(sim?.requests[0]?.text).toContain(`- ${last}:`);
  });

  it('shows the top candidates by a wide margin when there are many skills', async () => {
    const folder = skillsFolder(40);
    const hybrid = await router(
      { rules: [{ match: { provider: 'anthropic' }, reply: answer('none', 0.9) }] },
      { skills: folder },
    );
    const ranking = hybrid
      .rank('the gizmo went kaput')
      .candidates.filter((candidate) => candidate.skill !== 'none');
    await hybrid.route('the gizmo went kaput');
    const choices = offered(sim?.requests[0]?.body);
    const top = ranking[0]?.score ?? 0;
    const expected = ranking
      .filter((candidate, index) => index < 5 || candidate.score >= top / 4)
      .slice(0, 30);
    expect(choices).toEqual([...expected.map((candidate) => candidate.skill), 'none']);
    expect(choices.length).toBeGreaterThan(6);
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

/** Skills alike enough that a request matching none of them gets a flat local ranking. */
function skillsFolder(count: number): string {
  const folder = mkdtempSync(join(tmpdir(), 'switchboard-llm-skills-'));
  const topics = ['invoice', 'garden', 'rocket', 'violin', 'glacier', 'tennis', 'pottery', 'lantern'];
  for (let index = 0; index < count; index++) {
    const name = `skill-${String(index).padStart(2, '0')}`;
    const topic = `${topics[index % topics.length] ?? ''} ${index}`;
    mkdirSync(join(folder, name));
    writeFileSync(
      join(folder, name, 'SKILL.md'),
      `---\nname: ${name}\ndescription: Help with ${topic} questions.\nexamples:\n  - a question about ${topic}\n---\n\nAnswer questions about ${topic}.\n`,
    );
  }
  return folder;
}

/** The skill names the LLM tier offered in a request to the simulator. */
function offered(body: unknown): string[] {
  const tools = (body as { tools?: { input_schema: { properties: { skill: { enum: string[] } } } }[] }).tools;
  return tools?.[0]?.input_schema.properties.skill.enum ?? [];
}
