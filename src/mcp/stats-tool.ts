import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { McpContext } from './context.js';
import { statsInput, statsOutput } from './schemas.js';
import { guarded, toolResult } from './tool-result.js';

/** `stats`: what `switchboard stats --json` prints: calls, cost, route decisions, cooldowns, budgets. */
export function registerStatsTool(server: McpServer, context: McpContext): void {
  server.registerTool(
    'stats',
    {
      title: 'Spending and call figures',
      description:
        'What the ledger recorded: calls, success rate, latency, tokens and cost by provider and model, route decisions, cooldowns, and spending against each budget cap of switchboard.yaml (today and this month).',
      inputSchema: statsInput,
      outputSchema: statsOutput,
      annotations: { readOnlyHint: true },
    },
    guarded(async ({ since_hours }) => {
      const { readStats } = await import('../cli/stats.js');
      const since = since_hours === undefined ? {} : { since: Date.now() - since_hours * 3_600_000 };
      return toolResult({ ...(await readStats(context.config, since)) });
    }),
  );
}
