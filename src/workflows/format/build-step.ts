import { linearRegexProblem } from '../../core/linear-regex.js';
import type {
  GateOption,
  GitEffectDefinition,
  OutputField,
  RetryDefinition,
  RouteDefinition,
  StepDefinition,
  ValidatorDefinition,
} from '../model.js';
import { workflowInvalid, type ProblemPlace } from './problem.js';
import type { RawOutputField, RawStep } from './schema.js';
import { forbiddenField, ignoredFields, isSet, type WrittenType } from './step-rules.js';
import { UNSUPPORTED_STEP_KEYS } from './unsupported.js';

/** Where a step sits in the file, for messages: `agents[2] "reviewer"`. */
export interface StepPlace {
  file: string;
  label: string;
  /** `line:col` of a field of this step, when known. */
  positionOf(field: string): string | undefined;
}

const MAX_WAIT_SECONDS = 24 * 60 * 60;

/**
 * One `agents:` entry (or for_each inline agent) → the model's step, after Conductor's per-type
 * rules. `written` is the entry as the user wrote it (which keys are present); `raw` is it parsed.
 * Keys Switchboard does not act on are pushed onto `warnings`.
 */
export function buildStep(
  raw: RawStep,
  written: Record<string, unknown>,
  place: StepPlace,
  warnings: string[],
): StepDefinition {
  const type: WrittenType = raw.type ?? 'agent';
  const fail = (field: string | undefined, what: string, hint: string): never => {
    const problem: ProblemPlace = { file: place.file, step: place.label };
    if (field !== undefined) {
      problem.field = field;
      const position = place.positionOf(field);
      if (position !== undefined) problem.position = position;
    }
    throw workflowInvalid(problem, what, hint);
  };
  const conflict = forbiddenField(type, written);
  if (conflict !== undefined) fail(conflict.field, conflict.message, conflict.hint);
  if (typeof raw.skills === 'string' && type !== 'route') {
    fail(
      'skills',
      'a skills folder (a string) is only read by type: route steps',
      'give an agent step a list of skill names, or make this step type: route',
    );
  }
  collectWarnings(type, written, place.label, warnings);
  if (
    raw.output_mode === 'raw' &&
    raw.output !== undefined &&
    raw.output !== null &&
    Object.keys(raw.output).length > 0
  ) {
    fail(
      'output_mode',
      'output_mode raw cannot be combined with an output schema',
      'remove the output: block or use output_mode: envelope',
    );
  }
  const output = raw.output === undefined || raw.output === null ? undefined : buildOutput(raw.output, fail);
  const common = {
    name: raw.name,
    ...(raw.description == null ? {} : { description: raw.description }),
    routes: raw.routes.map(buildRoute),
    input: raw.input,
    ...(output === undefined ? {} : { output }),
    ...(raw.max_visits == null ? {} : { maxVisits: raw.max_visits }),
    ...(raw.on_cap == null ? {} : { onCap: raw.on_cap }),
  };
  switch (type) {
    case 'human_gate':
      return buildGate(raw, common, fail);
    case 'questions':
      return buildQuestions(raw, common, fail);
    case 'script':
      if (!isSet(written, 'command'))
        fail('command', 'a script step needs "command"', 'add command: (the program to run) and args: [...]');
      return {
        ...common,
        type: 'script',
        command: raw.command as string,
        args: raw.args,
        env: raw.env,
        ...optional('workingDir', raw.working_dir),
        ...optional('timeoutSeconds', raw.timeout),
        ...optional('stdin', raw.stdin),
        ...optional('maxOutputBytes', raw.max_output_bytes),
      };
    case 'set':
      if ((raw.value == null) === (raw.values == null)) {
        fail(
          'value',
          'a set step needs exactly one of "value" or "values"',
          'write value: "{{ … }}" for one value, or values: {key: "{{ … }}"} for several',
        );
      }
      if (raw.values != null && raw.output_type != null) {
        fail(
          'output_type',
          'output_type only applies to a single "value"',
          'remove output_type, or use value: instead of values:',
        );
      }
      return {
        ...common,
        type: 'set',
        ...optional('value', raw.value),
        ...optional('values', raw.values),
        outputType: raw.output_type ?? 'auto',
      };
    case 'terminate':
      if (raw.status == null)
        fail('status', 'a terminate step needs "status"', 'add status: success or status: failed');
      if (raw.reason == null || raw.reason.trim() === '')
        fail('reason', 'a terminate step needs a non-empty "reason"', 'add reason: "why the run ends here"');
      return {
        ...common,
        type: 'terminate',
        status: raw.status as 'success' | 'failed',
        ...optional('reason', raw.reason),
        ...optional('outputTemplate', raw.output_template),
      };
    case 'wait':
      checkDuration(raw.duration, fail);
      return {
        ...common,
        type: 'wait',
        duration: raw.duration as string | number,
        ...optional('reason', raw.reason),
      };
    case 'workflow':
      if (!isSet(written, 'workflow'))
        fail(
          'workflow',
          'a workflow step needs "workflow" (the sub-workflow file)',
          'add workflow: ./child.yaml (relative to this file)',
        );
      return {
        ...common,
        type: 'workflow',
        workflow: raw.workflow as string,
        ...optional('inputMapping', raw.input_mapping),
        ...optional('maxDepth', raw.max_depth),
      };
    case 'route':
      if (typeof raw.skills !== 'string' || raw.skills === '')
        fail(
          'skills',
          'a route step needs "skills" (a skills folder)',
          'add skills: ./skills (relative to this file)',
        );
      if (raw.text == null || raw.text === '')
        fail(
          'text',
          'a route step needs "text" (the request to route)',
          'add text: "{{ workflow.input.request }}"',
        );
      return {
        ...common,
        type: 'route',
        skills: raw.skills as string,
        text: raw.text as string,
        ...optional('mode', raw.mode),
      };
    default:
      return buildAgent(raw, common, fail);
  }
}

