import { describe, expect, it } from 'vitest';
import { startWorkflowRun } from '../src/workflows/engine-start.js';
import { parseWorkflow } from '../src/workflows/format/index.js';
import { answerGate, readWorkflowEvents, workflowStatus } from '../src/workflows/index.js';
import type { WorkflowDefinition } from '../src/workflows/model.js';
import { engineOptions, stateDir } from './workflows-engine-support.js';

/** The engine with every real executor (the support's stand-ins read only `values:` of a set step). */
const options = (dir: string, definition: WorkflowDefinition) =>
  engineOptions(dir, definition, { _internal: { executors: {} } });

// Conductor's `type: questions` as one durable gate: the run parks showing every question, one answer
// gives them all, checked before it is recorded, and the output has Conductor's fields.

const INLINE = `
workflow:
  name: ask
  entry_point: ask
  input:
    topic: { type: string }
agents:
  - name: ask
    type: questions
    prompt: 'Before I plan {{ workflow.input.topic }}:'
    questions:
      - text: 'Who reviews the {{ workflow.input.topic }} plan?'
        choices: [ana, ben]
        allow_free_text: false
        required: true
      - id: deadline
        text: By when?
        default: next week
      - text: Anything else?
    allow_abort: true
    abort_route: stopped
    routes:
      - to: plan
        when: '{{ ask.output.answered_any }}'
      - to: $end
  - name: plan
    type: set
    value: '{{ ask.output.answers.q1 }} by {{ ask.output.answers.deadline }}'
  - name: stopped
    type: set
    value: 'stopped, {{ ask.output.outcome }}'
output:
  plan: '{% if plan is defined %}{{ plan.output }}{% else %}{{ stopped.output }}{% endif %}'
`;

// The list an earlier step wrote, here given as an input: strings and objects, text with braces in it.
const SOURCED = `
workflow:
  name: asked
  entry_point: ask
  input:
    open_questions: { type: array }
agents:
  - name: ask
    type: questions
    source: workflow.input.open_questions
    allow_skip: false
    routes: [{ to: $end }]
output:
  transcript: '{{ ask.output.transcript }}'
`;

const OPEN_QUESTIONS = ['Which database?', { question: 'Cache {{ it }}?', choices: ['yes', 'no'] }];

/** The whole output of the questions step, as the workflow's output. */
const WHOLE = `${INLINE.split('output:\n  plan:')[0]}output:\n  whole: '{{ ask.output | tojson }}'\n`;

/** A template output that is JSON text comes back as text or as the value: either way, the value. */
const valueOf = (raw: unknown): unknown => (typeof raw === 'string' ? JSON.parse(raw) : raw);

function inline() {
  return parseWorkflow(INLINE, '/virtual/ask.yaml');
}

