import { describe, expect, it } from 'vitest';
import { startWorkflowRun } from '../src/workflows/engine-start.js';
import { resumeWorkflow } from '../src/workflows/index.js';
import type { StepExecutor } from '../src/workflows/step-executor.js';
import type { FailureMode, ForEachGroup } from '../src/workflows/model.js';
import {
  engineOptions,
  forEach,
  parallel,
  setStep,
  stateDir,
  testSet,
  workflow,
} from './workflows-engine-support.js';

// parallel and for_each groups: each member is a step execution of its own (a row, a key), so a run that
// dies mid-group resumes without running finished members again; failure modes behave as Conductor's.

function counting(counts: Map<string, number>, inner: StepExecutor = testSet): StepExecutor {
  return async (context) => {
    const name = context.key.split('/').slice(1).join('/');
    counts.set(name, (counts.get(name) ?? 0) + 1);
    return inner(context);
  };
}

describe('parallel groups', () => {
  const checks = (mode: FailureMode, failing: string[]) =>
    workflow(
      [
        setStep('start', { topic: '"x"' }, [{ to: 'checks' }]),
        setStep('lint', {
          ok: '{{ start.output.topic }}-lint',
          ...(failing.includes('lint') ? { fail: 'lint broke' } : {}),
        }),
        setStep('test', { ok: 'test', ...(failing.includes('test') ? { fail: 'tests broke' } : {}) }),
        setStep('docs', { ok: 'docs' }),
        setStep('report', {
          lint: '{{ checks.outputs.lint.ok if "lint" in checks.outputs else "none" }}',
          errors: '{{ checks.errors | length }}',
        }),
      ],
      {
        groups: [
          parallel('checks', ['lint', 'test', 'docs'], { failureMode: mode, routes: [{ to: 'report' }] }),
        ],
        output: { lint: '{{ report.output.lint }}', errors: '{{ report.output.errors }}' },
      },
    );

  it('runs members side by side and hands their outputs to later steps as <group>.outputs', async () => {
    const dir = stateDir();
    const definition = checks('fail_fast', []);
    const result = await startWorkflowRun(definition, engineOptions(dir, definition));
    expect(result).toMatchObject({ status: 'completed', output: { lint: 'x-lint', errors: 0 } });
    const keys = result.steps.map((step) => step.key.split('/').slice(1).join('/'));
    // Steps are listed in the order they started; members running side by side start in the order
    // their first writes landed, which on PostgreSQL is not always the file's order.
    expect(keys.filter((key) => !key.startsWith('checks/0/'))).toEqual(['start/0', 'checks/0', 'report/0']);
    expect(keys.slice(2, 5).sort()).toEqual(['checks/0/docs', 'checks/0/lint', 'checks/0/test']);
  });

  it('continue_on_error goes on with the members that succeeded and lists the others under errors', async () => {
    const dir = stateDir();
    const definition = checks('continue_on_error', ['lint']);
    const result = await startWorkflowRun(definition, engineOptions(dir, definition));
    expect(result).toMatchObject({ status: 'completed', output: { lint: 'none', errors: 1 } });
  });

  it('all_or_nothing runs every member, then fails the run if any failed', async () => {
    const dir = stateDir();
    const counts = new Map<string, number>();
    const definition = checks('all_or_nothing', ['lint']);
    const result = await startWorkflowRun(
      definition,
      engineOptions(dir, definition, { _internal: { executors: { set: counting(counts) } } }),
    );
    expect(result).toMatchObject({ status: 'failed', errorCode: 'WORKFLOW_FAILED' });
    expect(result.error).toMatch(/group "checks" failed \(all_or_nothing, 1 of 3\): "lint": lint broke/);
    expect([...counts.keys()].sort()).toEqual(['checks/0/docs', 'checks/0/lint', 'checks/0/test', 'start/0']);
  });

  it('fail_fast aborts the members still running at the first failure', async () => {
    const dir = stateDir();
    let aborted = 0;
    let docsRunning: () => void = () => {};
    const docsStarted = new Promise<void>((resolve) => (docsRunning = resolve));
    const slowDocs: StepExecutor = async (context) => {
      // "test" fails only once "docs" is running, so "docs" is the member still running.
      if (context.step.name === 'test') await docsStarted;
      if (context.step.name !== 'docs') return testSet(context);
      const stopped = new Promise((resolve) =>
        context.signal.addEventListener('abort', resolve, { once: true }),
      );
      docsRunning();
      await stopped;
      aborted++;
      return { status: 'failed', costUsd: 0, error: { code: 'ABORTED', message: 'stopped' } };
    };
    const definition = checks('fail_fast', ['test']);
    const result = await startWorkflowRun(
      definition,
      engineOptions(dir, definition, { _internal: { executors: { set: slowDocs } } }),
    );
    expect(result).toMatchObject({ status: 'failed' });
    expect(result.error).toMatch(/"test": tests broke/);
    expect(aborted).toBe(1);
  });

  it('fail_fast stops a member that reaches its executor after the group stopped, without starting it', async () => {
    const dir = stateDir();
    const started: string[] = [];
    // The docs executor ends only at an abort it hears: started after the abort it would wait forever.
    const listening: StepExecutor = async (context) => {
      started.push(context.step.name);
      if (context.step.name !== 'docs') return testSet(context);
      await new Promise((resolve) => context.signal.addEventListener('abort', resolve, { once: true }));
      return { status: 'failed', costUsd: 0, error: { code: 'ABORTED', message: 'stopped' } };
    };
    // "docs" is held between its row's start and its executor until fail_fast has stopped the group.
    const holdDocs = async (key: string, signal: AbortSignal): Promise<void> => {
      if (!key.endsWith('/docs') || signal.aborted) return;
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    };
    const definition = checks('fail_fast', ['test']);
    const result = await startWorkflowRun(
      definition,
      engineOptions(dir, definition, {
        _internal: { executors: { set: listening }, beforeExecutor: holdDocs },
      }),
    );
    expect(result).toMatchObject({ status: 'failed' });
    expect(result.error).toMatch(/"test": tests broke/);
    expect(started).not.toContain('docs');
    expect(result.steps.find((step) => step.key.endsWith('/checks/0/docs'))).toMatchObject({
      status: 'failed',
      error: 'ABORTED: stopped: "test" failed in group "checks" (fail_fast)',
    });
  }, 20_000);

  it('continue_on_error fails when every member failed', async () => {
    const dir = stateDir();
    const definition = workflow([setStep('a', { fail: 'a' }), setStep('b', { fail: 'b' })], {
      groups: [parallel('both', ['a', 'b'], { failureMode: 'continue_on_error' })],
      entryPoint: 'both',
    });
    const result = await startWorkflowRun(definition, engineOptions(dir, definition));
    expect(result.error).toMatch(/every member of group "both" failed/);
  });
});

