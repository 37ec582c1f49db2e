import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { SwitchboardError } from '../core/errors.js';
import { toolError } from './tool-result.js';

const INVALID_ARGUMENTS =
  /^MCP error -32602: Input validation error: Invalid arguments for tool (\S+): ([\s\S]*)$/;
const NO_SUCH_TOOL = /^MCP error -32602: Tool (\S+) (not found|disabled)$/;

/**
 * The SDK answers arguments that break a tool's input schema (and unknown tools) itself, before any
 * tool runs, in its own words (`MCP error -32602: Input validation error: …`). This rewrites those
 * tool errors into the form of every other (`INVALID_INPUT (exit 2): …` and a hint), so a client reads
 * one shape for every failure. Call it before the first tool is registered: that is when the SDK
 * installs its `tools/call` handler.
 */
export function answerSdkErrorsAsSwitchboard(server: McpServer): void {
  const protocol = server.server;
  // The method's generic signature says nothing this wrapper uses; it only passes values through.
  type Install = (schema: unknown, handler: (request: unknown, extra: unknown) => unknown) => void;
  const install = protocol.setRequestHandler.bind(protocol) as unknown as Install;
  const wrapped: Install = (schema, handler) =>
    schema === CallToolRequestSchema
      ? install(schema, async (request, extra) => rewrite((await handler(request, extra)) as CallToolResult))
      : install(schema, handler);
  protocol.setRequestHandler = wrapped as unknown as typeof protocol.setRequestHandler;
}

function rewrite(result: CallToolResult): CallToolResult {
  const first = result.content[0];
  if (result.isError !== true || first?.type !== 'text') return result;
  const invalid = INVALID_ARGUMENTS.exec(first.text);
  if (invalid !== null) {
    return toolError(
      new SwitchboardError(
        'INVALID_INPUT',
        `${invalid[1] as string}: ${(invalid[2] as string).replaceAll('\n', '; ')}`,
        {
          hint: `send the arguments the input schema of ${invalid[1] as string} describes (tools/list shows it)`,
        },
      ),
    );
  }
  const unknown = NO_SUCH_TOOL.exec(first.text);
  if (unknown !== null) {
    return toolError(
      new SwitchboardError('INVALID_INPUT', `this server has no tool ${unknown[1] as string}`, {
        hint: 'tools/list shows the tools: route, call, agent_run, workflow_run, stats, …',
      }),
    );
  }
  return result;
}
