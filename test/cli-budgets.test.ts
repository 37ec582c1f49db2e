import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { runCli, type CliRun } from './helpers/run-cli.js';

// Budgets across processes, as users run them: several `switchboard call` processes sharing one ledger
// file, the official SDKs over HTTP to `switchboard sim`, and `switchboard stats` reading what they spent.

let sim: Simulator;

beforeAll(async () => {
  sim = await startSimulator({
    maxLifetimeMs: 300_000,
    scenario: {
      rules: [
        {
          match: { provider: 'openai', text: 'weather' },
          reply: { text: 'It is sunny.', usage: { input: 1_000, output: 1_000 } },
        },
        // Slow enough that every process's call is in flight at once.
        {
          match: { provider: 'openai' },
          reply: { text: 'hello', usage: { input: 10, output: 1_200 }, delayMs: 3_000 },
        },
        { match: { provider: 'anthropic' }, reply: { text: 'claude says hi' } },
      ],
    },
  });
});
afterAll(async () => {
  await sim.close();
});

function folderWith(yaml: string): string {
  const cwd = mkdtempSync(join(tmpdir(), 'switchboard-budgets-cli-'));
  writeFileSync(join(cwd, 'switchboard.yaml'), yaml);
  return cwd;
}

function run(cwd: string, args: string[]): Promise<CliRun> {
  const env = {
    ...process.env,
    ANTHROPIC_API_KEY: 'sk-ant-api03-budget-secret-0001',
    ANTHROPIC_BASE_URL: sim.url,
    OPENAI_API_KEY: 'sk-proj-budget-secret-0002',
    OPENAI_BASE_URL: sim.openAiBaseUrl,
  };
  return runCli(args, { cwd, env });
}

const completions = () => sim.requests.filter((entry) => entry.path.endsWith('/chat/completions')).length;

describe('budgets across processes', () => {
  it('lets one of six parallel `switchboard call` processes through a daily cap that allows one', async () => {
    // gpt-4.1-mini: one answer of 10 in / 1,200 out costs $0.001924; each call is estimated at $0.00164.
    const cwd = folderWith(
      'call: { retries_per_provider: 0 }\nbudgets:\n  rules:\n    - { provider: openai, daily_usd: 0.002 }\n',
    );
    const before = completions();
    const runs = await Promise.all(
      Array.from({ length: 6 }, (_, index) => run(cwd, ['call', 'openai:gpt-4.1-mini', `hi ${index}`])),
    );
    expect(runs.map((result) => result.status).sort()).toEqual([0, 27, 27, 27, 27, 27]);
    for (const refused of runs.filter((result) => result.status === 27)) {
      expect(refused.stderr.trim().split('\n')).toHaveLength(1);
      expect(refused.stderr).toMatch(/daily budget of \$0\.002 for openai/);
    }
    expect(completions() - before).toBe(1);
    const stats = await run(cwd, ['stats', '--json']);
    const parsed = JSON.parse(stats.stdout) as {
      budgets: { spent: number; reserved: number; cap: number }[];
    };
    expect(parsed.budgets[0]).toMatchObject({ cap: 0.002, reserved: 0 });
    expect(parsed.budgets[0]?.spent).toBeCloseTo(0.001924, 9);
  });

  it('accepts daily_usd: 0 as "blocked": one line, exit 27, nothing sent', async () => {
    const cwd = folderWith('budgets:\n  rules:\n    - { provider: anthropic, daily_usd: 0 }\n');
    const before = sim.requests.length;
    const refused = await run(cwd, ['call', 'anthropic:claude-sonnet-4-6', 'hello']);
    expect(refused.status).toBe(27);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toMatch(/daily budget of \$0 for anthropic blocks every call/);
    expect(sim.requests.length).toBe(before);
    const stats = await run(cwd, ['stats']);
    expect(stats.stdout).toMatch(/budget anthropic, daily: \$0 of \$0 \(blocked\)/);
  });

  it('shows the spend of failed structured-output attempts in stats', async () => {
    const cwd = folderWith('call: { retries_per_provider: 0, schema_retries: 2 }\n');
    const schema = join(cwd, 'weather.schema.json');
    writeFileSync(
      schema,
      JSON.stringify({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
    );
    const failed = await run(cwd, ['call', 'openai:gpt-4.1-mini', 'weather in Lisbon', '--schema', schema]);
    expect(failed.status).toBe(26);
    // Three answers (one ask, two re-asks) of 1,000 in / 1,000 out at $0.40 / $1.60 per million.
    const stats = await run(cwd, ['stats', '--json']);
    const parsed = JSON.parse(stats.stdout) as {
      calls: { costUsd: number; byProviderModel: { inputTokens: number; outputTokens: number }[] };
    };
    expect(parsed.calls.costUsd).toBeCloseTo(0.006, 9);
    expect(parsed.calls.byProviderModel[0]).toMatchObject({ inputTokens: 3_000, outputTokens: 3_000 });
    expect((await run(cwd, ['stats'])).stdout).toMatch(/cost \$0\.006\b/);
  });

  it('holds a workflow step to the budgets of switchboard.yaml: the run fails on the cap and nothing is sent', async () => {
    const cwd = folderWith('budgets:\n  rules:\n    - { provider: openai, daily_usd: 0 }\n');
    writeFileSync(
      join(cwd, 'ask.yaml'),
      [
        'workflow:',
        '  name: ask',
        '  entry_point: ask',
        '  runtime: { provider: openai, default_model: gpt-4.1-mini }',
        'agents:',
        '  - name: ask',
        '    type: agent',
        '    prompt: hello',
        '    routes: [{ to: $end }]',
        '',
      ].join('\n'),
    );
    const before = completions();
    const refused = await run(cwd, ['workflow', 'run', 'ask.yaml']);
    expect(refused.status, refused.stderr).toBe(27);
    expect(refused.stderr).toMatch(/daily budget of \$0 for openai blocks every call/);
    expect(completions()).toBe(before);
  });
});
