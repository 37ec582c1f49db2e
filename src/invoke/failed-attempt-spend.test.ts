import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { completions, openAiAgainstSimulator, startOfToday } from '../../test/helpers/openai-sim.js';
import { claudeAgainstSimulator, type ClaudeHarness } from '../../test/helpers/claude.js';
import { ProviderRegistry } from '../providers/registry.js';
import type { Scenario } from '../sim/scenario.js';
import { openLedger } from '../store/ledger.js';
import { call } from './call.js';

// What failed structured-output attempts were billed, recorded through call(): the real `openai` SDK and
// the real Claude Code binary over HTTP to `switchboard sim`, in a real SQLite ledger file.

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const openAiSetup = (scenario: Scenario) => openAiAgainstSimulator(scenario, cleanups);

describe('spend on failed structured-output attempts', () => {
  it('openai: records the cost and tokens of answers that failed the schema, so budgets count them', async () => {
    const { sim, ledger, options } = await openAiSetup({
      rules: [{ reply: { text: 'It is sunny.', usage: { input: 1_000, output: 1_000 } } }],
    });
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    await expect(
      call('openai:gpt-4.1-mini', { prompt: 'weather', schema }, { ...options, schemaRetries: 2 }),
    ).rejects.toMatchObject({ code: 'SCHEMA', details: { spentUsd: expect.closeTo(3 * 0.002, 9) } });
    expect(completions(sim)).toHaveLength(3);
    const stats = await ledger.callStats();
    expect(stats).toMatchObject({ attempts: 3, successfulCalls: 0, costUsd: expect.closeTo(3 * 0.002, 9) });
    expect(stats.byProviderModel[0]).toMatchObject({ inputTokens: 3_000, outputTokens: 3_000 });
    expect(await ledger.spendSince(startOfToday(), { provider: 'openai' })).toBeCloseTo(3 * 0.002, 9);
  });

  it('claude: records what Claude Code was billed for a run that never produced the structured output', async () => {
    const harness: ClaudeHarness = await claudeAgainstSimulator({
      rules: [{ reply: { text: 'It is sunny, about 21 degrees.', usage: { input: 2_000, output: 500 } } }],
    });
    cleanups.push(() => harness.close());
    const providers = new ProviderRegistry();
    providers.register(harness.provider);
    const ledger = openLedger({ stateDir: mkdtempSync(join(tmpdir(), 'switchboard-budget-')) });
    cleanups.push(() => ledger.close());
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    await expect(
      call(
        'claude:claude-haiku-4-5',
        { prompt: 'answer in prose', schema },
        { providers, ledger, schemaRetries: 0 },
      ),
    ).rejects.toMatchObject({ code: 'SCHEMA' });
    const billedRequests = harness.sim.requests.filter((entry) => entry.outcome === 'reply').length;
    expect(billedRequests).toBeGreaterThan(0);
    const stats = await ledger.callStats();
    expect(stats.attempts).toBe(1);
    // claude-haiku-4-5: $1 in, $5 out per million; every request Claude Code made is in its total.
    expect(stats.costUsd).toBeGreaterThanOrEqual(billedRequests * 0.0045 - 1e-9);
    expect(stats.byProviderModel[0]?.outputTokens).toBe(billedRequests * 500);
    expect(await ledger.spendSince(startOfToday(), { provider: 'claude' })).toBe(stats.costUsd);
  });
});
