import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CallResult, Provider, ProviderCall } from '../core/call-types.js';
import { SwitchboardError } from '../core/errors.js';
import { ProviderRegistry } from '../providers/registry.js';
import { openLedger } from '../store/ledger.js';
import { call } from './call.js';
import { CircuitBreaker } from './circuit-breaker.js';

// The retry, fallback, re-ask, cooldown and budget logic, driven by scripted providers (plain objects
// implementing Provider) and a real SQLite ledger. The providers' own wire behaviour is tested against
// the simulator in their folders.

type Step = Partial<CallResult> | SwitchboardError;

function scripted(name: string, steps: Step[]): Provider & { prompts: string[] } {
  const prompts: string[] = [];
  return {
    name,
    prompts,
    async call(request: ProviderCall): Promise<CallResult> {
      prompts.push(request.prompt);
      const step = steps.shift() ?? {};
      if (step instanceof SwitchboardError) throw step;
      return {
        success: true,
        text: 'ok',
        provider: `${name}:${request.model}`,
        modelRequested: request.model,
        modelUsed: request.model,
        durationMs: 1,
        usage: { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 },
        costUsd: 0.01,
        rateLimited: false,
        attempts: [],
        warnings: [],
        ...step,
      };
    },
    async close() {},
  };
}

function setup(...providers: Provider[]) {
  const registry = new ProviderRegistry();
  for (const provider of providers) registry.register(provider);
  const ledger = openLedger({ stateDir: mkdtempSync(join(tmpdir(), 'switchboard-invoke-')) });
  const delays: number[] = [];
  const options = {
    providers: registry,
    ledger,
    _internal: { sleep: async (milliseconds: number) => void delays.push(milliseconds) },
  };
  return { registry, ledger, delays, options };
}

const error = (
  code: ConstructorParameters<typeof SwitchboardError>[0],
  extra: ConstructorParameters<typeof SwitchboardError>[2] = {},
) => new SwitchboardError(code, `${code.toLowerCase()} happened`, extra);

describe('call: the ledger', () => {
  it('hands back the call id of its attempt rows, committed by then', async () => {
    const { ledger, options } = setup(scripted('alpha', [{ text: 'done' }]));
    const result = await call('alpha:model', { prompt: 'hi' }, options);
    const other = openLedger({ path: ledger.path });
    expect((await other.callStats()).calls).toBe(1);
    expect(result.callId).toMatch(/./);
    await other.close();
    await ledger.close();
  });

  it('keeps an answer whose attempt cannot be recorded: the answer with one warning, not asked again', async () => {
    const alpha = scripted('alpha', [{ text: 'done' }]);
    const { ledger, options } = setup(alpha);
    const full = new SwitchboardError('STORE_ERROR', 'database or disk is full');
    const failing = { ...ledger, recordCallAttempt: () => Promise.reject(full) };
    const result = await call('alpha:model', { prompt: 'hi' }, { ...options, ledger: failing });
    expect(result).toMatchObject({ text: 'done', provider: 'alpha:model' });
    expect(result.warnings).toEqual([
      expect.stringMatching(
        /^the ledger did not record this call \(database or disk is full\); its cost is missing/,
      ),
    ]);
    expect(alpha.prompts).toEqual(['hi']);
    await ledger.close();
  });
});

