import type { Options } from '@anthropic-ai/claude-agent-sdk';
import { redactSecrets } from '../../core/secrets.js';

/** How long listing one server's tools may take; Claude Code's own connection timeout is 30 s. */
const LIST_TIMEOUT_MS = 30_000;

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
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const client = new Client({ name: 'switchboard', version: '1.0.0' });
  const signal = AbortSignal.any([
    AbortSignal.timeout(LIST_TIMEOUT_MS),
    ...(abortSignal === undefined ? [] : [abortSignal]),
  ]);
  await client.connect(await transportFor(server, options), { signal, timeout: LIST_TIMEOUT_MS });
  try {
    const names: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor }, { signal });
      names.push(...page.tools.map((tool) => tool.name));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return names;
  } finally {
    await client.close().catch(() => undefined);
  }
}

async function transportFor(server: Record<string, unknown>, options: Options) {
  const type = typeof server['type'] === 'string' ? server['type'] : 'stdio';
  const headers = (server['headers'] ?? {}) as Record<string, string>;
  if (type === 'http') {
    const { StreamableHTTPClientTransport } =
      await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    return new StreamableHTTPClientTransport(new URL(String(server['url'])), { requestInit: { headers } });
  }
  if (type === 'sse') {
    const { SSEClientTransport } = await import('@modelcontextprotocol/sdk/client/sse.js');
    return new SSEClientTransport(new URL(String(server['url'])), { requestInit: { headers } });
  }
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
  // Started as Claude Code starts it: in the same folder, with Claude Code's environment plus its own.
  return new StdioClientTransport({
    command: String(server['command']),
    args: (server['args'] ?? []) as string[],
    env: { ...definedValues(options.env ?? {}), ...((server['env'] ?? {}) as Record<string, string>) },
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    stderr: 'ignore',
  });
}

function definedValues(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
}
