import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';

/** How long starting a server and listing its tools may take; Claude Code's own connection timeout is 30 s. */
export const MCP_CONNECT_TIMEOUT_MS = 30_000;

/** Where a server's program runs (stdio servers): its folder and the environment it is started from. */
export interface McpProcessOptions {
  cwd?: string | undefined;
  /** The environment it is started from: only `MCP_INHERITED_VARIABLE` names pass, the server's own `env` over them. */
  env: Record<string, string>;
}

/**
 * The variables a stdio MCP server inherits: what a program needs to find its tools, its home and its
 * locale. An allow list, not a deny list of secret-looking names: a credential called `MY_WEIRD_SECRET`
 * must not reach a server either. Anything else it gets only when its config's `env` names it.
 */
export const MCP_INHERITED_VARIABLE =
  /^(?:PATH|HOME|USER|LOGNAME|SHELL|LANG|LANGUAGE|LC_[A-Z]+|TERM|TMPDIR|TZ)$/;

/** The environment of a stdio server: the inherited variables of `parent`, then the config's own `env`. */
export function mcpServerEnvironment(
  parent: Readonly<Record<string, string | undefined>>,
  own: Readonly<Record<string, string>>,
): Record<string, string> {
  const inherited = Object.entries(parent).filter(
    (entry): entry is [string, string] => entry[1] !== undefined && MCP_INHERITED_VARIABLE.test(entry[0]),
  );
  return { ...Object.fromEntries(inherited), ...own };
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
    env: mcpServerEnvironment(process.env, (server['env'] ?? {}) as Record<string, string>),
    ...(process.cwd === undefined ? {} : { cwd: process.cwd }),
    stderr: 'ignore',
  });
}
