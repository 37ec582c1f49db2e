import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { completions, openAiAgainstSimulator, startOfToday } from '../../test/helpers/openai-sim.js';
import { holdAgentAttempt, recordUnrecordedSpend, type AgentSpending } from '../agents/agent-spend.js';
import type { Scenario } from '../sim/scenario.js';
import { SwitchboardError } from '../core/errors.js';
import { openLedger, type Ledger } from '../store/ledger.js';
import { estimateCost } from './budget.js';
import { call } from './call.js';

// Budgets through call(): the real `openai` SDK over HTTP to `switchboard sim`, so the costs are the ones
// a user's calls would record, in a real SQLite ledger file.

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const openAiSetup = (scenario: Scenario) => openAiAgainstSimulator(scenario, cleanups);

// gpt-4.1-mini: $0.40 in, $1.60 out per million tokens. One answer of 10 in / 1,200 out costs $0.001924,
// more than the $0.00164 estimated for "hi" (1,024 output tokens) and less than two estimates, so a
// $0.002 cap has room for exactly one call.
const ONE_CALL_CAP = 0.002;
const ONE_CALL_COST = (10 * 0.4 + 1_200 * 1.6) / 1_000_000;

describe('budgets under concurrency', () => {
  it('lets exactly one of 8 parallel calls through a daily cap that allows one, and never overspends', async () => {
    expect(estimateCost('gpt-4.1-mini', 'hi')).toBeLessThanOrEqual(ONE_CALL_COST);
    const { sim, ledger, options } = await openAiSetup({
      // The delay keeps every call in flight at once, as in production.
      rules: [{ reply: { text: 'hello', usage: { input: 10, output: 1_200 }, delayMs: 300 } }],
    });
    const budget = { rules: [{ provider: 'openai', dailyUsd: ONE_CALL_CAP }] };
    const outcomes = await Promise.allSettled(
      Array.from({ length: 8 }, () => call('openai:gpt-4.1-mini', { prompt: 'hi' }, { ...options, budget })),
    );
    const fulfilled = outcomes.filter((outcome) => outcome.status === 'fulfilled');
    const refused = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason] : []));
    expect(fulfilled).toHaveLength(1);
    expect(refused).toHaveLength(7);
    // A refusal names what holds the budget: the calls in flight, or (when the machine is so loaded that
    // the one call let through ended before a later one asked, as on PostgreSQL beside busy loops) its
    // spend. Either way exactly one call ran and the cap held.
    for (const error of refused) {
      expect(error).toMatchObject({ code: 'BUDGET_EXCEEDED' });
      expect((error as Error).message).toMatch(
        /daily budget of \$0\.002 for openai .*(held by calls in flight|\(\$0\.00192 spent\), less than)/,
      );
    }
    expect(completions(sim)).toHaveLength(1);
    expect(await ledger.spendSince(startOfToday(), { provider: 'openai' })).toBeCloseTo(ONE_CALL_COST, 9);
    expect(await ledger.spendSince(startOfToday())).toBeLessThanOrEqual(ONE_CALL_CAP);
    // Settled: nothing stays held once the calls are over, so the next refusal is about real spend.
    expect(await ledger.reservedAt(Date.now())).toBe(0);
    await expect(call('openai:gpt-4.1-mini', { prompt: 'hi' }, { ...options, budget })).rejects.toThrow(
      /has \$0\.000076 left \(\$0\.00192 spent\), less than this call's estimate of \$0\.00164/,
    );
  });

  it('releases the reservation of a failed call, so it does not hold the budget', async () => {
    const { sim, options } = await openAiSetup({
      rules: [
        { match: { text: 'fail' }, fault: { status: 500 } },
        { reply: { text: 'hello', usage: { input: 10, output: 1_200 } } },
      ],
    });
    const budget = { rules: [{ provider: 'openai', dailyUsd: ONE_CALL_CAP }] };
    await expect(
      call('openai:gpt-4.1-mini', { prompt: 'fail' }, { ...options, budget }),
    ).rejects.toMatchObject({
      code: 'PROVIDER_ERROR',
    });
    const result = await call('openai:gpt-4.1-mini', { prompt: 'hi' }, { ...options, budget });
    expect(result.text).toBe('hello');
    expect(completions(sim)).toHaveLength(2);
  });

  it('runs unpriced models one at a time under a cap: each holds the rest of the budget while it runs', async () => {
    const { sim, ledger, options } = await openAiSetup({
      rules: [{ reply: { text: 'local answer', usage: { input: 10, output: 10 }, delayMs: 300 } }],
    });
    const budget = { rules: [{ provider: 'openai', dailyUsd: 1 }] };
    const outcomes = await Promise.allSettled(
      Array.from({ length: 3 }, () => call('openai:llama3.2', { prompt: 'hi' }, { ...options, budget })),
    );
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
    const first = outcomes.find((outcome) => outcome.status === 'fulfilled');
    expect(first?.status === 'fulfilled' && first.value.warnings.join()).toMatch(/llama3\.2 has no price/);
    expect(completions(sim)).toHaveLength(1);
    expect(await ledger.reservedAt(Date.now())).toBe(0);
    // Once it is over, the next one may go.
    await expect(call('openai:llama3.2', { prompt: 'hi' }, { ...options, budget })).resolves.toMatchObject({
      text: 'local answer',
    });
  });

  it("estimates with the caller's prices: a model priced at 0 runs in parallel under a cap", async () => {
    const { sim, options } = await openAiSetup({
      rules: [{ reply: { text: 'local answer', usage: { input: 10, output: 10 }, delayMs: 300 } }],
    });
    const budget = {
      rules: [{ dailyUsd: 1 }],
      prices: { 'llama3.2': { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 } },
    };
    const results = await Promise.all(
      Array.from({ length: 3 }, () => call('openai:llama3.2', { prompt: 'hi' }, { ...options, budget })),
    );
    expect(results.flatMap((result) => result.warnings).join()).not.toMatch(/has no price/);
    expect(completions(sim)).toHaveLength(3);
  });

  it('treats a cap of 0 as "blocked": no request is sent', async () => {
    const { sim, options } = await openAiSetup({ rules: [{ reply: { text: 'hello' } }] });
    const budget = { rules: [{ provider: 'openai', dailyUsd: 0 }] };
    await expect(call('openai:gpt-4.1-mini', { prompt: 'hi' }, { ...options, budget })).rejects.toMatchObject(
      {
        code: 'BUDGET_EXCEEDED',
        message: 'the daily budget of $0 for openai blocks every call',
      },
    );
    // Without a ledger (--no-ledger) nothing spent is known, but a cap of 0 still blocks.
    await expect(
      call('openai:gpt-4.1-mini', { prompt: 'hi' }, { ...options, ledger: false, budget }),
    ).rejects.toMatchObject({
      code: 'BUDGET_EXCEEDED',
      message: expect.stringContaining('blocks every call'),
    });
    await expect(
      call('openai:gpt-4.1-mini', { prompt: 'hi' }, { ...options, budget: { rules: [{ monthlyUsd: -1 }] } }),
    ).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('"monthlyUsd"') });
    expect(completions(sim)).toHaveLength(0);
  });

  it('counts the reservation of a process killed in flight as spent in its period after it expires, not as freed', async () => {
    const ledger = openLedger({ stateDir: mkdtempSync(join(tmpdir(), 'switchboard-budget-')) });
    cleanups.push(() => ledger.close());
    const now = Date.now();
    const caps = [{ since: startOfToday(), capUsd: 1 }];
    const reservation = { provider: 'openai', tags: {}, amountUsd: 0.8, caps };
    // Taken by a process that then died without releasing it: the provider may have charged the call.
    expect(
      await ledger.reserveSpend({ ...reservation, id: 'dead', createdAt: now, expiresAt: now + 60_000 }),
    ).toMatchObject({
      reserved: true,
    });
    expect(
      await ledger.reserveSpend({
        ...reservation,
        id: 'blocked',
        createdAt: now + 1_000,
        expiresAt: now + 70_000,
      }),
    ).toMatchObject({ reserved: false, standings: [{ spentUsd: 0, reservedUsd: 0.8 }] });
    // Past its expiry it still counts against today's cap: forgetting it let $0.041 be spent under $0.025.
    expect(
      await ledger.reserveSpend({
        ...reservation,
        id: 'later',
        createdAt: now + 60_000,
        expiresAt: now + 120_000,
      }),
    ).toMatchObject({ reserved: false, standings: [{ spentUsd: 0, reservedUsd: 0.8 }] });
    // The next period starts clean: the dead call counted in the period it was made in.
    const tomorrow = now + 60_000;
    expect(
      await ledger.reserveSpend({
        ...reservation,
        caps: [{ since: tomorrow, capUsd: 1 }],
        id: 'next-day',
        createdAt: tomorrow + 1,
        expiresAt: tomorrow + 60_000,
      }),
    ).toMatchObject({ reserved: true, standings: [{ spentUsd: 0, reservedUsd: 0 }] });
  });
});

