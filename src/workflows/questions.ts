import { SwitchboardError } from '../core/errors.js';
import type { QuestionDefinition, QuestionsStep } from './model.js';

/**
 * Conductor's `type: questions` as a durable gate: the questions a step puts, the answer a person
 * records for all of them at once (`workflow gate --answer ID=TEXT …`, or `--choose skip_all|abort`),
 * and the output Conductor gives the steps after it. Pure: the executor (steps/questions.ts) and
 * `answerGate` (which checks an answer before recording it) share it.
 */

/** A question as the person sees it: its text rendered (or, from `source`, as the model wrote it). */
export type PutQuestion = Omit<QuestionDefinition, 'id'> & { id: string };

/** The gate answer's `choice` for a questions step. */
export const QUESTIONS_CHOICES = ['answer', 'skip_all', 'abort'] as const;
export type QuestionsChoice = (typeof QUESTIONS_CHOICES)[number];

export type QuestionsOutcome = 'completed' | 'skipped_remaining' | 'aborted';

/** The step's output, with Conductor's field names. */
export interface QuestionsOutput {
  /** Answers by question id: the person's, and defaults of skipped questions. */
  answers: Record<string, string>;
  items: Array<{
    id: string;
    question: string;
    answer: string | null;
    source: 'choice' | 'free_text' | 'default' | 'skipped';
    skipped: boolean;
  }>;
  /** `Q1. question\nA: answer` for every question with an answer, blank-line separated. */
  transcript: string;
  answered_count: number;
  skipped_count: number;
  answered_any: boolean;
  outcome: QuestionsOutcome;
}

/** Inline questions with their texts rendered by `render` (they are the workflow author's templates). */
export function inlineQuestions(
  definitions: readonly QuestionDefinition[],
  render: (template: string, field: string) => string,
): PutQuestion[] {
  return definitions.map((definition, index) => ({
    id: definition.id ?? `q${index + 1}`,
    text: render(definition.text, `questions[${index}].text`),
    ...(definition.hint === undefined ? {} : { hint: render(definition.hint, `questions[${index}].hint`) }),
    choices: definition.choices.map((choice, at) => render(choice, `questions[${index}].choices[${at}]`)),
    allowFreeText: definition.allowFreeText,
    ...(definition.default === undefined ? {} : { default: definition.default }),
    required: definition.required,
  }));
}

/**
 * The questions a `source:` list holds, as Conductor reads them: a string is a question with only its
 * text; an object has `text` (or `question`) and may have `id`, `hint`, `choices`, `allow_free_text`,
 * `default`, `required`. Their text came from a model, so it is never rendered as a template.
 */
export function sourcedQuestions(items: unknown, where: string): PutQuestion[] {
  if (!Array.isArray(items)) {
    throw new SwitchboardError(
      'WORKFLOW_TEMPLATE',
      `${where}: expected a list of questions, got ${items === null ? 'null' : typeof items}`,
      { hint: 'point source: at a list of strings or {text, choices} objects' },
    );
  }
  const questions = items.map((item, index): PutQuestion => {
    if (typeof item === 'string') return plain(`q${index + 1}`, item);
    const entry = (typeof item === 'object' && item !== null ? item : {}) as Record<string, unknown>;
    const text = entry['text'] ?? entry['question'];
    if (typeof text !== 'string') {
      throw new SwitchboardError(
        'WORKFLOW_TEMPLATE',
        `${where}: question ${index + 1} is neither a string nor an object with "text" (or "question")`,
        { hint: 'have the step that writes the list give strings or {text, choices} objects' },
      );
    }
    const strings = (value: unknown): string[] =>
      Array.isArray(value) ? value.map((choice) => String(choice)) : [];
    return {
      ...plain(typeof entry['id'] === 'string' ? entry['id'] : `q${index + 1}`, text),
      ...(typeof entry['hint'] === 'string' ? { hint: entry['hint'] } : {}),
      choices: strings(entry['choices']),
      allowFreeText: entry['allow_free_text'] !== false,
      ...(typeof entry['default'] === 'string' ? { default: entry['default'] } : {}),
      required: entry['required'] === true,
    };
  });
  const ids = questions.map((question) => question.id);
  const repeated = ids.find((id, index) => ids.indexOf(id) !== index);
  if (repeated !== undefined) {
    throw new SwitchboardError('WORKFLOW_TEMPLATE', `${where}: two questions have the id "${repeated}"`, {
      hint: 'ids become answer keys: the list must not repeat one',
    });
  }
  return questions;
}

