/**
 * A workflow as the engine uses it: a Conductor-format YAML file, validated, with defaults applied.
 * `format/` builds it from a file; the engine never reads YAML itself. Field names follow Conductor's
 * schema (snake_case keys become camelCase here); Switchboard's own additions are marked as such.
 */
import type { McpServerEntry } from '../agents/mcp-servers.js';
import type { ReasoningEffort } from '../core/call-types.js';

/** `$end`: the route target that ends the workflow successfully. */
export const END = '$end';

export const STEP_TYPES = [
  'agent',
  'human_gate',
  /** Conductor's multi-question human step: one durable gate for several questions. */
  'questions',
  'script',
  'set',
  'terminate',
  'wait',
  'workflow',
  /** Switchboard addition: the router picks the next step from a skills folder. */
  'route',
] as const;
export type StepType = (typeof STEP_TYPES)[number];

export const FAILURE_MODES = ['fail_fast', 'continue_on_error', 'all_or_nothing'] as const;
export type FailureMode = (typeof FAILURE_MODES)[number];

export type ValueType = 'string' | 'number' | 'boolean' | 'array' | 'object';

/** One declared workflow input (`workflow.input.<name>`). */
export interface InputDefinition {
  type: ValueType;
  /** @default true */
  required: boolean;
  default?: unknown;
  description?: string;
}

/** One field of a step's `output:` schema, with Conductor's constraints. */
export interface OutputField {
  type: ValueType;
  description?: string;
  items?: OutputField;
  properties?: Record<string, OutputField>;
  enum?: unknown[];
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  /** Only meaningful inside `properties`. @default true */
  required: boolean;
  /** @default false */
  nullable: boolean;
}

export interface RouteDefinition {
  /** A step name, a group name, or `$end`. */
  to: string;
  /** Jinja2 (`{{ a.output.x == 1 }}`) or a bare expression (`exit_code == 0`); absent means always. */
  when?: string;
  /** Conductor's route `output:` mapping (templates), merged into the step's output when taken. */
  output?: Record<string, string>;
}

/** Conductor's retry policy for an LLM step. */
export interface RetryDefinition {
  /** Attempts in all, the first included. @default 1 */
  maxAttempts: number;
  backoff: 'fixed' | 'exponential';
  delaySeconds: number;
  retryOn: Array<'provider_error' | 'timeout'>;
  maxParseRecoveryAttempts?: number;
}

/** A gate option; the schema's shape wins over the older docs (`{label, value, route, prompt_for}`). */
export interface GateOption {
  label: string;
  value: string;
  route: string;
  /** Field name under `additional_input` that collects free text. */
  promptFor?: string;
  multiline: boolean;
}

/** Switchboard addition: `effects: git` on a `type: agent` step runs Claude Code in a worktree. */
export interface GitEffectDefinition {
  /** Repository directory (template). @default the workflow's working directory */
  repo?: string;
  /** Base branch or commit. @default the repository's current branch */
  base?: string;
  /** Shell command run in the worktree after the agent; failing it fails the step's attempt. */
  verify?: string;
  setup?: string;
  /** `no-ff` | `ff` | `branch` (leave the step branch unmerged) | `pr` (push it, open a pull request). @default branch */
  merge?: 'no-ff' | 'ff' | 'branch' | 'pr';
  /** A GitHub issue, `OWNER/REPO#N` (template): its text joins the prompt, and `merge: pr` comments on it. */
  issue?: string;
  /** Task limits as in an agent task file (`max_turns`, `max_cost_usd`, …), seconds where timed. */
  limits?: Record<string, number>;
  acceptance?: string[];
}

/** A server of `runtime.mcp_servers`: the same shape (and checks) as an agent task's `mcp_servers` entry. */
export type McpServerDefinition = McpServerEntry;

interface StepCommon {
  name: string;
  description?: string;
  routes: RouteDefinition[];
  /** Conductor `input:` references (`planner.output`, `workflow.input.x`, `a.output?`). */
  input: string[];
  /** Absent: no schema. `{}`: strict mode with no required fields (scripts). */
  output?: Record<string, OutputField>;
  /** Switchboard addition: how many times the step may run in one run (loops). */
  maxVisits?: number;
  /** Switchboard addition: where to go instead once `maxVisits` is reached. @default fail the run */
  onCap?: string;
}

