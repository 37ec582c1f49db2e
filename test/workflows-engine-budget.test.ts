import { afterEach, describe, expect, it } from 'vitest';
import { completions, openAiAgainstSimulator } from './helpers/openai-sim.js';
import { startWorkflowRun } from '../src/workflows/engine-start.js';
import { resumeWorkflow } from '../src/workflows/index.js';
import { engineOptions, llmStep, setStep, stateDir, workflow } from './workflows-engine-support.js';
import { openLedger } from '../src/store/ledger.js';

// A run's spending: every call a step makes goes through call() (the real `openai` SDK to `switchboard
// sim`), tagged with the run and the step, recorded once in the ledger, and held against budget_usd.

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

// gpt-4.1-mini: 10 in / 1,200 out costs $0.001924 an answer; the estimate before a call is $0.00164.
const ANSWER_COST = (10 * 0.4 + 1_200 * 1.6) / 1_000_000;

const reviewLoop = (budgetUsd: number) =>
  workflow(
    [
      { ...llmStep('ask', 'Round {{ context.iteration }}', [{ to: 'ask' }]), maxVisits: 4, onCap: 'done' },
      setStep('done', { rounds: '{{ context.iteration }}' }),
    ],
    {
      limits: { maxIterations: 20, budgetUsd, budgetMode: 'enforce' },
      output: { rounds: '{{ done.output.rounds }}' },
    },
  );

describe('workflow budgets and costs', () => {
  it('ends a run with BUDGET_EXCEEDED at budget_usd, and a resume with a raised budget finishes it', async () => {
    const { sim, options } = await openAiAgainstSimulator(
      { rules: [{ reply: { text: 'ok', usage: { input: 10, output: 1_200 } } }] },
      cleanups,
    );
    const dir = stateDir();
    const ledger = openLedger({ stateDir: dir });
    cleanups.push(() => ledger.close());
    const definition = reviewLoop(0.005);
    const base = engineOptions(dir, definition, { ledger, providers: options.providers! });
    const stopped = await startWorkflowRun(definition, { ...base, runId: 'run-budget' });
    expect(stopped).toMatchObject({ status: 'failed', errorCode: 'BUDGET_EXCEEDED', step: 'ask' });
    // Two answers ($0.0038) fit; the third call's estimate would pass $0.005, so it was never sent.
    expect(completions(sim)).toHaveLength(2);
    expect(stopped.costUsd).toBeCloseTo(2 * ANSWER_COST, 9);
    const resumed = await resumeWorkflow({ ...base, runId: 'run-budget', limits: { budgetUsd: 0.05 } });
    expect(resumed).toMatchObject({ status: 'completed', output: { rounds: 4 } });
    expect(completions(sim)).toHaveLength(4);
    expect(resumed.costUsd).toBeCloseTo(4 * ANSWER_COST, 9);
    expect(await ledger.spendSince(0, { tag: 'workflow_run=run-budget' })).toBeCloseTo(4 * ANSWER_COST, 9);
  });

  it('keeps an interrupted step’s spending once: its rerun adds its own call, nothing is counted twice', async () => {
    const { sim, options } = await openAiAgainstSimulator(
      { rules: [{ reply: { text: 'ok', usage: { input: 10, output: 1_200 } } }] },
      cleanups,
    );
    const dir = stateDir();
    const ledger = openLedger({ stateDir: dir });
    cleanups.push(() => ledger.close());
    const definition = reviewLoop(1);
    const crash = new Error('died after the call, before the step was recorded');
    const base = engineOptions(dir, definition, { ledger, providers: options.providers! });
    await expect(
      startWorkflowRun(definition, {
        ...base,
        runId: 'run-cost',
        _internal: {
          ...base._internal,
          onBoundary: (boundary, key) => {
            if (boundary === 'step-effect' && key === 'run-cost/ask/1') throw crash;
          },
        },
      }),
    ).rejects.toBe(crash);
    const resumed = await resumeWorkflow({ ...base, runId: 'run-cost' });
    expect(resumed.status).toBe('completed');
    // ask/1 ran twice (the killed attempt's call stays in the ledger and in the step's cost).
    expect(completions(sim)).toHaveLength(5);
    const ask1 = resumed.steps.find((step) => step.key === 'run-cost/ask/1');
    expect(ask1).toMatchObject({ attempts: 2 });
    expect(ask1?.costUsd).toBeCloseTo(2 * ANSWER_COST, 9);
    expect(resumed.costUsd).toBeCloseTo(5 * ANSWER_COST, 9);
    expect(await ledger.spendSince(0, { tag: 'workflow_run=run-cost' })).toBeCloseTo(5 * ANSWER_COST, 9);
    expect((await ledger.callStats()).calls).toBe(5);
  });
});
