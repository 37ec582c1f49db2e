import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SwitchboardError } from '../core/errors.js';
import { ProviderRegistry } from '../providers/registry.js';
import type { Scenario } from '../sim/scenario.js';
import { startSimulator, type Simulator } from '../sim/server.js';
import { openLedger, type Ledger } from '../store/ledger.js';
import { call } from './call.js';

// The fault matrix: each API provider × each fault, through call() with a fallback provider behind it,
// the official SDKs over loopback to `switchboard sim`. Each case must end in the right retry or
// fallback and the right final outcome, with every attempt recorded and nothing crashing.

type Fault = {
  name: string;
  rule: NonNullable<Scenario['rules']>[number]['fault'];
  tries: number;
  firstCode: string;
};

const faults: Fault[] = [
  {
    name: '429 with retry-after',
    rule: { status: 429, retryAfterMs: 5 },
    tries: 3,
    firstCode: 'RATE_LIMITED',
  },
  { name: 'overload', rule: { kind: 'overload' }, tries: 3, firstCode: 'OVERLOADED' },
  { name: '500', rule: { status: 500 }, tries: 3, firstCode: 'PROVIDER_ERROR' },
  // Dropped after the request went out, no answer: sent once more, then the next provider.
  { name: 'dropped connection', rule: { kind: 'drop-before' }, tries: 2, firstCode: 'PROVIDER_UNAVAILABLE' },
  { name: 'stall', rule: { kind: 'stall' }, tries: 3, firstCode: 'TIMEOUT' },
  { name: 'malformed body', rule: { kind: 'malformed' }, tries: 3, firstCode: 'PARSE' },
  // A proxy or portal in the way: status 200, but no answer. Never an empty success costing nothing.
  { name: 'a 200 that is an HTML page', rule: { kind: 'page' }, tries: 3, firstCode: 'PARSE|PROVIDER_ERROR' },
  {
    name: 'a 200 that is unrelated JSON',
    rule: { status: 200, body: { status: 'ok', service: 'proxy' } },
    tries: 3,
    firstCode: 'PROVIDER_ERROR',
  },
];

const providers = [
  {
    name: 'anthropic',
    spec: 'anthropic:claude-sonnet-4-6',
    fallback: 'openai:gpt-4.1-mini',
    fallbackProvider: 'openai',
  },
  {
    name: 'openai',
    spec: 'openai:gpt-4.1-mini',
    fallback: 'anthropic:claude-sonnet-4-6',
    fallbackProvider: 'anthropic',
  },
  {
    name: 'gemini',
    spec: 'gemini:2.5-flash',
    fallback: 'anthropic:claude-sonnet-4-6',
    fallbackProvider: 'anthropic',
  },
] as const;

let sim: Simulator;
let ledger: Ledger;
let registry: ProviderRegistry;

beforeAll(async () => {
  sim = await startSimulator({ maxLifetimeMs: 300_000 });
});
afterAll(async () => {
  await sim.close();
});

/** A new registry and ledger per case: the circuit breaker must not carry one case's failures into the next. */
function freshRegistry(): ProviderRegistry {
  ledger = openLedger({ stateDir: mkdtempSync(join(tmpdir(), 'switchboard-matrix-')) });
  return new ProviderRegistry({
    anthropic: { apiKey: 'sk-ant-matrix', baseUrl: sim.url },
    openai: { apiKey: 'sk-openai-matrix', baseUrl: sim.openAiBaseUrl },
    gemini: { apiKeys: ['gemini-matrix'], baseUrl: sim.url },
  });
}

const options = () => ({
  providers: registry,
  ledger,
  stageTimeoutMs: 300,
  _internal: { sleep: async () => undefined },
});

describe.each(providers)('$name', (provider) => {
  it.each(faults)('$name: right retry or fallback, every attempt recorded', async (fault) => {
    registry = freshRegistry();
    sim.setScenario({
      rules: [
        { match: { provider: provider.name }, fault: fault.rule },
        { match: { provider: provider.fallbackProvider }, reply: { text: 'fallback answered' } },
      ],
    });
    const before = (await ledger.callStats()).attempts;
    const result = await call(`${provider.spec},${provider.fallback}`, { prompt: 'hello' }, options());
    expect(result.text).toBe('fallback answered');
    const failed = result.attempts.filter((attempt) => attempt.errorCode !== undefined);
    expect(failed[0]?.errorCode).toMatch(new RegExp(`^(?:${fault.firstCode})$`));
    // Transient faults are retried on the same provider, each try recorded.
    expect(failed).toHaveLength(fault.tries);
    expect(failed.every((attempt) => attempt.provider === provider.spec)).toBe(true);
    expect(result.attempts.at(-1)).toMatchObject({ provider: provider.fallback });
    expect((await ledger.callStats()).attempts - before).toBe(result.attempts.length);
    await registry.close();
    await ledger.close();
  });

  it('idleTimeoutMs ends a stalled request with IDLE_TIMEOUT, and leaves a slow but talking one alone', async () => {
    registry = freshRegistry();
    sim.setScenario({
      rules: [
        { match: { provider: provider.name, text: 'slow' }, reply: { text: 'slow answer', delayMs: 100 } },
        { match: { provider: provider.name }, fault: { kind: 'stall' } },
      ],
    });
    const idle = { ...options(), stageTimeoutMs: 20_000, retry: { retriesPerProvider: 0 } };
    const failure = (await call(provider.spec, { prompt: 'hello', idleTimeoutMs: 300 }, idle).catch(
      (caught: unknown) => caught,
    )) as SwitchboardError;
    expect(failure.code).toBe('IDLE_TIMEOUT');
    expect(failure.message).toMatch(/sent nothing for 300 ms/);
    const slow = await call(provider.spec, { prompt: 'slow please', idleTimeoutMs: 2_000 }, idle);
    expect(slow.text).toBe('slow answer');
    expect(slow.warnings.join()).not.toMatch(/idleTimeoutMs/);
    await registry.close();
    await ledger.close();
  });

  it('schema-violating output and text instead of the tool: re-asked with a diagnosis, then fallback', async () => {
    registry = freshRegistry();
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const wrong =
      provider.name === 'anthropic'
        ? { tool: { name: 'emit_output', input: { town: 'Lisbon' } } }
        : { json: { town: 'Lisbon' } };
    sim.setScenario({
      rules: [
        {
          match: { provider: provider.name, turn: 1 },
          times: 1,
          reply: { text: 'It is Lisbon, of course.' },
        },
        { match: { provider: provider.name }, reply: wrong },
        {
          match: { provider: provider.fallbackProvider },
          reply:
            provider.fallbackProvider === 'anthropic'
              ? { tool: { name: 'emit_output', input: { city: 'Lisbon' } } }
              : { json: { city: 'Lisbon' } },
        },
      ],
    });
    const result = await call(
      `${provider.spec},${provider.fallback}`,
      { prompt: 'Capital of Portugal?', schema },
      options(),
    );
    expect(result.structured).toEqual({ city: 'Lisbon' });
    expect(result.attempts.map((attempt) => attempt.errorCode ?? 'ok')).toEqual([
      'SCHEMA',
      'SCHEMA',
      'SCHEMA',
      'ok',
    ]);
    const reasks = sim.requests.filter((request) => request.provider === provider.name).slice(-2);
    expect(reasks.every((request) => (request.text ?? '').includes('could not be used'))).toBe(true);
    await registry.close();
    await ledger.close();
  });
});
