import { describe, expect, it } from 'vitest';
import { WorkflowStore } from '../src/store/workflow-records.js';
import { startWorkflowRun } from '../src/workflows/engine-start.js';
import { readWorkflowEvents, resumeWorkflow, workflowStatus } from '../src/workflows/index.js';
import type { StepExecutor } from '../src/workflows/step-executor.js';
import { engineOptions, parallel, setStep, stateDir, testSet, workflow } from './workflows-engine-support.js';

// The interpreter over a real SQLite ledger: steps run in route order, every boundary is recorded, and
// a resumed run replays finished steps from the ledger instead of running them again.

/** A `set` executor that counts how often each step really ran. */
function countingSet(counts: Map<string, number>): StepExecutor {
  return async (context) => {
    counts.set(context.step.name, (counts.get(context.step.name) ?? 0) + 1);
    return testSet(context);
  };
}

describe('workflow engine: a linear run', () => {
  it('runs steps along their routes, renders the workflow output and records every step and event', async () => {
    const dir = stateDir();
    const definition = workflow(
      [
        setStep('draft', { n: '{{ workflow.input.start + 1 }}' }, [
          { to: 'big', when: '{{ output.n > 5 }}' },
          { to: 'small' },
        ]),
        setStep('big', { size: '"big"' }),
        setStep('small', { size: 'small', seen: '{{ draft.output.n }}' }),
      ],
      {
        input: { start: { type: 'number', required: true } },
        output: { size: '{{ small.output.size }}', n: '{{ draft.output.n }}' },
      },
    );
    const result = await startWorkflowRun(definition, {
      ...engineOptions(dir, definition),
      inputs: { start: '1' },
    });
    expect(result).toMatchObject({ status: 'completed', output: { size: 'small', n: 2 }, step: 'small' });
    expect(result.steps.map((step) => [step.step, step.status, step.attempts])).toEqual([
      ['draft', 'completed', 1],
      ['small', 'completed', 1],
    ]);
    const events = (await readWorkflowEvents(result.id, { stateDir: dir })).map(
      (event) => `${event.type}:${event.step ?? ''}`,
    );
    expect(events).toEqual([
      'run-start:',
      'step-start:draft',
      'step-end:draft',
      'step-start:small',
      'step-end:small',
      'run-end:',
    ]);
    expect(await workflowStatus(result.id, { stateDir: dir })).toEqual(result);
  });

  it('hands every event to onEvent as it is appended, the same the log keeps', async () => {
    const dir = stateDir();
    const heard: string[] = [];
    const definition = workflow([setStep('a', { x: '1' }, [{ to: 'b' }]), setStep('b', {})]);
    const result = await startWorkflowRun(
      definition,
      engineOptions(dir, definition, { onEvent: (event) => heard.push(`${event.seq}:${event.type}`) }),
    );
    const logged = (await readWorkflowEvents(result.id, { stateDir: dir })).map(
      (event) => `${event.seq}:${event.type}`,
    );
    expect(heard).toEqual(logged);
    expect(logged).toHaveLength(6);
  });

  it('ends the run with a terminate step’s status and output_template in place of the workflow output', async () => {
    const dir = stateDir();
    const stop: StepExecutor = async (context) =>
      context.step.name === 'stop'
        ? {
            status: 'terminated',
            terminateStatus: 'failed',
            costUsd: 0,
            error: { code: 'WORKFLOW_FAILED', message: 'nothing to do' },
            finalOutput: { reason: 'empty' },
          }
        : testSet(context);
    const definition = workflow(
      [setStep('a', {}, [{ to: 'stop' }]), setStep('stop', {}, [{ to: 'never' }])],
      {
        output: { never: '{{ never.output }}' },
      },
    );
    const result = await startWorkflowRun(
      definition,
      engineOptions(dir, definition, { _internal: { executors: { set: stop } } }),
    );
    expect(result).toMatchObject({
      status: 'failed',
      error: 'nothing to do',
      output: { reason: 'empty' },
      step: 'stop',
    });
  });

  it('ends the run after a step without routes, fails one whose routes all miss (as Conductor), and fails a route to nowhere', async () => {
    const dir = stateDir();
    const ends = workflow([setStep('only', { x: '1' })]);
    expect(await startWorkflowRun(ends, engineOptions(dir, ends))).toMatchObject({ status: 'completed' });
    const misses = workflow([
      setStep('only', { x: '1' }, [{ to: 'never', when: '{{ output.x == 2 }}' }]),
      setStep('never', {}),
    ]);
    const missed = await startWorkflowRun(misses, engineOptions(dir, misses));
    expect(missed).toMatchObject({ status: 'failed', errorCode: 'WORKFLOW_FAILED', step: 'only' });
    expect(missed.error).toBe('/virtual/test.yaml: step "only": none of its 1 routes matched its output');
    const nowhere = workflow([setStep('only', { x: '1' }, [{ to: 'missing' }])]);
    const failed = await startWorkflowRun(nowhere, engineOptions(dir, nowhere));
    expect(failed).toMatchObject({ status: 'failed', errorCode: 'WORKFLOW_INVALID' });
    expect(failed.error).toMatch(/route leads to "missing"/);
  });

  it('hands each step the scope of its context mode (explicit: only its inputs)', async () => {
    const dir = stateDir();
    const definition = workflow(
      [
        setStep('a', { x: '1', y: '2' }, [{ to: 'b' }]),
        setStep('b', { seen: '{{ a.output.x }}-{{ a.output.y is defined }}' }, [{ to: 'c' }], {
          input: ['a.output.x'],
        }),
        setStep('c', { last: '{{ b.output.seen }}' }, [], { input: ['b.output', 'z.output?'] }),
      ],
      { contextMode: 'explicit', output: { last: '{{ c.output.last }}' } },
    );
    const result = await startWorkflowRun(definition, engineOptions(dir, definition));
    expect(result.output).toEqual({ last: '1-false' });
  });
});

