import { createServer, type IncomingMessage } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { readBody } from './http.js';

describe('readBody', () => {
  it('rejects, rather than waiting forever, when the client hung up before the body was read', async () => {
    const outcome = new Promise<string>((resolve) => {
      const server = createServer((request: IncomingMessage) => {
        // An await before the body is read (an import, a lookup): the client leaves meanwhile.
        setTimeout(() => {
          const timer = setTimeout(() => resolve('still waiting'), 2_000);
          readBody(request).then(
            () => resolve('resolved'),
            (error: unknown) => resolve(`rejected: ${(error as Error).message}`),
          );
          void Promise.resolve().then(() => timer.unref());
          server.close();
        }, 200);
      });
      server.listen(0, '127.0.0.1', () => {
        const socket = connect((server.address() as AddressInfo).port, '127.0.0.1', () => {
          socket.write('POST /route HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{"te');
          setTimeout(() => socket.destroy(), 50);
        });
      });
    });
    expect(await outcome).toMatch(/^rejected: the client closed/);
  });
});
