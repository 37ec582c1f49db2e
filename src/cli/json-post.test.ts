import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { postJson, PostFailure, readResponse } from './json-post.js';

// The client side of every local `serve` request, against real node:http and TCP servers.

const servers: { close(callback: () => void): unknown }[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise<void>((resolve) => server.close(() => resolve()));
});

async function listening(server: Server | ReturnType<typeof createTcpServer>): Promise<URL> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/route`);
}

describe('postJson', () => {
  it('sends the JSON and the token, and reads a sized, a chunked and a read-to-close answer', async () => {
    const seen: { body: string; authorization: string | undefined; connection: string | undefined }[] = [];
    const url = await listening(
      createServer((request, response) => {
        let body = '';
        request.on('data', (chunk: Buffer) => (body += chunk.toString()));
        request.on('end', () => {
          seen.push({
            body,
            authorization: request.headers.authorization,
            connection: request.headers.connection,
          });
          if (body.includes('sized')) {
            response
              .writeHead(200, { 'content-length': Buffer.byteLength('{"ok":"ü"}\n') })
              .end('{"ok":"ü"}\n');
          } else {
            // No length: chunked, in two writes.
            response.writeHead(404);
            response.write('{"error":');
            setTimeout(() => response.end('{"message":"no"}}'), 10);
          }
        });
      }),
    );
    expect(await postJson(url, '{"text":"sized"}', { token: 'secret-token' })).toEqual({
      status: 200,
      text: '{"ok":"ü"}\n',
    });
    expect(await postJson(url, '{"text":"chunked"}')).toEqual({
      status: 404,
      text: '{"error":{"message":"no"}}',
    });
    expect(seen).toEqual([
      { body: '{"text":"sized"}', authorization: 'Bearer secret-token', connection: 'close' },
      { body: '{"text":"chunked"}', authorization: undefined, connection: 'close' },
    ]);

    const closing = await listening(
      createTcpServer((socket) =>
        socket.once('data', () =>
          socket.end('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{"a":1}'),
        ),
      ),
    );
    expect(await postJson(closing, '{}')).toEqual({ status: 200, text: '{"a":1}' });
  });

  it('fails without having connected (refused, abort before) or after (cut short, not HTTP)', async () => {
    const refusedAt = await listening(createTcpServer());
    await new Promise<void>((resolve) => servers.pop()?.close(() => resolve()));
    await expect(postJson(refusedAt, '{}')).rejects.toMatchObject({
      name: 'PostFailure',
      connected: false,
      message: 'connection refused',
    });
    await expect(postJson(refusedAt, '{}', { abortSignal: AbortSignal.abort() })).rejects.toBeInstanceOf(
      PostFailure,
    );

    const cut = await listening(
      createTcpServer((socket) =>
        socket.once('data', () => socket.end('HTTP/1.1 200 OK\r\ncontent-length: 50\r\n\r\n{"a"')),
      ),
    );
    await expect(postJson(cut, '{}')).rejects.toMatchObject({ connected: true });
    const garbage = await listening(
      createTcpServer((socket) => socket.once('data', () => socket.end('SSH-2.0\r\n\r\n'))),
    );
    await expect(postJson(garbage, '{}')).rejects.toMatchObject({ connected: true });

    // Never answers: the abort ends the wait.
    const stalled = await listening(createTcpServer((socket) => socket.resume()));
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    await expect(postJson(stalled, '{}', { abortSignal: controller.signal })).rejects.toMatchObject({
      connected: true,
      message: 'aborted',
    });
  });
});

describe('readResponse', () => {
  it('waits for the whole answer and skips an interim one', () => {
    const head = 'HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\n';
    expect(readResponse(Buffer.from('HTTP/1.1 200 OK\r\ncontent-len'), false)).toBe('incomplete');
    expect(readResponse(Buffer.from(`${head}{"a`), false)).toBe('incomplete');
    expect(readResponse(Buffer.from(`${head}{"a`), true)).toBe('malformed');
    expect(readResponse(Buffer.from(`HTTP/1.1 100 Continue\r\n\r\n${head}{}\n\n`), false)).toEqual({
      status: 200,
      text: '{}\n\n',
    });
  });

  it('skips any number of interim answers and refuses a head without end', () => {
    const many = 'HTTP/1.1 100 Continue\r\n\r\n'.repeat(20_000);
    expect(readResponse(Buffer.from(`${many}HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}`), false)).toEqual(
      {
        status: 200,
        text: '{}',
      },
    );
    const endless = Buffer.from(`HTTP/1.1 200 OK\r\nx-filler: ${'x'.repeat(70 * 1024)}`);
    expect(readResponse(endless, false)).toBe('malformed');
  });
});

describe('postJson refuses', () => {
  it('a token with a line break, which would write headers of its own', async () => {
    await expect(
      postJson(new URL('http://127.0.0.1:9/route'), '{}', { token: 'tok\r\nx-injected: yes' }),
    ).rejects.toThrow(/line break/);
  });
});
