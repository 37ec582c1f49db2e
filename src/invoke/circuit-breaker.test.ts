import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { callAttempt } from '../store/__fixtures__/call-attempt.js';
import { openLedger, type Ledger } from '../store/ledger.js';
import { CircuitBreaker, type CircuitBreakerSettings } from './circuit-breaker.js';

// The breaker's state machine on an injected clock: when it opens (ratio over a minimum of distinct
// requests in a sliding window), how it half-opens (probes, backoff) and closes, and how processes
// sharing a ledger agree.

const KEY = 'alpha:a';

function clock(start = 1_000_000) {
  let time = start;
  return { now: () => time, advance: (milliseconds: number) => void (time += milliseconds) };
}

function breakerOn(settings: CircuitBreakerSettings = {}, ledger?: Ledger) {
  const time = clock();
  return { breaker: new CircuitBreaker(settings, ledger, time.now), ...time };
}

async function admitted(breaker: CircuitBreaker, requestId: string): Promise<boolean> {
  return (await breaker.admit(KEY, requestId)).allowed;
}

describe('CircuitBreaker: when it opens', () => {
  it('opens on the failure ratio once the window holds the minimum of requests, not before', async () => {
    const { breaker } = breakerOn();
    // 19 failed requests: every one failed, but fewer than the 20 the ratio needs.
    for (let index = 0; index < 19; index++) {
      expect(await breaker.recordFailure(KEY, `failed-${index}`, 'PROVIDER_ERROR')).toBe(false);
    }
    expect(breaker.stateOf(KEY)).toBe('closed');
    expect(await breaker.recordFailure(KEY, 'failed-19', 'PROVIDER_ERROR')).toBe(true);
    expect(breaker.stateOf(KEY)).toBe('open');
    expect(await breaker.admit(KEY, 'next')).toEqual({ allowed: false, state: 'open', retryAfterMs: 5_000 });
  });

  it('a blip among many successes does not open it: 20 failures in 100 requests stay under 50 %', async () => {
    const { breaker } = breakerOn();
    for (let index = 0; index < 80; index++) breaker.recordSuccess(KEY, `served-${index}`);
    for (let index = 0; index < 20; index++)
      await breaker.recordFailure(KEY, `failed-${index}`, 'OVERLOADED');
    expect(breaker.stateOf(KEY)).toBe('closed');
  });

  it('counts a request once however often it was retried, and a retry that was served as served', async () => {
    const { breaker } = breakerOn({ minimumRequests: 4 });
    for (let retry = 0; retry < 30; retry++) await breaker.recordFailure(KEY, 'one-request', 'TIMEOUT');
    expect(breaker.stateOf(KEY)).toBe('closed');
    // Two more requests that failed at first but were served on a retry.
    for (const id of ['b', 'c']) {
      await breaker.recordFailure(KEY, id, 'TIMEOUT');
      breaker.recordSuccess(KEY, id);
    }
    // 4 requests, 2 failed (the first and this one): 50 %.
    expect(await breaker.recordFailure(KEY, 'e', 'TIMEOUT')).toBe(true);
  });

  it('forgets requests older than the window', async () => {
    const { breaker, advance } = breakerOn({ minimumRequests: 4, windowMs: 10_000 });
    for (const id of ['a', 'b', 'c']) await breaker.recordFailure(KEY, id, 'TIMEOUT');
    advance(10_001);
    breaker.recordSuccess(KEY, 'd');
    breaker.recordSuccess(KEY, 'e');
    breaker.recordSuccess(KEY, 'f');
    // Had a, b and c still counted: 4 of 7 failed. Only d, e, f and this one are in the window.
    expect(await breaker.recordFailure(KEY, 'g', 'TIMEOUT')).toBe(false);
    expect(breaker.stateOf(KEY)).toBe('closed');
  });

  it('forgets thousands of aged requests at once, their failures with them', async () => {
    const { breaker, advance } = breakerOn({ windowMs: 10_000 });
    // 2,500 failures among 2,502 successes: always under half, so it stays closed.
    breaker.recordSuccess(KEY, 'old-served-a');
    breaker.recordSuccess(KEY, 'old-served-b');
    for (let index = 0; index < 2_500; index++) {
      expect(await breaker.recordFailure(KEY, `old-failed-${index}`, 'TIMEOUT')).toBe(false);
      breaker.recordSuccess(KEY, `old-served-${index}`);
    }
    advance(10_001);
    for (let index = 0; index < 5_000; index++) breaker.recordSuccess(KEY, `served-${index}`);
    // Only the 5,000 new successes are left: half is reached at the 5,000th new failure, not before (an old
    // failure still counted would open it at once, an old request still there one or two failures late).
    for (let index = 0; index < 4_999; index++)
      expect(await breaker.recordFailure(KEY, `failed-${index}`, 'TIMEOUT')).toBe(false);
    expect(await breaker.recordFailure(KEY, 'failed-4999', 'TIMEOUT')).toBe(true);
  });

  it('remembers 10,000 requests at most: the oldest drop out as new ones come', async () => {
    const { breaker } = breakerOn({ minimumRequests: 10_000 });
    for (let index = 0; index < 10_000; index++) breaker.recordSuccess(KEY, `served-${index}`);
    // Each failure pushes out a success: 5,000 of them make half of the 10,000 remembered.
    for (let index = 0; index < 4_999; index++)
      expect(await breaker.recordFailure(KEY, `failed-${index}`, 'TIMEOUT')).toBe(false);
    expect(await breaker.recordFailure(KEY, 'failed-4999', 'TIMEOUT')).toBe(true);
  });
});

