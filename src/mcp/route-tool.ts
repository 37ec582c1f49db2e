import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SwitchboardError } from '../core/errors.js';
import type { McpContext } from './context.js';
import { routeInput, routeOutput } from './schemas.js';
import { guarded, toolResult } from './tool-result.js';

/** `route`: text → the RouteDecision, exactly what `POST /route` answers. */
export function registerRouteTool(server: McpServer, context: McpContext): void {
  server.registerTool(
    'route',
    {
      title: 'Route a request to a skill',
      description:
        'Routes a free-text request to one of the skills this server was started with (rules, a local model, an LLM when unsure). Answers with the skill ("none" when no skill fits), its confidence, the method and the candidates.',
      inputSchema: routeInput,
      outputSchema: routeOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guarded(async ({ text, tags }, extra) => {
      if (context.router === undefined) {
        throw new SwitchboardError(
          'INVALID_INPUT',
          'this server routes nothing: it was started without skills',
          {
            hint: 'start switchboard mcp (or serve) with --skills DIR',
          },
        );
      }
      const decision = await context.router.route(text, {
        abortSignal: AbortSignal.any([context.abortSignal, extra.signal]),
        ...(tags === undefined ? {} : { tags }),
      });
      return toolResult({ ...decision });
    }),
  );
}