/** `type: agent` (Conductor's default): one LLM call, or a Claude Code run in a worktree with `effects: git`. */
export interface AgentStep extends StepCommon {
  type: 'agent';
  /** Conductor provider name as written (`claude`, `claude-agent-sdk`, `openai`, `copilot`, …). */
  provider?: string;
  model?: string;
  systemPrompt?: string;
  prompt: string;
  /**
   * The step's tools: omitted is the provider's default set (on Claude Code `CLAUDE_CODE_DEFAULT_TOOLS`:
   * Read, Glob, Grep, Write, Edit, Bash), `[]` none, a list those.
   */
  tools?: string[];
  /** `effects: files` (Switchboard addition): the tools may write in the working directory, in place. */
  writesFiles?: boolean;
  /**
   * `network: true` (Switchboard addition): `run_command` on an API provider keeps the machine's
   * network; without it the command's sandbox has none.
   */
  network?: boolean;
  retry?: RetryDefinition;
  timeoutSeconds?: number;
  /**
   * Conductor's `max_agent_iterations`: the most model turns the step's tool loop may take (API
   * providers), or Claude Code's `maxTurns`. @default the runtime's, else 50 on the API providers
   */
  maxAgentIterations?: number;
  /** Conductor's `reasoning.effort`: how hard the model thinks (`CallRequest.reasoning`). */
  reasoning?: ReasoningEffort;
  /**
   * Conductor's `session_key`, trimmed: executions of steps with the same key (and working folder)
   * continue one Claude Code session.
   */
  sessionKey?: string;
  workingDir?: string;
  outputMode?: 'raw' | 'envelope';
  /** Names of `runtime.mcp_servers` this step opts into (Switchboard addition: `mcp: [names]` or `true`). */
  mcp?: string[] | boolean;
  git?: GitEffectDefinition;
  /** Conductor's `validator:`: a second call grades the answer, and a failed grade re-runs the step once. */
  validator?: ValidatorDefinition;
}

/**
 * Conductor's `validator:` on an LLM step: after the step's call, a second call on the same provider
 * grades the output against `criteria`; when it fails and `maxRetries` is 1, the step runs once more
 * with the grader's issues appended to its prompt, and that answer is final.
 */
export interface ValidatorDefinition {
  /** What a good output satisfies, sent to the grader as written (not a template). */
  criteria: string;
  /** The grader's model; @default the step's model. */
  model?: string;
  /** 1: re-run the step once on a failed grade; 0: only report it. @default 1 */
  maxRetries: 0 | 1;
}

export interface HumanGateStep extends StepCommon {
  type: 'human_gate';
  prompt: string;
  options: GateOption[];
  /** Switchboard addition: seconds to wait for an answer before `default` is chosen. */
  timeoutSeconds?: number;
  /** Switchboard addition: the option value chosen on timeout. */
  default?: string;
}

/** One question of a `questions` step (Conductor's `QuestionDef`). */
export interface QuestionDefinition {
  /** The answer's key; @default `q<n>` by position. */
  id?: string;
  text: string;
  hint?: string;
  /** Suggested answers. */
  choices: string[];
  /** Whether an answer other than the choices is taken. @default true */
  allowFreeText: boolean;
  /** The answer recorded when the question is skipped. */
  default?: string;
  /** Whether it may not be skipped. @default false */
  required: boolean;
}

/**
 * Conductor's `type: questions`: several questions put to a person in one step. Here it is a durable
 * gate answered once, with every answer at the same time (`workflow gate --answer ID=TEXT …`).
 */
export interface QuestionsStep extends StepCommon {
  type: 'questions';
  /** Shown above the questions (a template). */
  prompt: string;
  /** The questions as written (their text templates); or `source`. */
  questions?: QuestionDefinition[];
  /** A path to a list in the run's context (`architect.output.open_questions`): strings or questions. */
  source?: string;
  /** Conductor's navigation flags: a one-time answer has no use for `allow_back`. */
  allowSkip: boolean;
  allowSkipAll: boolean;
  allowAbort: boolean;
  /** Where the run goes when the person aborts. @default `$end` */
  abortRoute?: string;
}

export interface ScriptStep extends StepCommon {
  type: 'script';
  command: string;
  args: string[];
  env: Record<string, string>;
  workingDir?: string;
  timeoutSeconds?: number;
  /** Template piped to the child's stdin; absent leaves stdin empty (`ignore`). */
  stdin?: string;
  /** Switchboard addition: bytes the child may print on stdout, and again on stderr (default 1 MiB). */
  maxOutputBytes?: number;
}

export interface SetStep extends StepCommon {
  type: 'set';
  value?: string;
  values?: Record<string, string>;
  outputType: 'auto' | 'string' | 'number' | 'integer' | 'boolean' | 'list' | 'dict';
}

export interface TerminateStep extends StepCommon {
  type: 'terminate';
  status: 'success' | 'failed';
  reason?: string;
  outputTemplate?: Record<string, string>;
}

