import type { IncomingMessage, ServerResponse } from 'node:http';
import { SwitchboardError } from '../core/errors.js';
import { methodNotAllowed, sendError } from '../serve/http.js';
import type { McpContext } from './context.js';

/**
 * `serve`'s `/mcp`: the MCP tools over Streamable HTTP, stateless — each POST is answered by a new
 * server object with no session, so any number of clients (and serve's other routes) share one process.
 * Runs started here go on in the serve process (`context.runs`) after the request has been answered.
 * Authorization is serve's, checked before this is reached.
 */
export async function handleMcpRequest(
  request: IncomingMessage,
  response: ServerResponse,
  context: McpContext,
): Promise<void> {
  // Without sessions there is no stream to open (GET) or session to end (DELETE).
  if (request.method !== 'POST') return methodNotAllowed(response, 'POST');
  const [{ StreamableHTTPServerTransport }, { createMcpServer }] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('./server.js'),
  ]);
  const server = createMcpServer(context);
  // No session id generator: stateless.
  const transport = new StreamableHTTPServerTransport({});
  response.once('close', () => {
    void transport.close();
    void server.close();
  });
  try {
    await server.connect(transport);
    await transport.handleRequest(request, response);
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
