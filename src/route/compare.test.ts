import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ProviderRegistry } from '../providers/registry.js';
import { startSimulator } from '../sim/server.js';
import { compareModes } from './compare.js';
import { formatDisagreementReport } from './disagreement-report.js';

// Modes compared on one dataset, the LLM tier answered (or failed) by `switchboard sim` through the
// official Anthropic SDK.

const skills = join(import.meta.dirname, '../../test/fixtures/skills');
const stateDir = mkdtempSync(join(tmpdir(), 'switchboard-compare-'));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

const examples = [
  { text: 'the server crashes with a stack trace', expected: 'fix-bug' },
  { text: 'add a setting for the theme', expected: 'add-feature' },
  { text: 'the gizmo went kaput | <b>`now`</b>', expected: 'fix-bug' },
  { text: 'order a large pepperoni pizza', expected: 'none' },
];

describe('compareModes', () => {
  it('counts an llm-only failure as an error row and keeps the other modes whole', async () => {
    const sim = await startSimulator({
      maxLifetimeMs: 60_000,
      scenario: {
        rules: [
          { match: { provider: 'anthropic', text: 'pizza' }, fault: { status: 500 } },
          {
            match: { provider: 'anthropic' },
            reply: {
              tool: {
                name: 'emit_output',
                input: { skill: 'fix-bug', confidence: 0.9, reasoning: 'broken' },
              },
              usage: { input: 1_000, output: 50 },
            },
          },
        ],
      },
    });
    try {
      const comparison = await compareModes(
        {
          skills,
          stateDir,
          llm: {
            provider: 'anthropic:claude-haiku-4-5',
            timeoutMs: 5_000,
            callOptions: {
              providers: new ProviderRegistry({ anthropic: { apiKey: 'sk-ant-compare', baseUrl: sim.url } }),
              retry: { retriesPerProvider: 0 },
              _internal: { sleep: async () => undefined },
            },
          },
        },
        ['local', 'hybrid', 'llm-only'],
        examples,
      );
      const [local, hybrid, llmOnly] = comparison.modes;
      expect(local?.errors).toBe(0);
      expect(llmOnly?.errors).toBe(1);
      expect(llmOnly?.rows[3]).toMatchObject({ predicted: 'none', method: 'error' });
      expect(llmOnly?.rows[3]?.error).toMatch(/500|server/i);
      expect(llmOnly?.llmShare).toBe(0.75);
      // Three answered calls at Haiku prices, spread over four requests.
      expect(llmOnly?.totalCostUsd).toBeGreaterThan(0);
      expect(llmOnly?.costPer1k).toBeCloseTo((llmOnly!.totalCostUsd / 4) * 1000, 10);
      // Hybrid asks the LLM only where the local model is unsure, and a failed call falls back.
      expect(hybrid?.errors).toBe(0);
      expect(hybrid!.llmShare).toBeLessThan(1);
      expect(hybrid?.rows[0]?.method).not.toBe('llm');
      expect(comparison.agreement.rates[0]?.[0]).toBe(1);
      expect(comparison.agreement.rates[0]?.[2]).toBe(comparison.agreement.rates[2]?.[0]);

      const markdown = formatDisagreementReport(comparison, { dataset: 'inline' });
      const rows = markdown.split('\n').filter((line) => /^\| \d+ \|/.test(line));
      expect(rows).toHaveLength(comparison.disagreements.length);
      // A request's own pipes and markup cannot break the table.
      for (const row of rows) expect(row.split(/(?<!\\)\|/)).toHaveLength(3 + 3 + 3);
      expect(markdown).not.toContain('<b>');
    } finally {
      await sim.close();
    }
  });

  it('refuses a dataset label that is not a route, naming it', async () => {
    await expect(
      compareModes({ skills, stateDir }, ['local'], [{ text: 'hello', expected: 'order-pizza' }]),
    ).rejects.toThrow(/label\(s\) that are not routes: order-pizza/);
  });
});
