import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { SwitchboardError } from '../core/errors.js';
import { ProviderRegistry } from '../providers/registry.js';
import { startSimulator, type Simulator } from '../sim/server.js';
import { openLedger } from '../store/ledger.js';
import { call } from './call.js';

// Fallback chains and schema re-asks end to end: the official SDKs over loopback to `switchboard sim`.

let sim: Simulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

function registry(simulator: Simulator): ProviderRegistry {
  return new ProviderRegistry({
    anthropic: { apiKey: 'sk-ant-chain-test', baseUrl: simulator.url },
    openai: { apiKey: 'sk-openai-chain-test', baseUrl: simulator.openAiBaseUrl },
    gemini: { apiKeys: ['gemini-chain-test'], baseUrl: simulator.url },
  });
}

const noWait = { sleep: async () => undefined };

describe('call() over real SDKs', () => {
  it('falls back from an overloaded Anthropic to OpenAI, recording every attempt', async () => {
    sim = await startSimulator({
      scenario: {
        rules: [
          { match: { provider: 'anthropic' }, fault: { kind: 'overload' } },
          { match: { provider: 'openai' }, reply: { text: 'from openai', usage: { input: 10, output: 3 } } },
        ],
      },
    });
    const ledger = openLedger({ stateDir: mkdtempSync(join(tmpdir(), 'switchboard-chain-')) });
    const result = await call(
      'anthropic:claude-sonnet-4-6,openai:gpt-4.1-mini',
      { prompt: 'hello' },
      { providers: registry(sim), ledger, _internal: noWait },
    );
    expect(result).toMatchObject({ text: 'from openai', provider: 'openai:gpt-4.1-mini' });
    expect(result.costUsd).toBeGreaterThan(0);
    expect(result.attempts.map((attempt) => attempt.errorCode ?? 'ok')).toEqual([
      'OVERLOADED',
      'OVERLOADED',
      'OVERLOADED',
      'ok',
    ]);
    expect(sim.requests.map((request) => request.provider)).toEqual([
      'anthropic',
      'anthropic',
      'anthropic',
      'openai',
    ]);
    expect(await ledger.callStats()).toMatchObject({ calls: 1, attempts: 4, successfulCalls: 1 });
  });

  it('re-asks Anthropic after output that breaks the schema, telling it what was wrong', async () => {
    sim = await startSimulator({
      scenario: {
        rules: [
          {
            match: { provider: 'anthropic' },
            times: 1,
            reply: { tool: { name: 'emit_output', input: { town: 'Lisbon' } } },
          },
          {
            match: { provider: 'anthropic' },
            reply: { tool: { name: 'emit_output', input: { city: 'Lisbon' } } },
          },
        ],
      },
    });
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const ledger = openLedger({ stateDir: mkdtempSync(join(tmpdir(), 'switchboard-chain-')) });
    const result = await call(
      'anthropic:claude-sonnet-4-6',
      { prompt: 'Capital of Portugal?', schema },
      { providers: registry(sim), ledger, _internal: noWait },
    );
    expect(result.structured).toEqual({ city: 'Lisbon' });
    expect(result.attempts.map((attempt) => attempt.errorCode ?? 'ok')).toEqual(['SCHEMA', 'ok']);
    expect(sim.requests[1]?.text).toContain('missing field "city"');
    // The rejected answer was billed too, and the ledger says so.
    expect((await ledger.callStats()).byProviderModel[0]?.unpricedAttempts).toBe(0);
    expect(await ledger.spendSince(0)).toBeGreaterThan(result.costUsd ?? 0);
  });

  it('turns a silent Gemini downgrade into a fallback', async () => {
    sim = await startSimulator({
      scenario: {
        rules: [
          { match: { provider: 'gemini' }, reply: { text: 'cheaper answer', model: 'gemini-2.5-flash' } },
          { match: { provider: 'anthropic' }, reply: { text: 'the real answer' } },
        ],
      },
    });
    const result = await call(
      'gemini:2.5-pro,anthropic:claude-sonnet-4-6',
      { prompt: 'think hard' },
      { providers: registry(sim), _internal: noWait },
    );
    expect(result.text).toBe('the real answer');
    expect(result.attempts[0]).toMatchObject({ provider: 'gemini:2.5-pro', errorCode: 'MODEL_DOWNGRADED' });
  });

  it('retries a single-key Gemini 429 that gave no retryDelay, with backoff, instead of giving up', async () => {
    sim = await startSimulator({
      scenario: {
        rules: [
          { match: { provider: 'gemini' }, times: 1, fault: { status: 429 } },
          { match: { provider: 'gemini' }, reply: { text: 'after the 429' } },
        ],
      },
    });
    const delays: number[] = [];
    const result = await call(
      'gemini:2.5-flash',
      { prompt: 'hello' },
      {
        providers: registry(sim),
        ledger: false,
        _internal: { sleep: async (ms: number) => void delays.push(ms) },
      },
    );
    expect(result.text).toBe('after the 429');
    expect(result.attempts.map((attempt) => attempt.errorCode ?? 'ok')).toEqual(['RATE_LIMITED', 'ok']);
    // The retry policy's backoff (500 ms first), not the key pool's 60 s guess.
    expect(delays).toHaveLength(1);
    expect(delays[0]).toBeLessThanOrEqual(500);
  });
  it('answers under a timeoutMs longer than a Node timer can hold (about 24.8 days) instead of failing at once', async () => {
    sim = await startSimulator({
      scenario: { rules: [{ match: { provider: 'anthropic' }, reply: { text: 'in time' } }] },
    });
    const result = await call(
      'anthropic:claude-sonnet-4-6',
      { prompt: 'hello', timeoutMs: 30 * 24 * 3_600_000 },
      { providers: registry(sim), ledger: false, _internal: noWait },
    );
    expect(result.text).toBe('in time');
  });
  it('answers under an idleTimeoutMs longer than a Node timer can hold, as one meant to switch the watch off', async () => {
    sim = await startSimulator({
      scenario: { rules: [{ match: { provider: 'anthropic' }, reply: { text: 'in time' } }] },
    });
    const result = await call(
      'anthropic:claude-sonnet-4-6',
      { prompt: 'hello', idleTimeoutMs: 99_999_999_000 },
      { providers: registry(sim), ledger: false, _internal: noWait },
    );
    expect(result.text).toBe('in time');
  });

  it('never shows the password of a base URL with credentials in the error a call ends with', async () => {
    const base = 'http://proxyuser:Hunter2pw@127.0.0.1:9';
    const providers = new ProviderRegistry({
      anthropic: { apiKey: 'sk-ant-url-test', baseUrl: base },
      openai: { apiKey: 'sk-openai-url-test', baseUrl: `${base}/v1` },
      gemini: { apiKeys: ['gemini-url-test'], baseUrl: base },
    });
    const failure = await call(
      'anthropic:claude-sonnet-4-6,openai:gpt-4.1-mini,gemini:2.5-pro',
      { prompt: 'hello' },
      { providers, ledger: false, retry: { retriesPerProvider: 0 }, _internal: noWait },
    ).then(
      () => undefined,
      (error: unknown) => error as SwitchboardError,
    );
    if (failure === undefined) throw new Error('expected the call to fail');
    const shown = JSON.stringify([failure.message, failure.hint, failure.details]);
    expect(shown).toContain('proxyuser:[redacted]@127.0.0.1:9');
    expect(shown).not.toContain('Hunter2pw');
  });
});
