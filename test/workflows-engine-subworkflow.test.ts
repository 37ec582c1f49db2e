import { describe, expect, it } from 'vitest';
import { WorkflowStore } from '../src/store/workflow-records.js';
import { startWorkflowRun } from '../src/workflows/engine-start.js';
import { answerGate, listWorkflowRuns, resumeWorkflow } from '../src/workflows/index.js';
import type { SubWorkflowStep, WorkflowDefinition } from '../src/workflows/model.js';
import type { StepExecutor } from '../src/workflows/step-executor.js';
import { engineOptions, gateStep, setStep, stateDir, testSet, workflow } from './workflows-engine-support.js';

// `type: workflow` steps: the child is a run of its own (rows, events, a parent id), advanced by the
// same process and resumed with its parent, so its finished steps are not run again either.

function subStep(
  name: string,
  file: string,
  inputMapping: Record<string, string>,
  routes = [{ to: 'after' }],
): SubWorkflowStep {
  return { type: 'workflow', name, workflow: file, inputMapping, routes, input: [] };
}

function family(childSteps: Parameters<typeof workflow>[0]) {
  const child = workflow(childSteps, {
    file: '/virtual/child.yaml',
    name: 'child',
    input: { x: { type: 'string', required: true } },
    output: { y: '{{ shout.output.y }}' },
  });
  const parent = workflow(
    [
      setStep('before', { v: '"hello"' }, [{ to: 'sub' }]),
      subStep('sub', 'child.yaml', { x: '{{ before.output.v }}' }),
      setStep('after', { got: '{{ sub.output.y }}' }),
    ],
    { output: { got: '{{ after.output.got }}' } },
  );
  const load = (file: string): WorkflowDefinition => (file.endsWith('child.yaml') ? child : parent);
  return { parent, child, load };
}

function counting(counts: Map<string, number>): StepExecutor {
  return async (context) => {
    counts.set(context.step.name, (counts.get(context.step.name) ?? 0) + 1);
    return testSet(context);
  };
}

describe('sub-workflows', () => {
  it('runs the child file as a child run and hands its output to the parent', async () => {
    const dir = stateDir();
    const { parent, load } = family([
      setStep('echo', { v: '{{ workflow.input.x }}' }, [{ to: 'shout' }]),
      setStep('shout', { y: '{{ echo.output.v | upper }}' }),
    ]);
    const result = await startWorkflowRun(parent, {
      ...engineOptions(dir, parent, { _internal: { load } }),
      runId: 'run-parent',
    });
    expect(result).toMatchObject({ status: 'completed', output: { got: 'HELLO' } });
    const store = await WorkflowStore.open({ stateDir: dir });
    const child = await store.findChildRun('run-parent', 'run-parent/sub/0');
    await store.close();
    expect(child).toMatchObject({
      id: 'run-parent.sub.0',
      status: 'completed',
      parentRunId: 'run-parent',
      workflow: 'child',
    });
    // `ls` shows top-level runs only.
    expect((await listWorkflowRuns({ stateDir: dir })).map((run) => run.id)).toEqual(['run-parent']);
  });

  it('resumes the child with its parent after a crash inside it: the child’s finished steps are not rerun', async () => {
    const dir = stateDir();
    const counts = new Map<string, number>();
    const { parent, load } = family([
      setStep('echo', { v: '{{ workflow.input.x }}' }, [{ to: 'shout' }]),
      setStep('shout', { y: '{{ echo.output.v }}!' }),
    ]);
    const crash = new Error('died inside the child');
    const options = engineOptions(dir, parent, { _internal: { load, executors: { set: counting(counts) } } });
    // An error inside the child fails the parent's step (a kill would leave both rows running instead).
    const failed = await startWorkflowRun(parent, {
      ...options,
      runId: 'run-nest',
      _internal: {
        ...options._internal,
        onBoundary: (boundary, key) => {
          if (boundary === 'step-start' && key === 'run-nest.sub.0/shout/0') throw crash;
        },
      },
    });
    expect(failed).toMatchObject({ status: 'failed', step: 'sub', error: 'died inside the child' });
    const resumed = await resumeWorkflow({ ...options, runId: 'run-nest' });
    expect(resumed).toMatchObject({ status: 'completed', output: { got: 'hello!' } });
    expect(Object.fromEntries(counts)).toEqual({ before: 1, echo: 1, shout: 1, after: 1 });
  });

  it('parks the parent at a gate inside the child; answering the parent answers the child’s gate', async () => {
    const dir = stateDir();
    const { parent, load } = family([
      gateStep('ok', [{ value: 'go', route: 'shout' }]),
      setStep('shout', { y: '{{ ok.output.selected }}:{{ workflow.input.x }}' }),
    ]);
    const options = engineOptions(dir, parent, { _internal: { load } });
    const parked = await startWorkflowRun(parent, { ...options, runId: 'run-gated' });
    expect(parked).toMatchObject({
      status: 'waiting',
      step: 'sub',
      gate: { step: 'ok', options: [{ value: 'go' }] },
    });
    const done = await answerGate({ ...options, runId: 'run-gated', choice: 'go' });
    expect(done).toMatchObject({ status: 'completed', output: { got: 'go:hello' } });
  });
});
