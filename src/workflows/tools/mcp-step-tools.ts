import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { agentEnvironment } from '../../agents/environment.js';
import { SwitchboardError } from '../../core/errors.js';
import { redactSecrets } from '../../core/secrets.js';
import { connectMcpServer, listMcpTools } from '../../providers/mcp-client.js';
import { mcpToolName } from '../tool-names.js';
import { boundedResult, toolError, type StepTool, type ToolOutcome } from './step-tool.js';

/** How long one MCP tool call may take, within the step's own timeout. */
const MCP_CALL_TIMEOUT_MS = 10 * 60_000;

/** One server a step may use: Claude Code's config shape (`${VAR}` already expanded) and its allow list. */
export interface StepMcpServer {
  config: Record<string, unknown>;
  /** The server's tools the step may use, by their own names; `*` (or none listed) for all. */
  allowed: readonly string[];
}

/** An MCP tool as a step tool, with where it comes from. */
export interface McpStepTool extends StepTool {
  server: string;
  /** The server's own name of the tool. */
  tool: string;
}

/** The servers' allowed tools, and the clients to close when the step ends. */
export interface McpStepTools {
  tools: McpStepTool[];
  close(): Promise<void>;
}

/**
 * Starts (or connects to) each server with the official MCP SDK client, lists its tools and keeps those
 * its `tools:` allow. A stdio server runs in the step's working directory with the environment agents
 * get (no credential of Switchboard's), plus its own `env`. A server that cannot be reached fails the
 * step (`PROVIDER_UNAVAILABLE`) rather than let the model work without the tools it was promised.
 */
export async function openMcpTools(
  servers: Readonly<Record<string, StepMcpServer>>,
  options: { cwd: string; signal: AbortSignal },
): Promise<McpStepTools> {
  const clients: Client[] = [];
  const close = async () => {
    await Promise.allSettled(clients.splice(0).map((client) => client.close()));
  };
  const tools: McpStepTool[] = [];
  try {
    for (const [name, server] of Object.entries(servers)) {
      let listed: Tool[];
      try {
        const client = await connectMcpServer(
          server.config,
          { cwd: options.cwd, env: agentEnvironment(process.env) },
          options.signal,
        );
        clients.push(client);
        listed = await listMcpTools(client, options.signal);
        const all = server.allowed.length === 0 || server.allowed.includes('*');
        for (const tool of listed) {
          if (all || server.allowed.includes(tool.name)) tools.push(stepTool(client, name, tool));
        }
      } catch (error) {
        if (options.signal.aborted) throw error;
        const reason = redactSecrets(error instanceof Error ? error.message : String(error));
        throw new SwitchboardError(
          'PROVIDER_UNAVAILABLE',
          `the MCP server "${name}" could not be started or listed: ${reason}`,
          { hint: `check runtime.mcp_servers.${name}`, retryable: false },
        );
      }
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { tools, close };
}

function stepTool(client: Client, server: string, tool: Tool): McpStepTool {
  return {
    server,
    tool: tool.name,
    definition: {
      name: mcpToolName(server, tool.name),
      description: tool.description ?? tool.title ?? `${tool.name} of the MCP server ${server}`,
      inputSchema: tool.inputSchema,
    },
    async run(input, signal): Promise<ToolOutcome> {
      try {
        const result = await client.callTool({ name: tool.name, arguments: input }, undefined, {
          signal,
          timeout: MCP_CALL_TIMEOUT_MS,
        });
        const text = resultText(result);
        return result['isError'] === true ? toolError(boundedResult(text)) : { content: boundedResult(text) };
      } catch (error) {
        return toolError(redactSecrets(error instanceof Error ? error.message : String(error)));
      }
    },
  };
}

/** A tool result as text: its text parts (and resources' text), else its structured content as JSON. */
function resultText(result: Record<string, unknown>): string {
  const content = Array.isArray(result['content']) ? (result['content'] as Record<string, unknown>[]) : [];
  const parts = content.map((part) => {
    if (part['type'] === 'text' && typeof part['text'] === 'string') return part['text'];
    const resource = part['resource'] as Record<string, unknown> | undefined;
    if (part['type'] === 'resource' && typeof resource?.['text'] === 'string') return resource['text'];
    return `[${String(part['type'])}]`;
  });
  if (parts.length === 0 && result['structuredContent'] !== undefined) {
    return JSON.stringify(result['structuredContent']);
  }
  if (parts.length === 0 && 'toolResult' in result) return JSON.stringify(result['toolResult']);
  return parts.join('\n');
}
