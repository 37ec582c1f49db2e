import type { IncomingMessage } from 'node:http';
import { isSwitchboardError, SwitchboardError } from '../../core/errors.js';
import { isPlainObject } from '../../core/plain-object.js';
import type { McpContext } from '../../mcp/context.js';
import type { WorkflowRunResult } from '../../workflows/api-types.js';
import { isStringRecord, parseJsonObject, readBody } from '../http.js';
import type { ActionResult, GateAnswerBody } from './api-types.js';

// What a page may do to a workflow run: answer its gate, guide it, cancel it, resume it. Each goes
// through the library call the CLI uses (`answerGate`, `guideWorkflowRun`, `cancelWorkflowRun`,
// `resumeWorkflow`), so the ledger's
// rules hold as they do there: the first answer recorded wins, a run is advanced by one process at a
// time. A run this server goes on with runs in its process under serve's command policy, as /mcp's do.

export type ActionName = 'gate' | 'guide' | 'cancel' | 'resume';

export async function runAction(
  action: ActionName,
  runId: string,
  request: IncomingMessage,
  context: McpContext,
): Promise<{ status: number; body: ActionResult }> {
  const workflows = await import('../../workflows/index.js');
  const stateDir = context.config.stateDir;
  if (action === 'cancel') {
    request.resume();
    const run = await workflows.cancelWorkflowRun(runId, { stateDir });
    return { status: 200, body: { run, continuing: false } };
  }
  if (action === 'guide') {
    const { text, step } = await bodyOf(request);
    if (typeof text !== 'string') throw badField('text', 'the words for the model');
    if (step !== undefined && typeof step !== 'string') throw badField('step', 'a step name');
    // Recorded only: the process advancing the run (or its next resume) reads it at its next model turn.
    const guidance = await workflows.guideWorkflowRun({
      stateDir,
      runId,
      text,
      ...(step === undefined ? {} : { step }),
      sentBy: 'dashboard',
    });
    const run = await workflows.workflowStatus(runId, { stateDir });
    return { status: 200, body: { run, continuing: false, guidance } };
  }
  if (action === 'gate') {
    const answer = gateAnswer(await bodyOf(request));
    // Recorded first, on its own: a second answer (another tab, the CLI, a worker) is refused here.
    const run = await workflows.answerGate({
      stateDir,
      runId,
      ...answer,
      answeredBy: 'dashboard',
      continue: false,
    });
    if (run.status !== 'waiting' && run.status !== 'running')
      return { status: 200, body: { run, continuing: false } };
    return goOn(run, context);
  }
  request.resume();
  const run = await workflows.workflowStatus(runId, { stateDir });
  if (run.status === 'completed') {
    throw new SwitchboardError(
      'INVALID_INPUT',
      `workflow run ${run.id} has completed; there is nothing to resume`,
    );
  }
  return goOn(run, context);
}

async function bodyOf(request: IncomingMessage): Promise<Record<string, unknown>> {
  const text = await readBody(request);
  if (text === undefined) throw new SwitchboardError('INVALID_INPUT', 'the body is too large');
  return parseJsonObject(text, '{"choice": "approve"}');
}

function gateAnswer(body: Record<string, unknown>): GateAnswerBody {
  const { step, choice, text, answers } = body;
  if (typeof choice !== 'string' || choice === '') {
    throw new SwitchboardError('INVALID_INPUT', 'the answer has no "choice"', {
      hint: 'send {"choice": "<an option\'s value>"}, or {"choice": "answer", "answers": {...}} for questions',
    });
  }
  if (step !== undefined && typeof step !== 'string') throw badField('step', 'a step name');
  if (text !== undefined && typeof text !== 'string') throw badField('text', 'text');
  if (answers !== undefined && !(isPlainObject(answers) && isStringRecord(answers))) {
    throw badField('answers', 'an object of question id to text');
  }
  return {
    choice,
    ...(step === undefined ? {} : { step }),
    ...(text === undefined ? {} : { text }),
    ...(answers === undefined ? {} : { answers }),
  };
}

function badField(name: string, what: string): SwitchboardError {
  return new SwitchboardError('INVALID_INPUT', `"${name}" must be ${what}`);
}

/**
 * Resumes the run in this server's process, in the background, once the command policy allows its
 * file; otherwise says how the user goes on. The process already advancing it (a gate waiting with a
 * timeout) takes a gate's answer itself: the resume then finds the run locked and leaves it be.
 */
async function goOn(
  run: WorkflowRunResult,
  context: McpContext,
): Promise<{ status: number; body: ActionResult }> {
  const refusal = await policyRefusal(run.id, context);
  if (refusal !== undefined) {
    return {
      status: 200,
      body: {
        run,
        continuing: false,
        message: `${refusal}; go on with \`switchboard workflow resume ${run.id}\` in a terminal`,
      },
    };
  }
  const [{ resumeWorkflow }, { serverEngineOptions, engineChoices }] = await Promise.all([
    import('../../workflows/index.js'),
    import('../../mcp/workflow-tools.js'),
  ]);
  const work = resumeWorkflow({
    ...serverEngineOptions(context),
    ...engineChoices(context, {}),
    runId: run.id,
    unlessEnded: run.status === 'waiting' || run.status === 'running',
  });
  void context.runs.track(`workflow:${run.id}`, work).catch((error: unknown) => {
    // Locked: its owner goes on with it. Anything else is in the run's own record (its error, events).
    if (isSwitchboardError(error) && error.code === 'WORKFLOW_LOCKED') return;
  });
  return { status: 202, body: { run, continuing: true } };
}

/** Why serve's command policy would refuse to go on with the run's workflow file, if it would. */
async function policyRefusal(runId: string, context: McpContext): Promise<string | undefined> {
  if (context.commands === undefined) return undefined;
  const [{ WorkflowStore }, { loadWorkflow }, { checkWorkflow }] = await Promise.all([
    import('../../store/workflow-records.js'),
    import('../../workflows/format/index.js'),
    import('../../mcp/command-policy.js'),
  ]);
  const store = await WorkflowStore.open({ stateDir: context.config.stateDir });
  try {
    const row = await store.getRun(runId);
    if (row === undefined) return undefined;
    checkWorkflow(context.commands, loadWorkflow(row.file));
    return undefined;
  } catch (error) {
    if (isSwitchboardError(error) && error.code === 'FORBIDDEN') return error.message;
    // A file gone or broken: the resume fails on it and records why.
    return undefined;
  } finally {
    await store.close();
  }
}
