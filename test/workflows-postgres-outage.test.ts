import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WorkflowRunResult } from '../src/workflows/api-types.js';
import { adminQuery, createTestDatabase, POSTGRES_SKIP, type TestDatabase } from './helpers/postgres.js';
import { runCli } from './helpers/run-cli.js';

/**
 * The database as a client sees a restart: a TCP relay in front of the run's PostgreSQL that can be
 * taken down (every connection cut, new ones refused) and brought back on the same port.
 */
class Outage {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private readonly upstreamPort: number;
  port = 0;

  constructor(upstreamPort: number) {
    this.upstreamPort = upstreamPort;
  }

  async up(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = connect(this.upstreamPort, '127.0.0.1');
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('error', () => undefined);
        socket.on('close', () => this.sockets.delete(socket));
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    const address = this.server.address();
    if (typeof address === 'object' && address !== null) this.port = address.port;
  }

  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
  }
}

// A 20 s PostgreSQL restart once left a run `running` for good: its step finished while the database
// was away, the job's retry found the worker itself recorded as the owner and waited, and the script ran
// again once the worker stopped. A run must ride out an outage: the step's end recorded when the database
// is back, the step run once.
describe.skipIf(POSTGRES_SKIP !== undefined)(
  'a workflow run while PostgreSQL goes away and comes back',
  () => {
    let database: TestDatabase;
    let relay: Outage;
    let cwd: string;
    beforeEach(async () => {
      database = await createTestDatabase();
      relay = new Outage(Number(new URL(database.url).port));
      await relay.up();
      cwd = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-outage-')));
    });
    afterEach(async () => {
      await relay.down();
      await database.drop();
      rmSync(cwd, { recursive: true, force: true });
    });

    it('records the step that finished during the outage once the database is back, and runs it once', async () => {
      writeFileSync(
        join(cwd, 'flow.yaml'),
        `workflow:
  name: outage
  entry_point: slow
agents:
  - name: slow
    type: script
    command: sh
    args: ["-c", "echo started >> ticks.log; sleep 3; echo ran >> ticks.log; echo '{\\"n\\": 1}'"]
    routes:
      - to: after
  - name: after
    type: set
    value: "{{ slow.output.n + 1 }}"
    routes:
      - to: $end
output:
  n: "{{ after.output }}"
`,
      );
      const url = new URL(database.url);
      url.port = String(relay.port);
      const env = { ...process.env, SWITCHBOARD_DATABASE_URL: url.toString() };
      const running = runCli(['workflow', 'run', 'flow.yaml', '--run-id', 'outage', '--json'], { cwd, env });
      // Down while the script runs (its start is on disk once it began), and for longer than it has left.
      for (
        let waited = 0;
        !readFileSync(join(cwd, 'ticks.log'), { flag: 'a+' }).toString().includes('started');
        waited++
      ) {
        if (waited > 400) throw new Error('the script step never started');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await relay.down();
      await new Promise((resolve) => setTimeout(resolve, 6_000));
      await relay.up();
      const result = await running;
      expect(result.status, result.stderr).toBe(0);
      expect((JSON.parse(result.stdout) as WorkflowRunResult).output).toEqual({ n: 2 });
      expect(readFileSync(join(cwd, 'ticks.log'), 'utf8')).toBe('started\nran\n');
      const steps = await adminQuery(
        `SELECT step, status FROM workflow_steps WHERE run_id = 'outage' ORDER BY started_at`,
        database.url,
      );
      expect(steps.rows).toEqual([
        { step: 'slow', status: 'completed' },
        { step: 'after', status: 'completed' },
      ]);
    });
  },
);
