import { randomBytes } from 'node:crypto';
import { createServer, request, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKeyForwarder, type KeyForwarder } from './key-forwarder.js';

// The forwarder between an agent's Claude Code and the API, over real HTTP: what reaches the upstream,
// and with which key.

const planted = `sk-ant-PLANTED-${randomBytes(8).toString('hex')}`;
const arrived: Array<{ method: string; url: string; key: string | undefined }> = [];
let upstream: Server;
let forwarder: KeyForwarder;

beforeAll(async () => {
  upstream = createServer((incoming, outgoing) => {
    const key = incoming.headers['x-api-key'];
    arrived.push({
      method: incoming.method ?? '',
      url: incoming.url ?? '',
      key: typeof key === 'string' ? key : undefined,
    });
    incoming.resume();
    incoming.on('end', () => {
      outgoing.writeHead(200, { 'content-type': 'application/json' });
      outgoing.end(
        JSON.stringify({ type: 'message', model: 'm', usage: { input_tokens: 3, output_tokens: 4 } }),
      );
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const { port } = upstream.address() as AddressInfo;
  forwarder = await startKeyForwarder({
    upstream: `http://127.0.0.1:${port}`,
    credential: { kind: 'api-key', value: planted },
  });
});

afterAll(async () => {
  await forwarder.close();
  await new Promise((resolve) => upstream.close(resolve));
});

/** One request to the forwarder as Claude Code (or a tool of the agent holding its token) sends it. */
function send(
  method: string,
  path: string,
  token = forwarder.token,
): Promise<{ status: number; text: string }> {
  const { port } = new URL(forwarder.url);
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        headers: { 'x-api-key': token, 'content-type': 'application/json' },
      },
      (incoming) => {
        let text = '';
        incoming.setEncoding('utf8');
        incoming.on('data', (chunk: string) => (text += chunk));
        incoming.on('end', () => resolve({ status: incoming.statusCode ?? 0, text }));
      },
    );
    outgoing.on('error', reject);
    outgoing.end(method === 'GET' || method === 'HEAD' ? undefined : '{"model":"m","messages":[]}');
  });
}

/** Bytes written as they are, for request lines no HTTP client would send; resolves with the whole answer. */
function sendRaw(bytes: string): Promise<string> {
  const { port } = new URL(forwarder.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(bytes));
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
}

describe('key forwarder', () => {
  it('passes on only the Messages API, with the key; any other path is answered 404 and never reaches the upstream', async () => {
    for (const path of ['/v1/messages?beta=true', '/v1/messages/count_tokens?beta=true']) {
      const answer = await send('POST', path);
      expect(answer.status, path).toBe(200);
      expect(answer.text).not.toContain(planted);
    }
    expect(arrived).toEqual([
      { method: 'POST', url: '/v1/messages?beta=true', key: planted },
      { method: 'POST', url: '/v1/messages/count_tokens?beta=true', key: planted },
    ]);

    const refused: Array<[string, string]> = [
      ['GET', '/v1/models'],
      ['POST', '/v1/files'],
      ['POST', '/v1/messages/batches'],
      ['GET', '/v1/messages/batches/msgbatch_1/results'],
      ['POST', '/v1/messages/../files'],
      ['POST', '/v1/messages/%2e%2e/files'],
      ['GET', '/v1/messages'],
      ['HEAD', '/api/hello'],
      ['POST', '/api/event_logging/v2/batch'],
      ['GET', '/api/oauth/usage'],
      ['POST', '/v1/organizations/invites'],
    ];
    for (const [method, path] of refused) {
      const answer = await send(method, path);
      expect(answer.status, `${method} ${path}`).toBe(404);
      expect(answer.text).not.toContain(planted);
    }
    const files = await send('POST', '/v1/files');
    expect(JSON.parse(files.text)).toEqual({
      type: 'error',
      error: {
        type: 'not_found_error',
        message:
          'this forwarder passes on only POST /v1/messages, /v1/messages/count_tokens, not POST /v1/files',
      },
    });
    // Without the run's token nothing passes, the Messages API included.
    expect((await send('POST', '/v1/messages', 'sk-ant-guess')).status).toBe(401);
    expect(arrived).toHaveLength(2);
  });

  it('answers 400 to a request path that does not parse, forwards nothing and keeps serving', async () => {
    const before = arrived.length;
    for (const token of [forwarder.token, 'not-the-token']) {
      const answer = await sendRaw(
        `POST // HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: ${token}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
      );
      expect(answer).not.toContain(planted);
      expect(answer.split('\r\n')[0]).toBe(
        token === forwarder.token ? 'HTTP/1.1 400 Bad Request' : 'HTTP/1.1 401 Unauthorized',
      );
    }
    expect(arrived).toHaveLength(before);
    expect((await send('POST', '/v1/messages')).status).toBe(200);
  });
});
