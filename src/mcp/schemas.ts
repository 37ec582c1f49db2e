import { z } from 'zod';
import { MERGE_MODES } from '../agents/task.js';

// The tools' input and output schemas. Clients see them as JSON Schema in `tools/list`; the SDK checks
// every call's arguments against the input schema and every answer's structuredContent against the
// output schema. Outputs are loose objects: the typed fields are a contract, more may follow.

/** How long a long tool waits before answering with a run id (seconds). */
export const DEFAULT_WAIT_SECONDS = 30;
/** The longest any tool call waits; past it, the work goes on and `*_status` reports it. */
export const MAX_WAIT_SECONDS = 600;

export const waitSeconds = z
  .number()
  .min(0)
  .max(MAX_WAIT_SECONDS)
  .optional()
  .describe(
    `how long to wait for the end before answering with the run id and state "running" (default ${DEFAULT_WAIT_SECONDS}, at most ${MAX_WAIT_SECONDS}); the work goes on in the server either way`,
  );

const tags = z.record(z.string(), z.string());

export const routeInput = z.strictObject({
  text: z.string().describe('the free-text request to route'),
  tags: tags.optional().describe('free tags recorded with the decision'),
});

export const routeOutput = z.looseObject({
  id: z.string(),
  skill: z.string().describe('the chosen skill, or "none" when the router abstains'),
  confidence: z.number(),
  reasoning: z.string(),
  method: z.enum(['cache', 'rules', 'local', 'llm', 'fallback', 'default']),
  candidates: z.array(z.object({ skill: z.string(), score: z.number() })),
  costUsd: z.number(),
  durationMs: z.number(),
  timings: z.record(z.string(), z.number()),
  warnings: z.array(z.string()),
});

const positive = z.number().positive();

export const callInput = z.strictObject({
  spec: z
    .string()
    .describe('a provider spec, a comma-separated fallback chain, or a role of switchboard.yaml'),
  prompt: z.string(),
  system: z.string().optional(),
  schema: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('JSON Schema the answer must match; the value comes back as `structured`'),
  timeoutMs: positive.optional().describe("limit of the whole call (ms), capped at the server's"),
  stageTimeoutMs: positive.optional().describe('limit of each attempt (ms)'),
  idleTimeoutMs: positive.optional().describe('fail when the provider sends nothing for this long (ms)'),
  tags: tags.optional(),
  maxCostUsd: positive.optional().describe('the most the call may cost, all attempts together (USD)'),
  schemaRetries: z.number().int().min(0).max(10).optional(),
  ignoreCooldown: z.boolean().optional(),
  storeText: z.boolean().optional().describe('store the prompt text in the ledger (default: a hash)'),
  wait_seconds: waitSeconds,
});

const attempt = z.looseObject({
  provider: z.string(),
  model: z.string(),
  errorCode: z.string().optional(),
  errorMessage: z.string().optional(),
  durationMs: z.number(),
});

export const callOutput = z.looseObject({
  callId: z.string(),
  state: z.enum(['completed', 'running']),
  success: z.boolean().optional(),
  text: z.string().optional(),
  structured: z.unknown().optional(),
  provider: z.string().optional(),
  modelRequested: z.string().optional(),
  modelUsed: z.string().optional(),
  durationMs: z.number().optional(),
  usage: z
    .looseObject({
      inputTokens: z.number(),
      outputTokens: z.number(),
      cacheReadTokens: z.number(),
      cacheWriteTokens: z.number(),
    })
    .optional(),
  costUsd: z.number().nullable().optional(),
  rateLimited: z.boolean().optional(),
  attempts: z.array(attempt).optional(),
  sessionId: z.string().optional(),
  warnings: z.array(z.string()).optional(),
});

export const callStatusInput = z.strictObject({
  call_id: z.string().describe('the callId a `call` answered with'),
  wait_seconds: waitSeconds,
});

const agentLimits = z.looseObject({
  max_turns: z.number().int().positive().optional(),
  max_cost_usd: positive.optional(),
  max_attempts: z.number().int().positive().optional(),
  wall_clock_seconds: positive.optional(),
  idle_timeout_seconds: positive.optional(),
  verify_timeout_seconds: positive.optional(),
});

/** A task as a task file writes it; `parseTask` checks the rest (and names the field that is wrong). */
const agentTask = z.looseObject({
  id: z.string().describe('task id: the run id and branch start with it'),
  title: z.string(),
  description: z.string().optional(),
  acceptance: z.union([z.string(), z.array(z.string())]).optional(),
  base: z.string().optional().describe('branch to start from and merge into'),
  setup: z.string().optional(),
  verify: z.string().optional().describe('shell command that must pass in the worktree'),
  tools: z.array(z.string()).optional().describe('Claude Code tools, e.g. Read, Write, Edit'),
  model: z.string().optional(),
  limits: agentLimits.optional(),
});