type Fail = (field: string | undefined, what: string, hint: string) => never;
type Common = Pick<
  StepDefinition,
  'name' | 'description' | 'routes' | 'input' | 'output' | 'maxVisits' | 'onCap'
>;

function buildAgent(raw: RawStep, common: Common, fail: Fail): StepDefinition {
  const gitFields = (
    ['repo', 'base', 'verify', 'setup', 'merge', 'issue', 'limits', 'acceptance'] as const
  ).filter((key) => raw[key] != null);
  if (raw.effects !== 'git' && gitFields[0] !== undefined) {
    fail(
      gitFields[0],
      `"${gitFields[0]}" needs effects: git`,
      'add effects: git to run this step as a Claude Code agent in a git worktree, or remove the field',
    );
  }
  if (raw.effects === 'git' && raw.validator != null) {
    fail(
      'validator',
      'effects: git steps cannot have "validator"',
      'check the change with verify: (a command) or acceptance:, or grade it in a later LLM step',
    );
  }
  if (raw.validator != null && raw.validator.criteria.trim() === '') {
    fail(
      'validator',
      'validator "criteria" is empty',
      'write criteria: (what a good output satisfies), or remove the validator',
    );
  }
  let git: GitEffectDefinition | undefined;
  if (raw.effects === 'git') {
    git = {
      ...optional('repo', raw.repo),
      ...optional('base', raw.base),
      ...optional('verify', raw.verify),
      ...optional('setup', raw.setup),
      ...optional('merge', raw.merge),
      ...optional('issue', raw.issue),
      ...(raw.limits == null ? {} : { limits: stripUndefined(raw.limits) }),
      ...(raw.acceptance == null
        ? {}
        : { acceptance: Array.isArray(raw.acceptance) ? raw.acceptance : [raw.acceptance] }),
    };
  }
  return {
    ...common,
    type: 'agent',
    ...optional('provider', raw.provider),
    ...optional('model', raw.model),
    ...optional('systemPrompt', raw.system_prompt),
    prompt: raw.prompt,
    ...optional('tools', raw.tools),
    ...(raw.effects === 'files' ? { writesFiles: true } : {}),
    ...(raw.network === true ? { network: true } : {}),
    ...(raw.retry == null ? {} : { retry: buildRetry(raw.retry) }),
    ...optional('timeoutSeconds', raw.timeout_seconds),
    ...optional('maxAgentIterations', raw.max_agent_iterations),
    ...optional('reasoning', raw.reasoning?.effort),
    ...optional('sessionKey', raw.session_key?.trim()),
    ...optional('workingDir', raw.working_dir),
    ...optional('outputMode', raw.output_mode),
    ...optional('mcp', raw.mcp),
    ...(git === undefined ? {} : { git }),
    ...(raw.validator == null ? {} : { validator: buildValidator(raw.validator) }),
  };
}

function buildValidator(raw: NonNullable<RawStep['validator']>): ValidatorDefinition {
  return {
    criteria: raw.criteria,
    ...optional('model', raw.model),
    maxRetries: raw.max_retries === 0 ? 0 : 1,
  };
}

