import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Scenario } from '../src/sim/scenario.js';
import { agentCliSuite, type RunJson } from './helpers/agent-cli.js';
import { runCli } from './helpers/run-cli.js';

// Agent runs spend against the budgets of switchboard.yaml as calls do: the real Claude Code binary
// against `switchboard sim`, real git, the built CLI, one SQLite ledger shared by every process.

const { fixture, simLog, simUrl } = agentCliSuite();

const MODEL = 'claude-haiku-4-5';
// Fixed usage per answer: one answer on Haiku 4.5 ($1 / $5 per million) costs $0.0025, over the cap below.
const USAGE = { input: 2_000, output: 100, cacheRead: 0, cacheWrite: 0 };
const SCENARIO: Scenario = {
  rules: [
    {
      name: 'write',
      match: { turn: 1 },
      reply: { tool: { name: 'Write', input: { file_path: 'hello.txt', content: 'hi\n' } }, usage: USAGE },
    },
  ],
  fallback: { text: 'done', usage: USAGE },
};
const BUDGET = 'budgets:\n  rules:\n    - { provider: claude, daily_usd: 0.001 }\n';

interface StatsJson {
  calls: { calls: number; agents: { runs: number; attempts: number; costUsd: number } };
  budgets: { scope: string; period: string; cap: number; spent: number; reserved: number }[];
}

describe('agent runs under the budgets of switchboard.yaml', () => {
  it('counts a run’s spend against `claude` daily_usd; the next run is refused before Claude Code starts', async () => {
    const f = await fixture(SCENARIO);
    const config = join(f.root, 'switchboard.yaml');
    writeFileSync(config, BUDGET);
    const task = f.task('task', { id: 'hello', title: 'Say hello', model: MODEL });

    // The budget has room: the run starts, held to what the budget has left, and spends.
    const first = await f.run(['agent', 'run', '--task', task, '--json', '--config', config]);
    const spent = JSON.parse(first.stdout) as RunJson & { error?: string };
    // One answer ($0.0025) passes the $0.001 the budget had left: Claude Code stops there.
    expect(spent.costUsd).toBeGreaterThan(0.001);
    expect(spent.errorCode, first.stderr).toBe('BUDGET_EXCEEDED');
    expect(spent.error).toMatch(/what the budgets in switchboard\.yaml had left/);
    const requests = simLog().length;
    expect(requests).toBeGreaterThan(0);

    const second = await f.run(['agent', 'run', '--task', task, '--config', config]);
    expect(second.status, second.stderr).toBe(27);
    // The progress line of the run's end, then the one-line error with what to do; no stack trace.
    expect(second.stderr.trim().split('\n').at(-1)).toMatch(
      /^switchboard: the daily budget of \$0\.001 for claude is used up \(\$0\.00\d+ spent\); wait for the next day/,
    );
    expect(second.stderr).not.toMatch(/\n\s+at /);
    // Refused before its worktree and before Claude Code: the simulator heard nothing more.
    expect(simLog().length).toBe(requests);
    const refused = (await f.json<RunJson[]>(['agent', 'ls'])).find((run) => run.id !== spent.id);
    expect(refused).toMatchObject({ errorCode: 'BUDGET_EXCEEDED', attempt: 0 });
    expect(existsSync(refused?.worktree ?? '')).toBe(false);

    const stats = JSON.parse((await f.run(['stats', '--json', '--config', config])).stdout) as StatsJson;
    expect(stats.budgets).toHaveLength(1);
    expect(stats.budgets[0]).toMatchObject({ scope: 'claude', period: 'daily', cap: 0.001, reserved: 0 });
    expect(stats.budgets[0]?.spent).toBeCloseTo(spent.costUsd, 9);
    expect(stats.calls).toMatchObject({ calls: 0, agents: { runs: 1, attempts: 1 } });
    expect(stats.calls.agents.costUsd).toBeCloseTo(spent.costUsd, 9);
    const text = (await f.run(['stats', '--config', config])).stdout;
    expect(text).toContain(`budget claude, daily: $${spent.costUsd.toFixed(4)}`);
    expect(text).toMatch(/agent runs 1 \(1 attempts\)/);
  });

  it('holds a workflow’s `effects: git` agent step to the same budget', async () => {
    const f = await fixture(SCENARIO);
    const config = join(f.root, 'switchboard.yaml');
    writeFileSync(config, BUDGET);
    const workflow = join(f.root, 'implement.yaml');
    writeFileSync(
      workflow,
      [
        'workflow:',
        '  name: implement',
        '  entry_point: implement',
        'agents:',
        '  - name: implement',
        '    type: agent',
        '    provider: claude-agent-sdk',
        `    model: ${MODEL}`,
        '    prompt: Add hello.txt',
        '    tools: [Read, Write]',
        '    effects: git',
        `    repo: ${JSON.stringify(f.repo)}`,
        '    merge: branch',
        '    limits: { max_attempts: 1 }',
        '    routes: [{ to: $end }]',
        '',
      ].join('\n'),
    );
    const env = { ...f.env, ANTHROPIC_BASE_URL: simUrl() };
    const run = () => runCli(['workflow', 'run', workflow, '--config', config], { cwd: f.root, env });

    const first = await run();
    const requests = simLog().length;
    expect(requests, first.stderr).toBeGreaterThan(0);
    const second = await run();
    expect(second.status, second.stderr).toBe(27);
    expect(second.stderr).toMatch(/daily budget of \$0\.001 for claude is used up/);
    expect(simLog().length).toBe(requests);

    const stats = JSON.parse(
      (await runCli(['stats', '--json', '--config', config], { cwd: f.root, env: f.env })).stdout,
    ) as StatsJson;
    expect(stats.budgets[0]?.spent).toBeGreaterThan(0.001);
    expect(stats.calls.agents).toMatchObject({ runs: 1, attempts: 1 });
    expect(stats.calls.agents.costUsd).toBeCloseTo(stats.budgets[0]?.spent ?? Number.NaN, 9);
  });
});
