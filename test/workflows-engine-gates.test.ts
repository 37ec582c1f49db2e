import { describe, expect, it } from 'vitest';
import { startWorkflowRun } from '../src/workflows/engine-start.js';
import { answerGate, readWorkflowEvents, resumeWorkflow, workflowStatus } from '../src/workflows/index.js';
import { engineOptions, gateStep, setStep, stateDir, workflow } from './workflows-engine-support.js';
import { waitFor } from './helpers/wait-for.js';

// Durable gates: an answer is a ledger row, written by any process, before or after the run reaches the
// gate. With no answer the run parks (status waiting) and the API returns.

const review = (extra: Parameters<typeof gateStep>[2] = {}) =>
  workflow(
    [
      setStep('draft', { text: '"v1"' }, [{ to: 'approve' }]),
      gateStep(
        'approve',
        [
          { value: 'ship', route: 'ship' },
          { value: 'revise', route: 'draft', promptFor: 'notes' },
        ],
        extra,
      ),
      setStep('ship', { choice: '{{ approve.output.selected }}' }, [{ to: 'confirm' }]),
      gateStep('confirm', [{ value: 'yes', route: '$end' }]),
    ],
    { output: { choice: '{{ ship.output.choice }}' } },
  );

describe('human gates', () => {
  it('parks the run at a gate with no answer, and an answer recorded later continues it', async () => {
    const dir = stateDir();
    const definition = review();
    const parked = await startWorkflowRun(definition, {
      ...engineOptions(dir, definition),
      runId: 'run-gate',
    });
    expect(parked).toMatchObject({
      status: 'waiting',
      step: 'approve',
      gate: {
        step: 'approve',
        prompt: 'Decide approve',
        options: [{ value: 'ship' }, { value: 'revise', promptFor: 'notes' }],
      },
    });
    expect((await workflowStatus('run-gate', { stateDir: dir })).status).toBe('waiting');
    const next = await answerGate({
      ...engineOptions(dir, definition),
      runId: 'run-gate',
      choice: 'ship',
      answeredBy: 'ana',
    });
    expect(next).toMatchObject({ status: 'waiting', step: 'confirm' });
    const events = await readWorkflowEvents('run-gate', { stateDir: dir });
    expect(events.find((event) => event.type === 'run-resume')).toMatchObject({ data: { from: 'waiting' } });
    expect(events.find((event) => event.type === 'gate-answer')).toMatchObject({
      step: 'approve',
      data: { choice: 'ship', answeredBy: 'ana' },
    });
    const done = await answerGate({ ...engineOptions(dir, definition), runId: 'run-gate', choice: 'yes' });
    expect(done).toMatchObject({ status: 'completed', output: { choice: 'ship' } });
  });

  it('keeps an answer given before the run reaches the gate and uses it there', async () => {
    const dir = stateDir();
    const definition = review();
    await startWorkflowRun(definition, { ...engineOptions(dir, definition), runId: 'run-early' });
    const recorded = await answerGate({
      ...engineOptions(dir, definition),
      runId: 'run-early',
      step: 'confirm',
      choice: 'yes',
      continue: false,
    });
    expect(recorded).toMatchObject({ status: 'waiting', step: 'approve' });
    const done = await answerGate({ ...engineOptions(dir, definition), runId: 'run-early', choice: 'ship' });
    expect(done).toMatchObject({ status: 'completed' });
    expect(done.steps.map((step) => step.step)).toEqual(['draft', 'approve', 'ship', 'confirm']);
  });

  it('the first answer recorded wins: a second is refused with GATE_TAKEN naming who answered what and when', async () => {
    const dir = stateDir();
    const definition = review();
    await startWorkflowRun(definition, { ...engineOptions(dir, definition), runId: 'run-twice' });
    const options = { ...engineOptions(dir, definition), runId: 'run-twice', continue: false };
    // Two answers to the parked gate, neither continuing the run: the second used to replace the first.
    await answerGate({ ...options, choice: 'revise', text: 'shorter', answeredBy: 'ana' });
    const second = answerGate({ ...options, choice: 'ship', answeredBy: 'bo' });
    await expect(second).rejects.toMatchObject({
      code: 'GATE_TAKEN',
      message: expect.stringMatching(
        /^gate "approve" of workflow run run-twice was already answered "revise" by ana at \d{4}-.+Z; "ship" was not recorded$/,
      ) as string,
      details: { step: 'approve', choice: 'revise', answeredBy: 'ana', visit: 0 },
    });
    // Two answers given before the run reaches a gate: the first is kept for it, the second refused.
    await answerGate({ ...options, step: 'confirm', choice: 'yes', answeredBy: 'cy' });
    await expect(
      answerGate({ ...options, step: 'confirm', choice: 'yes', answeredBy: 'di' }),
    ).rejects.toMatchObject({ code: 'GATE_TAKEN', details: { step: 'confirm', answeredBy: 'cy' } });
    // The run takes the first answer ("revise": back to draft, then the gate again), not the second.
    const resumed = await resumeWorkflow({ ...engineOptions(dir, definition), runId: 'run-twice' });
    expect(resumed).toMatchObject({ status: 'waiting', step: 'approve' });
    expect(resumed.steps.map((step) => step.key.split('/').slice(1).join('/'))).toEqual([
      'draft/0',
      'approve/0',
      'draft/1',
      'approve/1',
    ]);
    const events = await readWorkflowEvents('run-twice', { stateDir: dir });
    expect(
      events.filter((event) => event.type === 'gate-answer').map((event) => event.data?.['answeredBy']),
    ).toEqual(['ana', 'cy']);
  });

  it('routes by the chosen option and passes its prompt_for text on', async () => {
    const dir = stateDir();
    const definition = review();
    await startWorkflowRun(definition, { ...engineOptions(dir, definition), runId: 'run-loop' });
    const again = await answerGate({
      ...engineOptions(dir, definition),
      runId: 'run-loop',
      choice: 'revise',
      text: 'shorter',
    });
    expect(again).toMatchObject({ status: 'waiting', step: 'approve' });
    expect(again.steps.map((step) => step.key.split('/').slice(1).join('/'))).toEqual([
      'draft/0',
      'approve/0',
      'draft/1',
      'approve/1',
    ]);
    const events = await readWorkflowEvents('run-loop', { stateDir: dir });
    expect(
      events.filter((event) => event.type === 'gate-taken').map((event) => event.data?.['choice']),
    ).toEqual(['revise']);
  });

  it('refuses an answer that is not one of the options, naming them', async () => {
    const dir = stateDir();
    const definition = review();
    await startWorkflowRun(definition, { ...engineOptions(dir, definition), runId: 'run-bad' });
    await expect(
      answerGate({ ...engineOptions(dir, definition), runId: 'run-bad', choice: 'maybe' }),
    ).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: 'gate "approve" has no option "maybe"',
      hint: 'choose one of: ship, revise',
    });
  });

  it('takes the first option of every gate with skipGates', async () => {
    const dir = stateDir();
    const definition = review();
    const result = await startWorkflowRun(definition, { ...engineOptions(dir, definition), skipGates: true });
    expect(result).toMatchObject({ status: 'completed', output: { choice: 'ship' } });
  });

  it('with a timeout, waits for an answer and takes the default when none comes', async () => {
    const dir = stateDir();
    const definition = workflow(
      [
        gateStep(
          'approve',
          [
            { value: 'ship', route: 'ship' },
            { value: 'stop', route: '$end' },
          ],
          { timeoutSeconds: 0.3, default: 'stop' },
        ),
        setStep('ship', {}),
      ],
      {},
    );
    const result = await startWorkflowRun(definition, engineOptions(dir, definition));
    expect(result).toMatchObject({ status: 'completed', step: 'approve' });
    const taken = (await readWorkflowEvents(result.id, { stateDir: dir })).find(
      (event) => event.type === 'gate-taken',
    );
    expect(taken?.data).toMatchObject({ choice: 'stop', answeredBy: 'timeout' });
    // The default taken at the timeout is the gate's answer: a later one is refused, naming it.
    await expect(
      answerGate({ ...engineOptions(dir, definition), runId: result.id, step: 'approve', choice: 'ship' }),
    ).rejects.toMatchObject({ code: 'GATE_TAKEN', details: { choice: 'stop', answeredBy: 'timeout' } });
  });

  it('with a timeout, takes an answer another caller records while this process waits at the gate', async () => {
    const dir = stateDir();
    const definition = workflow([
      gateStep(
        'approve',
        [
          { value: 'stop', route: '$end' },
          { value: 'ship', route: 'ship' },
        ],
        { timeoutSeconds: 60, default: 'stop' },
      ),
      setStep('ship', { shipped: 'yes' }),
    ]);
    const started: string[] = [];
    const running = startWorkflowRun(definition, {
      ...engineOptions(dir, definition),
      runId: 'run-wait',
      onEvent: (event) => started.push(event.type),
    });
    await waitFor(() => started.includes('step-start'));
    // The run's owner is alive and waiting: the answer is recorded, and the owner takes it.
    const recorded = await answerGate({
      ...engineOptions(dir, definition),
      runId: 'run-wait',
      step: 'approve',
      choice: 'ship',
    });
    expect(recorded).toMatchObject({ status: 'running', takenByOtherProcess: true });
    expect(await running).toMatchObject({ status: 'completed', step: 'ship' });
  });

  it('an answer whose waiting owner ends the run before this caller takes it leaves the ended run as it is', async () => {
    const dir = stateDir();
    const definition = workflow([
      gateStep(
        'approve',
        [
          { value: 'ship', route: 'ship' },
          { value: 'shelve', route: 'shelved' },
        ],
        { timeoutSeconds: 60, default: 'ship' },
      ),
      setStep('ship', { shipped: 'yes' }),
      setStep('shelved', { fail: '"shelved"' }),
    ]);
    const started: string[] = [];
    const running = startWorkflowRun(definition, {
      ...engineOptions(dir, definition),
      runId: 'run-race',
      onEvent: (event) => started.push(event.type),
    });
    await waitFor(() => started.includes('step-start'));
    // The caller reads the run (running), records the answer, then loads the file again to continue:
    // by then the owner has taken the answer and failed the run, which must stay failed, not be resumed.
    let loads = 0;
    const answered = await answerGate({
      ...engineOptions(dir, definition, {
        _internal: {
          load: async () => {
            loads += 1;
            if (loads === 2) await running;
            return definition;
          },
        },
      }),
      runId: 'run-race',
      step: 'approve',
      choice: 'shelve',
    });
    expect(loads).toBe(2);
    expect((await running).status).toBe('failed');
    // `workflow gate` then says the owner took the answer and exits 0, not with the run's failure.
    expect(answered).toMatchObject({ status: 'failed', takenByOtherProcess: true });
    const events = await readWorkflowEvents('run-race', { stateDir: dir });
    expect(events.filter((event) => event.type === 'run-resume')).toEqual([]);
    expect((await workflowStatus('run-race', { stateDir: dir })).status).toBe('failed');
  });
});
