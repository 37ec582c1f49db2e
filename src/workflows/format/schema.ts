import { z } from 'zod';
import { REASONING_EFFORTS } from '../../core/call-types.js';

/**
 * zod schemas for a workflow file as written: every key Conductor's schema accepts (so a Conductor
 * file parses), plus Switchboard's additions. Strict everywhere, so a typo is an error rather than a
 * silently ignored key. Cross-field rules (per-type forbidden fields, references) live in
 * `step-rules.ts` and `build.ts`; keys Switchboard reads but does not act on are listed in
 * `unsupported.ts`.
 */

const VALUE_TYPES = ['string', 'number', 'boolean', 'array', 'object'] as const;
const FAILURE_MODES = ['fail_fast', 'continue_on_error', 'all_or_nothing'] as const;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

const stringMap = z.record(z.string(), z.string());
/** YAML may write a number where Conductor expects a string (`value: 3`); Conductor coerces, so do we. */
const text = z.union([z.string(), z.number(), z.boolean()]).transform(String);
const textMap = z.record(z.string(), text);
/** Conductor's `reasoning.effort` levels. */
const reasoningEffort = z.enum(REASONING_EFFORTS);

export const inputSchema = z.strictObject({
  type: z.enum(VALUE_TYPES),
  required: z.boolean().default(true),
  default: z.unknown().optional(),
  description: z.string().nullish(),
});

export interface RawOutputField {
  type: (typeof VALUE_TYPES)[number];
  description?: string | null | undefined;
  items?: RawOutputField | null | undefined;
  properties?: Record<string, RawOutputField> | null | undefined;
  enum?: unknown[] | null | undefined;
  pattern?: string | null | undefined;
  minimum?: number | null | undefined;
  maximum?: number | null | undefined;
  minLength?: number | null | undefined;
  maxLength?: number | null | undefined;
  required: boolean;
  nullable: boolean;
}

export const outputFieldSchema: z.ZodType<RawOutputField> = z.lazy(() =>
  z.strictObject({
    type: z.enum(VALUE_TYPES),
    description: z.string().nullish(),
    items: outputFieldSchema.nullish(),
    properties: z.record(z.string(), outputFieldSchema).nullish(),
    enum: z.array(z.unknown()).nullish(),
    pattern: z.string().nullish(),
    minimum: z.number().nullish(),
    maximum: z.number().nullish(),
    minLength: z.number().int().nonnegative().nullish(),
    maxLength: z.number().int().nonnegative().nullish(),
    required: z.boolean().default(true),
    nullable: z.boolean().default(false),
  }),
);

export const routeSchema = z.strictObject({
  to: z.string().min(1, 'a route target cannot be empty'),
  when: text.nullish(),
  output: textMap.nullish(),
});

const gateOptionSchema = z.strictObject({
  label: z.string(),
  value: text,
  route: z.string().min(1),
  prompt_for: z.string().nullish(),
  multiline: z.boolean().default(false),
});

const questionSchema = z.strictObject({
  id: z.string().nullish(),
  text: z.string(),
  hint: z.string().nullish(),
  choices: z.array(z.string()).nullish(),
  allow_free_text: z.boolean().optional(),
  default: z.string().nullish(),
  required: z.boolean().optional(),
  multiline: z.boolean().optional(),
});

const retrySchema = z.strictObject({
  max_attempts: z.number().int().min(1).max(10).default(1),
  backoff: z.enum(['fixed', 'exponential']).default('exponential'),
  delay_seconds: z.number().min(0).max(300).default(2),
  retry_on: z.array(z.enum(['provider_error', 'timeout'])).default(['provider_error', 'timeout']),
  max_parse_recovery_attempts: z.number().int().min(0).max(10).nullish(),
});

const pluginEntry = z.union([
  z.string(),
  z.strictObject({
    name: z.string(),
    skills: z.boolean().optional(),
    agents: z.boolean().optional(),
    mcp: z.boolean().optional(),
  }),
]);

const positive = z.number().positive();

