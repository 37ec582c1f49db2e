import type { CallRequest, JsonSchema } from '../../core/call-types.js';
import { isSwitchboardError } from '../../core/errors.js';
import type { AgentStep, ValidatorDefinition } from '../model.js';
import type { StepContext, StepOutcome } from '../step-executor.js';
import { executeLlmStep, stepTimeoutMs } from './llm.js';

/**
 * Conductor's `validator:` around an LLM step: the step's call, then a second call on the same
 * provider (the validator's model if it names one) that grades the output against the criteria. A
 * failed grade with `max_retries: 1` runs the step once more with the issues appended to its prompt,
 * and that answer is final, ungraded. The grade fails open: a grader that errs or answers something
 * that is not a grade counts as a pass, so a flaky grader never fails a step whose answer was fine.
 *
 * Every call goes through `context.call`, so the ledger, budgets and the step's cost see all of them.
 * A re-run that fails keeps the first answer, as Conductor does.
 */
export async function executeValidatedLlmStep(
  context: StepContext,
  step: AgentStep,
  validator: ValidatorDefinition,
): Promise<StepOutcome> {
  const first = await executeLlmStep(context, step);
  if (first.status !== 'completed') return first;
  const grade = await gradeOutput(context, step, validator, first.output);
  const spent = first.costUsd + grade.costUsd;
  if (grade.passed || validator.maxRetries === 0) return { ...first, costUsd: spent };

  await context.emit({ type: 'validator-retry', data: { issues: grade.issues } });
  const second = await executeLlmStep(context, step, { feedback: feedbackSection(grade.issues) });
  const costUsd = spent + second.costUsd;
  if (second.status === 'completed') return { ...second, costUsd };
  await context.emit({
    type: 'validator-retry-failed',
    data: { code: second.error?.code, message: second.error?.message, costUsd: second.costUsd },
  });
  return { ...first, costUsd };
}

/** What the grader made of an output. */
export interface ValidatorGrade {
  passed: boolean;
  /** What to change; empty when `passed`. */
  issues: string[];
  /** Dollars the grading call spent. */
  costUsd: number;
  /** Why the grade is a pass by default: the call failed, or its answer was not a grade. */
  error?: string;
}

/** The grading call, between a `validator-start` and a `validator-end` event. */
async function gradeOutput(
  context: StepContext,
  step: AgentStep,
  validator: ValidatorDefinition,
  output: unknown,
): Promise<ValidatorGrade> {
  const { runtime } = context.workflow;
  const model = validator.model ?? step.model ?? runtime.defaultModel;
  const spec = context.resolveSpec(step.provider ?? runtime.provider, model);
  await context.emit({ type: 'validator-start', data: { model: spec } });
  const grade = await askGrader(context, spec, graderRequest(context, step, validator, output));
  await context.emit({
    type: 'validator-end',
    data: {
      passed: grade.passed,
      issues: grade.issues,
      costUsd: grade.costUsd,
      ...(grade.error === undefined ? {} : { errored: true, error: grade.error }),
    },
  });
  return grade;
}

const GRADE_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    passed: { type: 'boolean' },
    issues: { type: 'array', items: { type: 'string' } },
  },
  required: ['passed', 'issues'],
};

// Bounds on what of the step's prompt and output the grader sees, as in Conductor: enough for a
// review, short of a long document costing as much to grade as to write.
const PROMPT_LIMIT = 6_000;
const OUTPUT_LIMIT = 8_000;

/**
 * The grading request: the criteria in the system prompt, the step's task and output in the user
 * prompt, and the grade's schema. It offers no tools: on Claude Code a call without `allowedTools`
 * and `mcpServers` is the tool-free one (what a step's `tools: []` makes), so no provider options.
 */
