import type { Options } from '@anthropic-ai/claude-agent-sdk';
import { redactSecrets } from '../../core/secrets.js';
import { connectMcpServer, listMcpTools } from '../mcp-client.js';

/** What `limitMcpTools` did to the options. */
export interface McpToolLimits {
  /** Tools Claude Code is told to leave out (`disallowedTools`), so the model is never offered them. */
  hidden: string[];
  /** Servers left out of the config: none of their tools is allowed, or their tools could not be listed. */
  removed: { server: string; reason: string }[];
}

/**
 * Makes Claude Code offer the model only the allowed tools of the given MCP servers. An `allowedTools`
 * entry only approves calls: Claude Code still lists every tool of a server in its API requests. So
 * each server with a tool allowlist (`mcp__srv__tool` entries, not `mcp__srv`) is started once with the
 * MCP SDK client to list its tools, and the others go to `disallowedTools`, which removes them from
 * the request (measured with Claude Code 2.1.330). A server none of whose tools is allowed is left out;
 * so is one that cannot be listed (failing closed: Claude Code would offer all of its tools). The
 * servers travel in the initialize request, not on the command line where `ps` shows their `env` and
 * `headers`.
 *
 * `options.mcpServers`, `cwd` and `env` must be set; `allowedTools` is the caller's allowlist (the
 * agent runner approves calls itself and passes none to Claude Code).
 */
export async function limitMcpTools(
  options: Options,
  allowedTools: readonly string[],
  abortSignal?: AbortSignal,
): Promise<McpToolLimits> {
  const servers = { ...(options.mcpServers ?? {}) } as Record<string, Record<string, unknown>>;
  const limits: McpToolLimits = { hidden: [], removed: [] };
  await Promise.all(
    Object.entries(servers).map(async ([name, server]) => {
      const allowed = allowedFor(name, allowedTools);
      // An in-process server (`createSdkMcpServer`) is its host's own: the host chose its tools.
      if (allowed === 'all' || server['type'] === 'sdk') return;
      if (allowed.size === 0) {
        delete servers[name];
        limits.removed.push({ server: name, reason: 'none of its tools is allowed' });
        return;
      }
      try {
        const tools = await listTools(server, options, abortSignal);
        limits.hidden.push(
          ...tools.filter((tool) => !allowed.has(tool)).map((tool) => `mcp__${name}__${tool}`),
        );
      } catch (error) {
        delete servers[name];
        const reason = redactSecrets(error instanceof Error ? error.message : String(error));
        limits.removed.push({ server: name, reason: `its tools could not be listed: ${reason}` });
      }
    }),
  );
  options.mcpServers = servers as NonNullable<Options['mcpServers']>;
  if (Object.keys(servers).length > 0) options.mcpServersDelivery = 'initialize';
  if (limits.hidden.length > 0)
    options.disallowedTools = [...(options.disallowedTools ?? []), ...limits.hidden.sort()];
  return limits;
}

/** `'all'` for `mcp__srv` / `mcp__srv__*`, else the tool names allowed one by one. */
function allowedFor(server: string, allowedTools: readonly string[]): 'all' | Set<string> {
  const prefix = `mcp__${server}__`;
  const tools = new Set<string>();
  for (const entry of allowedTools) {
    const name = entry.trim();
    if (name === `mcp__${server}` || name === `${prefix}*`) return 'all';
    if (name.startsWith(prefix)) tools.add(name.slice(prefix.length));
  }
  return tools;
}

/** The server's tool names, as the MCP SDK client lists them (all pages). */
async function listTools(
  server: Record<string, unknown>,
  options: Options,
  abortSignal: AbortSignal | undefined,
): Promise<string[]> {
  // Started as Claude Code starts it: in the same folder, with Claude Code's environment plus its own.
  const client = await connectMcpServer(
    server,
    { cwd: options.cwd, env: definedValues(options.env ?? {}) },
    abortSignal,
  );
  try {
    return (await listMcpTools(client, abortSignal)).map((tool) => tool.name);
  } finally {
    await client.close().catch(() => undefined);
  }
}

function definedValues(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
}
