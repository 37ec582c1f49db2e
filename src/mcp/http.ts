import type { IncomingMessage, ServerResponse } from 'node:http';
import { SwitchboardError } from '../core/errors.js';
import { isPlainObject } from '../core/plain-object.js';
import { methodNotAllowed, readBody, sendError, sendJson, sendTooLarge } from '../serve/http.js';
import type { McpContext } from './context.js';

/**
 * `serve`'s `/mcp`: the MCP tools over Streamable HTTP, stateless — each POST is answered by a new
 * server object with no session, so any number of clients (and serve's other routes) share one process.
 * Runs started here go on in the serve process (`context.runs`) after the request has been answered.
 * Authorization and the Host and Origin checks the MCP specification asks of this transport (against DNS
 * rebinding) are serve's, made for every route before this is reached (`serve/request-guard.ts`).
 */
export async function handleMcpRequest(
  request: IncomingMessage,
  response: ServerResponse,
  context: McpContext,
): Promise<void> {
  // Without sessions there is no stream to open (GET) or session to end (DELETE).
  if (request.method !== 'POST') return methodNotAllowed(response, 'POST');
  const text = await readBody(request);
  if (text === undefined) return void sendTooLarge(response);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return sendJson(response, 400, {
      jsonrpc: '2.0',
      error: { code: -32700, message: 'Parse error: the body is not valid JSON' },
      id: null,
    });
  }
  const [{ StreamableHTTPServerTransport }, { createMcpServer }] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('./server.js'),
  ]);
  const server = createMcpServer(context);
  // No session id generator: stateless. A plain JSON answer is quicker than an event stream (about
  // 1.5 ms a request, bench/mcp.ts); only a request that asked for progress needs the stream.
  const transport = new StreamableHTTPServerTransport({ enableJsonResponse: !wantsProgress(body) });
  response.once('close', () => {
    void transport.close();
    void server.close();
  });
  try {
    await server.connect(transport);
    await transport.handleRequest(request, response, body);
  } catch (error) {
    if (response.headersSent) throw error;
    sendError(
      response,
      500,
      new SwitchboardError(
        'INTERNAL',
        `the MCP request failed: ${error instanceof Error ? error.message : String(error)}`,
      ),
    );
  }
}

/** Whether a JSON-RPC message (or batch) carries a progressToken: its answer must be a stream. */
function wantsProgress(body: unknown): boolean {
  const messages = Array.isArray(body) ? body : [body];
  return messages.some((message) => {
    if (!isPlainObject(message) || !isPlainObject(message['params'])) return false;
    const meta = message['params']['_meta'];
    return isPlainObject(meta) && meta['progressToken'] !== undefined;
  });
}
