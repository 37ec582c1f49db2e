import { isAbsolute, join, resolve } from 'node:path';
import type { CallRequest, CallResult } from '../../core/call-types.js';
import { isSwitchboardError, SwitchboardError } from '../../core/errors.js';
import { claudeMcpConfig, type ClaudeMcpConfig, type McpServerEntry } from '../../agents/mcp-servers.js';
import type { CallOptions } from '../../invoke/call.js';
import type { RetryPolicy } from '../../invoke/retry-policy.js';
import type { AgentStep, RetryDefinition } from '../model.js';
import { outputJsonSchema, validateOutput } from '../output-schema.js';
import { usesClaudeCode } from '../providers.js';
import { guidanceMessage, type StepContext, type StepOutcome } from '../step-executor.js';
import { claudeCodeMcpTools, stepToolChoice } from '../step-tools.js';
import type { StepToolset } from '../tools/step-toolset.js';
import { callInSession, keyedSession } from './claude-session.js';
import { sessionEvents, type SessionEvents } from './session-events.js';
import { bounded } from '../../agents/session-events.js';
import { DEFAULT_MAX_AGENT_ITERATIONS, runToolLoop } from './tool-loop.js';

/** How much of a rendered prompt the `step-prompt` event keeps. */
const PROMPT_LIMIT = 8_000;

export interface LlmStepOptions {
  /** Text appended to the rendered prompt (a validator's issues, on the re-run). @default none */
  feedback?: string;
}

/**
 * A `type: agent` step without `effects: git`. On Claude Code, one `call()`: a Claude Code session
 * with the step's tools. On the API providers, a tool loop (`runToolLoop`) when the step has tools,
 * else one `call()`. With `output:` the answer goes through call()'s schema path (a tool on providers
 * that have tools, JSON extraction elsewhere, a diagnosed re-ask when it does not fit), or the loop's
 * answer tool, and is validated again against the field constraints; without it (or with
 * `output_mode: raw`) the answer is `{result: <text>}`, as in Conductor.
 */
export async function executeLlmStep(
  context: StepContext,
  step: AgentStep,
  { feedback = '' }: LlmStepOptions = {},
): Promise<StepOutcome> {
  const { runtime } = context.workflow;
  const spec = context.resolveSpec(step.provider ?? runtime.provider, step.model ?? runtime.defaultModel);
  const prompt = context.render(step.prompt, 'prompt') + feedback;
  const request: CallRequest = { prompt, abortSignal: context.signal };
  const reasoning = step.reasoning ?? runtime.defaultReasoningEffort;
  if (reasoning !== undefined) request.reasoning = reasoning;
  if (step.systemPrompt !== undefined) request.system = context.render(step.systemPrompt, 'system_prompt');
  const structured = step.output !== undefined && step.outputMode !== 'raw';
  if (structured && step.output !== undefined) request.schema = outputJsonSchema(step.output);
  await context.emit({
    type: 'step-prompt',
    data: {
      provider: spec,
      prompt: bounded(request.prompt, PROMPT_LIMIT),
      ...(request.system === undefined ? {} : { system: bounded(request.system, PROMPT_LIMIT) }),
    },
  });
  const timeoutMs = stepTimeoutMs(context, step.timeoutSeconds);
  if (timeoutMs !== undefined) request.timeoutMs = timeoutMs;

  const options: CallOptions = {};
  const schemaRetries = step.retry?.maxParseRecoveryAttempts;
  if (schemaRetries !== undefined) options.schemaRetries = schemaRetries;
  if (step.retry !== undefined) options.retry = retryPolicy(step.retry, schemaRetries ?? 2);
  let session: SessionEvents | undefined;
  if (usesClaudeCode(spec)) {
    const providerOptions = claudeCodeOptions(context, step);
    // The session's turns, tool calls and results, as events of the step.
    session = sessionEvents(context);
    providerOptions['onMessage'] = session.observe;
    // Guidance sent while the session runs goes in as a user message of its streaming input.
    const take = context.takeGuidance;
    if (take !== undefined) {
      providerOptions['followUp'] = async (turn: number) => {
        const guidance = await take(turn);
        return guidance.length === 0 ? undefined : guidanceMessage(guidance);
      };
    }
    options.providerOptions = providerOptions;
  } else if (step.tools === undefined || step.tools.length > 0) {
    const looped = await toolLoopStep(context, step, { spec, request, options, structured });
    if (looped !== undefined) return looped;
  }

  // Guidance sent before the call follows the prompt: as its own user message on an API provider,
  // in the prompt's text on Claude Code (later guidance reaches the session as it runs).
  const guidance = (await context.takeGuidance?.(1)) ?? [];
  if (guidance.length > 0 && session === undefined) {
    request.messages = [{ role: 'user', text: guidanceMessage(guidance) }];
  } else if (guidance.length > 0) {
    request.prompt = `${request.prompt}\n\n${guidanceMessage(guidance)}`;
  }
  // On Claude Code a `session_key` continues the session it names (in the folder it runs in).
  const cwd = options.providerOptions?.['cwd'];
  const keyed =
    session === undefined
      ? undefined
      : await keyedSession(context, step, typeof cwd === 'string' ? cwd : undefined);
  let result: CallResult;
  try {
    result =
      keyed === undefined
        ? await context.call(spec, request, options)
        : await callInSession(context, keyed, { spec, request, options });
  } catch (error) {
    await session?.flushed();
    return failedCall(context, error);
  }
  await session?.flushed();
  return checkedOutput(step, structured ? result.structured : { result: result.text }, result.costUsd ?? 0);
}