describe('call: retries and fallbacks', () => {
  it('retries a rate limit after the retry-after the provider gave, and records both attempts', async () => {
    const first = scripted('alpha', [error('RATE_LIMITED', { retryAfterMs: 1_234 }), { text: 'done' }]);
    const { ledger, delays, options } = setup(first);
    const result = await call('alpha:model', { prompt: 'hi' }, options);
    expect(result.text).toBe('done');
    expect(delays).toEqual([1_234]);
    expect(result.attempts.map((attempt) => attempt.errorCode ?? 'ok')).toEqual(['RATE_LIMITED', 'ok']);
    expect(await ledger.callStats()).toMatchObject({
      calls: 1,
      attempts: 2,
      successfulCalls: 1,
      errorCodes: { RATE_LIMITED: 1 },
    });
  });

  it('on AUTH never retries the provider, skips others with the same credentials, and moves on to other credentials', async () => {
    const alpha = scripted('alpha', [error('AUTH', { retryable: false }), {}, {}]);
    const beta = scripted('beta', [{ text: 'from beta' }]);
    const { options } = setup(alpha, beta);
    const result = await call('alpha:m,alpha:n,beta:m', { prompt: 'hi' }, options);
    expect(result.text).toBe('from beta');
    expect(alpha.prompts).toHaveLength(1);
    expect(result.warnings.join()).toMatch(/alpha:n skipped: its credentials were refused/);
    // Alone, the refusal is the answer.
    const lone = scripted('gamma', [error('AUTH', { retryable: false }), {}]);
    const second = setup(lone);
    await expect(call('gamma:m', { prompt: 'hi' }, second.options)).rejects.toMatchObject({ code: 'AUTH' });
    expect(lone.prompts).toHaveLength(1);
  });

  it('falls back down the chain when a provider is unavailable or out of retries', async () => {
    const alpha = scripted('alpha', [error('PROVIDER_UNAVAILABLE')]);
    const beta = scripted('beta', [error('OVERLOADED'), error('OVERLOADED'), error('OVERLOADED')]);
    const gamma = scripted('gamma', [{ text: 'from gamma' }]);
    const { options } = setup(alpha, beta, gamma);
    const result = await call('alpha:a,beta:b,gamma:c', { prompt: 'hi' }, options);
    expect(result.text).toBe('from gamma');
    expect(result.provider).toBe('gamma:c');
    expect(result.attempts.map((attempt) => `${attempt.provider} ${attempt.errorCode ?? 'ok'}`)).toEqual([
      'alpha:a PROVIDER_UNAVAILABLE',
      'beta:b OVERLOADED',
      'beta:b OVERLOADED',
      'beta:b OVERLOADED',
      'gamma:c ok',
    ]);
  });

  it('moves on instead of waiting when retry-after is longer than the longest backoff', async () => {
    const alpha = scripted('alpha', [error('RATE_LIMITED', { retryAfterMs: 3_600_000 })]);
    const beta = scripted('beta', [{ text: 'from beta' }]);
    const { delays, options } = setup(alpha, beta);
    const result = await call('alpha:a,beta:b', { prompt: 'hi' }, options);
    expect(delays).toEqual([]);
    expect(result).toMatchObject({ text: 'from beta', provider: 'beta:b' });
    expect(result.attempts.map((attempt) => `${attempt.provider} ${attempt.errorCode ?? 'ok'}`)).toEqual([
      'alpha:a RATE_LIMITED',
      'beta:b ok',
    ]);
  });

  it('keeps a hard cap on attempts and reports every attempt when it gives up', async () => {
    const alpha = scripted(
      'alpha',
      Array.from({ length: 10 }, () => error('PROVIDER_ERROR')),
    );
    const { options } = setup(alpha);
    const failure = (await call(
      'alpha:a',
      { prompt: 'hi' },
      { ...options, retry: { retriesPerProvider: 9, maxAttempts: 4 } },
    ).catch((caught: unknown) => caught)) as SwitchboardError;
    expect(failure.code).toBe('PROVIDER_ERROR');
    expect(failure.details?.['attempts']).toHaveLength(4);
  });

  it('never retries an abort, and an abort during backoff ends the call', async () => {
    const alpha = scripted('alpha', [error('ABORTED', { retryable: false }), {}]);
    const beta = scripted('beta', [{}]);
    const first = setup(alpha, beta);
    await expect(call('alpha:a,beta:b', { prompt: 'hi' }, first.options)).rejects.toMatchObject({
      code: 'ABORTED',
    });
    expect(alpha.prompts).toHaveLength(1);
    expect(beta.prompts).toHaveLength(0);

    // The provider asks for 5 s; the caller aborts once the attempt has failed, while call() waits
    // (the real sleep, no seam). Were the abort ignored, the retry would answer after those 5 s.
    const controller = new AbortController();
    const limited = scripted('gamma', [error('RATE_LIMITED', { retryAfterMs: 5_000 }), { text: 'too late' }]);
    const second = setup({
      ...limited,
      call: (request) => {
        setImmediate(() => controller.abort());
        return limited.call(request);
      },
    });
    await expect(
      call('gamma:g', { prompt: 'hi', abortSignal: controller.signal }, { ...second.options, _internal: {} }),
    ).rejects.toMatchObject({ code: 'ABORTED' });
    expect(limited.prompts).toHaveLength(1);
  });
});