function graderRequest(
  context: StepContext,
  step: AgentStep,
  validator: ValidatorDefinition,
  output: unknown,
): CallRequest {
  const task = context.render(step.prompt, 'prompt');
  const request: CallRequest = {
    system: graderSystemPrompt(validator.criteria),
    prompt: [
      `Step: ${step.name}`,
      '',
      'The task the step was given:',
      '<task>',
      truncate(task, PROMPT_LIMIT),
      '</task>',
      '',
      'Its output, to grade:',
      '<output>',
      truncate(outputText(output), OUTPUT_LIMIT),
      '</output>',
    ].join('\n'),
    schema: GRADE_SCHEMA,
    abortSignal: context.signal,
  };
  const timeoutMs = stepTimeoutMs(context, step.timeoutSeconds);
  if (timeoutMs !== undefined) request.timeoutMs = timeoutMs;
  return request;
}

function graderSystemPrompt(criteria: string): string {
  return [
    "You grade another model's output against acceptance criteria set by the author of a workflow.",
    'Judge by the criteria alone: add no requirement of your own, and pass nothing that misses one of them.',
    '',
    '<criteria>',
    criteria.trim(),
    '</criteria>',
    '',
    'Answer with a JSON object {"passed": boolean, "issues": [string, ...]}. "passed" is true only when',
    'the output meets every criterion. "issues" says what to change, each one specific enough to act',
    'on; it is empty when "passed" is true.',
  ].join('\n');
}

/** A text answer (`{result}`) as its text; structured output as indented JSON. */
function outputText(output: unknown): string {
  if (typeof output === 'object' && output !== null && !Array.isArray(output)) {
    const entries = Object.entries(output);
    if (entries.length === 1 && entries[0]?.[0] === 'result' && typeof entries[0][1] === 'string')
      return entries[0][1];
  }
  return JSON.stringify(output, null, 2) ?? String(output);
}

const CUT_MARKER = '\n[… cut here: the rest is left out]';

/** `text` within `limit` characters, marked when cut so the grader knows it sees a part. */
function truncate(text: string, limit: number): string {
  if (text.length <= limit) return text;
  let cut = Math.max(0, limit - CUT_MARKER.length);
  // Not between the two halves of a character outside the BMP (an emoji).
  if (/[\uD800-\uDBFF]/.test(text.charAt(cut - 1))) cut -= 1;
  return text.slice(0, cut) + CUT_MARKER;
}

/** The grading call; fails open on anything but the run being stopped. */
async function askGrader(context: StepContext, spec: string, request: CallRequest): Promise<ValidatorGrade> {
  try {
    const result = await context.call(spec, request);
    const costUsd = result.costUsd ?? 0;
    const grade = readGrade(result.structured);
    if (grade === undefined) {
      return { passed: true, issues: [], costUsd, error: 'the validator answered without a grade' };
    }
    return { ...grade, costUsd };
  } catch (error) {
    if (context.signal.aborted) throw error;
    const spent = isSwitchboardError(error) ? error.details?.['spentUsd'] : undefined;
    return {
      passed: true,
      issues: [],
      costUsd: typeof spent === 'number' ? spent : 0,
      error: error instanceof Error ? error.message : String(error),
    };
  }
}

/** `{passed, issues}` from the grader's structured answer, or undefined when it is not one. */
function readGrade(value: unknown): { passed: boolean; issues: string[] } | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { passed, issues } = value as { passed?: unknown; issues?: unknown };
  if (typeof passed !== 'boolean') return undefined;
  if (passed) return { passed, issues: [] };
  return { passed, issues: Array.isArray(issues) ? issues.map(String) : [] };
}

/** What the re-run's prompt gains: the grader's issues, as Conductor appends them. */
function feedbackSection(issues: readonly string[]): string {
  const lines = issues.length > 0 ? issues : ['The answer did not meet the acceptance criteria.'];
  return [
    '',
    '',
    '## Feedback on your previous answer',
    'A grader found that your previous answer to this task did not meet its acceptance criteria.',
    'Answer again, fixing these:',
    ...lines.map((issue) => `- ${issue}`),
    '',
  ].join('\n');
}
