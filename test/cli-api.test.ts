import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { runCli, type CliRun } from './helpers/run-cli.js';

// `switchboard call` with API providers, roles, budgets and stats, as a user runs it: the built CLI,
// the official SDKs, `switchboard sim` on loopback. Keys come from the environment.

const keys = {
  anthropic: 'sk-ant-api03-cli-secret-0001',
  openai: 'sk-proj-cli-secret-0002',
  gemini: 'gemini-cli-secret-0003',
};
let sim: Simulator;
let cwd: string;

beforeAll(async () => {
  sim = await startSimulator({
    maxLifetimeMs: 300_000,
    scenario: {
      rules: [
        {
          match: { provider: 'anthropic', system: 'route requests' },
          reply: {
            tool: {
              name: 'emit_output',
              input: { skill: 'fix-bug', confidence: 0.9, reasoning: 'something broke' },
            },
          },
        },
        { match: { provider: 'anthropic', text: 'overload' }, fault: { kind: 'overload' } },
        {
          match: { provider: 'anthropic' },
          reply: { text: 'claude says hi', usage: { input: 50_000, output: 10_000 } },
        },
        { match: { provider: 'openai' }, reply: { text: 'gpt says hi', usage: { input: 100, output: 10 } } },
      ],
    },
  });
  cwd = project();
});
afterAll(async () => {
  await sim.close();
});

/** A working directory with its own ledger and the roles and budgets these tests use. */
function project(): string {
  const directory = mkdtempSync(join(tmpdir(), 'switchboard-api-cli-'));
  writeFileSync(
    join(directory, 'switchboard.yaml'),
    [
      'roles:',
      '  drafter: anthropic:claude-sonnet-4-6,openai:gpt-4.1-mini',
      'call:',
      '  retries_per_provider: 0',
      'budgets:',
      '  rules:',
      '    - { provider: anthropic, daily_usd: 0.5, warn_at: 0.5 }',
    ].join('\n'),
  );
  return directory;
}

function run(args: string[], directory = cwd): Promise<CliRun> {
  const env = {
    ...process.env,
    ANTHROPIC_API_KEY: keys.anthropic,
    ANTHROPIC_BASE_URL: sim.url,
    OPENAI_API_KEY: keys.openai,
    OPENAI_BASE_URL: sim.openAiBaseUrl,
    GEMINI_API_KEY: keys.gemini,
    GEMINI_BASE_URL: sim.url,
  };
  return runCli(args, { cwd: directory, env });
}

describe('switchboard route --mode hybrid', () => {
  it('asks the LLM when the local tiers abstain', async () => {
    const skills = join(import.meta.dirname, 'fixtures/skills');
    const args = [
      'route',
      '--skills',
      skills,
      '--mode',
      'hybrid',
      '--provider',
      'anthropic:claude-haiku-4-5',
      '--json',
    ];
    const unsure = await run([...args, 'the gizmo went kaput']);
    expect(unsure.status).toBe(0);
    expect(JSON.parse(unsure.stdout)).toMatchObject({ skill: 'fix-bug', method: 'llm' });
    const confident = await run([...args, 'add a dark mode setting']);
    expect(JSON.parse(confident.stdout)).toMatchObject({ skill: 'add-feature', method: 'local' });
  });
});