export const agentRunInput = z.strictObject({
  task: agentTask.optional().describe('the task (the fields of a task file); or give task_file'),
  task_file: z.string().optional().describe("a task file (YAML or JSON), relative to the server's folder"),
  repo: z
    .string()
    .optional()
    .describe("the git repository (a folder, or a remote URL); default: the server's folder"),
  merge: z
    .enum(MERGE_MODES)
    .optional()
    .describe("how the verified change reaches the base branch (default: the task's, else no-ff)"),
  wait_seconds: waitSeconds,
});

export const agentOutput = z.looseObject({
  runId: z.string(),
  state: z
    .string()
    .describe(
      'running, succeeded, failed, cancelled or conflict (as `switchboard agent show` says); running means: ask agent_status later',
    ),
  phase: z.string(),
  costUsd: z.number(),
  attempts: z.number().optional(),
  branch: z.string().optional(),
  mergedCommit: z.string().optional(),
  errorCode: z.string().optional(),
  error: z.string().optional(),
});

export const agentStatusInput = z.strictObject({
  run_id: z.string().describe('run id (or a unique prefix)'),
  wait_seconds: z
    .number()
    .min(0)
    .max(MAX_WAIT_SECONDS)
    .optional()
    .describe('wait up to this long for a run of this server to end first (default 0)'),
});

const inputValue = z.union([z.string(), z.number(), z.boolean()]);

export const workflowRunInput = z.strictObject({
  file: z.string().describe("the workflow file (Conductor YAML), relative to the server's folder"),
  inputs: z.record(z.string(), inputValue).optional().describe('workflow inputs by name'),
  run_id: z.string().optional().describe('the id of the new run (default: generated)'),
  provider: z.string().optional().describe('spec, chain or role every LLM step uses'),
  provider_map: z
    .record(z.string(), z.string())
    .optional()
    .describe('Conductor provider name → spec, e.g. {"copilot": "claude:sonnet"}'),
  skip_gates: z.boolean().optional().describe("take each human gate's first option"),
  wait_seconds: waitSeconds,
});

export const workflowOutput = z.looseObject({
  runId: z.string(),
  state: z
    .enum(['running', 'waiting', 'completed', 'failed', 'cancelled'])
    .describe('waiting: parked at a gate (answer it with workflow_gate)'),
  workflow: z.string(),
  step: z.string().optional(),
  costUsd: z.number(),
  output: z.record(z.string(), z.unknown()).optional(),
  gate: z
    .looseObject({
      step: z.string(),
      prompt: z.string(),
      options: z.array(z.looseObject({ label: z.string(), value: z.string() })),
    })
    .optional(),
  steps: z.array(z.looseObject({ key: z.string(), step: z.string(), status: z.string() })),
  errorCode: z.string().optional(),
  error: z.string().optional(),
});

export const workflowStatusInput = z.strictObject({
  run_id: z.string().describe('workflow run id'),
  wait_seconds: agentStatusInput.shape.wait_seconds,
});

export const workflowGateInput = z.strictObject({
  run_id: z.string(),
  step: z.string().optional().describe('the gate step (default: the gate the run is parked at)'),
  choose: z
    .string()
    .optional()
    .describe("the option's value; for a questions step skip_all or abort (or give answers)"),
  text: z.string().optional().describe("text for the option's prompt_for field"),
  answers: z
    .record(z.string(), z.string())
    .optional()
    .describe("a questions step's answers by question id (the questions workflow_status shows)"),
  by: z.string().optional().describe('who answered, as recorded in the ledger'),
  continue: z
    .boolean()
    .optional()
    .describe('continue the run in this server after recording the answer (default true)'),
  wait_seconds: waitSeconds,
});

export const workflowGuideInput = z.strictObject({
  run_id: z.string(),
  text: z.string().describe('the words for the model: its next turn reads them as a user message'),
  step: z
    .string()
    .optional()
    .describe("only this step's model turns take it (default: whichever step calls a model next)"),
  by: z.string().optional().describe('who sent it, as the model and the ledger see it'),
});

export const workflowGuideOutput = z.looseObject({
  id: z.number(),
  runId: z.string(),
  text: z.string(),
  sentBy: z.string(),
  sentAt: z.string(),
});

export const statsInput = z.strictObject({
  since_hours: positive.optional().describe('only the last this many hours (default: all)'),
});

export const statsOutput = z.looseObject({
  calls: z.looseObject({
    calls: z.number(),
    attempts: z.number(),
    successRate: z.number(),
    p50Ms: z.number(),
    p95Ms: z.number(),
    costUsd: z.number(),
  }),
  routeDecisions: z.number(),
  cooldowns: z.array(z.looseObject({ spec: z.string(), remainingMs: z.number() })),
  budgets: z.array(
    z.looseObject({ scope: z.string(), period: z.string(), cap: z.number(), spent: z.number() }),
  ),
});
