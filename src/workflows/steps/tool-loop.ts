import type {
  CallMessage,
  CallRequest,
  CallResult,
  JsonSchema,
  ToolCall,
  ToolDefinition,
  ToolResult,
} from '../../core/call-types.js';
import { OUTPUT_TOOL_NAME } from '../../core/call-types.js';
import { SwitchboardError } from '../../core/errors.js';
import { redactSecrets } from '../../core/secrets.js';
import { extractJson } from '../../core/json-extract.js';
import { schemaErrors } from '../../core/json-schema.js';
import type { CallOptions } from '../../invoke/call.js';
import { describeError } from '../../invoke/schema-reask.js';
import { guidanceMessage, type StepContext } from '../step-executor.js';
import type { StepTool } from '../tools/step-tool.js';
import {
  bounded,
  TOOL_INPUT_LIMIT as INPUT_LIMIT,
  TOOL_RESULT_LIMIT as RESULT_LIMIT,
} from '../../agents/session-events.js';

/** Tool calls one turn may have run; those past it are answered with an error, not run. */
const MAX_CALLS_PER_TURN = 32;

/** Conductor's default `max_agent_iterations` for its API (Claude) provider: model turns per step. */
export const DEFAULT_MAX_AGENT_ITERATIONS = 50;

export interface ToolLoop {
  spec: string;
  /** The prompt, system prompt and abort signal of every turn. */
  request: CallRequest;
  options: CallOptions;
  tools: readonly StepTool[];
  /** The output's JSON Schema when the answer is structured: the answer tool's arguments. */
  schema?: JsonSchema;
  /** Model turns at most (`max_agent_iterations`). */
  maxTurns: number;
  /** Answers that break the schema the model may correct (`max_parse_recovery_attempts`). */
  recoveries: number;
  /** The step's time limit, in milliseconds from now (`timeout_seconds`, the run's deadline). */
  timeoutMs?: number;
}

/** How a loop ended: the answer (text, or the structured value), or why not; what its turns cost either way. */
export type ToolLoopEnd =
  | { ok: true; text: string; structured?: unknown; costUsd: number }
  | { ok: false; error: SwitchboardError; costUsd: number };

/**
 * Runs the model of an LLM step on an API provider with tools until it answers: each turn is one
 * `context.call()` (a ledger row with its cost, budgets checked), the tools it calls run here, their
 * results go back in the next turn. With an output schema the answer is a tool of its own
 * (`emit_output`, its arguments the output) and every turn must call some tool, so the loop ends on a
 * valid answer, in no more turns than the model needs; an answer that breaks the schema goes back as
 * that tool's error, as often as `recoveries` allows. Without one, a turn with no tool call is the
 * answer. It stops at `maxTurns` (`MAX_TURNS`) and at the step's time limit (`TIMEOUT`).
 */
export async function runToolLoop(context: StepContext, loop: ToolLoop): Promise<ToolLoopEnd> {
  const run = new LoopRun(context, loop);
  return run.start();
}

class LoopRun {
  private readonly context: StepContext;
  private readonly loop: ToolLoop;
  private readonly messages: CallMessage[] = [];
  private readonly tools = new Map<string, StepTool>();
  private readonly definitions: ToolDefinition[];
  private readonly endsAt: number | undefined;
  private costUsd = 0;
  private corrections = 0;

  constructor(context: StepContext, loop: ToolLoop) {
    this.context = context;
    this.loop = loop;
    for (const tool of loop.tools) this.tools.set(tool.definition.name, tool);
    this.definitions = loop.tools.map((tool) => tool.definition);
    if (loop.schema !== undefined) {
      this.definitions.push({
        name: OUTPUT_TOOL_NAME,
        description:
          'Give your final answer: call this once you have what you need, with the complete answer as its arguments. Nothing else ends the task.',
        inputSchema: loop.schema,
      });
    }
    this.endsAt = loop.timeoutMs === undefined ? undefined : Date.now() + loop.timeoutMs;
  }