describe('switchboard eval --modes', () => {
  it('compares local, hybrid and llm-only on one dataset and writes the disagreements for review', async () => {
    const skills = join(import.meta.dirname, 'fixtures/skills');
    const dataset = join(import.meta.dirname, 'fixtures/dev.jsonl');
    const result = await run([
      'eval',
      '--skills',
      skills,
      '--dataset',
      dataset,
      '--modes',
      'local,hybrid,llm-only',
      '--provider',
      'anthropic:claude-haiku-4-5',
      '--disagreements',
      'review/disagreements.md',
      '--html',
      'review/report.html',
      '--json',
    ]);
    expect(result.status).toBe(0);
    const comparison = JSON.parse(result.stdout) as {
      count: number;
      modes: {
        mode: string;
        llmShare: number;
        costPer1k: number;
        errors: number;
        metrics: { accuracy: number };
      }[];
      agreement: { modes: string[]; rates: number[][] };
      disagreements: { index: number; answers: { mode: string; skill: string }[] }[];
    };
    expect(comparison.count).toBe(5);
    expect(comparison.modes.map((run) => run.mode)).toEqual(['local', 'hybrid', 'llm-only']);
    const [local, hybrid, llmOnly] = comparison.modes;
    // The simulated LLM answers fix-bug to everything: llm-only asks it every time and is often wrong.
    expect(local?.llmShare).toBe(0);
    expect(llmOnly?.llmShare).toBe(1);
    expect(llmOnly?.costPer1k).toBeGreaterThan(0);
    expect(local?.costPer1k).toBe(0);
    expect(hybrid?.llmShare).toBeLessThan(1);
    expect(llmOnly?.metrics.accuracy).toBeLessThan(local?.metrics.accuracy ?? 0);
    expect(comparison.agreement.rates.map((row, index) => row[index])).toEqual([1, 1, 1]);
    expect(comparison.disagreements.length).toBeGreaterThan(0);
    for (const item of comparison.disagreements) {
      expect(new Set(item.answers.map((answer) => answer.skill)).size).toBeGreaterThan(1);
    }
    const review = readFileSync(join(cwd, 'review/disagreements.md'), 'utf8');
    expect(review).toContain('| # | request | expected | local | hybrid | llm-only | verdict |');
    expect(review.match(/^\| \d+ \|/gm)).toHaveLength(comparison.disagreements.length);
    const html = readFileSync(join(cwd, 'review/report.html'), 'utf8');
    for (const mode of ['local', 'hybrid', 'llm-only']) expect(html).toContain(`id="chart-latency-${mode}"`);
    expect(html).toContain('id="chart-tier-mix"');

    const table = await run([
      'eval',
      '--skills',
      skills,
      '--dataset',
      dataset,
      '--modes',
      'local,llm-only',
      '--provider',
      'anthropic:claude-haiku-4-5',
    ]);
    expect(table.status).toBe(0);
    expect(table.stdout).toMatch(/^llm-only\s+\S+%/m);
    expect(table.stdout).toMatch(/agreement\s+local\s+llm-only/);
  });

  it('refuses an unknown mode and llm-only without a provider before doing any work', async () => {
    const skills = join(import.meta.dirname, 'fixtures/skills');
    const dataset = join(import.meta.dirname, 'fixtures/dev.jsonl');
    const unknown = await run(['eval', '--skills', skills, '--dataset', dataset, '--modes', 'local,psychic']);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/unknown mode\(s\) in --modes: psychic/);
    const noProvider = await run(['eval', '--skills', skills, '--dataset', dataset, '--modes', 'llm-only']);
    expect(noProvider.status).toBe(3);
    expect(noProvider.stderr).toMatch(/llm-only mode needs an LLM provider.*--provider/);
  });
});

describe('switchboard route learn and feedback', () => {
  it('teaches the local model from confident LLM decisions and corrections', async () => {
    const skills = join(import.meta.dirname, 'fixtures/skills');
    const nothing = await run(['route', 'learn', '--skills', skills, '--state-dir', 'learning']);
    expect(nothing.status).toBe(2);
    expect(nothing.stderr).toMatch(/nothing to learn/);
    const hybrid = [
      'route',
      '--skills',
      skills,
      '--state-dir',
      'learning',
      '--mode',
      'hybrid',
      '--provider',
      'anthropic:claude-haiku-4-5',
      '--store-text',
      '--json',
    ];
    const unknown = ['the gizmo went kaput', 'my widget is kaput again', 'kaput gizmo on the dashboard'];
    for (const text of unknown)
      expect(JSON.parse((await run([...hybrid, text])).stdout)).toMatchObject({ method: 'llm' });
    const corrected = JSON.parse((await run([...hybrid, 'order a large pepperoni pizza'])).stdout) as {
      id: string;
    };
    const feedback = await run([
      'route',
      'feedback',
      corrected.id,
      'write-docs',
      '--skills',
      skills,
      '--state-dir',
      'learning',
    ]);
    expect(feedback.status).toBe(0);
    const learned = await run(['route', 'learn', '--skills', skills, '--state-dir', 'learning']);
    expect(learned.status).toBe(0);
    expect(learned.stdout).toMatch(/learned 4 example\(s\): 3 from LLM decisions, 1 from corrections/);
    const shares = /leave to the LLM: (\d+)% before, (\d+)% after/.exec(learned.stdout);
    expect(Number(shares?.[2])).toBeLessThan(Number(shares?.[1]));
    const now = await run([
      'route',
      '--skills',
      skills,
      '--state-dir',
      'learning',
      '--json',
      'the gizmo went kaput',
    ]);
    expect(JSON.parse(now.stdout)).toMatchObject({ skill: 'fix-bug', method: 'local' });
    const unknownId = await run([
      'route',
      'feedback',
      'no-such-id',
      'fix-bug',
      '--skills',
      skills,
      '--state-dir',
      'learning',
    ]);
    expect(unknownId.status).toBe(2);
  });
});

