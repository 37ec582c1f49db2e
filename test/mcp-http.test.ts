import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { sessionOf, textOf, type McpSession } from './helpers/mcp-client.js';
import { killServers, serve, type Served } from './helpers/serve-process.js';

// The same MCP tools at `switchboard serve`'s /mcp, over Streamable HTTP, with the official MCP SDK
// client; serve's auth rules hold there too.

const skills = join(import.meta.dirname, 'fixtures/skills');
const token = 'mcp-http-test-token-0123456789';
const children = new Set<ChildProcess>();
const directories: string[] = [];
const sessions: McpSession[] = [];
let sim: Simulator;
let env: NodeJS.ProcessEnv;
let server: Served;

beforeAll(async () => {
  sim = await startSimulator({
    maxLifetimeMs: 300_000,
    scenario: {
      rules: [
        {
          match: { provider: 'anthropic', text: 'slowly' },
          reply: { text: 'after a while', delayMs: 1_500 },
        },
      ],
      fallback: { text: 'hello over http' },
    },
  });
  env = { ...process.env, ANTHROPIC_API_KEY: 'sk-ant-mcp-http-secret', ANTHROPIC_BASE_URL: sim.url };
  const cwd = mkdtempSync(join(tmpdir(), 'switchboard-mcp-http-'));
  directories.push(cwd);
  server = await serve(['--host', '0.0.0.0', '--port', '0', '--pool', '0', '--skills', skills], {
    cwd,
    env: { ...env, SWITCHBOARD_SERVER_TOKEN: token },
    children,
  });
});

afterAll(async () => {
  for (const session of sessions) await session.close();
  killServers(children);
  await sim.close();
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

/** A session with the server's token unless `headers` say otherwise: /mcp wants it, loopback included. */
async function connect(
  base: string,
  headers: Record<string, string> = { authorization: `Bearer ${token}` },
): Promise<McpSession> {
  const client = new Client({ name: 'switchboard-http-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL('/mcp', base), { requestInit: { headers } }),
  );
  const session = sessionOf(client);
  sessions.push(session);
  return session;
}

function loopback(): string {
  return `http://127.0.0.1:${new URL(server.url).port}`;
}

/** This machine's first non-loopback IPv4 address, if it has one. */
function externalAddress(): string | undefined {
  return Object.values(networkInterfaces())
    .flat()
    .find((entry) => entry !== undefined && entry.family === 'IPv4' && !entry.internal)?.address;
}

describe('switchboard serve: /mcp', () => {
  it('lists the tools and answers route and call, with progress, to two clients at once', async () => {
    const [first, second] = await Promise.all([connect(loopback()), connect(loopback())]);
    const { tools } = await first.client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(
      expect.arrayContaining(['route', 'call', 'agent_run', 'workflow_run', 'workflow_gate', 'stats']),
    );
    const progress: string[] = [];
    const [routed, called] = await Promise.all([
      first.call('route', { text: 'the app crashes whenever I save' }),
      second.call(
        'call',
        { spec: 'anthropic:claude-haiku-4-5', prompt: 'answer slowly' },
        { onProgress: ({ message }) => progress.push(message ?? '') },
      ),
    ]);
    expect(routed.structuredContent).toMatchObject({ skill: 'fix-bug', method: 'local' });
    expect(called.structuredContent).toMatchObject({ state: 'completed', text: 'after a while' });
    expect(progress).toContain('calling anthropic:claude-haiku-4-5');
  });

  it('a call past wait_seconds goes on in the server; call_status in a later request gets the result', async () => {
    const session = await connect(loopback());
    const started = await session.call('call', {
      spec: 'anthropic:claude-haiku-4-5',
      prompt: 'answer slowly please',
      wait_seconds: 0.1,
    });
    expect(started.structuredContent).toMatchObject({ state: 'running' });
    const callId = (started.structuredContent as { callId: string }).callId;
    const later = await connect(loopback());
    const finished = await later.call('call_status', { call_id: callId, wait_seconds: 30 });
    expect(finished.structuredContent).toMatchObject({ callId, state: 'completed', text: 'after a while' });
  });

  it('malformed arguments are tool errors and the endpoint keeps serving', async () => {
    const session = await connect(loopback());
    const bad = await session.call('call', { spec: 'anthropic:claude-haiku-4-5' });
    expect(bad.isError).toBe(true);
    expect(textOf(bad)).toMatch(/^INVALID_INPUT \(exit 2\): call: .* at prompt\nhint: /);
    const ok = await session.call('call', { spec: 'anthropic:claude-haiku-4-5', prompt: 'hi' });
    expect(ok.structuredContent).toMatchObject({ text: 'hello over http' });
    expect(JSON.stringify(ok)).not.toContain('sk-ant-mcp-http-secret');

    const notJson = await fetch(`${loopback()}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${token}`,
      },
      body: '{"jsonrpc": "2.0",',
    });
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({ error: { code: -32700 } });
    const get = await fetch(`${loopback()}/mcp`, { headers: { authorization: `Bearer ${token}` } });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    const still = await session.call('route', { text: 'the app crashes whenever I save' });
    expect(still.structuredContent).toMatchObject({ skill: 'fix-bug' });
  });

  // Another machine is simulated by this machine's own non-loopback address, as in cli-serve-call.
  it.skipIf(externalAddress() === undefined)(
    'a caller needs the bearer token, beyond loopback as on it, as on the other routes',
    async () => {
      const remote = `http://${externalAddress() as string}:${new URL(server.url).port}`;
      // Without it, the name it calls the server by is refused first; on loopback, the token is.
      await expect(connect(remote, {})).rejects.toThrow(/"code":"FORBIDDEN"/);
      await expect(connect(loopback(), {})).rejects.toThrow(/"code":"SERVER_AUTH"/);
      const session = await connect(remote, { authorization: `Bearer ${token}` });
      const routed = await session.call('route', { text: 'please add a dark mode setting' });
      expect(routed.structuredContent).toMatchObject({ skill: 'add-feature' });
    },
  );
});