describe('call: streaming', () => {
  function streaming(
    name: string,
    pieces: string[],
    failure?: SwitchboardError,
  ): Provider & { prompts: string[] } {
    const prompts: string[] = [];
    return {
      name,
      prompts,
      async call(request: ProviderCall): Promise<CallResult> {
        prompts.push(request.prompt);
        for (const piece of pieces) request.onText?.(piece);
        if (failure !== undefined) throw failure;
        return (await scripted(name, [{ text: pieces.join('') }]).call(request)) as CallResult;
      },
      async close() {},
    };
  }

  it('falls back when a stream fails before its first byte', async () => {
    const alpha = streaming('alpha', [], error('PROVIDER_UNAVAILABLE'));
    const beta = streaming('beta', ['hel', 'lo']);
    const { options } = setup(alpha, beta);
    const pieces: string[] = [];
    const result = await call(
      'alpha:a,beta:b',
      { prompt: 'hi', onText: (piece) => pieces.push(piece) },
      options,
    );
    expect(pieces).toEqual(['hel', 'lo']);
    expect(result.text).toBe('hello');
  });

  it('does not retry or fall back once text has been streamed', async () => {
    const alpha = streaming('alpha', ['partial '], error('PROVIDER_ERROR'));
    const beta = streaming('beta', ['other']);
    const { options } = setup(alpha, beta);
    const pieces: string[] = [];
    await expect(
      call('alpha:a,beta:b', { prompt: 'hi', onText: (piece) => pieces.push(piece) }, options),
    ).rejects.toMatchObject({
      code: 'PROVIDER_ERROR',
      retryable: false,
      details: expect.objectContaining({ streamed: true }),
    });
    expect(pieces).toEqual(['partial ']);
    expect(alpha.prompts).toHaveLength(1);
    expect(beta.prompts).toHaveLength(0);
  });
});