describe('for_each groups', () => {
  const items = (extra: Parameters<typeof forEach>[3] = {}) =>
    workflow(
      [
        setStep(
          'find',
          { items: '[{"id": "a", "n": 1}, {"id": "b", "n": 2}, {"id": "c", "n": 3}, {"id": "d", "n": 4}]' },
          [{ to: 'each' }],
        ),
        setStep('sum', {
          total:
            extra.keyBy === undefined
              ? '{{ each.outputs | map(attribute="double") | join(",") }}'
              : '{{ each.outputs.d.double }}-{{ each.outputs.a.index }}',
        }),
      ],
      {
        groups: [
          forEach(
            'each',
            'find.output.items',
            setStep('work', { double: '{{ item.n * 2 }}', index: '{{ _index }}' }),
            { routes: [{ to: 'sum' }], ...extra },
          ),
        ],
        output: { total: '{{ sum.output.total }}' },
      },
    );

  it('runs one execution per item, with the loop variable and _index, outputs in item order', async () => {
    const dir = stateDir();
    const definition = items();
    const result = await startWorkflowRun(definition, engineOptions(dir, definition));
    expect(result).toMatchObject({ status: 'completed', output: { total: '2,4,6,8' } });
    // One execution per item. Steps are listed in the order they started, which for items running
    // side by side is the order their first writes landed (on PostgreSQL not always item order).
    expect(
      result.steps
        .filter((step) => step.key.includes('/each/0/'))
        .map((step) => step.key.split('/').at(-1))
        .sort(),
    ).toEqual(['0', '1', '2', '3']);
  });

  it('keys items by key_by (outputs become a dict) and never runs more than max_concurrent at once', async () => {
    const dir = stateDir();
    let running = 0;
    let peak = 0;
    const waiting: Array<() => void> = [];
    const tracked: StepExecutor = async (context) => {
      if (context.step.name !== 'work') return testSet(context);
      running++;
      peak = Math.max(peak, running);
      // An item waits for a second one to be running (not a sleep: on a busy PostgreSQL the second
      // item's row can take longer than any fixed pause to land), so two run side by side for sure.
      if (running < 2) await new Promise<void>((resolve) => waiting.push(resolve));
      else for (const wake of waiting.splice(0)) wake();
      running--;
      return testSet(context);
    };
    const definition = items({ keyBy: 'item.id', maxConcurrent: 2 });
    const result = await startWorkflowRun(
      definition,
      engineOptions(dir, definition, { _internal: { executors: { set: tracked } } }),
    );
    expect(result).toMatchObject({ status: 'completed', output: { total: '8-0' } });
    // One execution per item. Steps are listed in the order they started, which for items running
    // side by side is the order their first writes landed (on PostgreSQL not always item order).
    expect(
      result.steps
        .filter((step) => step.key.includes('/each/0/'))
        .map((step) => step.key.split('/').at(-1))
        .sort(),
    ).toEqual(['a', 'b', 'c', 'd']);
    expect(peak).toBe(2);
  });

  it('after a crash mid-group, reruns only the items that had not finished', async () => {
    const dir = stateDir();
    const counts = new Map<string, number>();
    const definition = items({ maxConcurrent: 1 });
    const crash = new Error('died mid-group');
    const options = engineOptions(dir, definition, { _internal: { executors: { set: counting(counts) } } });
    await expect(
      startWorkflowRun(definition, {
        ...options,
        runId: 'run-items',
        _internal: {
          ...options._internal,
          onBoundary: (boundary, key) => {
            if (boundary === 'step-effect' && key === 'run-items/each/0/2') throw crash;
          },
        },
      }),
    ).rejects.toBe(crash);
    const resumed = await resumeWorkflow({ ...options, runId: 'run-items' });
    expect(resumed).toMatchObject({ status: 'completed', output: { total: '2,4,6,8' } });
    expect(Object.fromEntries(counts)).toEqual({
      'find/0': 1,
      'each/0/0': 1,
      'each/0/1': 1,
      'each/0/2': 2,
      'each/0/3': 1,
      'sum/0': 1,
    });
  });
});

