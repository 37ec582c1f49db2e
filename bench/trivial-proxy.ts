// The floor of any proxy in a process of its own, for bench/gateway.ts: a trivial `node:http` proxy with
// no Switchboard code. It reads the whole request body, forwards the request (method, path, headers) to
// the upstream over a keep-alive agent, and pipes the answer back as it arrives (a stream chunk by
// chunk). What it adds over calling the upstream directly is the cost of the extra hop on this machine:
// two more sockets, a process switch each way, two HTTP parses. Prints "listening on <url>" once bound:
//   node --experimental-strip-types --no-warnings bench/trivial-proxy.ts <upstream url>
import { Agent, createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';

const upstream = new URL(process.argv[2] ?? '');
const agent = new Agent({ keepAlive: true, maxSockets: 256 });

const server = createServer((incoming, outgoing) => {
  const chunks: Buffer[] = [];
  incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
  incoming.on('end', () => {
    const body = Buffer.concat(chunks);
    const headers = { ...incoming.headers, host: upstream.host, 'content-length': String(body.length) };
    const forwarded = httpRequest(
      new URL(incoming.url ?? '/', upstream),
      { method: incoming.method, headers, agent },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forwarded.on('error', () => {
      if (!outgoing.headersSent) outgoing.writeHead(502);
      outgoing.end();
    });
    forwarded.end(body);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  console.log(`listening on http://127.0.0.1:${port}`);
});
process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close();
  agent.destroy();
});
