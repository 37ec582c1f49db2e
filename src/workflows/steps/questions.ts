import { END, type QuestionsStep } from '../model.js';
import {
  answerProblem,
  answersFromText,
  inlineQuestions,
  questionsOutput,
  sourcedQuestions,
  type PutQuestion,
} from '../questions.js';
import type { StepContext, StepExecutor } from '../step-executor.js';
import { evaluateValue } from '../template.js';

/**
 * Conductor's `type: questions` as one durable gate. With no answer recorded the run parks (`waiting`)
 * showing every question; an answer gives all of them at once and is checked against them (a required
 * question, choices without free text, the step's skip and abort flags). `--skip-gates` skips them all,
 * as Conductor does, never inventing an answer: skipped questions take their `default`.
 */
export const executeQuestionsStep: StepExecutor = async (context) => {
  const step = context.step as QuestionsStep;
  const prompt = context.render(step.prompt, 'prompt');
  const questions = putQuestions(step, context);
  const answer = await context.gateAnswer();
  if (answer === undefined) {
    await context.emit({ type: 'gate-presented', data: { prompt, options: [], questions } });
    return { status: 'waiting', costUsd: 0, output: { prompt, options: [], questions } };
  }
  const taken = { choice: answer.choice, answers: answersFromText(answer.text) };
  const problem = answerProblem(step, questions, taken);
  if (problem !== undefined) {
    return { status: 'failed', costUsd: 0, error: { code: 'INVALID_INPUT', message: problem } };
  }
  const output = questionsOutput(questions, taken);
  await context.emit({
    type: 'gate-taken',
    data: {
      choice: answer.choice,
      outcome: output.outcome,
      answeredCount: output.answered_count,
      skippedCount: output.skipped_count,
      answeredBy: answer.answeredBy,
      answeredAt: answer.answeredAt,
    },
  });
  return {
    status: 'completed',
    costUsd: 0,
    output,
    ...(output.outcome === 'aborted' ? { next: step.abortRoute ?? END } : {}),
  };
};

function putQuestions(step: QuestionsStep, context: StepContext): PutQuestion[] {
  if (step.questions !== undefined) return inlineQuestions(step.questions, context.render);
  const where = { file: context.workflow.file, step: step.name, field: 'source' };
  const items = evaluateValue(step.source ?? '', context.scope, where);
  return sourcedQuestions(items, `${context.workflow.file}: step "${step.name}" field "source"`);
}