describe('workflow engine: a route reads its own step by name (as Conductor)', () => {
  it('routes on `<step>.output` of the step that just ran, and a group on `<group>.errors`', async () => {
    const dir = stateDir();
    const definition = workflow(
      [
        setStep('reviewer', { verdict: '"ok"' }, [
          { to: 'fix', when: "{{ reviewer.output.verdict != 'ok' }}" },
          { to: 'checks', when: "{{ reviewer.output.verdict == 'ok' }}" },
        ]),
        setStep('fix', {}),
        setStep('lint', { ok: 'yes' }),
        setStep('done', { verdict: '{{ reviewer.output.verdict }}' }),
      ],
      {
        groups: [
          parallel('checks', ['lint'], {
            routes: [{ to: 'done', when: '{{ checks.errors | length == 0 and checks.outputs.lint.ok }}' }],
          }),
        ],
        output: { verdict: '{{ done.output.verdict }}' },
      },
    );
    const result = await startWorkflowRun(definition, engineOptions(dir, definition));
    expect(result).toMatchObject({ status: 'completed', output: { verdict: 'ok' } });
    expect(result.steps.map((step) => step.step)).not.toContain('fix');
  });

  it('loops back on its own output until it says stop, the latest visit deciding', async () => {
    const dir = stateDir();
    const definition = workflow(
      [
        setStep('draft', { round: '{{ context.history | length }}' }, [
          { to: 'draft', when: '{{ draft.output.round < 3 }}' },
          { to: '$end' },
        ]),
      ],
      { output: { rounds: '{{ draft.output.round }}' } },
    );
    const result = await startWorkflowRun(definition, engineOptions(dir, definition));
    expect(result).toMatchObject({ status: 'completed', output: { rounds: 3 } });
    expect(result.steps.map((step) => step.key.split('/').slice(1).join('/'))).toEqual([
      'draft/0',
      'draft/1',
      'draft/2',
      'draft/3',
    ]);
  });
});

