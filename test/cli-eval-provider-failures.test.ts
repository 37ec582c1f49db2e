import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { runCli } from './helpers/run-cli.js';

// `eval` with an LLM whose key the provider refuses: every LLM attempt fails with AUTH, and the report
// must say so instead of passing the local fallback off as hybrid routing with "errors 0".

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({
    maxLifetimeMs: 300_000,
    scenario: { rules: [{ match: { provider: 'anthropic' }, fault: { status: 401 } }] },
  });
});
afterAll(async () => {
  await sim.close();
});

const skills = join(import.meta.dirname, 'fixtures/skills');

function project(): { directory: string; dataset: string } {
  const directory = mkdtempSync(join(tmpdir(), 'switchboard-eval-auth-'));
  const dataset = join(directory, 'dev.jsonl');
  const rows = [
    { text: 'the gizmo went kaput', expected: 'fix-bug' },
    { text: 'the doohickey is wonky again', expected: 'fix-bug' },
    { text: 'the app crashes whenever I save', expected: 'fix-bug' },
  ];
  writeFileSync(dataset, rows.map((row) => JSON.stringify(row)).join('\n'));
  return { directory, dataset };
}

function evaluate(args: string[]) {
  const { directory, dataset } = project();
  return runCli(
    [
      'eval',
      '--skills',
      skills,
      '--dataset',
      dataset,
      '--modes',
      'hybrid',
      '--provider',
      'anthropic:claude-haiku-4-5',
      ...args,
    ],
    {
      cwd: directory,
      env: { ...process.env, ANTHROPIC_API_KEY: 'sk-ant-broken-key', ANTHROPIC_BASE_URL: sim.url },
    },
  );
}

describe('switchboard eval --modes hybrid with a key the provider refuses', () => {
  it('counts and names the provider failures in the JSON and warns on stderr', async () => {
    const result = await evaluate(['--json']);
    expect(result.status).toBe(0);
    const comparison = JSON.parse(result.stdout) as {
      modes: {
        mode: string;
        llmShare: number;
        providerFailures: { provider: string; code: string; count: number }[];
      }[];
    };
    const hybrid = comparison.modes[0];
    expect(hybrid?.llmShare).toBeGreaterThan(0);
    const asked = Math.round((hybrid?.llmShare ?? 0) * 3);
    expect(hybrid?.providerFailures).toEqual([{ provider: 'anthropic', code: 'AUTH', count: asked }]);
    expect(result.stderr).toContain(
      `warning: hybrid: ${asked} of ${asked} LLM calls failed (anthropic AUTH ×${asked})`,
    );
  });

  it('says so in the text report', async () => {
    const result = await evaluate([]);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(
      /Provider failures\nhybrid: \d+ of \d+ LLM calls failed \(anthropic AUTH ×\d+\)/,
    );
    expect(result.stderr).toMatch(/warning: hybrid: \d+ of \d+ LLM calls failed/);
  });
});
