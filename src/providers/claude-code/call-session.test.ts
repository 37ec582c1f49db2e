import { afterEach, describe, expect, it, vi } from 'vitest';
import { CallWatch, STARTUP_ALLOWANCE_MS } from './call-session.js';

afterEach(() => {
  vi.useRealTimers();
});

function watch(coversStartup: boolean): { watch: CallWatch; failed: () => boolean } {
  let failed = false;
  const created = new CallWatch({
    timeoutMs: 10 * STARTUP_ALLOWANCE_MS,
    idleTimeoutMs: 2_000,
    abortSignal: undefined,
    coversStartup,
    onFail: () => {
      failed = true;
    },
  });
  return { watch: created, failed: () => failed };
}

describe('CallWatch idle limit', () => {
  it('does not count a new process start-up as silence: a slow start under load is not an API stall', () => {
    vi.useFakeTimers();
    const { watch: started, failed } = watch(true);
    // A loaded machine: Claude Code prints its first line after 5 s, past the 2 s idle limit.
    vi.advanceTimersByTime(5_000);
    expect(failed()).toBe(false);
    started.touch();
    vi.advanceTimersByTime(1_999);
    expect(failed()).toBe(false);
    // Then the API stalls: 2 s of silence after Claude Code spoke ends the call as idle.
    vi.advanceTimersByTime(1);
    expect(started.failure).toMatchObject({ code: 'IDLE_TIMEOUT' });
    expect(started.failure?.message).toBe('Claude Code sent nothing for 2000 ms');
    started.stop();
  });

  it('still ends a process that never speaks, once the start-up allowance has passed', () => {
    vi.useFakeTimers();
    const { watch: silent } = watch(true);
    vi.advanceTimersByTime(STARTUP_ALLOWANCE_MS);
    expect(silent.failure?.message).toBe(
      `Claude Code sent nothing for ${STARTUP_ALLOWANCE_MS} ms after it was started`,
    );
    silent.stop();
  });

  it('gives a warm process (already started) only the idle limit', () => {
    vi.useFakeTimers();
    const { watch: warm } = watch(false);
    vi.advanceTimersByTime(2_000);
    expect(warm.failure?.message).toBe('Claude Code sent nothing for 2000 ms');
    warm.stop();
  });
});
