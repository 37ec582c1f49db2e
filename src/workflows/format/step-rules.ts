/**
 * Which fields each step type may carry. Conductor checks this per type after parsing
 * (`validate_agent_type`); these tables mirror its forbidden lists, so a file Conductor rejects is
 * rejected here and a file it accepts is accepted. Switchboard's own additions are checked the same way.
 */

/** A step's type as written; absent means `agent`. */
export type WrittenType =
  'agent' | 'human_gate' | 'questions' | 'script' | 'set' | 'terminate' | 'wait' | 'workflow' | 'route';

const LLM = ['prompt', 'provider', 'model', 'tools', 'system_prompt'];
const AGENTIC = [
  'max_session_seconds',
  'max_agent_iterations',
  'session_key',
  'retry',
  'dialog',
  'validator',
  'sandbox',
  'reasoning',
  'context_tier',
  'skills',
  'plugins',
  'timeout_seconds',
  'output_mode',
];
const SET_ONLY = ['value', 'values', 'output_type'];
const WORKFLOW_ONLY = ['input_mapping', 'max_depth'];
const SCRIPT_BODY = ['command', 'args', 'env', 'working_dir', 'timeout'];
const GIT_FIELDS = ['repo', 'base', 'verify', 'setup', 'merge', 'issue', 'limits', 'acceptance'];

/** Fields Conductor forbids on a type (beyond the cross-type rules below). */
const FORBIDDEN: Record<Exclude<WrittenType, 'route'>, string[]> = {
  agent: [...WORKFLOW_ONLY, ...SET_ONLY],
  human_gate: [
    ...WORKFLOW_ONLY,
    ...SET_ONLY,
    ...AGENTIC.filter(
      (key) => key !== 'retry' && key !== 'max_session_seconds' && key !== 'max_agent_iterations',
    ),
    'working_dir',
    'session_key',
  ],
  // Conductor: no provider is invoked and the answer's shape is fixed.
  questions: [
    ...LLM.filter((key) => key !== 'prompt'),
    'options',
    ...AGENTIC,
    ...WORKFLOW_ONLY,
    ...SET_ONLY,
    ...SCRIPT_BODY,
    'output',
    'workflow',
  ],
  script: [...LLM, 'options', ...AGENTIC, ...WORKFLOW_ONLY, ...SET_ONLY],
  workflow: [...LLM, 'options', 'command', ...AGENTIC, 'working_dir', ...SET_ONLY],
  wait: [...LLM, 'options', ...SCRIPT_BODY, 'workflow', ...WORKFLOW_ONLY, ...AGENTIC, 'output', ...SET_ONLY],
  set: [...LLM, 'options', ...SCRIPT_BODY, 'workflow', ...WORKFLOW_ONLY, ...AGENTIC],
  terminate: [
    'routes',
    'output',
    ...LLM,
    ...SCRIPT_BODY,
    ...AGENTIC,
    'workflow',
    ...WORKFLOW_ONLY,
    'options',
    ...SET_ONLY,
  ],
};

/** Fields that belong to exactly one family of types, forbidden everywhere else. */
const OWNED_BY: Record<string, WrittenType[]> = {
  status: ['terminate'],
  output_template: ['terminate'],
  stdin: ['script'],
  duration: ['wait'],
  reason: ['wait', 'terminate'],
  questions: ['questions'],
  source: ['questions'],
  allow_back: ['questions'],
  allow_skip: ['questions'],
  allow_skip_all: ['questions'],
  allow_abort: ['questions'],
  abort_route: ['questions'],
  // Switchboard additions.
  default: ['human_gate'],
  mcp: ['agent'],
  effects: ['agent'],
  network: ['agent'],
  text: ['route'],
  mode: ['route'],
  max_output_bytes: ['script'],
};

