import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { ProgressCallback } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

const cli = join(import.meta.dirname, '../../dist/cli/main.js');

export interface McpSession {
  client: Client;
  /** The server's process id (stdio only). */
  pid?: number | null;
  /** What the server wrote on stderr so far. */
  stderr: () => string;
  /** Calls a tool; the result as the client received it. */
  call(name: string, args: Record<string, unknown>, options?: CallOptions): Promise<CallToolResult>;
  close(): Promise<void>;
}

export interface CallOptions {
  /** Hears the progress notifications of this call (the client then sends a progressToken). */
  onProgress?: ProgressCallback;
  timeoutMs?: number;
}

/** The official MCP SDK client, connected over stdio to the built `switchboard mcp ARGS`. */
export async function connectStdio(
  args: readonly string[],
  { cwd, env }: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<McpSession> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli, 'mcp', ...args],
    cwd,
    env: Object.fromEntries(
      Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined),
    ),
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const client = new Client({ name: 'switchboard-test', version: '1.0.0' });
  await client.connect(transport);
  return { ...sessionOf(client, () => stderr), pid: transport.pid };
}

/** Wraps a connected client with the helpers the tests use. */
export function sessionOf(client: Client, stderr: () => string = () => ''): McpSession {
  return {
    client,
    stderr,
    async call(name, args, options = {}) {
      return (await client.callTool({ name, arguments: args }, undefined, {
        timeout: options.timeoutMs ?? 60_000,
        ...(options.onProgress === undefined ? {} : { onprogress: options.onProgress }),
      })) as CallToolResult;
    },
    close: () => client.close(),
  };
}

/** The text of a tool result's first content block. */
export function textOf(result: CallToolResult): string {
  const first = result.content[0];
  return first?.type === 'text' ? first.text : '';
}