describe('call: structured output re-asks', () => {
  it('re-asks with a diagnosis of what was wrong, then succeeds', async () => {
    const alpha = scripted('alpha', [
      error('SCHEMA', {
        details: { raw: '{"town": "Lisbon"}', errors: ["(root): must have required property 'city'"] },
      }),
      { structured: { city: 'Lisbon' } },
    ]);
    const { options } = setup(alpha);
    const result = await call('alpha:a', { prompt: 'Where?', schema: { type: 'object' } }, options);
    expect(result.structured).toEqual({ city: 'Lisbon' });
    expect(alpha.prompts[1]).toContain('missing field "city"');
    expect(alpha.prompts[1]).toContain('{"town": "Lisbon"}');
    expect(result.attempts).toHaveLength(2);
  });

  it('gives up after the set number of re-asks, keeping the raw text, and tries the next provider', async () => {
    const bad = () => error('SCHEMA', { details: { raw: 'sunny', errors: [] } });
    const alpha = scripted('alpha', [bad(), bad()]);
    const { options } = setup(alpha);
    const failure = (await call('alpha:a', { prompt: 'Where?' }, { ...options, schemaRetries: 1 }).catch(
      (caught: unknown) => caught,
    )) as SwitchboardError;
    expect(failure.code).toBe('SCHEMA');
    expect(failure.details?.['raw']).toBe('sunny');
    expect(alpha.prompts[1]).toContain('it is not valid JSON');
    await expect(call('alpha:a', { prompt: 'x' }, { ...options, schemaRetries: 11 })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
  });
});

describe('call: circuit breakers and budgets', () => {
  it("opens a failing provider's breaker, in this process and in others sharing the ledger; calls fall through", async () => {
    const alpha = scripted(
      'alpha',
      Array.from({ length: 3 }, () => error('PROVIDER_UNAVAILABLE')),
    );
    const beta = scripted('beta', [{}, {}, {}, {}]);
    const { ledger, options } = setup(alpha, beta);
    const breaker = { minimumRequests: 3 };
    for (let index = 0; index < 3; index++)
      await call('alpha:a,beta:b', { prompt: 'hi' }, { ...options, cooldown: breaker });
    expect(alpha.prompts).toHaveLength(3);
    const skipped = await call('alpha:a,beta:b', { prompt: 'hi' }, options);
    expect(alpha.prompts).toHaveLength(3);
    expect(skipped.provider).toBe('beta:b');
    expect(skipped.warnings.join()).toMatch(/alpha:a skipped: its circuit breaker is open/);
    // Another process: a fresh breaker reading the same ledger.
    const other = await call(
      'alpha:a,beta:b',
      { prompt: 'hi' },
      { ...options, breaker: new CircuitBreaker(breaker, ledger) },
    );
    expect(other.provider).toBe('beta:b');
    expect(alpha.prompts).toHaveLength(3);
  });

  it('keeps one registry working across ledgers: calls after the first ledger closed use their own', async () => {
    // What a long-lived orchestrator does with the workflow engine: one registry, and each
    // runWorkflow()/resumeWorkflow() opens and closes its own ledger.
    const alpha = scripted('alpha', [{}, error('PROVIDER_UNAVAILABLE'), error('PROVIDER_UNAVAILABLE')]);
    const beta = scripted('beta', [{}, {}, {}]);
    const registry = new ProviderRegistry();
    registry.register(alpha);
    registry.register(beta);
    let clock = 1_000_000;
    const internal = { now: () => clock, sleep: async () => {} };
    const first = openLedger({ stateDir: mkdtempSync(join(tmpdir(), 'switchboard-invoke-')) });
    await call('alpha:a', { prompt: 'one' }, { providers: registry, ledger: first, _internal: internal });
    first.close();
    const second = openLedger({ stateDir: mkdtempSync(join(tmpdir(), 'switchboard-invoke-')) });
    clock += 2_000; // past the breaker's one-second refresh of cooldowns shared through the ledger
    const options = {
      providers: registry,
      ledger: second,
      cooldown: { minimumRequests: 2 },
      retry: { retriesPerProvider: 0 },
      _internal: internal,
    };
    await call('alpha:a,beta:b', { prompt: 'two' }, options);
    await call('alpha:a,beta:b', { prompt: 'three' }, options);
    // The breaker those two failed requests opened is in the ledger the calls used, for other processes.
    expect(await second.getCooldown('alpha:a')).toMatchObject({ failures: 2 });
    expect((await second.callStats()).attempts).toBe(4);
  });

  it('counts failed requests across processes: three short-lived callers, one failure each, open it', async () => {
    const alpha = scripted(
      'alpha',
      Array.from({ length: 4 }, () => error('TIMEOUT')),
    );
    const beta = scripted('beta', [{}, {}, {}, {}]);
    const { ledger, options } = setup(alpha, beta);
    // Each caller is a new process (a fresh breaker) that makes one call, like `switchboard route`.
    const process = () => ({
      ...options,
      retry: { retriesPerProvider: 0 },
      breaker: new CircuitBreaker({ minimumRequests: 3 }, ledger),
    });
    for (let index = 0; index < 3; index++) await call('alpha:a,beta:b', { prompt: 'hi' }, process());
    expect(alpha.prompts).toHaveLength(3);
    const fourth = await call('alpha:a,beta:b', { prompt: 'hi' }, process());
    expect(fourth.warnings.join()).toMatch(/alpha:a skipped: its circuit breaker is open/);
    expect(alpha.prompts).toHaveLength(3);
  });

  it("does not count the caller's own errors (auth) as the provider's failures", async () => {
    const alpha = scripted('alpha', [
      error('TIMEOUT'),
      {},
      error('TIMEOUT'),
      error('AUTH'),
      error('AUTH'),
      {},
    ]);
    const beta = scripted('beta', [{}, {}, {}, {}, {}, {}]);
    const { ledger, options } = setup(alpha, beta);
    const process = () => ({
      ...options,
      retry: { retriesPerProvider: 0 },
      breaker: new CircuitBreaker({ minimumRequests: 4 }, ledger),
    });
    for (let index = 0; index < 6; index++)
      await call('alpha:a,beta:b', { prompt: 'hi' }, process()).catch(() => undefined);
    // Counted as failures, the refusals would make 4 of 5 requests: the breaker would have opened.
    // They are not: 2 failed of 3 counted, under the minimum, and alpha was asked every time.
    expect(alpha.prompts).toHaveLength(6);
  });

  it('when every provider of the chain is open, says so with the soonest any of them half-opens', async () => {
    let clock = 1_000_000;
    const alpha = scripted('alpha', [error('OVERLOADED')]);
    const beta = scripted('beta', [{}, error('OVERLOADED')]);
    const { options } = setup(alpha, beta);
    const timed = {
      ...options,
      retry: { retriesPerProvider: 0 },
      cooldown: { minimumRequests: 1 },
      _internal: { ...options._internal, now: () => clock },
    };
    // alpha opens at once; beta two seconds later; each for 5 s.
    expect((await call('alpha:a,beta:b', { prompt: 'hi' }, timed)).provider).toBe('beta:b');
    clock += 2_000;
    await call('beta:b', { prompt: 'hi' }, timed).catch(() => undefined);
    clock += 1_000;
    const failure = (await call('alpha:a,beta:b', { prompt: 'hi' }, timed).catch(
      (caught: unknown) => caught,
    )) as SwitchboardError;
    expect(failure).toMatchObject({ code: 'PROVIDER_UNAVAILABLE', retryAfterMs: 2_000 });
    expect(failure.message).toMatch(/every provider failed; last: beta:b: its circuit breaker is open/);
    expect(failure.details?.['attempts']).toEqual([]);
  });

  it('refuses a call before spending when a daily cap is reached, and warns near it', async () => {
    const alpha = scripted('alpha', [{ costUsd: 0.85 }, {}, {}]);
    const { options } = setup(alpha);
    const budget = { rules: [{ provider: 'alpha', dailyUsd: 1 }] };
    await call('alpha:a', { prompt: 'hi' }, { ...options, budget });
    const warned = await call('alpha:a', { prompt: 'hi' }, { ...options, budget });
    expect(warned.warnings.join()).toMatch(/85% of the daily budget of \$1 for alpha/);
    const alphaAfter = alpha.prompts.length;
    const tight = { rules: [{ provider: 'alpha', dailyUsd: 0.5 }] };
    await expect(call('alpha:a', { prompt: 'hi' }, { ...options, budget: tight })).rejects.toMatchObject({
      code: 'BUDGET_EXCEEDED',
    });
    expect(alpha.prompts).toHaveLength(alphaAfter);
  });

  it('applies tag caps and a per-call cost cap estimated before the call', async () => {
    const alpha = scripted('alpha', [{ costUsd: 2 }, {}]);
    const { options } = setup(alpha);
    await call('alpha:a', { prompt: 'hi', tags: { team: 'search' } }, options);
    await expect(
      call(
        'alpha:a',
        { prompt: 'hi', tags: { team: 'search' } },
        { ...options, budget: { rules: [{ tag: 'team=search', monthlyUsd: 1 }] } },
      ),
    ).rejects.toMatchObject({ code: 'BUDGET_EXCEEDED' });
    const opus = scripted('opusish', [{}]);
    const second = setup(opus);
    await expect(
      call(
        'opusish:claude-opus-4-1',
        { prompt: 'x'.repeat(400_000) },
        { ...second.options, budget: { maxCostUsd: 0.01 } },
      ),
    ).rejects.toMatchObject({ code: 'BUDGET_EXCEEDED' });
    expect(opus.prompts).toHaveLength(0);
  });
});

describe('call: conversations with tools', () => {
  const readFile = {
    name: 'read_file',
    description: 'Reads a file.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
  };

  it('refuses tools with a schema, or a tool name a provider would reject, before sending anything', async () => {
    const alpha = scripted('alpha', [{}]);
    const { options } = setup(alpha);
    await expect(
      call('alpha:a', { prompt: 'hi', tools: [readFile], schema: { type: 'object' } }, options),
    ).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: '"tools" and "schema" cannot be given together',
    });
    await expect(
      call('alpha:a', { prompt: 'hi', tools: [{ ...readFile, name: 'read.file' }] }, options),
    ).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringMatching(/"read\.file"/) });
    expect(alpha.prompts).toHaveLength(0);
  });

  it('counts the conversation in the cost estimate a budget is checked against', async () => {
    const opus = scripted('opusish', [{}]);
    const { options } = setup(opus);
    const long = [
      { role: 'tool' as const, results: [{ id: 'c1', name: 'read_file', content: 'x'.repeat(400_000) }] },
    ];
    await expect(
      call(
        'opusish:claude-opus-4-1',
        { prompt: 'hi', tools: [readFile], messages: long },
        {
          ...options,
          // The prompt alone would pass: 1,024 output tokens of Opus are about $0.08.
          budget: { maxCostUsd: 1 },
        },
      ),
    ).rejects.toMatchObject({ code: 'BUDGET_EXCEEDED' });
    expect(opus.prompts).toHaveLength(0);
  });
});

