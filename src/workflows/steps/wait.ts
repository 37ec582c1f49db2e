import type { WaitStep } from '../model.js';
import type { StepExecutor, StepOutcome } from '../step-executor.js';

/** The longest pause a wait step may take, as in Conductor: 24 hours. */
export const MAX_WAIT_SECONDS = 86_400;

const DURATION = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/;
const UNIT_SECONDS = { ms: 0.001, s: 1, m: 60, h: 3600 } as const;

/**
 * Seconds in a duration: a number of seconds (`60`, `1.5`) or a number with a unit, `ms`, `s`, `m` or
 * `h` (`500ms`, `60s`, `2.5m`, `1h`). Undefined when the text is neither.
 */
export function parseDuration(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  const match = DURATION.exec(value);
  if (match === null) return undefined;
  const unit = (match[2] ?? 's') as keyof typeof UNIT_SECONDS;
  return Number(match[1]) * UNIT_SECONDS[unit];
}

/**
 * `type: wait`: pauses the run for `duration` (a number of seconds, `500ms`/`60s`/`2.5m`/`1h`, or a
 * template rendering to one; more than 0 and at most 24 hours), as Conductor does. Output:
 * `{waited_seconds}`. Cancelling the run, its timeout, or losing it ends the pause at once. The start
 * is recorded before the pause, so a run resumed after its process died waits only what is left.
 */
export const executeWaitStep: StepExecutor = async (context) => {
  const step = context.step as WaitStep;
  const written =
    typeof step.duration === 'number' ? step.duration : context.render(step.duration, 'duration');
  const seconds = parseDuration(written);
  if (seconds === undefined) {
    return invalid(
      `step "${step.name}": duration ${JSON.stringify(String(written))} is not a duration; write seconds or a value such as 500ms, 60s, 5m, 1h`,
    );
  }
  if (seconds <= 0)
    return invalid(`step "${step.name}": duration must be more than 0 seconds (got ${seconds})`);
  if (seconds > MAX_WAIT_SECONDS) {
    return invalid(
      `step "${step.name}": duration ${seconds} s is over the 24 h cap (${MAX_WAIT_SECONDS} s); use limits.timeout_seconds and a gate for longer pauses`,
    );
  }
  const reason = step.reason === undefined ? undefined : context.render(step.reason, 'reason');
  // A resumed wait (the process died during it) counts from when it first began: it waits only the rest.
  const recorded = context.previous?.['wait_started_at'];
  const startedAt = typeof recorded === 'number' && recorded <= Date.now() ? recorded : Date.now();
  if (startedAt !== recorded) await context.recordProgress({ wait_started_at: startedAt, seconds });
  await context.emit({
    type: 'wait-start',
    step: step.name,
    key: context.key,
    data: {
      seconds,
      ...(reason === undefined ? {} : { reason }),
      ...(startedAt === recorded ? { resumed: true } : {}),
    },
  });
  const remainingMs = Math.max(0, seconds * 1000 - (Date.now() - startedAt));
  const completed = await sleep(remainingMs, context.signal);
  const output = { waited_seconds: (Date.now() - startedAt) / 1000 };
  if (!completed) {
    return {
      status: 'failed',
      output,
      costUsd: 0,
      error: {
        code: 'ABORTED',
        message: `step "${step.name}": the wait was stopped (the run was cancelled or lost)`,
      },
    };
  }
  return { status: 'completed', output, costUsd: 0 };
};

/** Resolves true after `ms`, or false as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function invalid(message: string): StepOutcome {
  return { status: 'failed', costUsd: 0, error: { code: 'WORKFLOW_INVALID', message } };
}