describe('workflow engine: replay and fencing', () => {
  it('resumes an interrupted run at the interrupted step: finished steps replayed, not run again', async () => {
    const dir = stateDir();
    const counts = new Map<string, number>();
    const definition = workflow(
      [
        setStep('a', { v: '"A"' }, [{ to: 'b' }]),
        setStep('b', { v: '{{ a.output.v }}B' }, [{ to: 'c' }]),
        setStep('c', { v: '{{ b.output.v }}C' }),
      ],
      { output: { v: '{{ c.output.v }}' } },
    );
    const crash = new Error('process died');
    const options = engineOptions(dir, definition, {
      _internal: {
        executors: { set: countingSet(counts) },
        onBoundary: (boundary, key) => {
          if (boundary === 'step-effect' && key.endsWith('/b/0')) throw crash;
        },
      },
    });
    await expect(startWorkflowRun(definition, { ...options, runId: 'run-replay' })).rejects.toBe(crash);
    expect(
      (await workflowStatus('run-replay', { stateDir: dir })).steps.map((step) => [step.step, step.status]),
    ).toEqual([
      ['a', 'completed'],
      ['b', 'interrupted'],
    ]);
    const resumed = await resumeWorkflow({
      ...engineOptions(dir, definition, { _internal: { executors: { set: countingSet(counts) } } }),
      runId: 'run-replay',
    });
    expect(resumed).toMatchObject({ status: 'completed', output: { v: 'ABC' } });
    expect(Object.fromEntries(counts)).toEqual({ a: 1, b: 2, c: 1 });
    expect(resumed.steps.map((step) => [step.step, step.attempts])).toEqual([
      ['a', 1],
      ['b', 2],
      ['c', 1],
    ]);
  });

  it('hands a rerun execution the progress notes its interrupted attempt recorded', async () => {
    const dir = stateDir();
    const seen: Array<{ attempt: number; previous: unknown }> = [];
    const noting: StepExecutor = async (context) => {
      seen.push({ attempt: context.attempt, previous: context.previous });
      await context.recordProgress({ branch: `wf/${context.key}`, attempt: context.attempt });
      return testSet(context);
    };
    const definition = workflow([setStep('a', { v: '1' })]);
    const crash = new Error('killed mid-step');
    const options = engineOptions(dir, definition, { _internal: { executors: { set: noting } } });
    await expect(
      startWorkflowRun(definition, {
        ...options,
        runId: 'run-notes',
        _internal: {
          ...options._internal,
          onBoundary: (boundary) => {
            if (boundary === 'step-effect') throw crash;
          },
        },
      }),
    ).rejects.toBe(crash);
    await resumeWorkflow({ ...options, runId: 'run-notes' });
    expect(seen).toEqual([
      { attempt: 1, previous: undefined },
      { attempt: 2, previous: { branch: 'wf/run-notes/a/0', attempt: 1 } },
    ]);
  });

  it('records nothing for a process that lost the run: its completion is refused with WORKFLOW_LOST', async () => {
    const dir = stateDir();
    const definition = workflow([setStep('a', { v: '1' }, [{ to: 'b' }]), setStep('b', { v: '2' })]);
    const thief: StepExecutor = async (context) => {
      if (context.step.name === 'b') {
        // Another process takes the run over while this one is inside step b.
        const store = await WorkflowStore.open({ stateDir: dir });
        const owner = (await store.getRun(context.runId))?.owner;
        await store.claimRun(context.runId, owner?.token, { pid: 1, host: 'elsewhere', token: 'stolen' });
        await store.close();
      }
      return testSet(context);
    };
    const options = engineOptions(dir, definition, { _internal: { executors: { set: thief } } });
    await expect(startWorkflowRun(definition, { ...options, runId: 'run-lost' })).rejects.toMatchObject({
      code: 'WORKFLOW_LOST',
    });
    const store = await WorkflowStore.open({ stateDir: dir });
    const run = await store.getRun('run-lost');
    expect(run).toMatchObject({
      status: 'running',
      currentStep: 'b',
      iterations: 1,
      owner: { token: 'stolen' },
    });
    expect((await store.steps('run-lost')).map((row) => [row.step, row.status])).toEqual([
      ['a', 'completed'],
      ['b', 'running'],
    ]);
    expect((await store.events('run-lost')).map((event) => event.type).at(-1)).toBe('step-start');
    await store.close();
  });
});