/** Switchboard addition: the task limits of an `effects: git` agent step (as in an agent task file). */
const gitLimitsSchema = z.strictObject({
  max_turns: z.number().int().positive().optional(),
  max_cost_usd: positive.optional(),
  idle_timeout_seconds: positive.optional(),
  wall_clock_seconds: positive.optional(),
  max_attempts: z.number().int().min(1).max(20).optional(),
  verify_timeout_seconds: positive.optional(),
});

/**
 * One entry of `agents:` (or a for_each group's inline `agent:`). Conductor uses one model for every
 * step type and forbids fields per type afterwards; so do we.
 */
export const stepSchema = z.strictObject({
  name: z.string().regex(IDENTIFIER, 'a step name is letters, digits and "_", not starting with a digit'),
  description: z.string().nullish(),
  type: z
    .enum(['agent', 'human_gate', 'questions', 'script', 'set', 'terminate', 'wait', 'workflow', 'route'])
    .nullish(),
  provider: z.string().nullish(),
  model: z.string().nullish(),
  context_tier: z.string().nullish(),
  input: z.array(z.string()).default([]),
  tools: z.array(z.string()).nullish(),
  system_prompt: z.string().nullish(),
  prompt: z.string().default(''),
  output: z.record(z.string(), outputFieldSchema).nullish(),
  output_mode: z.enum(['raw', 'envelope']).nullish(),
  routes: z.array(routeSchema).default([]),
  options: z.array(gateOptionSchema).nullish(),
  questions: z.array(questionSchema).nullish(),
  source: z.string().nullish(),
  allow_back: z.boolean().nullish(),
  allow_skip: z.boolean().nullish(),
  allow_skip_all: z.boolean().nullish(),
  allow_abort: z.boolean().nullish(),
  abort_route: z.string().nullish(),
  command: z.string().nullish(),
  args: z.array(text).default([]),
  env: textMap.default({}),
  working_dir: z.string().nullish(),
  stdin: z.string().nullish(),
  /** Script: seconds. Switchboard addition on human_gate: seconds to wait before `default`. */
  timeout: z.number().int().positive('timeout must be a positive whole number of seconds').nullish(),
  duration: z.union([z.string(), z.number()]).nullish(),
  reason: z.string().nullish(),
  value: text.nullish(),
  values: textMap.nullish(),
  output_type: z.enum(['auto', 'string', 'number', 'integer', 'boolean', 'list', 'dict']).nullish(),
  workflow: z.string().nullish(),
  input_mapping: textMap.nullish(),
  max_depth: z.number().int().min(1).max(10).nullish(),
  timeout_seconds: z.number().min(1).nullish(),
  max_session_seconds: z.number().min(1).nullish(),
  max_agent_iterations: z.number().int().min(1).max(500).nullish(),
  session_key: z.string().nullish(),
  retry: retrySchema.nullish(),
  dialog: z.strictObject({ trigger_prompt: z.string() }).nullish(),
  reasoning: z.strictObject({ effort: reasoningEffort }).nullish(),
  validator: z
    .strictObject({
      criteria: z.string(),
      model: z.string().nullish(),
      max_retries: z.number().int().min(0).max(1).optional(),
    })
    .nullish(),
  sandbox: z
    .strictObject({
      identifier_scope: z.enum(['workflow', 'agent', 'item', 'none']).nullish(),
      working_dir: z.string().nullish(),
    })
    .nullish(),
  /** Conductor: skill names for an agent (list). Switchboard `type: route`: the skills folder (string). */
  skills: z.union([z.array(z.string()), z.string()]).nullish(),
  plugins: z.array(pluginEntry).nullish(),
  status: z.enum(['success', 'failed']).nullish(),
  output_template: textMap.nullish(),
  // Switchboard additions.
  max_visits: z.number().int().positive().nullish(),
  on_cap: z.string().min(1).nullish(),
  /** script: bytes it may print on stdout, and again on stderr, before it is killed (OUTPUT_LIMIT). */
  max_output_bytes: z
    .number()
    .int()
    .positive('max_output_bytes must be a positive whole number of bytes')
    .nullish(),
  /** human_gate: the option value chosen when `timeout` passes. */
  default: text.nullish(),
  mcp: z.union([z.boolean(), z.array(z.string())]).nullish(),
  effects: z.enum(['git', 'files']).nullish(),
  /** Switchboard addition: `run_command` keeps the machine's network (else none). */
  network: z.boolean().nullish(),
  repo: z.string().nullish(),
  base: z.string().nullish(),
  verify: z.string().nullish(),
  setup: z.string().nullish(),
  merge: z.enum(['no-ff', 'ff', 'branch', 'pr']).nullish(),
  /** `effects: git`: the GitHub issue the step works on (`OWNER/REPO#N`, a template). */
  issue: z.string().nullish(),
  limits: gitLimitsSchema.nullish(),
  acceptance: z.union([z.string(), z.array(z.string())]).nullish(),
  text: z.string().nullish(),
  mode: z.string().nullish(),
});

