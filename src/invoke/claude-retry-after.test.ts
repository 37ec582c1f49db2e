import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { ProviderRegistry } from '../providers/registry.js';
import type { Scenario } from '../sim/scenario.js';
import { startSimulator, type Simulator } from '../sim/server.js';
import { call } from './call.js';

// call() over the real Claude Code binary against `switchboard sim`: the server's `retry-after` on a 429
// decides between waiting for claude: and moving down the chain, as it does for anthropic:.

let sim: Simulator | undefined;
let registry: ProviderRegistry | undefined;
afterEach(async () => {
  await registry?.close();
  await sim?.close();
  registry = sim = undefined;
});

/** The chain's providers against one simulator; `waits` collects the delays call() sleeps for. */
async function setUp(scenario: Scenario, waits: number[]) {
  sim = await startSimulator({ scenario, maxLifetimeMs: 120_000 });
  registry = new ProviderRegistry({
    claude: {
      baseUrl: sim.url,
      apiKey: 'sk-ant-test-key',
      configDir: mkdtempSync(join(tmpdir(), 'switchboard-claude-config-')),
    },
    anthropic: { apiKey: 'sk-ant-test-key', baseUrl: sim.url },
  });
  return {
    providers: registry,
    ledger: false as const,
    _internal: {
      sleep: async (milliseconds: number) => {
        waits.push(milliseconds);
      },
    },
  };
}

it('moves on from claude: at once when a 429 asks for two minutes', async () => {
  const waits: number[] = [];
  const options = await setUp(
    {
      rules: [
        // The first request is Claude Code's; any later one would be answered.
        { match: {}, times: 1, fault: { status: 429, retryAfter: 120 } },
        { match: {}, reply: { text: 'answered' } },
      ],
    },
    waits,
  );
  const result = await call('claude:haiku,anthropic:claude-haiku-4-5', { prompt: 'hello' }, options);
  expect(result.provider).toBe('anthropic:claude-haiku-4-5');
  expect(result.text).toBe('answered');
  expect(result.attempts.map((attempt) => [attempt.provider, attempt.errorCode ?? 'ok'])).toEqual([
    ['claude:haiku', 'RATE_LIMITED'],
    ['anthropic:claude-haiku-4-5', 'ok'],
  ]);
  expect(waits).toEqual([]);
  expect(sim!.requests.filter((entry) => entry.method === 'POST')).toHaveLength(2);
});

it('retries claude: after the two seconds a 429 asks for', async () => {
  const waits: number[] = [];
  const options = await setUp(
    {
      rules: [
        { match: {}, times: 1, fault: { status: 429, retryAfter: 2 } },
        { match: {}, reply: { text: 'answered' } },
      ],
    },
    waits,
  );
  const result = await call('claude:haiku,anthropic:claude-haiku-4-5', { prompt: 'hello' }, options);
  expect(result.provider).toBe('claude:haiku');
  expect(result.attempts.map((attempt) => attempt.errorCode ?? 'ok')).toEqual(['RATE_LIMITED', 'ok']);
  // The server's two seconds, plus the jitter Claude Code adds; not Switchboard's own half-second backoff.
  expect(waits).toHaveLength(1);
  expect(waits[0]).toBeGreaterThanOrEqual(2_000);
  expect(waits[0]).toBeLessThanOrEqual(2_500);
});

it('leaves a dropped connection to Claude Code’s own resend, and does not send it a third time', async () => {
  const waits: number[] = [];
  const options = await setUp(
    {
      rules: [
        { match: {}, times: 2, fault: { kind: 'drop-before' } },
        { match: {}, reply: { text: 'answered' } },
      ],
    },
    waits,
  );
  const result = await call('claude:haiku,anthropic:claude-haiku-4-5', { prompt: 'hello' }, options);
  expect(result.provider).toBe('anthropic:claude-haiku-4-5');
  expect(result.attempts.map((attempt) => [attempt.provider, attempt.errorCode ?? 'ok'])).toEqual([
    ['claude:haiku', 'PROVIDER_UNAVAILABLE'],
    ['anthropic:claude-haiku-4-5', 'ok'],
  ]);
  // The request, Claude Code's one resend, then the fallback.
  expect(sim!.requests.filter((entry) => entry.method === 'POST')).toHaveLength(3);
});