describe('a ledger that cannot record an answered call', () => {
  it('returns the answer with a warning, and keeps the reservation counting as spent', async () => {
    const { sim, ledger, options } = await openAiSetup({
      rules: [{ reply: { text: 'hello', usage: { input: 10, output: 1_200 } } }],
    });
    // The disk filled while the provider answered: the settle is refused the way a full disk refuses it.
    const full = new SwitchboardError(
      'LEDGER_UNWRITABLE',
      'cannot record a call attempt in x: database or disk is full',
      {
        hint: 'free disk space on x',
      },
    );
    const unwritable: Ledger = { ...ledger, settleReservation: () => Promise.reject(full) };
    const budget = { rules: [{ provider: 'openai', dailyUsd: 1 }] };
    const result = await call(
      'openai:gpt-4.1-mini',
      { prompt: 'hi' },
      { ...options, ledger: unwritable, budget },
    );
    expect(result.text).toBe('hello');
    expect(result.warnings).toEqual([
      expect.stringMatching(
        /^the ledger did not record this call \(cannot record a call attempt in x: database or disk is full\); its reservation of \$0\.00164\d* counts as spent .*: free disk space on x$/,
      ),
    ]);
    // Not released: the next call, in this process or another, counts it against the cap.
    expect(await ledger.reservedAt(Date.now(), { since: startOfToday() })).toBeCloseTo(
      estimateCost('gpt-4.1-mini', 'hi') ?? 0,
      9,
    );
    expect(completions(sim)).toHaveLength(1);
  });

  it('refuses the call before sending it when the budget cannot be reserved', async () => {
    const { sim, ledger, options } = await openAiSetup({ rules: [{ reply: { text: 'hello' } }] });
    const readOnly = new SwitchboardError(
      'LEDGER_UNWRITABLE',
      'cannot reserve budget in x: attempt to write a readonly database',
      {
        hint: 'make x writable',
      },
    );
    const unwritable: Ledger = { ...ledger, reserveSpend: () => Promise.reject(readOnly) };
    const budget = { rules: [{ provider: 'openai', dailyUsd: 1 }] };
    await expect(
      call('openai:gpt-4.1-mini', { prompt: 'hi' }, { ...options, ledger: unwritable, budget }),
    ).rejects.toMatchObject({
      code: 'LEDGER_UNWRITABLE',
      message: 'cannot reserve budget in x: attempt to write a readonly database; nothing was sent',
      hint: 'make x writable, then retry',
    });
    expect(completions(sim)).toHaveLength(0);
  });
});