/**
 * A step on an API provider with tools: the tool loop, its tools closed when it ends (also on a
 * failure or a cancellation). Undefined when none of the step's tools runs here (`tools: [Bash]`): the
 * step is then one plain call.
 */
async function toolLoopStep(
  context: StepContext,
  step: AgentStep,
  call: { spec: string; request: CallRequest; options: CallOptions; structured: boolean },
): Promise<StepOutcome | undefined> {
  let toolset: StepToolset;
  try {
    toolset = await apiStepToolset(context, step);
  } catch (error) {
    return failedCall(context, error);
  }
  try {
    if (toolset.tools.length === 0) return undefined;
    const { timeoutMs, schema, ...turn } = call.request;
    const end = await runToolLoop(context, {
      spec: call.spec,
      request: turn,
      options: call.options,
      tools: toolset.tools,
      ...(schema === undefined ? {} : { schema }),
      maxTurns: maxAgentIterations(context, step) ?? DEFAULT_MAX_AGENT_ITERATIONS,
      recoveries: call.options.schemaRetries ?? 2,
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    });
    if (!end.ok) return failedCall(context, end.error, end.costUsd);
    return checkedOutput(step, call.structured ? end.structured : { result: end.text }, end.costUsd);
  } finally {
    await toolset.close();
  }
}

/** The step's output, checked against its `output:` fields when it has them. */
function checkedOutput(step: AgentStep, output: unknown, costUsd: number): StepOutcome {
  if (step.output !== undefined) {
    const problem = validateOutput(step.output, output);
    if (problem !== undefined) {
      return {
        status: 'failed',
        costUsd,
        error: {
          code: 'SCHEMA',
          message: `step "${step.name}": the answer does not match its output schema: ${problem}`,
        },
      };
    }
  }
  return { status: 'completed', output, costUsd };
}

/** `max_agent_iterations` of the step, else of the runtime. */
function maxAgentIterations(context: StepContext, step: AgentStep): number | undefined {
  return step.maxAgentIterations ?? context.workflow.runtime.maxAgentIterations;
}

/**
 * The tools a step on an API provider runs (`openStepToolset`): file tools held to its working
 * directory (else the folder the run started in), away from Switchboard's state folders, and the
 * MCP servers the engine let through.
 */
async function apiStepToolset(context: StepContext, step: AgentStep): Promise<StepToolset> {
  const { openStepToolset } = await import('../tools/step-toolset.js');
  const cwd = workingDirectory(context, step.workingDir) ?? process.cwd();
  const state = process.env['SWITCHBOARD_STATE_DIR'];
  const configs = claudeMcpServers(context.mcpServers).servers;
  const mcpServers = Object.fromEntries(
    Object.entries(configs).map(([name, config]) => {
      const allowed = context.mcpServers[name]?.['tools'];
      return [name, { config, allowed: Array.isArray(allowed) ? allowed.map(String) : [] }];
    }),
  );
  try {
    return await openStepToolset({
      names: step.tools,
      step: step.name,
      network: step.network === true,
      workingDirectory: cwd,
      hidden: [
        context.stateDir,
        join(cwd, '.switchboard'),
        ...(state === undefined || state === '' ? [] : [state]),
      ],
      mcpServers,
      signal: context.signal,
    });
  } catch (error) {
    if (isSwitchboardError(error)) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    throw new SwitchboardError(
      'WORKFLOW_INVALID',
      `step "${step.name}": its working directory ${cwd} cannot be read${code === undefined ? '' : ` (${code})`}`,
      { hint: 'set working_dir on the step or runtime.working_dir to a folder that exists' },
    );
  }
}

/**
 * Conductor's retry block as call()'s policy: `max_attempts` attempts per provider (retries of the
 * transient failures call() retries: rate limits, overloads, server errors, timeouts), `delay_seconds`
 * as the first backoff, doubling for `exponential` and held for `fixed` (both with jitter, and a
 * provider's `retry-after` wins). An empty `retry_on` means no retry.
 */
export function retryPolicy(retry: RetryDefinition, schemaRetries: number): Partial<RetryPolicy> {
  const retries = retry.retryOn.length === 0 ? 0 : Math.max(0, retry.maxAttempts - 1);
  const baseDelayMs = Math.round(retry.delaySeconds * 1000);
  const policy: Partial<RetryPolicy> = {
    retriesPerProvider: retries,
    baseDelayMs,
    // The cap counts every attempt of the call, schema re-asks included.
    maxAttempts: Math.max(8, retries + 1 + schemaRetries),
  };
  if (retry.backoff === 'fixed') policy.maxDelayMs = baseDelayMs;
  return policy;
}