export type RawStep = z.output<typeof stepSchema>;

const parallelSchema = z.strictObject({
  name: z.string().regex(IDENTIFIER, 'a group name is letters, digits and "_", not starting with a digit'),
  description: z.string().nullish(),
  agents: z.array(z.string()).min(2, 'a parallel group needs at least 2 agents'),
  failure_mode: z.enum(FAILURE_MODES).default('fail_fast'),
  routes: z.array(routeSchema).default([]),
  max_visits: z.number().int().positive().nullish(),
  on_cap: z.string().min(1).nullish(),
});

const forEachSchema = z.strictObject({
  name: z.string().regex(IDENTIFIER, 'a group name is letters, digits and "_", not starting with a digit'),
  description: z.string().nullish(),
  type: z.literal('for_each'),
  source: z
    .string()
    .refine(
      (value) => value.split('.').length >= 3 && IDENTIFIER.test(value.split('.')[0] ?? ''),
      'source is a path like finder.output.items (at least 3 parts)',
    ),
  as: z
    .string()
    .regex(IDENTIFIER, 'the loop variable must be an identifier')
    .refine(
      (value) => !['workflow', 'context', 'output', '_index', '_key'].includes(value),
      'the loop variable cannot be workflow, context, output, _index or _key',
    ),
  agent: stepSchema,
  max_concurrent: z.number().int().min(1).max(100).default(10),
  failure_mode: z.enum(FAILURE_MODES).default('fail_fast'),
  key_by: z.string().nullish(),
  routes: z.array(routeSchema).default([]),
  max_visits: z.number().int().positive().nullish(),
  on_cap: z.string().min(1).nullish(),
});

export type RawParallel = z.output<typeof parallelSchema>;
export type RawForEach = z.output<typeof forEachSchema>;

const mcpServerSchema = z.strictObject({
  type: z.enum(['stdio', 'http', 'sse']).default('stdio'),
  command: z.string().nullish(),
  args: z.array(text).default([]),
  env: textMap.default({}),
  url: z.string().nullish(),
  headers: stringMap.default({}),
  timeout: z.number().int().nullish(),
  tools: z.array(z.string()).default(['*']),
});

const providerSettingsSchema = z.strictObject({
  name: z.string().default('copilot'),
  type: z.enum(['openai', 'azure', 'anthropic']).nullish(),
  wire_api: z.enum(['completions', 'responses']).nullish(),
  base_url: z.string().nullish(),
  api_key: z.string().nullish(),
  bearer_token: z.string().nullish(),
  auth_token: z.string().nullish(),
  headers: stringMap.nullish(),
  azure: z.strictObject({ api_version: z.string().nullish() }).nullish(),
  runtime_url: z.string().nullish(),
  runtime_token: z.string().nullish(),
  hermes_home: z.string().nullish(),
  hermes_toolsets: z.array(z.string()).nullish(),
  hermes_skip_memory: z.boolean().nullish(),
  hermes_skip_context_files: z.boolean().nullish(),
  pool_endpoint: z.string().nullish(),
  api_version: z.string().nullish(),
  inner_provider: z.enum(['copilot', 'claude-agent-sdk']).nullish(),
  identifier_scope: z.enum(['workflow', 'agent', 'item', 'none']).nullish(),
  egress: z.enum(['enabled', 'disabled']).nullish(),
  lifecycle: z.enum(['timed', 'on_container_exit']).nullish(),
  auth: z.enum(['azure_default']).nullish(),
});

