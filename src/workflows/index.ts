import { userInfo } from 'node:os';
import { isSwitchboardError, SwitchboardError } from '../core/errors.js';
import {
  takesNoGuidance,
  type StoredGateAnswer,
  type StoredGuidance,
  type WorkflowRunRow,
  type WorkflowStore,
} from '../store/workflow-records.js';
import { closestName } from '../core/closest-name.js';
import type {
  AnswerGateOptions,
  GuideWorkflowOptions,
  WorkflowGuidance,
  RecordedWorkflowRun,
  ResumeWorkflowOptions,
  RunWorkflowOptions,
  WorkflowEngineOptions,
  WorkflowEventRecord,
  WorkflowRunResult,
} from './api-types.js';
import type { QuestionsStep, WorkflowDefinition } from './model.js';
import { answerProblem, inlineQuestions, type PutQuestion } from './questions.js';
import { runView } from './engine-view.js';
import { runOwner } from './run-lock.js';
import { openStores } from './stores.js';

// The engine (step executors, templates, the format's zod schemas) is imported by the calls that run
// steps; status, listing and events read the stores alone, and importing the library loads neither.
const engine = () => import('./engine-start.js');
async function loadDefinition(file: string, options: WorkflowEngineOptions): Promise<WorkflowDefinition> {
  return (await import('./engine-load.js')).loadDefinition(file, options);
}

/** Starts a run of a workflow file (or resumes the run its `run_key` names) and advances it until it ends or parks at a gate. */
export async function runWorkflow(options: RunWorkflowOptions): Promise<WorkflowRunResult> {
  const workflow = await loadDefinition(options.file, options);
  return (await engine()).startWorkflowRun(workflow, options);
}

/**
 * Checks the file and inputs as `runWorkflow` does and records the run at its entry step without
 * advancing it (or finds the run its `run_key` names): for a queue's worker to advance later.
 */
export async function recordWorkflowRun(
  options: Omit<RunWorkflowOptions, 'dryRun'>,
): Promise<RecordedWorkflowRun> {
  const workflow = await loadDefinition(options.file, options);
  return (await engine()).recordWorkflowRun(workflow, options);
}

/** Continues an interrupted, parked or limit-ended run at its first step without a completed row. */
export async function resumeWorkflow(options: ResumeWorkflowOptions): Promise<WorkflowRunResult> {
  return (await engine()).resumeRun(options);
}

async function findRun(store: WorkflowStore, runId: string): Promise<WorkflowRunRow> {
  const run = await store.findRun(runId);
  if (run === undefined) {
    throw new SwitchboardError('RUN_NOT_FOUND', `there is no workflow run ${runId} in ${store.path}`, {
      hint: 'list runs with `switchboard workflow ls`',
    });
  }
  return run;
}

/**
 * Records a gate answer (before or after the run reaches the gate) and, unless `continue: false`,
 * continues the run. The first answer recorded for a gate's execution wins.
 *
 * @throws SwitchboardError `GATE_TAKEN` when the gate already has an answer (nothing is recorded; the
 *   message and details say who answered what and when), `INVALID_INPUT`, `RUN_NOT_FOUND`
 */
export async function answerGate(options: AnswerGateOptions): Promise<WorkflowRunResult> {
  const session = await openStores(options);
  try {
    const run = await findRun(session.store, options.runId);
    const target = await gateTarget(session.store, run, options, options.step);
    const choice = target.choice ?? options.choice;
    const text = target.choice === undefined ? options.text : target.text;
    const earlier = await session.store.recordGateAnswer(target.run.id, {
      step: target.step,
      ...(target.visit === undefined ? {} : { visit: target.visit }),
      choice,
      ...(text === undefined ? {} : { text }),
      answeredBy: options.answeredBy ?? userInfo().username,
      answeredAt: Date.now(),
    });
    if (earlier !== undefined) throw gateTaken(target.run.id, earlier, choice);
    if (options.continue === false || (run.status !== 'waiting' && run.status !== 'running')) {
      return await runView(session.store, await findRun(session.store, run.id));
    }
    // The process advancing the run (waiting at this gate with a timeout) may take the answer itself:
    // it holds the run's lock, or has ended the run by the time this call holds it.
    let taken = false;
    try {
      const { resumeInSession } = await engine();
      const onLeftEnded = () => {
        taken = true;
      };
      const result = await resumeInSession(session, {
        ...options,
        runId: run.id,
        unlessEnded: true,
        onLeftEnded,
      });
      return taken ? { ...result, takenByOtherProcess: true } : result;
    } catch (error) {
      if (isSwitchboardError(error) && error.code === 'WORKFLOW_LOCKED') {
        return {
          ...(await runView(session.store, await findRun(session.store, run.id))),
          takenByOtherProcess: true,
        };
      }
      throw error;
    }
  } finally {
    await session.close();
  }
}

