import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { killServers, serve } from './helpers/serve-process.js';

// Connections that trickle their headers (slowloris) once stayed open past 70 s and made the worst
// /route take 58 s. serve closes them once they have had 10 s for their headers.
const children = new Set<ChildProcess>();
const folders: string[] = [];
afterAll(() => {
  killServers(children);
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

function healthz(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const call = request(`${url}/healthz`, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    call.on('error', reject);
    call.end();
  });
}

describe('serve and clients that never finish their headers', () => {
  it('closes 200 trickling connections on its own and keeps answering others meanwhile', async () => {
    const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-slow-')));
    folders.push(cwd);
    const served = await serve(['--port', '0', '--pool', '0'], { cwd, env: { ...process.env }, children });
    const port = Number(new URL(served.url).port);
    const closed: number[] = [];
    const started = Date.now();
    const sockets: Socket[] = [];
    for (let index = 0; index < 200; index++) {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.on('close', () => closed.push(Date.now() - started));
      socket.write('POST /route HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
      sockets.push(socket);
    }
    const trickle = setInterval(() => {
      for (const socket of sockets) if (!socket.destroyed) socket.write('a');
    }, 1_000);
    try {
      // A minute at most, past the 10 s the headers get (Node's own limits would keep them 60–90 s).
      while (closed.length < sockets.length && Date.now() - started < 45_000) {
        expect(await healthz(served.url)).toBe(200);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      expect(closed).toHaveLength(sockets.length);
    } finally {
      clearInterval(trickle);
      for (const socket of sockets) socket.destroy();
    }
  });
});
