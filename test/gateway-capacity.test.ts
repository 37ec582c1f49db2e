import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { killServers, serve, type Served } from './helpers/serve-process.js';
import { waitFor } from './helpers/wait-for.js';

// The gateway's cap on requests in flight (`gateway.max_concurrent`), through the built `switchboard
// serve` and a simulator that takes its time: the request over the cap is refused at once in the
// client's dialect, costs nothing, is counted, and the slots come back when the streams end.

const CAP = 4;
const children = new Set<ChildProcess>();
let sim: Simulator;
let server: Served;
let cwd: string;

beforeAll(async () => {
  sim = await startSimulator({ maxLifetimeMs: 300_000 });
  cwd = mkdtempSync(join(tmpdir(), 'switchboard-gateway-capacity-'));
  writeFileSync(
    join(cwd, 'switchboard.yaml'),
    [
      'gateway:',
      `  max_concurrent: ${CAP}`,
      'budgets:',
      '  rules:',
      '    - provider: anthropic',
      '      daily_usd: 1000',
      '',
    ].join('\n'),
  );
  server = await serve(['--port', '0', '--pool', '0', '--metrics'], {
    cwd,
    children,
    env: {
      ...process.env,
      ANTHROPIC_API_KEY: 'sk-ant-api03-gateway-capacity-upstream-4545',
      ANTHROPIC_BASE_URL: sim.url,
      OPENAI_API_KEY: 'sk-openai-gateway-capacity-6767',
      OPENAI_BASE_URL: sim.openAiBaseUrl,
      SWITCHBOARD_SERVER: '',
      SWITCHBOARD_SERVER_TOKEN: '',
    },
  });
});

afterAll(async () => {
  killServers(children);
  await sim.close();
  rmSync(cwd, { recursive: true, force: true });
});

beforeEach(() => sim.clearLog());

function ledger<T>(sql: string): T[] {
  const database = new Database(join(cwd, '.switchboard', 'ledger.db'), { readonly: true });
  try {
    return database.prepare(sql).all() as T[];
  } finally {
    database.close();
  }
}

const stream = () =>
  fetch(`${server.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': server.token },
    body: JSON.stringify({
      model: 'claude-haiku-4-5',
      max_tokens: 20,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    }),
  }).then(async (response) => ({ status: response.status, text: await response.text() }));

describe('gateway.max_concurrent', () => {
  it('the request over the cap is refused at once in its dialect, nothing reserved or charged; all slots come back', async () => {
    sim.setScenario({ fallback: { text: 'slow answer', delayMs: 1_500 } });
    const held = Array.from({ length: CAP }, stream);
    await waitFor(() => sim.requests.length === CAP);

    const started = Date.now();
    const anthropic = await fetch(`${server.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': server.token },
      body: JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 20, messages: [] }),
    });
    expect(anthropic.status).toBe(529);
    expect(anthropic.headers.get('retry-after')).toBe('1');
    expect(anthropic.headers.get('x-should-retry')).toBe('true');
    expect(await anthropic.json()).toMatchObject({
      type: 'error',
      error: { type: 'overloaded_error', message: expect.stringContaining('gateway.max_concurrent') },
    });
    const openai = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${server.token}` },
      body: JSON.stringify({ model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(openai.status).toBe(429);
    expect(openai.headers.get('retry-after')).toBe('1');
    expect(await openai.json()).toMatchObject({ error: { type: 'rate_limit_error' } });
    // Refused before the held streams' upstream answered: at once, not after a slot freed.
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(sim.requests).toHaveLength(CAP);

    const answers = await Promise.all(held);
    expect(answers.map((answer) => answer.status)).toEqual(Array.from({ length: CAP }, () => 200));
    for (const answer of answers) expect(answer.text).toContain('slow answer');
    expect(ledger<{ n: number }>('SELECT count(*) AS n FROM call_attempts')).toEqual([{ n: CAP }]);
    expect(ledger('SELECT id FROM budget_reservations')).toEqual([]);
    const metrics = await (await fetch(`${server.url}/metrics`, { headers: server.auth })).text();
    expect(metrics).toMatch(/switchboard_gateway_overloaded_total\{wire="anthropic"\} 1\b/);
    expect(metrics).toMatch(/switchboard_gateway_overloaded_total\{wire="chat"\} 1\b/);

    // Every slot came back: the cap's worth of streams at once runs again, with none refused.
    sim.setScenario({ fallback: { text: 'again', delayMs: 200 } });
    const again = await Promise.all(Array.from({ length: CAP }, stream));
    expect(again.map((answer) => answer.status)).toEqual(Array.from({ length: CAP }, () => 200));
  });
});