describe('CircuitBreaker: half-open, probes, close and re-open', () => {
  async function opened(settings: CircuitBreakerSettings = {}) {
    const setup = breakerOn({ minimumRequests: 1, ...settings });
    await setup.breaker.recordFailure(KEY, 'first', 'PROVIDER_ERROR');
    expect(setup.breaker.stateOf(KEY)).toBe('open');
    return setup;
  }

  it('half-opens after its wait and lets a few probes through at once; the first success closes it', async () => {
    const { breaker, advance } = await opened({ probes: 2 });
    advance(4_999);
    expect(await admitted(breaker, 'early')).toBe(false);
    advance(1);
    expect(breaker.stateOf(KEY)).toBe('half-open');
    expect(await admitted(breaker, 'probe-1')).toBe(true);
    expect(await admitted(breaker, 'probe-2')).toBe(true);
    expect(await breaker.admit(KEY, 'third')).toMatchObject({ allowed: false, state: 'half-open' });
    // A probe admitted again (the same request's next attempt) keeps its place.
    expect(await admitted(breaker, 'probe-1')).toBe(true);
    breaker.recordSuccess(KEY, 'probe-2');
    expect(breaker.stateOf(KEY)).toBe('closed');
    expect(await admitted(breaker, 'anyone')).toBe(true);
  });

  it('a failed probe opens it again for twice as long, up to the longest wait; success then closes it', async () => {
    const { breaker, advance } = await opened({ maxHalfOpenAfterMs: 15_000 });
    const waits: number[] = [];
    for (const probe of ['p1', 'p2', 'p3']) {
      advance(60_000);
      expect(await admitted(breaker, probe)).toBe(true);
      expect(await breaker.recordFailure(KEY, probe, 'TIMEOUT')).toBe(true);
      const admission = await breaker.admit(KEY, 'blocked');
      waits.push(admission.allowed ? 0 : admission.retryAfterMs);
    }
    expect(waits).toEqual([10_000, 15_000, 15_000]);
    advance(15_000);
    expect(await admitted(breaker, 'p4')).toBe(true);
    breaker.recordSuccess(KEY, 'p4');
    expect(breaker.stateOf(KEY)).toBe('closed');
  });

  it('a request sent before it opened does not decide the half-open breaker; a probe without a verdict frees its place', async () => {
    const { breaker, advance } = await opened({ probes: 1 });
    advance(5_000);
    expect(await breaker.recordFailure(KEY, 'sent-before', 'TIMEOUT')).toBe(false);
    expect(breaker.stateOf(KEY)).toBe('half-open');
    expect(await admitted(breaker, 'probe')).toBe(true);
    expect(await admitted(breaker, 'other')).toBe(false);
    // The probe ended in the caller's own error (a bad request, an abort): someone else may probe.
    breaker.settle(KEY, 'probe');
    expect(await admitted(breaker, 'other')).toBe(true);
  });

  it('closing starts a fresh window: the failures that opened it are not counted again', async () => {
    const { breaker, advance } = breakerOn({ minimumRequests: 2 });
    await breaker.recordFailure(KEY, 'one', 'TIMEOUT');
    expect(await breaker.recordFailure(KEY, 'two', 'TIMEOUT')).toBe(true);
    advance(5_000);
    await breaker.admit(KEY, 'probe');
    breaker.recordSuccess(KEY, 'probe');
    expect(await breaker.recordFailure(KEY, 'after', 'TIMEOUT')).toBe(false);
  });

  it('names its options in its errors, and still takes cooldownMs, the earlier name of halfOpenAfterMs', () => {
    expect(() => new CircuitBreaker({ failures: 3 } as unknown as CircuitBreakerSettings)).toThrow(
      /"failureRatio"/,
    );
    expect(() => new CircuitBreaker({ failureRatio: 1.5 })).toThrow(/Expected "failureRatio"/);
    expect(() => new CircuitBreaker({ minimumRequests: 0 })).toThrow(/"minimumRequests"/);
    expect(() => new CircuitBreaker({ cooldownMs: 1, halfOpenAfterMs: 2 })).toThrow(/not both/);
    expect(() => new CircuitBreaker({ halfOpenAfterMs: 10, maxHalfOpenAfterMs: 5 })).toThrow(
      /"maxHalfOpenAfterMs"/,
    );
  });

  it('cooldownMs sets the first wait', async () => {
    const setup = breakerOn({ minimumRequests: 1, cooldownMs: 2_000 });
    await setup.breaker.recordFailure(KEY, 'first', 'PROVIDER_ERROR');
    expect(await setup.breaker.admit(KEY, 'next')).toMatchObject({ retryAfterMs: 2_000 });
  });
});