export interface WaitStep extends StepCommon {
  type: 'wait';
  /** Seconds, `500ms`/`60s`/`2.5m`/`1h`, or a template rendering to one. */
  duration: string | number;
  reason?: string;
}

export interface SubWorkflowStep extends StepCommon {
  type: 'workflow';
  /** Path relative to the parent file. */
  workflow: string;
  inputMapping?: Record<string, string>;
  maxDepth?: number;
}

/** Switchboard addition: route a request through the router; output `{skill, confidence, method, reasoning}`. */
export interface RouteStep extends StepCommon {
  type: 'route';
  /** Skills folder, relative to the workflow file. */
  skills: string;
  /** Template of the text to route. */
  text: string;
  /** Route mode (`local`, `hybrid`, …). @default the config's */
  mode?: string;
}

export type StepDefinition =
  | AgentStep
  | HumanGateStep
  | QuestionsStep
  | ScriptStep
  | SetStep
  | TerminateStep
  | WaitStep
  | SubWorkflowStep
  | RouteStep;

/** A static `parallel:` group: named steps run side by side. */
export interface ParallelGroup {
  kind: 'parallel';
  name: string;
  description?: string;
  /** Names of steps in `agents:`. */
  agents: string[];
  failureMode: FailureMode;
  routes: RouteDefinition[];
  maxVisits?: number;
  onCap?: string;
}

/** A `for_each:` group: one inline step per item of `source`. */
export interface ForEachGroup {
  kind: 'for_each';
  name: string;
  description?: string;
  /** A context path (`finder.output.items`). */
  source: string;
  /** Loop variable name. */
  as: string;
  /** The inline step; its name defaults to the group's. */
  agent: StepDefinition;
  /** @default 10 */
  maxConcurrent: number;
  failureMode: FailureMode;
  /** Path into the item (`item.id`) whose value keys `outputs` as a dict. */
  keyBy?: string;
  routes: RouteDefinition[];
  maxVisits?: number;
  onCap?: string;
}

export type GroupDefinition = ParallelGroup | ForEachGroup;

export interface WorkflowLimits {
  /** Step executions in all (parallel members and items count one each). @default 10 */
  maxIterations: number;
  timeoutSeconds?: number;
  budgetUsd?: number;
  /** Conductor's `budget_mode`; Switchboard enforces through its budget reservation either way when `enforce`. @default audit */
  budgetMode: 'audit' | 'enforce';
}

export interface WorkflowRuntime {
  /** Conductor provider name as written (`copilot`, `claude`, …). */
  provider?: string;
  defaultModel?: string;
  temperature?: number;
  maxTokens?: number;
  workingDir?: string;
  /** `runtime.max_agent_iterations`: the steps' `max_agent_iterations` when they give none. */
  maxAgentIterations?: number;
  /** `runtime.default_reasoning_effort`: every model-calling step's `reasoning` unless it sets its own. */
  defaultReasoningEffort?: ReasoningEffort;
  mcpServers: Record<string, McpServerDefinition>;
}

/** A validated workflow file. */
export interface WorkflowDefinition {
  /** Absolute path of the file. */
  file: string;
  /** Absolute path of its folder (`workflow.dir`). */
  dir: string;
  /** sha256 (hex) of the file's bytes; a run pins it. */
  hash: string;
  name: string;
  description?: string;
  version?: string;
  entryPoint: string;
  input: Record<string, InputDefinition>;
  limits: WorkflowLimits;
  runtime: WorkflowRuntime;
  metadata: Record<string, unknown>;
  /** Conductor `context.mode`. @default accumulate */
  contextMode: 'accumulate' | 'last_only' | 'explicit';
  /** Switchboard addition: template of a key; starting a run whose key exists resumes it. */
  runKey?: string;
  /** Workflow `output:` templates. */
  output: Record<string, string>;
  /** Steps of `agents:` by name, in file order. */
  steps: Map<string, StepDefinition>;
  /** `parallel:` and `for_each:` groups by name. */
  groups: Map<string, GroupDefinition>;
  /** Keys Switchboard reads but does not act on (Copilot-only settings, sandboxes, …), one line each. */
  warnings: string[];
}

/** Every step a run may execute: those of `agents:` and each `for_each` group's inline step. */
export function everyStep(definition: Pick<WorkflowDefinition, 'steps' | 'groups'>): StepDefinition[] {
  const steps = [...definition.steps.values()];
  for (const group of definition.groups.values()) if (group.kind === 'for_each') steps.push(group.agent);
  return steps;
}