  async start(): Promise<ToolLoopEnd> {
    try {
      for (let turn = 1; turn <= this.loop.maxTurns; turn++) {
        const result = await this.turn(turn);
        const end = this.loop.schema === undefined ? this.textAnswer(result) : this.structuredAnswer(result);
        if (end !== undefined) return end;
        if (this.corrections > this.loop.recoveries) return this.failed(this.schemaError(result));
        const calls = result.toolCalls ?? [];
        if (calls.length > 0) await this.runCalls(result, calls);
      }
      return this.failed(
        new SwitchboardError(
          'MAX_TURNS',
          `step "${this.context.step.name}" took ${this.loop.maxTurns} model turns without answering (max_agent_iterations: ${this.loop.maxTurns}); raise max_agent_iterations on the step, or narrow its prompt`,
          { retryable: false },
        ),
      );
    } catch (error) {
      if (this.context.signal.aborted) throw error;
      if (error instanceof SwitchboardError) {
        const spent = error.details?.['spentUsd'];
        return { ok: false, error, costUsd: this.costUsd + (typeof spent === 'number' ? spent : 0) };
      }
      throw error;
    }
  }

  /** One model turn through `context.call()` (the step's call writes it as a `model-turn` event). */
  private async turn(turn: number): Promise<CallResult> {
    // Guidance sent since the last request goes in as the user's words, where the conversation is now.
    const guidance = (await this.context.takeGuidance?.(turn)) ?? [];
    if (guidance.length > 0) this.messages.push({ role: 'user', text: guidanceMessage(guidance) });
    const request: CallRequest = {
      ...this.loop.request,
      messages: [...this.messages],
      tools: this.definitions,
      toolChoice: this.loop.schema === undefined ? 'auto' : 'required',
    };
    const timeoutMs = this.remainingMs();
    if (timeoutMs !== undefined) request.timeoutMs = timeoutMs;
    const result = await this.context.call(this.loop.spec, request, this.loop.options);
    this.costUsd += result.costUsd ?? 0;
    return result;
  }

  /** Without a schema, a turn that calls no tool is the answer. */
  private textAnswer(result: CallResult): ToolLoopEnd | undefined {
    if ((result.toolCalls ?? []).length > 0) return undefined;
    return { ok: true, text: result.text, costUsd: this.costUsd };
  }

  /**
   * With a schema, a valid `emit_output` call is the answer; so is valid JSON written as text by a
   * model that ignored the tool (a local server may not force tool use). Anything else is corrected:
   * an invalid answer goes back as the tool's error, text as a user message saying what to do.
   */
  private structuredAnswer(result: CallResult): ToolLoopEnd | undefined {
    const schema = this.loop.schema as JsonSchema;
    const calls = result.toolCalls ?? [];
    const answer = calls.find((call) => call.name === OUTPUT_TOOL_NAME);
    if (answer !== undefined) {
      if (schemaErrors(schema, answer.input).length === 0) {
        return {
          ok: true,
          text: JSON.stringify(answer.input),
          structured: answer.input,
          costUsd: this.costUsd,
        };
      }
      this.corrections++;
      return undefined;
    }
    if (calls.length > 0) return undefined;
    const extracted = extractJson(result.text);
    const errors = extracted.ok ? schemaErrors(schema, extracted.value) : ['(root): it is not valid JSON'];
    if (extracted.ok && errors.length === 0) {
      return {
        ok: true,
        text: JSON.stringify(extracted.value),
        structured: extracted.value,
        costUsd: this.costUsd,
      };
    }
    this.corrections++;
    this.messages.push(
      { role: 'assistant', text: result.text },
      {
        role: 'user',
        text: [
          'Your previous answer could not be used:',
          ...errors.map((error) => `- ${describeError(error)}`),
          '',
          `Call ${OUTPUT_TOOL_NAME} with the complete answer as its arguments.`,
        ].join('\n'),
      },
    );
    return undefined;
  }