describe('workflow engine: loops and limits', () => {
  const loop = (extra: { maxVisits?: number; onCap?: string; maxIterations?: number }) =>
    workflow(
      [
        setStep('review', { round: '{{ context.history | length }}' }, [{ to: 'review' }], {
          ...(extra.maxVisits === undefined ? {} : { maxVisits: extra.maxVisits }),
          ...(extra.onCap === undefined ? {} : { onCap: extra.onCap }),
        }),
        setStep('escalate', { after: '{{ review.output.round }}' }),
      ],
      {
        limits: { maxIterations: extra.maxIterations ?? 10, budgetMode: 'enforce' },
        output: { after: '{{ escalate.output.after }}' },
      },
    );

  it('leaves a loop for on_cap once max_visits is reached', async () => {
    const dir = stateDir();
    const definition = loop({ maxVisits: 3, onCap: 'escalate' });
    const result = await startWorkflowRun(definition, engineOptions(dir, definition));
    expect(result).toMatchObject({ status: 'completed', output: { after: 2 } });
    expect(result.steps.map((step) => step.key.split('/').slice(1).join('/'))).toEqual([
      'review/0',
      'review/1',
      'review/2',
      'escalate/0',
    ]);
  });

  it('fails with WORKFLOW_LIMIT at max_visits without on_cap', async () => {
    const dir = stateDir();
    const definition = loop({ maxVisits: 2 });
    const result = await startWorkflowRun(definition, engineOptions(dir, definition));
    expect(result).toMatchObject({ status: 'failed', errorCode: 'WORKFLOW_LIMIT', step: 'review' });
    expect(result.error).toMatch(/max_visits \(2\)/);
  });

  it('fails a run whose on_cap targets have all reached their caps instead of looping', async () => {
    const dir = stateDir();
    const definition = workflow([
      setStep('a', {}, [{ to: 'a' }], { maxVisits: 1, onCap: 'b' }),
      setStep('b', {}, [{ to: 'b' }], { maxVisits: 1, onCap: 'a' }),
    ]);
    const result = await startWorkflowRun(definition, engineOptions(dir, definition));
    expect(result).toMatchObject({ status: 'failed', errorCode: 'WORKFLOW_LIMIT' });
    expect(result.error).toMatch(/every on_cap target from "[ab]" has reached its max_visits/);
  });

  it('ends a run at max_iterations, resumable when the limit is raised', async () => {
    const dir = stateDir();
    const definition = loop({ maxVisits: 6, onCap: 'escalate', maxIterations: 4 });
    const stopped = await startWorkflowRun(definition, {
      ...engineOptions(dir, definition),
      runId: 'run-iter',
    });
    expect(stopped).toMatchObject({ status: 'failed', errorCode: 'WORKFLOW_LIMIT' });
    expect(stopped.error).toMatch(/max_iterations \(4\)/);
    expect(stopped.steps).toHaveLength(4);
    const same = await resumeWorkflow({ ...engineOptions(dir, definition), runId: 'run-iter' });
    expect(same).toMatchObject({ status: 'failed', errorCode: 'WORKFLOW_LIMIT' });
    const raised = await resumeWorkflow({
      ...engineOptions(dir, definition),
      runId: 'run-iter',
      limits: { maxIterations: 20 },
    });
    expect(raised).toMatchObject({ status: 'completed', output: { after: 5 } });
    expect(raised.steps).toHaveLength(7);
  });

  it('ends a run at timeout_seconds (the running step is aborted), and a resume starts a fresh window', async () => {
    const dir = stateDir();
    let block = true;
    const slow: StepExecutor = async (context) => {
      if (block && context.step.name === 'wait') {
        await new Promise((resolve) => context.signal.addEventListener('abort', resolve, { once: true }));
        return { status: 'failed', costUsd: 0, error: { code: 'ABORTED', message: 'aborted' } };
      }
      return testSet(context);
    };
    const definition = workflow([setStep('first', {}, [{ to: 'wait' }]), setStep('wait', { done: 'yes' })], {
      limits: { maxIterations: 10, timeoutSeconds: 0.3, budgetMode: 'enforce' },
    });
    const options = engineOptions(dir, definition, { _internal: { executors: { set: slow } } });
    const stopped = await startWorkflowRun(definition, { ...options, runId: 'run-timeout' });
    expect(stopped).toMatchObject({ status: 'failed', errorCode: 'WORKFLOW_LIMIT', step: 'wait' });
    expect(stopped.steps.map((step) => [step.step, step.status])).toEqual([
      ['first', 'completed'],
      ['wait', 'failed'],
    ]);
    block = false;
    const resumed = await resumeWorkflow({ ...options, runId: 'run-timeout' });
    expect(resumed).toMatchObject({ status: 'completed' });
    expect(resumed.steps.map((step) => [step.step, step.attempts])).toEqual([
      ['first', 1],
      ['wait', 2],
    ]);
  });
});