function plain(id: string, text: string): PutQuestion {
  return { id, text, choices: [], allowFreeText: true, required: false };
}

/** A recorded answer's parts: the choice, and the answers by id for `answer`. */
export interface QuestionsAnswer {
  choice: string;
  answers: Record<string, string>;
}

/** The gate answer's `text` of a questions step holds the answers as JSON. */
export function answersFromText(text: string | undefined): Record<string, string> {
  if (text === undefined || text === '') return {};
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return {};
    return Object.fromEntries(
      Object.entries(parsed).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
    );
  } catch {
    return {};
  }
}

/** Why `answer` cannot be taken for these questions (one line, naming the fix), or undefined. */
export function answerProblem(
  step: QuestionsStep,
  questions: readonly PutQuestion[],
  answer: QuestionsAnswer,
): string | undefined {
  const ids = questions.map((question) => question.id);
  if (!(QUESTIONS_CHOICES as readonly string[]).includes(answer.choice))
    return `questions step "${step.name}" takes --answer ID=TEXT, or --choose skip_all or abort, not "${answer.choice}"`;
  if (answer.choice === 'abort') {
    return step.allowAbort
      ? undefined
      : `questions step "${step.name}" does not allow abort (allow_abort: false)`;
  }
  const given = answer.choice === 'answer' ? answer.answers : {};
  const unknown = Object.keys(given).find((id) => !ids.includes(id));
  if (unknown !== undefined)
    return `questions step "${step.name}" has no question "${unknown}" (ids: ${ids.join(', ')})`;
  if (answer.choice === 'answer' && Object.keys(given).length === 0)
    return `no answer given for questions step "${step.name}": give --answer ID=TEXT (ids: ${ids.join(', ')})`;
  if (answer.choice === 'skip_all' && !step.allowSkipAll)
    return `questions step "${step.name}" does not allow skipping them all (allow_skip_all: false)`;
  for (const question of questions) {
    const text = given[question.id];
    if (text === undefined || text.trim() === '') {
      if (question.required)
        return `question "${question.id}" of "${step.name}" is required: answer it with --answer ${question.id}=TEXT`;
      if (answer.choice === 'answer' && !step.allowSkip)
        return `questions step "${step.name}" does not allow skipping a question (allow_skip: false): answer "${question.id}" too`;
      continue;
    }
    if (!question.allowFreeText && question.choices.length > 0 && !question.choices.includes(text))
      return `question "${question.id}" of "${step.name}" takes one of its choices: ${question.choices.join(', ')}`;
  }
  return undefined;
}

/** The step's output once `answer` (already checked) is taken; `skip_all` and `abort` skip what is unanswered. */
export function questionsOutput(questions: readonly PutQuestion[], answer: QuestionsAnswer): QuestionsOutput {
  const given = answer.choice === 'answer' ? answer.answers : {};
  const outcome: QuestionsOutcome =
    answer.choice === 'abort' ? 'aborted' : answer.choice === 'skip_all' ? 'skipped_remaining' : 'completed';
  const items = questions.map((question) => {
    const text = given[question.id];
    if (text !== undefined && text.trim() !== '') {
      const source: 'choice' | 'free_text' = question.choices.includes(text) ? 'choice' : 'free_text';
      return { id: question.id, question: question.text, answer: text, source, skipped: false };
    }
    if (question.default !== undefined)
      return {
        id: question.id,
        question: question.text,
        answer: question.default,
        source: 'default' as const,
        skipped: false,
      };
    return {
      id: question.id,
      question: question.text,
      answer: null,
      source: 'skipped' as const,
      skipped: true,
    };
  });
  const answers = Object.fromEntries(
    items.filter((item) => item.answer !== null).map((item) => [item.id, item.answer as string]),
  );
  const transcript = items
    .map((item, index) =>
      item.answer === null ? undefined : `Q${index + 1}. ${item.question}\nA: ${item.answer}`,
    )
    .filter((part): part is string => part !== undefined)
    .join('\n\n');
  const answeredCount = Object.keys(answers).length;
  return {
    answers,
    items,
    transcript,
    answered_count: answeredCount,
    skipped_count: items.filter((item) => item.skipped).length,
    answered_any: answeredCount > 0,
    outcome,
  };
}