describe('CircuitBreaker: shared through the ledger', () => {
  function ledger(): Ledger {
    return openLedger({ stateDir: mkdtempSync(join(tmpdir(), 'switchboard-breaker-')) });
  }

  it("honours another process's open, half-open and closed states within a second", async () => {
    const shared = ledger();
    const time = clock();
    const one = new CircuitBreaker({ minimumRequests: 1 }, shared, time.now);
    const other = new CircuitBreaker({ minimumRequests: 1 }, shared, time.now);
    expect(await admitted(other, 'before')).toBe(true);
    await one.admit(KEY, 'failing');
    await one.recordFailure(KEY, 'failing', 'OVERLOADED');
    // `other` read the ledger just now: it may go on with what it read for up to a second.
    time.advance(1_000);
    expect(await other.admit(KEY, 'next')).toEqual({ allowed: false, state: 'open', retryAfterMs: 4_000 });
    // Half-open for both; `other` probes, and its success closes the breaker for `one` too.
    time.advance(4_000);
    expect(await admitted(other, 'probe')).toBe(true);
    await other.recordSuccess(KEY, 'probe');
    expect(await shared.getCooldown(KEY)).toMatchObject({ until: 0 });
    time.advance(1_000);
    expect(await admitted(one, 'later')).toBe(true);
    expect(one.stateOf(KEY)).toBe('closed');
    // A failed probe's longer wait is taken up as well: `one` opens it again with the doubled wait.
    await one.recordFailure(KEY, 'again', 'OVERLOADED');
    time.advance(5_000);
    await one.admit(KEY, 'probe-2');
    await one.recordFailure(KEY, 'probe-2', 'OVERLOADED');
    time.advance(1_000);
    expect(await other.admit(KEY, 'waiting')).toEqual({ allowed: false, state: 'open', retryAfterMs: 9_000 });
    shared.close();
  });

  it("counts the requests of short-lived processes from the ledger's attempts, each once", async () => {
    const shared = ledger();
    const time = clock(Date.now());
    const failure = (id: string, attempt: number) =>
      callAttempt(`${id}-${attempt}`, 0, {
        callId: id,
        attempt,
        spec: KEY,
        success: false,
        errorCode: 'TIMEOUT',
        createdAt: time.now(),
      });
    // Three earlier processes: one request each, the first retried twice; one refused for its credentials.
    for (const row of [failure('p1', 1), failure('p1', 2), failure('p1', 3), failure('p2', 1)]) {
      await shared.recordCallAttempt(row);
    }
    await shared.recordCallAttempt({ ...failure('p3', 1), errorCode: 'AUTH' });
    const countsForBreaker = (code: string) => code !== 'AUTH';
    // A fourth process: its one failure makes 3 failed requests of 3 counted (AUTH is the caller's).
    const fourth = new CircuitBreaker({ minimumRequests: 4 }, shared, time.now);
    await shared.recordCallAttempt(failure('p4', 1));
    expect(await fourth.recordFailure(KEY, 'p4', 'TIMEOUT', countsForBreaker)).toBe(false);
    const fifth = new CircuitBreaker({ minimumRequests: 4 }, shared, time.now);
    await shared.recordCallAttempt(failure('p5', 1));
    expect(await fifth.recordFailure(KEY, 'p5', 'TIMEOUT', countsForBreaker)).toBe(true);
    expect(await shared.getCooldown(KEY)).toMatchObject({ failures: 4, reason: 'TIMEOUT' });
    shared.close();
  });
});