describe('type: questions', () => {
  it('parks showing every question rendered, takes one answer for all, and routes on answered_any', async () => {
    const dir = stateDir();
    const definition = inline();
    const parked = await startWorkflowRun(definition, {
      ...options(dir, definition),
      runId: 'run-ask',
      inputs: { topic: 'caching' },
    });
    expect(parked).toMatchObject({
      status: 'waiting',
      gate: {
        step: 'ask',
        prompt: 'Before I plan caching:',
        options: [],
        questions: [
          { id: 'q1', text: 'Who reviews the caching plan?', choices: ['ana', 'ben'], required: true },
          { id: 'deadline', text: 'By when?', default: 'next week', required: false },
          { id: 'q3', text: 'Anything else?', choices: [] },
        ],
      },
    });
    expect((await workflowStatus('run-ask', { stateDir: dir })).gate?.questions).toHaveLength(3);

    const done = await answerGate({
      ...options(dir, definition),
      runId: 'run-ask',
      choice: 'answer',
      answers: { q1: 'ben' },
      answeredBy: 'ana',
    });
    expect(done).toMatchObject({ status: 'completed', output: { plan: 'ben by next week' } });
    const ask = done.steps.find((step) => step.step === 'ask');
    expect(ask?.status).toBe('completed');
    const events = await readWorkflowEvents('run-ask', { stateDir: dir });
    expect(events.find((event) => event.type === 'gate-taken')).toMatchObject({
      step: 'ask',
      data: { choice: 'answer', outcome: 'completed', answeredCount: 2, skippedCount: 1, answeredBy: 'ana' },
    });
  });

  it('gives Conductor’s output: answers with defaults, items with their source, transcript, counts, outcome', async () => {
    const dir = stateDir();
    const definition = parseWorkflow(WHOLE, '/virtual/ask.yaml');
    await startWorkflowRun(definition, {
      ...options(dir, definition),
      runId: 'run-out',
      inputs: { topic: 't' },
    });
    const done = await answerGate({
      ...options(dir, definition),
      runId: 'run-out',
      choice: 'answer',
      answers: { q1: 'ana', q3: 'Keep it small.' },
    });
    expect(done.status).toBe('completed');
    expect(valueOf(done.output?.['whole'])).toEqual({
      answers: { q1: 'ana', deadline: 'next week', q3: 'Keep it small.' },
      items: [
        { id: 'q1', question: 'Who reviews the t plan?', answer: 'ana', source: 'choice', skipped: false },
        { id: 'deadline', question: 'By when?', answer: 'next week', source: 'default', skipped: false },
        {
          id: 'q3',
          question: 'Anything else?',
          answer: 'Keep it small.',
          source: 'free_text',
          skipped: false,
        },
      ],
      transcript:
        'Q1. Who reviews the t plan?\nA: ana\n\nQ2. By when?\nA: next week\n\nQ3. Anything else?\nA: Keep it small.',
      answered_count: 3,
      skipped_count: 0,
      answered_any: true,
      outcome: 'completed',
    });
  });

  it('refuses, before recording, an answer leaving out a required question, outside its choices, or for no question', async () => {
    const dir = stateDir();
    const definition = inline();
    await startWorkflowRun(definition, {
      ...options(dir, definition),
      runId: 'run-bad',
      inputs: { topic: 't' },
    });
    const answer = (answers: Record<string, string>) =>
      answerGate({ ...options(dir, definition), runId: 'run-bad', choice: 'answer', answers });
    await expect(answer({ deadline: 'Friday' })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: 'question "q1" of "ask" is required: answer it with --answer q1=TEXT',
    });
    await expect(answer({ q1: 'carl' })).rejects.toMatchObject({
      message: 'question "q1" of "ask" takes one of its choices: ana, ben',
    });
    await expect(answer({ q1: 'ana', q9: 'x' })).rejects.toMatchObject({
      message: 'questions step "ask" has no question "q9" (ids: q1, deadline, q3)',
    });
    await expect(
      answerGate({ ...options(dir, definition), runId: 'run-bad', choice: 'skip_all' }),
    ).rejects.toMatchObject({
      message: 'question "q1" of "ask" is required: answer it with --answer q1=TEXT',
    });
    // Nothing was recorded: the run still waits, and a good answer is taken.
    expect((await workflowStatus('run-bad', { stateDir: dir })).status).toBe('waiting');
    const done = await answer({ q1: 'ana' });
    expect(done.status).toBe('completed');
  });

  it('abort goes to abort_route with outcome aborted', async () => {
    const dir = stateDir();
    const definition = inline();
    await startWorkflowRun(definition, {
      ...options(dir, definition),
      runId: 'run-abort',
      inputs: { topic: 't' },
    });
    const done = await answerGate({ ...options(dir, definition), runId: 'run-abort', choice: 'abort' });
    expect(done).toMatchObject({ status: 'completed', output: { plan: 'stopped, aborted' } });
    expect(done.steps.map((step) => step.step)).toEqual(['ask', 'stopped']);
  });

  it('takes questions from a source list (strings and objects, never rendered) and holds allow_skip: false', async () => {
    const dir = stateDir();
    const definition = parseWorkflow(SOURCED, '/virtual/asked.yaml');
    const parked = await startWorkflowRun(definition, {
      ...options(dir, definition),
      runId: 'run-src',
      inputs: { open_questions: OPEN_QUESTIONS },
    });
    expect(parked.gate?.questions).toMatchObject([
      { id: 'q1', text: 'Which database?', choices: [] },
      { id: 'q2', text: 'Cache {{ it }}?', choices: ['yes', 'no'] },
    ]);
    await expect(
      answerGate({
        ...options(dir, definition),
        runId: 'run-src',
        choice: 'answer',
        answers: { q1: 'Postgres' },
      }),
    ).rejects.toMatchObject({
      message: expect.stringContaining('does not allow skipping a question (allow_skip: false)'),
    });
    const done = await answerGate({
      ...options(dir, definition),
      runId: 'run-src',
      choice: 'answer',
      answers: { q1: 'Postgres', q2: 'no' },
    });
    expect(done.output).toEqual({
      transcript: 'Q1. Which database?\nA: Postgres\n\nQ2. Cache {{ it }}?\nA: no',
    });
  });

  it('an answer to a source-list step before the run reaches it is refused: its questions do not exist yet', async () => {
    const dir = stateDir();
    const text = SOURCED.replace('  entry_point: ask', '  entry_point: first').replace(
      'agents:\n',
      'agents:\n  - name: first\n    type: human_gate\n    prompt: Go?\n    options: [{ label: Go, value: go, route: ask }]\n',
    );
    const definition = parseWorkflow(text, '/virtual/asked.yaml');
    await startWorkflowRun(definition, {
      ...options(dir, definition),
      runId: 'run-early',
      inputs: { open_questions: OPEN_QUESTIONS },
    });
    await expect(
      answerGate({ ...options(dir, definition), runId: 'run-early', step: 'ask', choice: 'skip_all' }),
    ).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message:
        'questions step "ask" takes its questions from workflow.input.open_questions: answer it once the run is parked there',
    });
  });

  it('--skip-gates skips every question, defaults applied, outcome skipped_remaining: no answer is invented', async () => {
    const dir = stateDir();
    const definition = parseWorkflow(
      INLINE.replace(
        "value: '{{ ask.output.answers.q1 }} by {{ ask.output.answers.deadline }}'",
        "value: '{{ ask.output.outcome }} {{ ask.output.answers | tojson }}'",
      ).replace('        required: true\n', ''),
      '/virtual/ask.yaml',
    );
    const done = await startWorkflowRun(definition, {
      ...options(dir, definition),
      runId: 'run-skip',
      inputs: { topic: 't' },
      skipGates: true,
    });
    // The default counts as an answer (as in Conductor), so answered_any routes on to plan.
    expect(done).toMatchObject({
      status: 'completed',
      output: { plan: 'skipped_remaining {"deadline": "next week"}' },
    });
  });
});

describe('type: questions in the file', () => {
  const invalid = (yaml: string) => () => parseWorkflow(yaml, '/virtual/bad.yaml');
  it('needs questions or source, not both, and abort_route only with allow_abort', () => {
    expect(invalid(INLINE.replace('    allow_abort: true\n', ''))).toThrow(
      /field "abort_route": "abort_route" needs allow_abort: true/,
    );
    expect(invalid(SOURCED.replace('    source: workflow.input.open_questions\n', ''))).toThrow(
      /field "questions": a questions step needs "questions" or "source"/,
    );
    expect(invalid(SOURCED.replace('source: workflow.input.open_questions', 'source: architect'))).toThrow(
      /source "architect" is not a path like architect.output.open_questions/,
    );
    expect(
      invalid(INLINE.replace('    type: questions\n', '    type: questions\n    model: gpt-5\n')),
    ).toThrow(/questions steps cannot have "model"/);
    expect(
      invalid(
        INLINE.replace(
          '      - text: Anything else?\n',
          '      - text: Anything else?\n        id: deadline\n',
        ),
      ),
    ).toThrow(/two questions have the id "deadline"/);
  });
});
