import { randomBytes } from 'node:crypto';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { CallResult } from '../core/call-types.js';
import { SwitchboardError } from '../core/errors.js';
import { parseCallBody } from '../serve/call-body.js';
import { waitAtMost } from './background-runs.js';
import type { McpContext } from './context.js';
import { progressReporter, type ProgressReporter } from './progress.js';
import { callInput, callOutput, callStatusInput, DEFAULT_WAIT_SECONDS } from './schemas.js';
import { guarded, toolError, toolResult } from './tool-result.js';

/** `call` and `call_status`: one LLM call with `POST /call`'s semantics, and its result later. */
export function registerCallTools(server: McpServer, context: McpContext): void {
  server.registerTool(
    'call',
    {
      title: 'Call an LLM',
      description:
        'One LLM call through Switchboard (Claude Code, Anthropic, Gemini, OpenAI-compatible; fallback chains, structured output with `schema`, budgets, the ledger). Same fields as `POST /call`. A call still running after wait_seconds answers with state "running" and its callId; call_status gives the result.',
      inputSchema: callInput,
      outputSchema: callOutput,
      annotations: { openWorldHint: true },
    },
    async ({ wait_seconds, ...fields }, extra) => {
      const progress = progressReporter(extra);
      try {
        // The same checks and messages as POST /call's body.
        const body = parseCallBody(JSON.stringify(fields));
        const callId = `call-${randomBytes(6).toString('hex')}`;
        progress.report(`calling ${body.spec}`);
        const work = context.runs.track(
          callId,
          context.calls.run(body, context.abortSignal, streamingProgress(progress.report)),
        );
        return await answer(callId, work, wait_seconds ?? DEFAULT_WAIT_SECONDS);
      } catch (error) {
        return toolError(error);
      } finally {
        progress.stop();
      }
    },
  );

  server.registerTool(
    'call_status',
    {
      title: 'Result of a call still running',
      description: 'The result of a `call` that answered with state "running", once it has one.',
      inputSchema: callStatusInput,
      outputSchema: callOutput,
      annotations: { readOnlyHint: true },
    },
    guarded(async ({ call_id, wait_seconds }) => {
      const running = context.runs.pending(call_id);
      if (running !== undefined)
        return await answer(call_id, running as Promise<CallResult>, wait_seconds ?? 0);
      const outcome = context.runs.outcome(call_id);
      if (outcome === undefined) {
        throw new SwitchboardError('RUN_NOT_FOUND', `this server has no call ${call_id}`, {
          hint: 'a call id is good in the server that started the call, for its last 200 calls',
        });
      }
      if (!outcome.ok) throw outcome.error;
      return completed(call_id, outcome.value as CallResult);
    }),
  );
}

async function answer(
  callId: string,
  work: Promise<CallResult>,
  waitSeconds: number,
): Promise<CallToolResult> {
  const waited = await waitAtMost(work, waitSeconds * 1000);
  if (waited.done) return completed(callId, waited.value);
  return toolResult(
    { callId, state: 'running' },
    JSON.stringify({ callId, state: 'running', next: `call_status with call_id ${callId}` }),
  );
}

function completed(callId: string, result: CallResult): CallToolResult {
  // `callId` here is the tool's handle for `call_status`, not the ledger's id of the call.
  const { callId: _ledgerCallId, ...rest } = result;
  return toolResult({ callId, state: 'completed', ...rest });
}

/** Progress while the answer streams in (at most one report a second) and at each retry wait. */
function streamingProgress(report: ProgressReporter): {
  onText: (delta: string) => void;
  onRetryWait: (event: { spec: string; errorCode: string; retry: number; delayMs: number }) => void;
} {
  let characters = 0;
  let last = 0;
  return {
    onText(delta) {
      characters += delta.length;
      if (Date.now() - last < 1000) return;
      last = Date.now();
      report(`received ${characters} characters`);
    },
    onRetryWait({ spec, errorCode, retry, delayMs }) {
      report(`${spec}: ${errorCode}; retry ${retry} in ${Math.round(delayMs)} ms`);
    },
  };
}
