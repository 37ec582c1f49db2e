import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';

/** How long starting a server and listing its tools may take; Claude Code's own connection timeout is 30 s. */
export const MCP_CONNECT_TIMEOUT_MS = 30_000;

/** Where a server's program runs (stdio servers): its folder and its whole environment. */
export interface McpProcessOptions {
  cwd?: string | undefined;
  /** The environment the program gets, the server's own `env` added over it. */
  env: Record<string, string>;
}

/**
 * Connects the official MCP SDK client to one server given in Claude Code's config shape (`type`,
 * `command`/`args`/`env` or `url`/`headers`). The caller closes it (a stdio server's process ends then).
 */
export async function connectMcpServer(
  server: Record<string, unknown>,
  process: McpProcessOptions,
  signal?: AbortSignal,
): Promise<Client> {
  const { Client: McpClient } = await import('@modelcontextprotocol/sdk/client/index.js');
  const client = new McpClient({ name: 'switchboard', version: '1.0.0' });
  const limit = AbortSignal.any([
    AbortSignal.timeout(MCP_CONNECT_TIMEOUT_MS),
    ...(signal === undefined ? [] : [signal]),
  ]);
  const transport = await transportFor(server, process);
  try {
    await client.connect(transport, { signal: limit, timeout: MCP_CONNECT_TIMEOUT_MS });
  } catch (error) {
    await client.close().catch(() => undefined);
    throw error;
  }
  return client;
}

/** Every tool the server offers (all pages). */
export async function listMcpTools(client: Client, signal?: AbortSignal): Promise<Tool[]> {
  const limit = AbortSignal.any([
    AbortSignal.timeout(MCP_CONNECT_TIMEOUT_MS),
    ...(signal === undefined ? [] : [signal]),
  ]);
  const tools: Tool[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor }, { signal: limit });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}

async function transportFor(server: Record<string, unknown>, process: McpProcessOptions) {
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
  return new StdioClientTransport({
    command: String(server['command']),
    args: (server['args'] ?? []) as string[],
    env: { ...process.env, ...((server['env'] ?? {}) as Record<string, string>) },
    ...(process.cwd === undefined ? {} : { cwd: process.cwd }),
    stderr: 'ignore',
  });
}