function buildGate(raw: RawStep, common: Common, fail: Fail): StepDefinition {
  if (raw.options == null || raw.options.length === 0)
    fail(
      'options',
      'a human_gate step needs "options"',
      'add options: [{label: Approve, value: approve, route: next_step}]',
    );
  if (raw.prompt === '')
    fail(
      'prompt',
      'a human_gate step needs "prompt"',
      'add prompt: (the question shown to the person answering)',
    );
  const options: GateOption[] = (raw.options ?? []).map((option) => ({
    label: option.label,
    value: option.value,
    route: option.route,
    ...optional('promptFor', option.prompt_for),
    multiline: option.multiline,
  }));
  if (raw.default != null) {
    if (raw.timeout == null)
      fail(
        'default',
        '"default" only applies with "timeout"',
        'add timeout: <seconds> (how long to wait before the default is chosen), or remove default',
      );
    if (!options.some((option) => option.value === raw.default)) {
      fail(
        'default',
        `default "${raw.default}" is not one of the options' values`,
        `use one of: ${options.map((option) => option.value).join(', ')}`,
      );
    }
  }
  return {
    ...common,
    type: 'human_gate',
    prompt: raw.prompt,
    options,
    ...optional('timeoutSeconds', raw.timeout),
    ...optional('default', raw.default),
  };
}

function buildQuestions(raw: RawStep, common: Common, fail: Fail): StepDefinition {
  const inline = raw.questions != null && raw.questions.length > 0;
  if (inline === (raw.source != null))
    fail(
      inline ? 'source' : 'questions',
      inline
        ? 'a questions step takes "questions" or "source", not both'
        : 'a questions step needs "questions" or "source"',
      'write questions: [{text: …}] inline, or source: <step>.output.<field> (a list from an earlier step)',
    );
  if (raw.source != null && !/^[A-Za-z_]\w*(\.[^.\s]+){2,}$/.test(raw.source))
    fail(
      'source',
      `source "${raw.source}" is not a path like architect.output.open_questions`,
      'name a step, output and field (at least 3 parts)',
    );
  if (raw.abort_route != null && raw.allow_abort !== true)
    fail(
      'abort_route',
      '"abort_route" needs allow_abort: true',
      'add allow_abort: true, or remove abort_route',
    );
  const questions = raw.questions?.map((question) => ({
    ...optional('id', question.id),
    text: question.text,
    ...optional('hint', question.hint),
    choices: question.choices ?? [],
    allowFreeText: question.allow_free_text ?? true,
    ...optional('default', question.default),
    required: question.required ?? false,
  }));
  const ids = (questions ?? []).map((question, index) => question.id ?? `q${index + 1}`);
  const repeated = ids.find((id, index) => ids.indexOf(id) !== index);
  if (repeated !== undefined)
    fail(
      'questions',
      `two questions have the id "${repeated}"`,
      'ids become answer keys: make them unique, or drop them for q1…qN',
    );
  return {
    ...common,
    type: 'questions',
    prompt: raw.prompt,
    ...(questions === undefined ? {} : { questions }),
    ...optional('source', raw.source),
    allowSkip: raw.allow_skip ?? true,
    allowSkipAll: raw.allow_skip_all ?? true,
    allowAbort: raw.allow_abort ?? false,
    ...optional('abortRoute', raw.abort_route),
  };
}

function buildRetry(raw: NonNullable<RawStep['retry']>): RetryDefinition {
  return {
    maxAttempts: raw.max_attempts,
    backoff: raw.backoff,
    delaySeconds: raw.delay_seconds,
    retryOn: raw.retry_on,
    ...optional('maxParseRecoveryAttempts', raw.max_parse_recovery_attempts),
  };
}

export function buildRoute(raw: RawStep['routes'][number]): RouteDefinition {
  return { to: raw.to, ...optional('when', raw.when), ...optional('output', raw.output) };
}

/** Conductor's output field rules (type-specific constraints, enum shape, root fields required). */
function buildOutput(fields: Record<string, RawOutputField>, fail: Fail): Record<string, OutputField> {
  return Object.fromEntries(
    Object.entries(fields).map(([name, field]) => {
      if (!field.required) {
        fail(
          `output.${name}`,
          'a top-level output field cannot be optional',
          "remove required: false (optional fields are allowed inside an object's properties)",
        );
      }
      return [name, buildField(field, `output.${name}`, fail)];
    }),
  );
}