/**
 * Which gate an answer is for: the named step, or the one the run is parked at (following a parked
 * sub-workflow down to its gate). The choice must be one of the gate's option values.
 */
async function gateTarget(
  store: WorkflowStore,
  run: WorkflowRunRow,
  options: AnswerGateOptions,
  named: string | undefined,
): Promise<{ run: WorkflowRunRow; step: string; visit?: number; choice?: string; text?: string }> {
  const rows = await store.steps(run.id);
  const waiting = rows.filter((row) => row.status === 'waiting').at(-1);
  const step = named ?? (run.status === 'waiting' ? waiting?.step : undefined);
  if (step === undefined) {
    // Most often another answer moved the run on between this caller's look and its answer.
    const latest = await store.lastGateAnswer(run.id);
    if (latest !== undefined) throw gateTaken(run.id, latest, options.choice);
    throw new SwitchboardError('INVALID_INPUT', `workflow run ${run.id} is not parked at a gate`, {
      hint: 'name the gate step to answer it before the run reaches it',
    });
  }
  const workflow = await loadDefinition(run.file, options);
  // Parked inside a sub-workflow: its gate is answered in the child run.
  const parkedIn =
    waiting === undefined || run.status !== 'waiting' ? undefined : workflow.steps.get(waiting.step);
  if (
    waiting !== undefined &&
    parkedIn?.type === 'workflow' &&
    (named === undefined || !workflow.steps.has(named))
  ) {
    const child = await store.findChildRun(run.id, waiting.key);
    if (child !== undefined) return gateTarget(store, child, options, named);
  }
  const definition = workflow.steps.get(step);
  // The execution the gate is in now: parked, or waiting out its timeout in the owner's process. An
  // answer for it competes with every other answer for it; otherwise it is for the gate's next visit.
  const open = rows
    .filter((row) => row.step === step && (row.status === 'waiting' || row.status === 'running'))
    .at(-1);
  if (definition?.type === 'questions') {
    const answer = questionsAnswer(definition, options, open?.status === 'waiting' ? open.output : undefined);
    return { run, step, ...(open === undefined ? {} : { visit: open.visit }), ...answer };
  }
  if (definition?.type !== 'human_gate') {
    throw new SwitchboardError(
      'INVALID_INPUT',
      `"${step}" is not a human_gate or questions step of ${workflow.file}`,
      {
        hint: `name one of its gates: ${
          [...workflow.steps.values()]
            .filter((s) => s.type === 'human_gate' || s.type === 'questions')
            .map((s) => s.name)
            .join(', ') || '(none)'
        }`,
      },
    );
  }
  if (options.answers !== undefined) {
    throw new SwitchboardError('INVALID_INPUT', `gate "${step}" takes one option, not answers`, {
      hint: `choose one of: ${definition.options.map((option) => option.value).join(', ')} (with --choose)`,
    });
  }
  const values = definition.options.map((option) => option.value);
  if (!values.includes(options.choice)) {
    throw new SwitchboardError('INVALID_INPUT', `gate "${step}" has no option "${options.choice}"`, {
      hint: `choose one of: ${values.join(', ')}`,
    });
  }
  return open === undefined ? { run, step } : { run, step, visit: open.visit };
}

/**
 * The choice and text recorded for an answer to a questions step, once checked against its questions:
 * those it is parked showing, else the ones written in the file (a `source:` list exists only once the
 * run reaches the step).
 */