/** What each type reads; a field outside this list that is not forbidden is accepted and ignored. */
const APPLICABLE: Record<WrittenType, string[]> = {
  agent: [
    ...LLM,
    'retry',
    'timeout_seconds',
    'max_agent_iterations',
    'reasoning',
    'session_key',
    'working_dir',
    'output_mode',
    'output',
    'mcp',
    'effects',
    'network',
    'validator',
    ...GIT_FIELDS,
  ],
  human_gate: ['prompt', 'options', 'timeout', 'default'],
  questions: [
    'prompt',
    'questions',
    'source',
    'allow_back',
    'allow_skip',
    'allow_skip_all',
    'allow_abort',
    'abort_route',
  ],
  script: [...SCRIPT_BODY, 'stdin', 'output', 'max_output_bytes'],
  set: [...SET_ONLY, 'output'],
  terminate: ['status', 'reason', 'output_template'],
  wait: ['duration', 'reason'],
  workflow: ['workflow', ...WORKFLOW_ONLY, 'output'],
  route: ['skills', 'text', 'mode'],
};
const COMMON = ['name', 'description', 'type', 'input', 'routes', 'max_visits', 'on_cap'];

/** Keys Conductor uses a truthiness test for (`if self.prompt:`), so an empty value counts as absent. */
const TRUTHY = new Set([
  'prompt',
  'provider',
  'model',
  'system_prompt',
  'command',
  'args',
  'env',
  'working_dir',
  'options',
  'max_session_seconds',
  'workflow',
  'routes',
]);

/** A field the user wrote with a value that counts (Conductor's `is not None` or truthiness). */
export function isSet(raw: Record<string, unknown>, key: string): boolean {
  const value = raw[key];
  if (value === undefined || value === null) return false;
  if (!TRUTHY.has(key)) return true;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === 'object') return Object.keys(value).length > 0;
  return value !== '' && value !== false && value !== 0;
}

/** A field this type may not have, with the fix. */
export interface FieldConflict {
  field: string;
  message: string;
  hint: string;
}

/** The first field a step of `type` may not carry, or undefined. */
export function forbiddenField(type: WrittenType, raw: Record<string, unknown>): FieldConflict | undefined {
  for (const [field, owners] of Object.entries(OWNED_BY)) {
    if (isSet(raw, field) && !owners.includes(type)) return conflict(type, field, owners);
  }
  if (type === 'route') {
    const allowed = new Set([...COMMON, ...APPLICABLE.route]);
    const field = Object.keys(raw).find((key) => !allowed.has(key) && isSet(raw, key));
    return field === undefined ? undefined : conflict(type, field, ownersOf(field));
  }
  if (type !== 'agent') {
    const git = GIT_FIELDS.find((field) => isSet(raw, field));
    if (git !== undefined) return conflict(type, git, ['agent']);
  }
  const field = FORBIDDEN[type].find((key) => isSet(raw, key));
  return field === undefined ? undefined : conflict(type, field, ownersOf(field));
}

/** Fields the step carries that its type does not read (accepted, as Conductor does, and ignored). */
export function ignoredFields(type: WrittenType, raw: Record<string, unknown>): string[] {
  const used = new Set([...COMMON, ...APPLICABLE[type]]);
  return Object.keys(raw).filter((key) => !used.has(key) && isSet(raw, key));
}

function ownersOf(field: string): WrittenType[] {
  const owners = (Object.keys(APPLICABLE) as WrittenType[]).filter((type) =>
    APPLICABLE[type].includes(field),
  );
  return owners.length > 0 ? owners : ['agent'];
}

function conflict(type: WrittenType, field: string, owners: WrittenType[]): FieldConflict {
  const special = SPECIAL_HINTS[`${type}.${field}`];
  return {
    field,
    message: `${type} steps cannot have "${field}"`,
    hint:
      special ??
      `remove "${field}"; it belongs on ${owners.map((owner) => `type: ${owner}`).join(' or ')} steps`,
  };
}

const SPECIAL_HINTS: Record<string, string> = {
  'questions.options': 'per-question choices go in questions[].choices',
  'questions.output':
    "a questions step's output is fixed (answers, items, transcript, answered_count, skipped_count, answered_any, outcome); remove output",
  'script.timeout_seconds': 'a script step takes "timeout" (seconds) instead',
  'terminate.routes': 'reaching a terminate step ends the run; remove its routes',
  'terminate.output': 'use "output_template" to set the workflow\'s final output',
  'wait.output': 'a wait step\'s output is fixed ({waited_seconds}); remove "output"',
  'agent.repo':
    'add "effects: git" to run this step as a Claude Code agent in a worktree, or remove the field',
};