describe('call: one deadline for the whole call', () => {
  /** A provider whose server never answers: it fails when its attempt limit or the call's signal ends it. */
  function stalled(name: string): Provider & { limits: (number | undefined)[] } {
    const limits: (number | undefined)[] = [];
    return {
      name,
      limits,
      call(request: ProviderCall): Promise<CallResult> {
        limits.push(request.timeoutMs);
        return new Promise((_resolve, reject) => {
          const timer = setTimeout(() => reject(error('TIMEOUT')), request.timeoutMs ?? 60_000);
          request.abortSignal?.addEventListener('abort', () => {
            clearTimeout(timer);
            reject(error('ABORTED', { retryable: false }));
          });
        });
      },
      async close() {},
    };
  }

  it('retries and the rest of the chain share timeoutMs: a stalled chain fails once it is spent', async () => {
    const alpha = stalled('alpha');
    const beta = stalled('beta');
    const { options } = setup(alpha, beta);
    const started = performance.now();
    const failure = (await call(
      'alpha:a,beta:b',
      { prompt: 'hi', timeoutMs: 400 },
      { ...options, _internal: {} },
    ).catch((caught: unknown) => caught)) as SwitchboardError;
    const elapsed = performance.now() - started;
    expect(failure.code).toBe('TIMEOUT');
    expect(failure.message).toMatch(/within its 0\.4 s limit/);
    expect(failure.hint).toMatch(/--timeout/);
    // Each attempt only got what was left; today each got the full 400 ms, then retried 3× per provider.
    expect(alpha.limits[0]).toBeLessThanOrEqual(400);
    const given = [...alpha.limits, ...beta.limits].map((limit) => limit ?? Infinity);
    expect(given.slice(1).every((limit) => limit < 400)).toBe(true);
    // A 400 ms budget, not 6 × 400 ms plus backoff (well over 2.4 s).
    expect(elapsed).toBeLessThan(2_000);
    expect((failure.details?.['attempts'] as unknown[]).length).toBeGreaterThan(0);
  });

  it('does not start a backoff wait that would outlive the deadline: the next provider answers', async () => {
    const alpha = scripted('alpha', [error('RATE_LIMITED', { retryAfterMs: 5_000 }), {}]);
    const beta = scripted('beta', [{ text: 'from beta' }]);
    const { delays, options } = setup(alpha, beta);
    const result = await call('alpha:a,beta:b', { prompt: 'hi', timeoutMs: 2_000 }, options);
    expect(result.text).toBe('from beta');
    expect(delays).toEqual([]);
  });

  it('keeps a per-attempt limit under its own name (stageTimeoutMs), within the call limit', async () => {
    const alpha = stalled('alpha');
    const beta = scripted('beta', [{ text: 'from beta' }]);
    const { options } = setup(alpha, beta);
    const result = await call(
      'alpha:a,beta:b',
      { prompt: 'hi', timeoutMs: 30_000 },
      { ...options, stageTimeoutMs: 50, retry: { retriesPerProvider: 1 } },
    );
    expect(result.text).toBe('from beta');
    expect(alpha.limits).toEqual([50, 50]);
  });
});