  /** Runs the turn's tool calls in order and adds the turn and their results to the conversation. */
  private async runCalls(result: CallResult, calls: readonly ToolCall[]): Promise<void> {
    const results: ToolResult[] = [];
    for (const [index, call] of calls.entries()) {
      results.push(
        index < MAX_CALLS_PER_TURN
          ? await this.runCall(call)
          : {
              id: call.id,
              name: call.name,
              isError: true,
              content: `not run: at most ${MAX_CALLS_PER_TURN} tool calls are run per turn; ask for the rest in the next turn`,
            },
      );
    }
    this.messages.push(
      {
        role: 'assistant',
        text: result.text,
        toolCalls: [...calls],
        ...(result.thinking === undefined ? {} : { thinking: result.thinking }),
      },
      { role: 'tool', results },
    );
  }

  private async runCall(call: ToolCall): Promise<ToolResult> {
    if (call.name === OUTPUT_TOOL_NAME) {
      const errors = schemaErrors(this.loop.schema ?? {}, call.input);
      return {
        id: call.id,
        name: call.name,
        isError: true,
        content: [
          'The answer could not be used:',
          ...errors.map((error) => `- ${describeError(error)}`),
          `Call ${OUTPUT_TOOL_NAME} again with the corrected answer.`,
        ].join('\n'),
      };
    }
    const signal = this.toolSignal();
    await this.emit('tool-call', { id: call.id, tool: call.name, input: bounded(call.input, INPUT_LIMIT) });
    const started = performance.now();
    const tool = this.tools.get(call.name);
    let outcome: { content: string; isError?: boolean };
    if (tool === undefined) {
      outcome = {
        isError: true,
        content: `there is no tool "${call.name}"; the tools are: ${this.definitions.map((definition) => definition.name).join(', ')}`,
      };
    } else {
      try {
        outcome = await tool.run(call.input, signal);
      } catch (error) {
        if (this.context.signal.aborted) throw error;
        outcome = { isError: true, content: error instanceof Error ? error.message : String(error) };
      }
    }
    // The result goes to the provider: a file or a server's answer that holds a configured key or
    // another known secret reaches the model as `[redacted]`, as it reaches the ledger.
    outcome = { ...outcome, content: redactSecrets(outcome.content) };
    await this.emit('tool-result', {
      id: call.id,
      tool: call.name,
      error: outcome.isError === true,
      result: bounded(outcome.content, RESULT_LIMIT),
      durationMs: Math.round(performance.now() - started),
    });
    return {
      id: call.id,
      name: call.name,
      content: outcome.content,
      ...(outcome.isError === true ? { isError: true } : {}),
    };
  }

  /** The milliseconds left of the step's time limit; TIMEOUT once none are. */
  private remainingMs(): number | undefined {
    if (this.endsAt === undefined) return undefined;
    const left = this.endsAt - Date.now();
    if (left <= 0) {
      throw new SwitchboardError(
        'TIMEOUT',
        `step "${this.context.step.name}" reached its time limit (${Math.round((this.loop.timeoutMs ?? 0) / 1000)} s) in its tool loop; raise timeout_seconds on the step`,
        { retryable: false },
      );
    }
    return left;
  }

  /** What stops a tool: the run's cancellation, and the step's time limit. */
  private toolSignal(): AbortSignal {
    const left = this.remainingMs();
    return left === undefined
      ? this.context.signal
      : AbortSignal.any([this.context.signal, AbortSignal.timeout(left)]);
  }

  private schemaError(result: CallResult): SwitchboardError {
    const answer = result.toolCalls?.find((call) => call.name === OUTPUT_TOOL_NAME);
    const value =
      answer === undefined ? extractJson(result.text) : { ok: true as const, value: answer.input };
    const errors = value.ok
      ? schemaErrors(this.loop.schema ?? {}, value.value)
      : ['(root): it is not valid JSON'];
    return new SwitchboardError(
      'SCHEMA',
      `step "${this.context.step.name}": the answer does not match its output schema: ${errors[0] ?? 'no answer'}`,
      { retryable: false },
    );
  }

  private failed(error: SwitchboardError): ToolLoopEnd {
    return { ok: false, error, costUsd: this.costUsd };
  }

  private async emit(type: string, data: Record<string, unknown>): Promise<void> {
    await this.context.emit({ step: this.context.step.name, key: this.context.key, type, data });
  }
}