const runtimeSchema = z.strictObject({
  provider: z.union([z.string().transform((name) => ({ name })), providerSettingsSchema]).nullish(),
  default_model: z.string().nullish(),
  mcp_servers: z.record(z.string(), mcpServerSchema).default({}),
  temperature: z.number().min(0).max(2).nullish(),
  max_tokens: z.number().int().min(1).nullish(),
  timeout: z.number().positive().nullish(),
  max_session_seconds: z.number().min(1).nullish(),
  max_agent_iterations: z.number().int().min(1).max(500).nullish(),
  default_reasoning_effort: reasoningEffort.nullish(),
  checkpoint: z
    .strictObject({
      every_agent: z.boolean().optional(),
      every_seconds: z.number().int().min(1).nullish(),
      keep_last: z.number().int().min(1).max(100).optional(),
    })
    .nullish(),
  tool_output: z
    .strictObject({
      enabled: z.boolean().optional(),
      max_chars: z.number().int().min(1000).optional(),
      spill_to_file: z.boolean().optional(),
      spill_dir: z.string().nullish(),
    })
    .nullish(),
  default_context_tier: z.string().nullish(),
  working_dir: z.string().nullish(),
  skills: z.array(z.string()).nullish(),
  skill_injection: z
    .strictObject({
      warn_bytes: z.number().int().min(0).nullish(),
      max_bytes: z.number().int().min(0).nullish(),
    })
    .nullish(),
  skill_discovery: z
    .strictObject({ sources: z.array(z.string()).optional(), exclude: z.array(z.string()).optional() })
    .nullish(),
  plugin_sources: z
    .record(
      z.string(),
      z.union([
        z.string(),
        z.strictObject({ source: z.string(), path: z.string().nullish(), plugin: z.string().nullish() }),
      ]),
    )
    .nullish(),
  plugins: z.array(pluginEntry).nullish(),
});

const workflowSectionSchema = z.strictObject({
  name: z.string().min(1),
  description: z.string().nullish(),
  version: text.nullish(),
  entry_point: z.string().min(1),
  runtime: runtimeSchema.default({ mcp_servers: {} }),
  input: z.record(z.string(), inputSchema).default({}),
  context: z
    .strictObject({
      mode: z.enum(['accumulate', 'last_only', 'explicit']).default('accumulate'),
      max_tokens: z.number().int().nullish(),
      trim_strategy: z.enum(['summarize', 'truncate', 'drop_oldest']).nullish(),
    })
    .default({ mode: 'accumulate' }),
  limits: z
    .strictObject({
      max_iterations: z.number().int().min(1).max(500).default(10),
      timeout_seconds: z.number().int().min(1).nullish(),
      budget_usd: z.number().positive().nullish(),
      budget_mode: z.enum(['audit', 'enforce']).default('audit'),
    })
    .default({ max_iterations: 10, budget_mode: 'audit' }),
  cost: z
    .strictObject({
      show_per_agent: z.boolean().optional(),
      show_summary: z.boolean().optional(),
      pricing: z.record(z.string(), z.record(z.string(), z.number())).optional(),
    })
    .nullish(),
  hooks: z
    .strictObject({
      on_start: z.string().nullish(),
      on_complete: z.string().nullish(),
      on_error: z.string().nullish(),
    })
    .nullish(),
  metadata: z.record(z.string(), z.unknown()).default({}),
  instructions: z.array(z.string()).nullish(),
  /** Switchboard addition: a template naming the run; starting a run whose key exists resumes it. */
  run_key: z.string().min(1).nullish(),
});

export const workflowFileSchema = z.strictObject({
  workflow: workflowSectionSchema,
  tools: z.array(z.string()).default([]),
  agents: z.array(stepSchema),
  parallel: z.array(parallelSchema).default([]),
  for_each: z.array(forEachSchema).default([]),
  output: textMap.default({}),
});

export type RawWorkflowFile = z.output<typeof workflowFileSchema>;
