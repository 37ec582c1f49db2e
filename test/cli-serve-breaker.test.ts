import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { killServers, serve, type Served } from './helpers/serve-process.js';

// Issue 36, item 4: a short burst of failures from the first provider of a chain must not shut the
// server: `switchboard serve` (the built CLI) with `switchboard sim` as both providers, the first
// answering 500 to a run of requests among many it answers. The breaker's half-open wait is set short
// in switchboard.yaml, so the test waits for behaviour, not for a clock.

const BLIP = 3;
const BURST = 16;
const children = new Set<ChildProcess>();
const directories: string[] = [];
let sim: Simulator;

beforeAll(async () => {
  sim = await startSimulator({
    maxLifetimeMs: 300_000,
    scenario: {
      rules: [
        // The first provider answers 10 requests, fails 3 (a blip), answers 4, fails 16 (a burst: it
        // is down for a while), then is well again. The second rule is passed over only while the
        // first one is not firing.
        { match: { provider: 'anthropic' }, after: 10, times: BLIP, fault: { status: 500 } },
        { match: { provider: 'anthropic' }, after: 14, times: BURST, fault: { status: 500 } },
        { match: {}, reply: { text: 'pong' } },
      ],
    },
  });
});

afterAll(async () => {
  killServers(children);
  await sim.close();
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

interface Answer {
  status: number;
  retryAfter: string | null;
  body: {
    provider?: string;
    attempts?: { provider: string; errorCode?: string }[];
    warnings?: string[];
    error?: { code: string };
  };
}

async function postCall(server: Served, spec: string): Promise<Answer> {
  const response = await fetch(`${server.url}/call`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...server.auth },
    body: JSON.stringify({ spec, prompt: 'ping' }),
  });
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    body: (await response.json()) as Answer['body'],
  };
}

const pause = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

describe('switchboard serve: a burst of failures from the first provider of a chain', () => {
  it('keeps answering: calls fall through while its breaker is open, and it is used again after', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'switchboard-serve-breaker-'));
    directories.push(cwd);
    writeFileSync(
      join(cwd, 'switchboard.yaml'),
      [
        'call:',
        '  retries_per_provider: 0',
        '  breaker:',
        '    minimum_requests: 10',
        '    half_open_after_seconds: 0.2',
        '    max_half_open_after_seconds: 0.4',
        '',
      ].join('\n'),
    );
    const env = {
      ...process.env,
      ANTHROPIC_API_KEY: 'sk-ant-api03-serve-breaker-key',
      ANTHROPIC_BASE_URL: sim.url,
      OPENAI_API_KEY: 'sk-openai-serve-breaker-key',
      OPENAI_BASE_URL: sim.openAiBaseUrl,
      SWITCHBOARD_SERVER: '',
      SWITCHBOARD_SERVER_TOKEN: '',
    };
    const server = await serve(['--port', '0'], { cwd, env, children });
    const chain = 'anthropic:claude-haiku-4-5,openai:gpt-4.1-mini';

    const answers: Answer[] = [];
    const failuresIn = (answer: Answer) =>
      (answer.body.attempts ?? []).filter(
        (attempt) => attempt.provider.startsWith('anthropic') && attempt.errorCode !== undefined,
      ).length;
    const firstFailures = () => answers.reduce((total, answer) => total + failuresIn(answer), 0);
    // The first provider was not tried at all: its breaker was open (the warning says so).
    const skipped = (answer: Answer) =>
      !(answer.body.attempts ?? []).some((attempt) => attempt.provider.startsWith('anthropic'));
    const first = (answer: Answer) => answer.body.provider === 'anthropic:claude-haiku-4-5';
    // Four callers at a time until the burst is spent and the first provider answers all four again:
    // more than a half-open breaker's three probes, so it closed. Or 60 s, far beyond what the short
    // waits need (the old breaker kept the provider off for 60 s after three failures in a row).
    const givenUp = Date.now() + 60_000;
    let recovered = false;
    while (!recovered && Date.now() < givenUp) {
      const batch = await Promise.all(Array.from({ length: 4 }, () => postCall(server, chain)));
      answers.push(...batch);
      recovered = firstFailures() >= BLIP + BURST && batch.every(first);
      if (!recovered) await pause(50);
    }

    // Every call was answered: no 502 while the chain had a provider that could answer.
    expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);
    expect(firstFailures()).toBe(BLIP + BURST);
    // The blip (3 failures in 17 requests) did not open the breaker: until the burst began, every call
    // tried the first provider (three failures in a row put it off for 60 s before).
    let seen = 0;
    const beforeBurst = answers.filter((answer) => (seen += failuresIn(answer)) <= BLIP);
    expect(beforeBurst.length).toBeGreaterThanOrEqual(10 + BLIP);
    expect(beforeBurst.filter(skipped)).toEqual([]);
    // While the breaker was open, calls went to the second provider without trying the first.
    const fellThrough = answers.filter(
      (answer) => answer.body.provider === 'openai:gpt-4.1-mini' && skipped(answer),
    );
    expect(fellThrough[0]?.body.warnings?.join()).toMatch(
      /anthropic:claude-haiku-4-5 skipped: its circuit breaker/,
    );
    expect(fellThrough.length).toBeGreaterThan(0);
    // After the burst the first provider serves again: the breaker closed on a probe's success.
    expect(recovered).toBe(true);
    expect(answers.filter(first).length).toBeGreaterThanOrEqual(10 + 4 + 4);
  });

  it('answers with retry-after when every provider of the chain is open', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'switchboard-serve-breaker-'));
    directories.push(cwd);
    writeFileSync(
      join(cwd, 'switchboard.yaml'),
      'call:\n  retries_per_provider: 0\n  breaker:\n    minimum_requests: 1\n    half_open_after_seconds: 30\n',
    );
    const dead = await startSimulator({
      maxLifetimeMs: 120_000,
      scenario: { rules: [{ fault: { status: 500 } }] },
    });
    try {
      const env = {
        ...process.env,
        ANTHROPIC_API_KEY: 'sk-ant-api03-serve-breaker-key',
        ANTHROPIC_BASE_URL: dead.url,
        OPENAI_API_KEY: 'sk-openai-serve-breaker-key',
        OPENAI_BASE_URL: dead.openAiBaseUrl,
        SWITCHBOARD_SERVER: '',
        SWITCHBOARD_SERVER_TOKEN: '',
      };
      const server = await serve(['--port', '0', '--metrics'], { cwd, env, children });
      const chain = 'anthropic:claude-haiku-4-5,openai:gpt-4.1-mini';
      // Both fail once, which opens both breakers (one failed request is the minimum here).
      expect((await postCall(server, chain)).status).toBe(502);
      const sent = dead.requests.length;
      const closed = await postCall(server, chain);
      expect(closed).toMatchObject({ status: 502, body: { error: { code: 'PROVIDER_UNAVAILABLE' } } });
      expect(Number(closed.retryAfter)).toBeGreaterThan(0);
      expect(Number(closed.retryAfter)).toBeLessThanOrEqual(30);
      expect(dead.requests.length).toBe(sent);
      // /metrics shows both breakers open.
      const scraped = await (await fetch(`${server.url}/metrics`, { headers: server.auth })).text();
      const open = scraped
        .split('\n')
        .filter((line) => /^switchboard_breaker_state\{.*state="open"\} 1$/.test(line));
      expect(open).toHaveLength(2);
    } finally {
      await dead.close();
    }
  });
});