function questionsAnswer(
  step: QuestionsStep,
  options: AnswerGateOptions,
  parkedOutput: unknown,
): { choice: string; text?: string } {
  const answer = {
    choice: options.answers === undefined ? options.choice : 'answer',
    answers: options.answers ?? {},
  };
  const parked = (parkedOutput as { questions?: PutQuestion[] } | undefined)?.questions;
  if (parked === undefined && step.questions === undefined) {
    throw new SwitchboardError(
      'INVALID_INPUT',
      `questions step "${step.name}" takes its questions from ${step.source ?? 'an earlier step'}: answer it once the run is parked there`,
      { hint: 'see them with `switchboard workflow status RUN` when the run waits at the step' },
    );
  }
  const questions =
    parked ??
    // As written: templated choices are known once rendered, and the step checks them when it takes the answer.
    inlineQuestions(step.questions ?? [], (template) => template).map((question) => ({
      ...question,
      choices: question.choices.some((choice) => choice.includes('{')) ? [] : question.choices,
    }));
  const problem = answerProblem(step, questions, answer);
  if (problem !== undefined) {
    throw new SwitchboardError('INVALID_INPUT', problem, {
      hint: `its questions: ${questions.map((question) => `${question.id} (${question.text})`).join('; ')}`,
    });
  }
  return answer.choice === 'answer'
    ? { choice: answer.choice, text: JSON.stringify(answer.answers) }
    : { choice: answer.choice };
}

/** GATE_TAKEN: the gate already had an answer (the first recorded wins); this one was not recorded. */
function gateTaken(runId: string, earlier: StoredGateAnswer, choice: string): SwitchboardError {
  const at = new Date(earlier.answeredAt).toISOString();
  return new SwitchboardError(
    'GATE_TAKEN',
    `gate "${earlier.step}" of workflow run ${runId} was already answered "${earlier.choice}" by ${earlier.answeredBy} at ${at}; "${choice}" was not recorded`,
    {
      hint: `see what the run did with it: switchboard workflow status ${runId}`,
      retryable: false,
      details: {
        runId,
        step: earlier.step,
        choice: earlier.choice,
        answeredBy: earlier.answeredBy,
        answeredAt: at,
        ...(earlier.visit === undefined ? {} : { visit: earlier.visit }),
      },
    },
  );
}

/**
 * Records guidance for a run from any process on its ledger: the next model turn of one of its steps
 * (of `step` when named) reads it as a user message, `Guidance from <sentBy> at <time>: <text>`, and a
 * `guidance-delivered` event says which step, visit and turn took it. Sent while the run is parked at a
 * gate or between steps, it reaches the next step that calls a model.
 *
 * @throws SwitchboardError `RUN_ENDED` when the run has completed or was cancelled (nothing is recorded),
 *   `RUN_NOT_FOUND`, `INVALID_INPUT` (no text, or `step` names no step that calls a model)
 */
export async function guideWorkflowRun(options: GuideWorkflowOptions): Promise<WorkflowGuidance> {
  const text = options.text.trim();
  if (text === '') {
    throw new SwitchboardError('INVALID_INPUT', 'the guidance is empty', {
      hint: 'give the words for the model: switchboard workflow guide RUN "look at the tests first"',
    });
  }
  const session = await openStores(options);
  try {
    const run = await findRun(session.store, options.runId);
    if (takesNoGuidance(run.status)) throw runEnded(run);
    if (options.step !== undefined) {
      await guidedStep(await loadDefinition(run.file, options), options.step);
    }
    const result = await session.store.recordGuidance(run.id, {
      ...(options.step === undefined ? {} : { step: options.step }),
      text,
      sentBy: options.sentBy ?? userInfo().username,
      sentAt: Date.now(),
    });
    if ('ended' in result) throw runEnded({ ...run, status: result.ended });
    return guidanceView(result.recorded);
  } finally {
    await session.close();
  }
}

/** The run's guidance, oldest first, each with where it landed once delivered. Throws RUN_NOT_FOUND. */
export async function listWorkflowGuidance(
  runId: string,
  options: WorkflowEngineOptions = {},
): Promise<WorkflowGuidance[]> {
  const session = await openStores(options);
  try {
    const run = await findRun(session.store, runId);
    return (await session.store.guidance(run.id)).map(guidanceView);
  } finally {
    await session.close();
  }
}

