import { readFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { registerAgentTools } from './agent-tools.js';
import { registerCallTools } from './call-tool.js';
import type { McpContext } from './context.js';
import { registerRouteTool } from './route-tool.js';
import { answerSdkErrorsAsSwitchboard } from './sdk-errors.js';
import { registerStatsTool } from './stats-tool.js';
import { registerWorkflowTools } from './workflow-tools.js';

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

/**
 * Switchboard as an MCP server: route, call, agent runs, workflow runs and gates, and spending, as
 * tools with typed input and output schemas. One server object per MCP session; `context` (router,
 * call service, runs in the background) is the process's and shared by all of them.
 */
export function createMcpServer(context: McpContext): McpServer {
  const server = new McpServer(
    { name: 'switchboard', version },
    {
      instructions:
        'Switchboard routes requests to skills, calls LLMs with fallbacks and budgets, and runs Claude Code agents and checkpointed workflows. Long tools answer with a run id and state "running" after wait_seconds; the *_status tools report such runs later.',
    },
  );
  answerSdkErrorsAsSwitchboard(server);
  registerRouteTool(server, context);
  registerCallTools(server, context);
  registerAgentTools(server, context);
  registerWorkflowTools(server, context);
  registerStatsTool(server, context);
  return server;
}
