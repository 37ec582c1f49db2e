import { describe, expect, it } from 'vitest';
import { executeWaitStep, parseDuration } from './wait.js';
import { simpleStepContext, type SimpleContextOptions } from '../../../test/helpers/step-context.js';
import type { WaitStep } from '../model.js';

function wait(duration: WaitStep['duration'], fields: Partial<WaitStep> = {}): WaitStep {
  return { name: 'pause', type: 'wait', duration, routes: [], input: [], ...fields };
}

async function run(step: WaitStep, options: SimpleContextOptions = {}) {
  return executeWaitStep(simpleStepContext(step, options).context);
}

describe('wait steps', () => {
  it('reads seconds and unit suffixes', () => {
    expect(parseDuration(60)).toBe(60);
    expect(parseDuration(1.5)).toBe(1.5);
    expect(parseDuration('60')).toBe(60);
    expect(parseDuration(' 60s ')).toBe(60);
    expect(parseDuration('500ms')).toBe(0.5);
    expect(parseDuration('2.5m')).toBe(150);
    expect(parseDuration('1h')).toBe(3600);
    expect(parseDuration('5 m')).toBe(300);
    expect(parseDuration('soon')).toBeUndefined();
    expect(parseDuration('-1s')).toBeUndefined();
    expect(parseDuration('1d')).toBeUndefined();
  });

  it('waits a templated duration and reports the seconds it waited', async () => {
    const { context, events } = simpleStepContext(
      wait('{{ workflow.input.poll }}ms', { reason: 'cool down for {{ workflow.input.poll }} ms' }),
      { input: { poll: 40 } },
    );
    const outcome = await executeWaitStep(context);
    expect(outcome.status).toBe('completed');
    const waited = (outcome.output as { waited_seconds: number }).waited_seconds;
    expect(waited).toBeGreaterThanOrEqual(0.035);
    expect(Object.keys(outcome.output as object)).toEqual(['waited_seconds']);
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'wait-start', data: { seconds: 0.04, reason: 'cool down for 40 ms' } }),
    );
  });

  it('refuses a duration that is not one, is zero, or is over 24 hours', async () => {
    const words = await run(wait('{{ "soon" }}'));
    expect(words).toMatchObject({ status: 'failed', error: { code: 'WORKFLOW_INVALID' } });
    expect(words.error?.message).toMatch(/step "pause": duration "soon" is not a duration/);
    expect((await run(wait('0s'))).error?.message).toMatch(/more than 0/);
    expect((await run(wait('25h'))).error?.message).toMatch(/24 h cap/);
    expect((await run(wait(86_400.5))).status).toBe('failed');
  });

  it('ends at once when the step is aborted', async () => {
    const controller = new AbortController();
    const pending = run(wait('1h'), { signal: controller.signal });
    controller.abort();
    const outcome = await pending;
    expect(outcome).toMatchObject({ status: 'failed', error: { code: 'ABORTED' } });
    expect((outcome.output as { waited_seconds: number }).waited_seconds).toBeLessThan(3600);
  });
});

describe('wait steps across a resume', () => {
  it('records when the wait began, and a resumed wait waits only what is left', async () => {
    const controller = new AbortController();
    const first = simpleStepContext(wait('1h'), { signal: controller.signal });
    const interrupted = executeWaitStep(first.context);
    controller.abort();
    await interrupted;
    const started = first.progress[0]?.['wait_started_at'];
    expect(first.progress).toEqual([{ wait_started_at: expect.any(Number), seconds: 3600 }]);
    // The process died long ago: the resumed attempt finds the hour already over.
    const resumed = simpleStepContext(wait('1h'), {
      previous: { wait_started_at: Number(started) - 3_600_000 },
    });
    const outcome = await executeWaitStep(resumed.context);
    expect(outcome.status).toBe('completed');
    expect((outcome.output as { waited_seconds: number }).waited_seconds).toBeGreaterThanOrEqual(3600);
    expect(resumed.progress).toEqual([]);
    expect(resumed.events).toContainEqual(
      expect.objectContaining({ type: 'wait-start', data: { seconds: 3600, resumed: true } }),
    );
  });
});
