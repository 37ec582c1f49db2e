import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { startGateway, type Gateway } from './helpers/gateway-server.js';
import { killServers } from './helpers/serve-process.js';
import { waitFor } from './helpers/wait-for.js';

// The gateway's cap on requests in flight (`gateway.max_concurrent`), through the built `switchboard
// serve` and a simulator that takes its time: the request over the cap is refused at once in the
// client's dialect, costs nothing, is counted, and the slots come back when the streams end.

const CAP = 4;
const children = new Set<ChildProcess>();
let sim: Simulator;
let server: Gateway;

beforeAll(async () => {
  sim = await startSimulator({ maxLifetimeMs: 300_000 });
  server = await startGateway({
    name: 'gateway-capacity',
    yaml: [
      'gateway:',
      `  max_concurrent: ${CAP}`,
      'budgets:',
      '  rules:',
      '    - provider: anthropic',
      '      daily_usd: 1000',
    ],
    args: ['--metrics'],
    env: {
      ANTHROPIC_API_KEY: 'sk-ant-api03-gateway-capacity-upstream-4545',
      ANTHROPIC_BASE_URL: sim.url,
      OPENAI_API_KEY: 'sk-openai-gateway-capacity-6767',
      OPENAI_BASE_URL: sim.openAiBaseUrl,
    },
    children,
  });
});

afterAll(async () => {
  killServers(children);
  await sim.close();
  await server.close();
});

beforeEach(() => sim.clearLog());

/** POST /v1/messages to a gateway: haiku, one short message, streamed or not. */
const messages = (gateway: Gateway, stream: boolean) =>
  fetch(`${gateway.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': gateway.token },
    body: JSON.stringify({
      model: 'claude-haiku-4-5',
      max_tokens: 20,
      ...(stream ? { stream: true } : {}),
      messages: [{ role: 'user', content: 'hi' }],
    }),
  });

const stream = () =>
  messages(server, true).then(async (response) => ({ status: response.status, text: await response.text() }));

describe('gateway.max_concurrent', () => {
  it('the request over the cap is refused at once in its dialect, nothing reserved or charged; all slots come back', async () => {
    sim.setScenario({ fallback: { text: 'slow answer', delayMs: 3_000 } });
    const held = Array.from({ length: CAP }, stream);
    await waitFor(() => sim.requests.length === CAP);

    let settled = 0;
    for (const request of held) void request.then(() => (settled += 1));
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
    // Refused while the held streams still waited for their upstream: at once, not after a slot freed.
    expect(settled).toBe(0);
    expect(sim.requests).toHaveLength(CAP);

    const answers = await Promise.all(held);
    expect(answers.map((answer) => answer.status)).toEqual(Array.from({ length: CAP }, () => 200));
    for (const answer of answers) expect(answer.text).toContain('slow answer');
    expect(server.ledger<{ n: number }>('SELECT count(*) AS n FROM call_attempts')).toEqual([{ n: CAP }]);
    expect(server.ledger('SELECT id FROM budget_reservations')).toEqual([]);
    const metrics = await (await fetch(`${server.url}/metrics`, { headers: server.auth })).text();
    expect(metrics).toMatch(/switchboard_gateway_overloaded_total\{wire="anthropic"\} 1\b/);
    expect(metrics).toMatch(/switchboard_gateway_overloaded_total\{wire="chat"\} 1\b/);

    // Every slot came back: the cap's worth of streams at once runs again, with none refused.
    sim.setScenario({ fallback: { text: 'again', delayMs: 200 } });
    const again = await Promise.all(Array.from({ length: CAP }, stream));
    expect(again.map((answer) => answer.status)).toEqual(Array.from({ length: CAP }, () => 200));
  });
});

/** A process's resident memory in MB and its open file descriptors, from /proc. */
function footprint(pid: number): { rssMb: number; fds: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
  return { rssMb: rssKb / 1024, fds: readdirSync(`/proc/${pid}/fd`).length };
}

describe('10,000 concurrent streams against the default cap', () => {
  const COUNT = 10_000;
  let big: Gateway;

  beforeAll(async () => {
    big = await startGateway({
      name: 'gateway-capacity-10k',
      yaml: ['budgets:', '  rules:', '    - provider: anthropic', '      daily_usd: 1000'],
      env: {
        ANTHROPIC_API_KEY: 'sk-ant-api03-gateway-capacity-10k-upstream-2323',
        ANTHROPIC_BASE_URL: sim.url,
      },
      children,
    });
  });

  afterAll(() => big.close());

  it('each is answered whole or refused with a 529 at once; memory and sockets stay bounded and come back', async () => {
    // The answered streams wait 2 s upstream, longer than the 10,000 take to open, so they are all open at once.
    sim.setScenario({ fallback: { text: 'a short streamed answer', delayMs: 2_000 } });
    const pid = big.child.pid!;
    // Warm: the first request loads the gateway's modules, so the baseline is a running gateway's.
    const warm = await messages(big, false);
    expect(warm.status).toBe(200);
    sim.clearLog();
    const before = footprint(pid);
    let peakRssMb = before.rssMb;
    const sampler = setInterval(() => (peakRssMb = Math.max(peakRssMb, footprint(pid).rssMb)), 50);
    // Opened in waves of 500 over half a second: what is measured is the gateway with 10,000 streams
    // open, not how many SYNs the loopback's accept queue takes in one instant.
    const opened = Promise.all(
      Array.from({ length: COUNT }, (_, index) =>
        new Promise((resolve) => setTimeout(resolve, Math.floor(index / 500) * 25)).then(() =>
          messages(big, true).then(
            async (response) => {
              const text = await response.text();
              if (
                response.status === 200 &&
                text.includes('a short streamed answer') &&
                text.endsWith('"message_stop"}\n\n')
              ) {
                return 'answered';
              }
              if (response.status === 529 && response.headers.get('retry-after') === '1') return 'refused';
              return `${response.status} ${text.slice(0, 200)}`;
            },
            (error: Error) =>
              `fetch failed: ${String((error.cause as { code?: string } | undefined)?.code ?? error.message)}`,
          ),
        ),
      ),
    );
    const outcomes = await opened.finally(() => clearInterval(sampler));
    const counts = new Map<string, number>();
    for (const outcome of outcomes) counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
    // Nothing but a whole answer or the cap's refusal; some of each.
    expect([...counts.keys()].sort()).toEqual(['answered', 'refused']);
    // Only the answered ones reached the provider: a refusal costs no upstream request.
    expect(sim.requests).toHaveLength(counts.get('answered')!);
    // Memory bounded: the refused requests cost no upstream, nothing piles up.
    expect(peakRssMb - before.rssMb).toBeLessThan(400);
    // Nothing left behind: no reservation, every socket closed, and the gateway still answers.
    expect(big.ledger<{ n: number }>('SELECT count(*) AS n FROM budget_reservations')).toEqual([{ n: 0 }]);
    expect(big.ledger<{ n: number }>('SELECT count(*) AS n FROM call_attempts')).toEqual([
      { n: counts.get('answered')! + 1 },
    ]);
    await waitFor(() => footprint(pid).fds <= before.fds + 5, { what: 'the sockets closed' });
    const after = await messages(big, false);
    expect(after.status).toBe(200);
  });
});
