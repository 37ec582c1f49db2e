import { LISTENER_OPTIONS } from '../core/http-listener.js';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SwitchboardError } from '../core/errors.js';
import type { SwitchboardWorker } from './worker.js';

/**
 * `/healthz` (200 with `{ ok, state, queues, active }` while taking jobs, 503 while draining) and
 * `/metrics` (Prometheus text) of a worker. Read-only and without secrets, so it needs no token.
 * Resolves with the server once it listens; `port` 0 picks a free port.
 */
export async function startHealthServer(
  worker: SwitchboardWorker,
  { host, port }: { host: string; port: number },
): Promise<Server> {
  const { createServer } = await import('node:http');
  const server = createServer(LISTENER_OPTIONS, (request, response) => {
    const path = (request.url ?? '/').split('?', 1)[0];
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/healthz') {
      const health = worker.health();
      response
        .writeHead(health.ok ? 200 : 503, { 'content-type': 'application/json' })
        .end(`${JSON.stringify(health)}\n`);
      return;
    }
    if (path === '/metrics') {
      worker.metrics.registry.metrics().then(
        (text) => response.writeHead(200, { 'content-type': worker.metrics.registry.contentType }).end(text),
        () => response.writeHead(500).end(),
      );
      return;
    }
    response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(listenError(error, host, port)));
    server.listen(port, host, () => resolve());
  });
  return server;
}

/** The address a listening server answers on, as a URL. */
export function serverUrl(server: Server): string {
  const { address, port } = server.address() as AddressInfo;
  return `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
}

function listenError(error: NodeJS.ErrnoException, host: string, port: number): SwitchboardError {
  if (error.code === 'EADDRINUSE') {
    return new SwitchboardError('PORT_IN_USE', `port ${port} on ${host} is already in use`, {
      hint: 'stop the process using it, or pass another --port (0 picks a free one)',
      cause: error,
    });
  }
  return new SwitchboardError('INVALID_INPUT', `cannot listen on ${host}:${port}: ${error.message}`, {
    hint: 'pass a local address with --host and a free port with --port (0 picks one)',
    cause: error,
  });
}