function buildField(raw: RawOutputField, path: string, fail: Fail): OutputField {
  const problem = fieldProblem(raw);
  if (problem !== undefined)
    fail(
      path,
      problem,
      "see Conductor's output field constraints: pattern/minLength/maxLength for strings, minimum/maximum for numbers, enum for scalars",
    );
  return {
    type: raw.type,
    ...optional('description', raw.description),
    ...(raw.items == null ? {} : { items: buildField(raw.items, `${path}.items`, fail) }),
    ...(raw.properties == null
      ? {}
      : {
          properties: Object.fromEntries(
            Object.entries(raw.properties).map(([key, value]) => [
              key,
              buildField(value, `${path}.properties.${key}`, fail),
            ]),
          ),
        }),
    ...optional('enum', raw.enum),
    ...optional('pattern', raw.pattern),
    ...optional('minimum', raw.minimum),
    ...optional('maximum', raw.maximum),
    ...optional('minLength', raw.minLength),
    ...optional('maxLength', raw.maxLength),
    required: raw.required,
    nullable: raw.nullable,
  };
}

function fieldProblem(raw: RawOutputField): string | undefined {
  if (raw.type !== 'string' && (raw.pattern != null || raw.minLength != null || raw.maxLength != null)) {
    return 'pattern, minLength and maxLength only apply to type string';
  }
  if (raw.type !== 'number' && (raw.minimum != null || raw.maximum != null))
    return 'minimum and maximum only apply to type number';
  if (raw.enum != null) {
    if (raw.type === 'array' || raw.type === 'object') return 'enum only applies to scalar types';
    if (raw.enum.length === 0) return 'enum needs at least one value';
    if (raw.enum.some((value) => value === null)) return 'enum cannot contain null (use nullable: true)';
    if (!raw.enum.every((value) => typeof value === raw.type))
      return `enum values must be of type ${raw.type}`;
  }
  if (raw.minLength != null && raw.maxLength != null && raw.minLength > raw.maxLength)
    return 'minLength is greater than maxLength';
  if (raw.minimum != null && raw.maximum != null && raw.minimum > raw.maximum)
    return 'minimum is greater than maximum';
  if (raw.pattern != null) {
    const problem = linearRegexProblem(raw.pattern, 'u');
    if (problem !== undefined) return `pattern ${JSON.stringify(raw.pattern)}: ${problem}`;
  }
  return undefined;
}

/** Conductor's wait durations: seconds, or `500ms`, `60s`, `2.5m`, `1h`; templates are checked at run time. */
function checkDuration(duration: string | number | null | undefined, fail: Fail): void {
  if (duration == null)
    fail(
      'duration',
      'a wait step needs "duration"',
      'add duration: 30s (or 500ms, 2.5m, 1h, or a number of seconds)',
    );
  if (typeof duration === 'string' && duration.includes('{{')) return;
  const seconds = parseDurationSeconds(duration as string | number);
  if (seconds === undefined)
    fail('duration', `"${duration}" is not a duration`, 'write a number of seconds or 500ms, 60s, 2.5m, 1h');
  if ((seconds as number) <= 0)
    fail('duration', 'a wait must be longer than 0 seconds', 'give a positive duration');
  if ((seconds as number) > MAX_WAIT_SECONDS)
    fail(
      'duration',
      'a wait is capped at 24h',
      'use limits.timeout_seconds or a human_gate for longer pauses',
    );
}

/** Seconds in `500ms` / `60s` / `2.5m` / `1h` / `90`, or undefined when it is none of those. */
export function parseDurationSeconds(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(value);
  if (match === null) return undefined;
  const amount = Number(match[1]);
  const unit = match[2] ?? 's';
  return amount * { ms: 0.001, s: 1, m: 60, h: 3600 }[unit as 'ms' | 's' | 'm' | 'h'];
}

function collectWarnings(
  type: WrittenType,
  written: Record<string, unknown>,
  label: string,
  warnings: string[],
): void {
  for (const key of ignoredFields(type, written)) {
    const why = UNSUPPORTED_STEP_KEYS[key];
    warnings.push(
      why === undefined
        ? `${label}: ${key} is not read by ${type} steps; ignored`
        : `${label}: ${key} is not supported by Switchboard; ignored (${why})`,
    );
  }
}

function optional<K extends string, V>(key: K, value: V | null | undefined): { [P in K]?: V } {
  return (value === undefined || value === null ? {} : { [key]: value }) as { [P in K]?: V };
}

function stripUndefined(record: Record<string, number | undefined>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(record).filter((entry): entry is [string, number] => entry[1] !== undefined),
  );
}