describe('switchboard call with API providers', () => {
  it('runs a role from switchboard.yaml as a fallback chain', async () => {
    const result = await run(['call', 'drafter', 'please overload', '--json']);
    expect(result.status).toBe(0);
    const parsed = JSON.parse(result.stdout) as {
      text: string;
      provider: string;
      attempts: { errorCode?: string }[];
    };
    expect(parsed).toMatchObject({ text: 'gpt says hi', provider: 'openai:gpt-4.1-mini' });
    expect(parsed.attempts.map((attempt) => attempt.errorCode ?? 'ok')).toEqual(['OVERLOADED', 'ok']);
  });

  it('warns near a daily budget and refuses past it, before spending', async () => {
    const first = await run(['call', 'anthropic:claude-sonnet-4-6', 'hello']);
    expect(first).toMatchObject({ status: 0, stdout: 'claude says hi\n' });
    const second = await run(['call', 'anthropic:claude-sonnet-4-6', 'hello again']);
    expect(second.status).toBe(0);
    expect(second.stderr).toMatch(/warning: \d+% of the daily budget of \$0.5 for anthropic is spent/);
    const before = sim.requests.length;
    const refused = await run(['call', 'anthropic:claude-sonnet-4-6', 'one more']);
    expect(refused.status).toBe(27);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(sim.requests.length).toBe(before);
  });

  it('rejects an unknown role or provider with one line', async () => {
    const role = await run(['call', 'editor', 'hi']);
    expect(role.status).toBe(2);
    expect(role.stderr).toMatch(/neither a provider spec nor a role.*drafter/);
    expect((await run(['call', 'mistral:large', 'hi'])).stderr).toMatch(
      /unknown provider "mistral".*claude, anthropic, gemini, openai/,
    );
  });

  it('reports retries, fallback rate and budgets in stats, and keeps every key out of output and the ledger', async () => {
    // A project of its own, so the figures are this test's calls alone, whatever ran before it:
    // one call that falls back, then two that spend past the $0.5 daily budget (about $0.3 each).
    const own = project();
    expect((await run(['call', 'drafter', 'please overload'], own)).status).toBe(0);
    for (const prompt of ['hello', 'hello again'])
      expect((await run(['call', 'anthropic:claude-sonnet-4-6', prompt], own)).status).toBe(0);
    const stats = await run(['stats', '--json'], own);
    const parsed = JSON.parse(stats.stdout) as {
      calls: { calls: number; fallbackRate: number; retries: number };
      budgets: { scope: string; period: string; spent: number; cap: number }[];
    };
    expect(parsed.calls.calls).toBe(3);
    expect(parsed.calls.fallbackRate).toBeCloseTo(1 / 3, 10);
    expect(parsed.calls.retries).toBe(1);
    expect(parsed.budgets[0]).toMatchObject({ scope: 'anthropic', period: 'daily', cap: 0.5 });
    expect(parsed.budgets[0]?.spent).toBeGreaterThan(0.5);
    const ledger = readFileSync(join(own, '.switchboard/ledger.db'));
    for (const key of Object.values(keys)) {
      expect(ledger.includes(Buffer.from(key))).toBe(false);
      expect(stats.stdout).not.toContain(key);
    }
    expect(JSON.stringify(sim.requests)).not.toContain(keys.anthropic);
  });
});