/** The step's `timeout_seconds`, never past the run's deadline. */
export function stepTimeoutMs(context: StepContext, timeoutSeconds: number | undefined): number | undefined {
  const own = timeoutSeconds === undefined ? undefined : Math.round(timeoutSeconds * 1000);
  if (context.deadline === undefined) return own;
  const left = Math.max(1, context.deadline - Date.now());
  return own === undefined ? left : Math.min(own, left);
}

/**
 * What a Claude Code call of this step may use: the step's tools as `stepToolChoice` reads them (omitted:
 * `CLAUDE_CODE_DEFAULT_TOOLS` and the servers' tools, `[]`: none) as allowed tools, its working directory, and the MCP servers the engine let through
 * (with Claude Code's strict MCP config, so no other server loads), their tools allowed. Any tool makes
 * the call a confined one (see the Claude Code provider): the key behind a forwarder, file tools held
 * to the working directory, Bash in Claude Code's sandbox.
 */
function claudeCodeOptions(context: StepContext, step: AgentStep): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  const mcp = claudeMcpServers(context.mcpServers);
  const choice = stepToolChoice(step.tools, Object.keys(context.mcpServers));
  // `tools:` restricts MCP tools as it does Claude Code's own: a server's tools reach the model only when
  // the step names them (or leaves `tools:` out), within what the server's own `tools` allows.
  const mcpTools = claudeCodeMcpTools(choice, mcp.tools);
  const iterations = maxAgentIterations(context, step);
  if (iterations !== undefined) options['maxTurns'] = iterations;
  const tools = [...choice.claudeCode, ...mcpTools];
  if (mcpTools.length > 0) {
    const reached = new Set(mcpTools.map((entry) => /^mcp__(.+?)(?:__|$)/.exec(entry)?.[1]));
    options['mcpServers'] = Object.fromEntries(
      Object.entries(mcp.servers).filter(([name]) => reached.has(name)),
    );
  }
  if (tools.length > 0) options['allowedTools'] = tools;
  const workingDir = workingDirectory(context, step.workingDir);
  if (workingDir !== undefined) options['cwd'] = workingDir;
  return options;
}

/**
 * The step's MCP servers as Claude Code's config wants them (no `tools` key, empty fields left out),
 * and the allowed-tool entries for them: `mcp__<server>` for all its tools, or one per listed tool.
 * Claude Code then offers the model only those tools (see `limitMcpTools`).
 */
export function claudeMcpServers(servers: Record<string, Record<string, unknown>>): ClaudeMcpConfig {
  const entries: Record<string, McpServerEntry> = {};
  for (const [name, server] of Object.entries(servers)) {
    // The engine hands over the workflow's validated entries; a program's StepContext may leave lists out.
    const list = (key: string): string[] =>
      Array.isArray(server[key]) ? (server[key] as unknown[]).map(String) : [];
    const map = (key: string): Record<string, string> => (server[key] ?? {}) as Record<string, string>;
    const type = server['type'] === 'http' || server['type'] === 'sse' ? server['type'] : 'stdio';
    const entry: McpServerEntry = {
      type,
      args: list('args'),
      env: map('env'),
      headers: map('headers'),
      tools: list('tools'),
    };
    if (typeof server['command'] === 'string') entry.command = server['command'];
    if (typeof server['url'] === 'string') entry.url = server['url'];
    entries[name] = entry;
  }
  return claudeMcpConfig(entries);
}

/** `working_dir` of the step, else the runtime's: a template, relative to the workflow's folder. */
export function workingDirectory(context: StepContext, stepDir: string | undefined): string | undefined {
  const template = stepDir ?? context.workflow.runtime.workingDir;
  return template === undefined ? undefined : renderDirectory(context, template, 'working_dir');
}

/** A directory template rendered and resolved against the workflow's folder; undefined when it renders empty. */
export function renderDirectory(context: StepContext, template: string, field: string): string | undefined {
  const rendered = context.render(template, field).trim();
  if (rendered === '') return undefined;
  return isAbsolute(rendered) ? resolve(rendered) : resolve(context.workflow.dir, rendered);
}

/**
 * A call that failed is the step's failure, with what its attempts cost; a cancelled run and a template
 * error are the engine's to report, so they pass through.
 */
function failedCall(context: StepContext, error: unknown, costUsd?: number): StepOutcome {
  if (context.signal.aborted || !isSwitchboardError(error) || error.code === 'WORKFLOW_TEMPLATE') throw error;
  const spent = error.details?.['spentUsd'];
  return {
    status: 'failed',
    costUsd: costUsd ?? (typeof spent === 'number' ? spent : 0),
    error: { code: error.code, message: error.message },
  };
}