describe('call: breakers per endpoint, with a way out', () => {
  /** A scripted provider that says where it sends calls, as the real ones do. */
  function at(endpoint: string, name: string, steps: Step[]): Provider & { prompts: string[] } {
    return { ...scripted(name, steps), endpoint: () => endpoint };
  }
  const failures = (count: number) => Array.from({ length: count }, () => error('PROVIDER_UNAVAILABLE'));
  const errors = (count: number) => Array.from({ length: count }, () => error('PROVIDER_ERROR'));

  it('a dead endpoint does not cool down the same spec at another endpoint, even across processes', async () => {
    const dead = at('http://dead.example', 'alpha', failures(4));
    const { ledger, options: defaults } = setup(
      dead,
      scripted(
        'beta',
        Array.from({ length: 4 }, () => ({})),
      ),
    );
    const options = { ...defaults, cooldown: { minimumRequests: 3 } };
    for (let index = 0; index < 3; index++) await call('alpha:a,beta:b', { prompt: 'hi' }, options);
    expect(dead.prompts).toHaveLength(3);
    // Another process with another config: alpha:a goes elsewhere, shares the ledger.
    const alive = at('http://alive.example', 'alpha', [error('PROVIDER_UNAVAILABLE'), { text: 'alive' }]);
    const other = setup(alive);
    const elsewhere = {
      ...other.options,
      ledger,
      breaker: new CircuitBreaker({ minimumRequests: 3 }, ledger),
    };
    await expect(call('alpha:a', { prompt: 'hi' }, elsewhere)).rejects.toMatchObject({
      code: 'PROVIDER_UNAVAILABLE',
    });
    // One failed request there is under the minimum: the dead endpoint's failures are not counted.
    const result = await call('alpha:a', { prompt: 'hi' }, elsewhere);
    expect(result.text).toBe('alive');
    expect(alive.prompts).toHaveLength(2);
    // The dead endpoint itself stays cooled down for the first config.
    const again = await call('alpha:a,beta:b', { prompt: 'hi' }, options);
    expect(again.provider).toBe('beta:b');
    expect(dead.prompts).toHaveLength(3);
  });

  it('stops retrying once the breaker opens, says when it half-opens and how to skip it; ignoreCooldown tries anyway', async () => {
    const alpha = scripted('alpha', [...errors(3), { text: 'back' }]);
    const { options: defaults } = setup(alpha);
    const options = { ...defaults, cooldown: { minimumRequests: 1 } };
    await call('alpha:a', { prompt: 'hi' }, options).catch(() => undefined);
    // The first failure opened it: the retries of that request were not sent.
    expect(alpha.prompts).toHaveLength(1);
    const failure = (await call('alpha:a', { prompt: 'hi' }, options).catch(
      (caught: unknown) => caught,
    )) as SwitchboardError;
    expect(failure.code).toBe('PROVIDER_UNAVAILABLE');
    expect(failure.message).toMatch(
      /alpha:a: its circuit breaker is open after repeated failures, half-open in 5 s/,
    );
    expect(failure.retryAfterMs).toBeGreaterThan(4_000);
    expect(failure.hint).toMatch(/--ignore-cooldown.*call\.breaker/);
    expect(alpha.prompts).toHaveLength(1);
    const forced = await call('alpha:a', { prompt: 'hi' }, { ...options, ignoreCooldown: true });
    // Tried anyway, and retried as usual: its failures still count, but do not cut the retries short.
    expect(forced.text).toBe('back');
    expect(alpha.prompts).toHaveLength(4);
  });

  it('half-opens when its wait is up (cooldownMs, the earlier name, on the breaker clock); a probe that answers closes it', async () => {
    let clock = 1_000_000;
    const now = () => clock;
    const alpha = scripted('alpha', [...errors(1), { text: 'back' }, { text: 'back' }]);
    const beta = scripted(
      'beta',
      Array.from({ length: 4 }, () => ({ text: 'beta' })),
    );
    const { options } = setup(alpha, beta);
    const timed = {
      ...options,
      cooldown: { minimumRequests: 1, cooldownMs: 5_000 },
      _internal: { ...options._internal, now },
    };
    await call('alpha:a,beta:b', { prompt: 'hi' }, timed);
    expect(alpha.prompts).toHaveLength(1);
    clock += 4_000;
    expect((await call('alpha:a,beta:b', { prompt: 'hi' }, timed)).provider).toBe('beta:b');
    expect(alpha.prompts).toHaveLength(1);
    clock += 1_001;
    expect((await call('alpha:a,beta:b', { prompt: 'hi' }, timed)).text).toBe('back');
    expect((await call('alpha:a,beta:b', { prompt: 'hi' }, timed)).text).toBe('back');
    expect(alpha.prompts).toHaveLength(3);
  });
});

describe('call: a dropped connection', () => {
  const unreachable = (code: string) =>
    error('PROVIDER_UNAVAILABLE', { cause: Object.assign(new Error('fetch failed'), { code }) });

  it('is sent once more when it dropped after sending; a server that is not there is left at once', async () => {
    const dropped = scripted('alpha', [unreachable('ECONNRESET'), unreachable('ECONNRESET'), {}]);
    const refused = scripted('beta', [unreachable('ECONNREFUSED'), {}]);
    const gamma = scripted('gamma', [{ text: 'from gamma' }]);
    const { options } = setup(dropped, refused, gamma);
    const result = await call('alpha:a,beta:b,gamma:c', { prompt: 'hi' }, options);
    expect(result.text).toBe('from gamma');
    expect(result.attempts.map((attempt) => attempt.provider)).toEqual([
      'alpha:a',
      'alpha:a',
      'beta:b',
      'gamma:c',
    ]);
  });
});