describe('workflow engine: run keys, edited files, dry runs', () => {
  it('resumes the run a run_key names instead of starting a second one', async () => {
    const dir = stateDir();
    const counts = new Map<string, number>();
    const definition = workflow([setStep('only', { issue: '{{ workflow.input.issue }}' })], {
      input: { issue: { type: 'number', required: true } },
      runKey: 'issue-{{ workflow.input.issue }}',
    });
    const options = engineOptions(dir, definition, {
      _internal: { executors: { set: countingSet(counts) } },
    });
    const first = await startWorkflowRun(definition, { ...options, inputs: { issue: 12 } });
    const again = await startWorkflowRun(definition, { ...options, inputs: { issue: '12' } });
    const other = await startWorkflowRun(definition, { ...options, inputs: { issue: 13 } });
    expect(again.id).toBe(first.id);
    expect(other.id).not.toBe(first.id);
    expect(counts.get('only')).toBe(2);
  });

  it('refuses to resume under an edited file unless migrate is given', async () => {
    const dir = stateDir();
    const original = workflow([setStep('a', { x: '1' }, [{ to: 'b' }]), setStep('b', { fail: 'stop here' })]);
    const failed = await startWorkflowRun(original, { ...engineOptions(dir, original), runId: 'run-edit' });
    expect(failed).toMatchObject({ status: 'failed', errorCode: 'WORKFLOW_FAILED', error: 'stop here' });
    const edited = workflow([setStep('a', { x: '1' }, [{ to: 'b' }]), setStep('b', { y: '2' })]);
    await expect(resumeWorkflow({ ...engineOptions(dir, edited), runId: 'run-edit' })).rejects.toMatchObject({
      code: 'WORKFLOW_CHANGED',
      message: expect.stringMatching(/changed since workflow run run-edit started/),
    });
    const migrated = await resumeWorkflow({
      ...engineOptions(dir, edited),
      runId: 'run-edit',
      migrate: true,
    });
    expect(migrated).toMatchObject({ status: 'completed' });
    expect(migrated.steps.map((step) => [step.step, step.attempts])).toEqual([
      ['a', 1],
      ['b', 2],
    ]);
  });

  it('renders the entry step in a dry run and records nothing', async () => {
    const dir = stateDir();
    const definition = workflow(
      [{ ...setStep('a', {}), type: 'agent', prompt: 'Fix {{ workflow.input.issue }}' } as never],
      {
        input: { issue: { type: 'string', required: true } },
      },
    );
    const result = await startWorkflowRun(definition, {
      ...engineOptions(dir, definition),
      inputs: { issue: '#12' },
      dryRun: true,
    });
    expect(result).toMatchObject({ status: 'running', step: 'a', output: { prompt: 'Fix #12' } });
  });
});

describe('workflow engine: MCP servers', () => {
  it('keeps declared MCP servers off unless a step opts in or allowMcp is given, and says which are off', async () => {
    const server = { type: 'stdio' as const, command: 'node', args: [], env: {}, headers: {}, tools: ['*'] };
    const seen: Record<string, string[]> = {};
    const recordServers: StepExecutor = async (context) => {
      seen[context.step.name] = Object.keys(context.mcpServers).sort();
      return { status: 'completed', output: {}, costUsd: 0 };
    };
    const definition = workflow(
      [
        { ...setStep('opted', {}, [{ to: 'plain' }]), type: 'agent', prompt: 'p', mcp: ['shout'] },
        { ...setStep('plain', {}), type: 'agent', prompt: 'p' },
      ] as never,
      // A provider of its own: Conductor's default (copilot) would add the line saying where it runs.
      { runtime: { provider: 'claude-agent-sdk', mcpServers: { shout: server, files: server } } },
    );
    const strict = await startWorkflowRun(
      definition,
      engineOptions(stateDir(), definition, { _internal: { executors: { agent: recordServers } } }),
    );
    expect(seen).toEqual({ opted: ['shout'], plain: [] });
    expect(strict.warnings).toContain(
      'MCP servers files are off in workflow steps: pass --allow-mcp, or opt a step in with mcp: [files]',
    );
    const allowed = await startWorkflowRun(
      definition,
      engineOptions(stateDir(), definition, {
        allowMcp: true,
        _internal: { executors: { agent: recordServers } },
      }),
    );
    expect(seen).toEqual({ opted: ['files', 'shout'], plain: ['files', 'shout'] });
    expect(allowed.warnings ?? []).toEqual([]);
  });
});