function runEnded(run: WorkflowRunRow): SwitchboardError {
  return new SwitchboardError(
    'RUN_ENDED',
    `workflow run ${run.id} has ${run.status === 'completed' ? 'completed' : 'been cancelled'}; no model turn will read guidance, so none was recorded`,
    {
      hint: 'guide a run that is running, waiting at a gate or failed (before its resume)',
      retryable: false,
    },
  );
}

/** The step guidance names must be one of the workflow's steps that call a model. */
async function guidedStep(workflow: WorkflowDefinition, name: string): Promise<void> {
  // A sub-workflow step passes guidance on to its own steps' model turns.
  const models = [...workflow.steps.values()]
    .filter((step) => step.type === 'agent' || step.type === 'workflow')
    .map((step) => step.name);
  if (models.includes(name)) return;
  const known = workflow.steps.has(name);
  const near = known ? undefined : closestName(name, workflow.steps.keys());
  throw new SwitchboardError(
    'INVALID_INPUT',
    known
      ? `step "${name}" of ${workflow.file} does not call a model, so it cannot read guidance`
      : `${workflow.file} has no step "${name}"${near === undefined ? '' : ` (did you mean ${near}?)`}`,
    { hint: `name a step that calls a model: ${models.join(', ') || '(none)'}; or leave --step out` },
  );
}

function guidanceView(guidance: StoredGuidance): WorkflowGuidance {
  const view: WorkflowGuidance = {
    id: guidance.id,
    runId: guidance.runId,
    text: guidance.text,
    sentBy: guidance.sentBy,
    sentAt: new Date(guidance.sentAt).toISOString(),
  };
  if (guidance.step !== undefined) view.step = guidance.step;
  if (guidance.delivered !== undefined) {
    const { at, ...landing } = guidance.delivered;
    view.delivered = { ...landing, at: new Date(at ?? 0).toISOString() };
  }
  return view;
}

/** The run as `workflow status` shows it. Throws RUN_NOT_FOUND. */
export async function workflowStatus(
  runId: string,
  options: WorkflowEngineOptions = {},
): Promise<WorkflowRunResult> {
  const session = await openStores(options);
  try {
    return await runView(session.store, await findRun(session.store, runId));
  } finally {
    await session.close();
  }
}

/** Runs, newest first. */
export async function listWorkflowRuns(
  options: WorkflowEngineOptions & { limit?: number } = {},
): Promise<WorkflowRunResult[]> {
  const session = await openStores(options);
  try {
    const views: WorkflowRunResult[] = [];
    // One run at a time, in order: the list stays newest first and the store answers one query at once.
    for (const run of await session.store.listRuns(options.limit ?? 100)) {
      views.push(await runView(session.store, run));
    }
    return views;
  } finally {
    await session.close();
  }
}

/** How long `cancelWorkflowRun` waits for the owning process to stop its step (ms). */
const CANCEL_WAIT_MS = 15_000;

/** Marks the run cancelled and kills the process tree of a running step (the owning process stops). */
export async function cancelWorkflowRun(
  runId: string,
  options: WorkflowEngineOptions = {},
): Promise<WorkflowRunResult> {
  const session = await openStores(options);
  try {
    const run = await findRun(session.store, runId);
    const cancel = async (id: string): Promise<void> => {
      await session.store.cancelRun(id, { type: 'run-cancel', data: { by: userInfo().username } });
      for (const child of await session.store.listChildRuns(id)) await cancel(child.id);
    };
    await cancel(run.id);
    // The owner notices at its next poll, aborts its step (whose process tree dies) and lets go.
    const until = Date.now() + CANCEL_WAIT_MS;
    while (runOwner(await findRun(session.store, run.id), options) !== undefined && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return await runView(session.store, await findRun(session.store, run.id));
  } finally {
    await session.close();
  }
}

/** Events of a run after `afterSeq`, oldest first. */
export async function readWorkflowEvents(
  runId: string,
  options: WorkflowEngineOptions & { afterSeq?: number } = {},
): Promise<WorkflowEventRecord[]> {
  const session = await openStores(options);
  try {
    const run = await findRun(session.store, runId);
    const events = await session.store.events(run.id, options.afterSeq ?? 0);
    return events.map((event) => ({ ...event, at: new Date(event.at).toISOString() }));
  } finally {
    await session.close();
  }
}

export type * from './api-types.js';
export type * from './model.js';
