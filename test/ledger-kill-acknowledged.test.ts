import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { killServers, launcher, serve, type Served } from './helpers/serve-process.js';

// Nothing a client was told is lost to a SIGKILL: `serve` (started through bin/switchboard, as a user
// does) answers /route and /call only once the decision's or the attempt's row is committed, and the
// `route` command prints only then. An audit of the write-behind queue this replaced found 76 of 353
// decisions and 60 of 116 calls that clients had received missing after a kill.

const skills = join(import.meta.dirname, 'fixtures/skills');
const children = new Set<ChildProcess>();
const folders: string[] = [];
let sim: Simulator;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  sim = await startSimulator({
    maxLifetimeMs: 300_000,
    scenario: { rules: [{ match: {}, reply: { text: 'pong', usage: { input: 20, output: 2 } } }] },
  });
  env = {
    ...process.env,
    ANTHROPIC_API_KEY: 'sk-ant-kill-acknowledged-0001',
    ANTHROPIC_BASE_URL: sim.url,
    SWITCHBOARD_SERVER: '',
    SWITCHBOARD_SERVER_TOKEN: '',
  };
});

afterAll(async () => {
  killServers(children);
  await sim.close();
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

function temporaryFolder(): string {
  const folder = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-kill-ack-')));
  folders.push(folder);
  return folder;
}

/**
 * What the ledger file a killed process left holds, read straight from SQLite: decision ids, call ids,
 * and the `ack` tag of each call (which names the request, whatever the answer carried).
 */
function ledgerIds(cwd: string): { decisions: Set<string>; calls: Set<string>; tags: Set<string> } {
  const database = new Database(join(cwd, '.switchboard', 'ledger.db'));
  try {
    const column = (sql: string) => (database.prepare(sql).pluck().all() as unknown[]).map(String);
    const tags = column('SELECT tags FROM call_attempts').map(
      (json) => (JSON.parse(json) as Record<string, string>)['ack'] ?? '',
    );
    return {
      decisions: new Set(column('SELECT id FROM route_decisions')),
      calls: new Set(column('SELECT DISTINCT call_id FROM call_attempts')),
      tags: new Set(tags),
    };
  } finally {
    database.close();
  }
}

interface Acknowledged {
  decisions: string[];
  /** The `callId` of each answered call, and the `ack` tag its request carried. */
  calls: { callId: string; ack: string }[];
  /** Answers other than 200, by status: none are expected. */
  errors: string[];
}

/**
 * One client: /route and /call in turn until the server is gone, keeping the id of every 200 answer.
 * `onAnswer` is told after each, so the trial can pull the trigger.
 */
async function client(server: Served, index: number, seen: Acknowledged, onAnswer: () => void) {
  const headers = { 'content-type': 'application/json', ...server.auth };
  for (let turn = 0; ; turn++) {
    const routing = turn % 2 === 0;
    const ack = `${index}-${turn}`;
    const body = routing
      ? { text: `client ${index} turn ${turn}: the app crashes when I save` }
      : { spec: 'anthropic:claude-haiku-4-5', prompt: `client ${index} turn ${turn}`, tags: { ack } };
    let answer: Record<string, unknown>;
    try {
      const response = await fetch(`${server.url}${routing ? '/route' : '/call'}`, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
      });
      answer = (await response.json()) as Record<string, unknown>;
      if (response.status !== 200) {
        seen.errors.push(`${response.status} ${JSON.stringify(answer)}`);
        continue;
      }
    } catch {
      return; // the server is gone
    }
    if (routing) seen.decisions.push(String(answer['id']));
    else seen.calls.push({ callId: String(answer['callId']), ack });
    onAnswer();
  }
}

describe('a SIGKILL loses nothing a client was told', () => {
  it('serve: every decision id and call id 50 concurrent clients received is in the ledger, over 10 kills', async () => {
    for (let trial = 0; trial < 10; trial++) {
      const cwd = temporaryFolder();
      const server = await serve(['--port', '0', '--pool', '0', '--skills', skills], {
        cwd,
        env,
        children,
        viaLauncher: true,
      });
      const seen: Acknowledged = { decisions: [], calls: [], errors: [] };
      // A random moment, counted in answers rather than time: between 20 and 200 of them.
      const killAfter = 20 + Math.floor(Math.random() * 180);
      const kill = () => {
        if (seen.decisions.length + seen.calls.length >= killAfter) server.child.kill('SIGKILL');
      };
      // Only so that a server that stops answering cannot hang the test; the checks below then fail.
      const stuck = setTimeout(() => server.child.kill('SIGKILL'), 30_000);
      const clients = Array.from({ length: 50 }, (_, index) => client(server, index, seen, kill));
      const ended = await server.exited;
      clearTimeout(stuck);
      await Promise.all(clients);
      expect(ended.signal, server.stderr()).toBe('SIGKILL');
      expect(seen.errors).toEqual([]);
      expect(seen.decisions.length + seen.calls.length).toBeGreaterThanOrEqual(killAfter);
      const stored = ledgerIds(cwd);
      const missing = {
        trial,
        decisions: seen.decisions.filter((id) => !stored.decisions.has(id)),
        calls: seen.calls.filter(({ ack }) => !stored.tags.has(ack)).map(({ ack }) => ack),
        callIds: seen.calls.filter(({ callId }) => !stored.calls.has(callId)).map(({ callId }) => callId),
      };
      expect(missing).toEqual({ trial, decisions: [], calls: [], callIds: [] });
    }
  }, 120_000);

  it('route: a process killed as soon as it printed its decision leaves the decision in the ledger', async () => {
    const printed = await Promise.all(
      Array.from({ length: 5 }, async (_, index) => {
        const cwd = temporaryFolder();
        const child = spawn(
          launcher,
          ['route', '--json', '--skills', skills, `request ${index}: the app crashes when I save`],
          { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] },
        );
        children.add(child);
        let stdout = '';
        let stderr = '';
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString('utf8');
          if (stdout.includes('\n')) child.kill('SIGKILL');
        });
        const signal = await new Promise<NodeJS.Signals | null>((resolve) =>
          child.on('exit', (_code, exitSignal) => resolve(exitSignal)),
        );
        return { cwd, stdout, stderr, signal };
      }),
    );
    for (const { cwd, stdout, stderr } of printed) {
      const id = (JSON.parse(stdout) as { id: string }).id;
      expect(ledgerIds(cwd).decisions.has(id), `${id} missing; stderr: ${stderr}`).toBe(true);
    }
    // At least one was killed before it could exit on its own (else this proved nothing about a kill).
    expect(printed.some(({ signal }) => signal === 'SIGKILL')).toBe(true);
  }, 60_000);
});