describe('max_iterations counts each for_each item and parallel member', () => {
  const many = (count: number, maxIterations: number) =>
    workflow(
      [
        setStep('start', { n: String(count) }, [{ to: 'each' }]),
        setStep('after', { items: '{{ each.outputs | length }}' }),
      ],
      {
        groups: [
          forEach('each', 'range(start.output.n)', setStep('work', { double: '{{ item * 2 }}' }), {
            routes: [{ to: 'after' }],
          }),
        ],
        limits: { maxIterations, budgetMode: 'enforce' },
        output: { items: '{{ after.output.items }}' },
      },
    );

  it('a for_each over 10,000 items under max_iterations 10 ends WORKFLOW_LIMIT before any item runs', async () => {
    const dir = stateDir();
    const counts = new Map<string, number>();
    const definition = many(10_000, 10);
    const result = await startWorkflowRun(
      definition,
      engineOptions(dir, definition, { _internal: { executors: { set: counting(counts) } } }),
    );
    expect(result).toMatchObject({ status: 'failed', errorCode: 'WORKFLOW_LIMIT' });
    expect(result.error).toMatch(/"each" has 10000 members to run and max_iterations \(10\) leaves 9/);
    expect([...counts.keys()]).toEqual(['start/0']);
  });

  it('a refused group runs whole once resumed with a higher limit', async () => {
    const dir = stateDir();
    const counts = new Map<string, number>();
    const definition = many(12, 10);
    const options = engineOptions(dir, definition, { _internal: { executors: { set: counting(counts) } } });
    const refused = await startWorkflowRun(definition, { ...options, runId: 'run-many' });
    expect(refused).toMatchObject({ status: 'failed', errorCode: 'WORKFLOW_LIMIT' });
    expect(refused.error).toMatch(/has 12 members to run and max_iterations \(10\) leaves 9/);
    // 1 + 12 fits, the step after the group does not: the group runs, then the run stops again.
    const group = await resumeWorkflow({ ...options, runId: 'run-many', limits: { maxIterations: 13 } });
    expect(group).toMatchObject({ status: 'failed', errorCode: 'WORKFLOW_LIMIT' });
    expect(group.error).toMatch(/reached max_iterations \(13\) before "after"/);
    const done = await resumeWorkflow({ ...options, runId: 'run-many', limits: { maxIterations: 14 } });
    expect(done).toMatchObject({ status: 'completed', output: { items: 12 } });
    expect([...counts.values()].every((count) => count === 1)).toBe(true);
    expect(counts.size).toBe(14);
  });

  it('a group resumed after a crash needs iterations only for the members that had not finished', async () => {
    const dir = stateDir();
    const counts = new Map<string, number>();
    const definition = many(12, 14);
    (definition.groups.get('each') as ForEachGroup).maxConcurrent = 1;
    const crash = new Error('died mid-group');
    const options = engineOptions(dir, definition, { _internal: { executors: { set: counting(counts) } } });
    await expect(
      startWorkflowRun(definition, {
        ...options,
        runId: 'run-crash',
        _internal: {
          ...options._internal,
          onBoundary: (boundary, key) => {
            if (boundary === 'step-effect' && key === 'run-crash/each/0/5') throw crash;
          },
        },
      }),
    ).rejects.toBe(crash);
    // 1 + 5 items counted; 7 to run and "after" fit 14 exactly (counting all 12 again would not).
    const resumed = await resumeWorkflow({ ...options, runId: 'run-crash' });
    expect(resumed).toMatchObject({ status: 'completed', output: { items: 12 } });
    expect(counts.get('each/0/4')).toBe(1);
    expect(counts.get('each/0/5')).toBe(2);
  });

  it('a parallel group needs one iteration per member', async () => {
    const dir = stateDir();
    const definition = workflow(
      [setStep('a', { x: '1' }), setStep('b', { x: '2' }), setStep('c', { x: '3' })],
      {
        groups: [parallel('all', ['a', 'b', 'c'])],
        entryPoint: 'all',
        limits: { maxIterations: 2, budgetMode: 'enforce' },
      },
    );
    const result = await startWorkflowRun(definition, engineOptions(dir, definition));
    expect(result).toMatchObject({ status: 'failed', errorCode: 'WORKFLOW_LIMIT' });
    expect(result.error).toMatch(/"all" has 3 members to run and max_iterations \(2\) leaves 2/);
  });
});