describe('agent attempts under the budgets', () => {
  it('holds an attempt to what a cap has left, refuses another process while it runs, counts what it spent', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'switchboard-budget-agents-'));
    // Two ledgers on one database: two runner processes.
    const [one, two] = [openLedger({ stateDir }), openLedger({ stateDir })] as const;
    cleanups.push(
      () => one.close(),
      () => two.close(),
    );
    const rules = [{ provider: 'claude', dailyUsd: 0.01 }];
    const spending = (ledger: Ledger, run: string): AgentSpending => ({
      ledger,
      rules,
      callId: run,
      tags: { agent_run: run },
      runTag: `agent_run=${run}`,
      since: startOfToday(),
    });
    const attempt = { attempt: 1, model: 'claude-haiku-4-5', capUsd: 5, timeoutMs: 60_000 };

    // The run's $5 cap is more than the budget has: the attempt is held to the $0.01 left.
    const first = await holdAgentAttempt(spending(one, 'run-a'), attempt);
    expect(first).toMatchObject({ capUsd: 0.01, lowered: true });
    await expect(holdAgentAttempt(spending(two, 'run-b'), attempt)).rejects.toMatchObject({
      code: 'BUDGET_EXCEEDED',
      message: expect.stringMatching(
        /daily budget of \$0\.01 for claude is used up \(\$0 spent, \$0\.01 held/,
      ),
    });

    // Settled at its real cost, the rest is free for the next attempt.
    await first.settle({ costUsd: 0.004, durationMs: 1_000, success: true });
    expect(await two.spendSince(startOfToday(), { provider: 'claude' })).toBeCloseTo(0.004, 9);
    const second = await holdAgentAttempt(spending(two, 'run-b'), attempt);
    expect(second.capUsd).toBeCloseTo(0.006, 9);
    expect(await one.reservedAt(Date.now(), { provider: 'claude' })).toBeCloseTo(0.006, 9);

    // run-a's runner died in its second attempt after spending $0.002 (its run row says $0.006 in all):
    // whoever picks the run up records that before anything else.
    await recordUnrecordedSpend(spending(one, 'run-a'), 0.006, 2, 'claude-haiku-4-5');
    await recordUnrecordedSpend(spending(one, 'run-a'), 0.006, 2, 'claude-haiku-4-5');
    expect(await one.spendSince(startOfToday(), { tag: 'agent_run=run-a' })).toBeCloseTo(0.006, 9);
    await second.release();
    expect(await one.reservedAt(Date.now())).toBe(0);

    const stats = await one.callStats();
    expect(stats).toMatchObject({ calls: 0, attempts: 0, agents: { runs: 1, attempts: 2 } });
    expect(stats.agents.costUsd).toBeCloseTo(0.006, 9);
  });
});
