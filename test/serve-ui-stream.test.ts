import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STALL_MS } from '../src/serve/ui/stream.js';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { WorkflowStore } from '../src/store/workflow-records.js';
import { runWorkflow } from '../src/workflows/index.js';
import { GATE_WORKFLOW } from './helpers/dashboard-fixtures.js';
import { killServers, serve, type Served } from './helpers/serve-process.js';

// The dashboard's event stream under load, through the real `serve --ui`: a run of 8 MB of events read
// by two readers that keep up and one that stops reading, while a /call goes through the same server.
// A stream that ignored backpressure would buffer the whole run for the stopped reader (or, as it once
// did, end the response and write to it again, which ended the process and the /call with it).

const EVENTS = 160;
/** 50 KB an event: 8 MB in all, twice what a stream once buffered before giving up on its reader. */
const PAYLOAD = 'x'.repeat(50_000);
const serverToken = `sbt-${randomBytes(12).toString('hex')}`;
const children = new Set<ChildProcess>();
let directory: string;
let sim: Simulator;
let served: Served;
let runId: string;
let lastSeq: number;

beforeAll(async () => {
  directory = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-ui-stream-')));
  const stateDir = join(directory, '.switchboard');
  const file = join(directory, 'gate.yaml');
  writeFileSync(file, GATE_WORKFLOW);
  runId = (await runWorkflow({ file, inputs: { text: 'big' }, stateDir })).id;
  const store = await WorkflowStore.open({ stateDir });
  for (let index = 0; index < EVENTS; index++) {
    await store.appendEvent(runId, {
      type: 'item-progress',
      step: 'note',
      data: { index, payload: PAYLOAD },
    });
  }
  lastSeq = await store.lastEventSeq(runId);
  await store.close();
  sim = await startSimulator({ maxLifetimeMs: 120_000, scenario: { fallback: { text: 'pong' } } });
  served = await serve(['--port', '0', '--pool', '0', '--ui'], {
    cwd: directory,
    env: {
      ...process.env,
      ANTHROPIC_API_KEY: 'sk-ant-stream-test-0001',
      ANTHROPIC_BASE_URL: sim.url,
      SWITCHBOARD_SERVER_TOKEN: serverToken,
    },
    children,
  });
});

afterAll(async () => {
  killServers(children);
  await sim?.close();
  rmSync(directory, { recursive: true, force: true });
});

/** Collects the `id:` of every complete workflow event of an SSE stream, chunk by chunk. */
class EventIds {
  readonly ids: number[] = [];

  private pending = '';

  add(chunk: string): void {
    const blocks = (this.pending + chunk).split('\n\n');
    this.pending = blocks.pop() ?? '';
    for (const block of blocks) {
      const match = /^id: (\d+)\nevent: workflow-event\ndata: .*$/s.exec(block);
      if (match !== null) this.ids.push(Number(match[1]));
    }
  }
}

/** Reads the run's stream at full speed until it has the last event; every id it saw. */
function readAll(): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const outgoing = request(new URL(`/ui/api/stream?run=${encodeURIComponent(runId)}`, served.url), {
      headers: { authorization: `Bearer ${serverToken}` },
    });
    outgoing.on('response', (response) => {
      if (response.statusCode !== 200) return reject(new Error(`stream answered ${response.statusCode}`));
      const seen = new EventIds();
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        seen.add(chunk);
        if (seen.ids.at(-1) === lastSeq) {
          outgoing.destroy();
          resolve(seen.ids);
        }
      });
      response.on('end', () => reject(new Error(`the stream ended after ${seen.ids.length} events`)));
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}

interface SlowReader {
  /** Resolves with the ids it read once the server has cut it off; rejects when it read the whole run. */
  cut: Promise<{ head: string; ids: number[] }>;
  resume: () => void;
}

/** A raw socket that reads the answer's first bytes and then stops reading, as a frozen tab does. */
function stopReading(): SlowReader {
  const socket = connect(Number(new URL(served.url).port), '127.0.0.1');
  let head = '';
  const seen = new EventIds();
  const cut = new Promise<{ head: string; ids: number[] }>((resolve, reject) => {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      if (head === '') {
        socket.pause();
        head = chunk.slice(0, chunk.indexOf('\r\n\r\n') + 4);
        chunk = chunk.slice(head.length);
      }
      seen.add(chunk);
      if (seen.ids.at(-1) === lastSeq) reject(new Error('the stopped reader was sent the whole run'));
    });
    socket.on('close', () => resolve({ head, ids: seen.ids }));
    socket.on('error', () => undefined);
  });
  socket.write(
    [
      // HTTP/1.0: the body comes unframed (no chunks) and ends with the connection.
      `GET /ui/api/stream?run=${encodeURIComponent(runId)} HTTP/1.0`,
      'Host: 127.0.0.1',
      `Authorization: Bearer ${serverToken}`,
      // EventSource's reconnect header, hostile: not a number, so the stream starts from the first row.
      'Last-Event-ID: 1e999; DROP TABLE workflow_events',
      'Accept: text/event-stream',
      '',
      '',
    ].join('\r\n'),
  );
  return { cut, resume: () => socket.resume() };
}

describe('the dashboard stream of a long run', () => {
  it('keeps up with fast readers, lets a stopped one go, and the server keeps answering', async () => {
    const started = Date.now();
    const slow = stopReading();
    const fast = [readAll(), readAll()];
    const call = fetch(`${served.url}/call`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${serverToken}` },
      body: JSON.stringify({ spec: 'anthropic:claude-haiku-4-5', prompt: 'hi' }),
    });
    // Awaited after the streams; a server that died meanwhile fails the stream reads first.
    call.catch(() => undefined);
    const everyId = Array.from({ length: lastSeq }, (_, index) => index + 1);
    for (const ids of await Promise.all(fast)) expect(ids).toEqual(everyId);
    const answer = await call;
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as { text: string }).text).toBe('pong');
    // Long enough for the stall limit to pass; then the stopped reader reads what it was sent.
    const waited = Date.now() - started;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, STALL_MS + 2_000 - waited)));
    slow.resume();
    const { head, ids } = await slow.cut;
    expect(head).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    // It got a prefix of the run, in order, and then the connection closed.
    expect(ids).toEqual(everyId.slice(0, ids.length));
    expect(ids.length).toBeLessThan(lastSeq);
    expect(served.child.exitCode).toBeNull();
    const health = await fetch(`${served.url}/healthz`);
    expect(health.status).toBe(200);
    expect(served.stderr()).not.toMatch(/ERR_STREAM_WRITE_AFTER_END|Error/);
  });
});
