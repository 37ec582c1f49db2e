import { createServer, type IncomingMessage } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { SwitchboardError } from '../core/errors.js';
import { readBody, sendError } from './http.js';

describe('sendError', () => {
  it('sends retry-after, in whole seconds, when the error says when to come back', async () => {
    const errors = [
      new SwitchboardError('PROVIDER_UNAVAILABLE', 'every breaker open', { retryAfterMs: 2_400 }),
      new SwitchboardError('PROVIDER_ERROR', 'no idea when'),
    ];
    const server = createServer((_request, response) => sendError(response, 502, errors.shift()!));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    try {
      const first = await fetch(url);
      expect(first.status).toBe(502);
      expect(first.headers.get('retry-after')).toBe('3');
      expect(await first.json()).toMatchObject({
        error: { code: 'PROVIDER_UNAVAILABLE', retryAfterMs: 2_400 },
      });
      expect((await fetch(url)).headers.get('retry-after')).toBeNull();
    } finally {
      server.close();
    }
  });
});

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
