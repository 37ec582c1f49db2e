import type { GateAnswer, StepContext, StepExecutor, StepOutcome } from '../step-executor.js';
import type { HumanGateStep } from '../model.js';

/** How often a gate with a `timeout` looks for an answer written by another process (ms). */
export const GATE_POLL_MS = 250;

/**
 * A durable human gate. Answers are ledger rows that any process may write, before or after the run
 * reaches the gate (`answerGate`, `switchboard workflow gate`). With no answer the run parks (`waiting`);
 * with the Switchboard `timeout` this process waits for one and takes `default` when it expires;
 * `--skip-gates` takes the first option (the engine answers for it).
 */
export const executeHumanGateStep: StepExecutor = async (context) => {
  const step = context.step as HumanGateStep;
  const prompt = context.render(step.prompt, 'prompt');
  const options = step.options.map((option) => ({
    label: option.label,
    value: option.value,
    ...(option.promptFor === undefined ? {} : { promptFor: option.promptFor }),
  }));
  let answer = await context.gateAnswer();
  if (answer === undefined && step.timeoutSeconds !== undefined) {
    // While this process waits, `workflow status` shows the gate from these notes, so anyone can answer it.
    const timesOutAt = new Date(Date.now() + step.timeoutSeconds * 1000).toISOString();
    await context.recordProgress({ gate: { prompt, options, timesOutAt } });
    await context.emit({ type: 'gate-presented', data: { prompt, options, timesOutAt } });
    answer = await waitForAnswer(context, step.timeoutSeconds * 1000);
    if (answer === undefined) {
      // Recorded as the gate's answer unless someone answered first: an answer committed at the last
      // moment is the one taken, and a later one is refused (GATE_TAKEN) instead of being lost.
      const choice = step.default ?? step.options[0]?.value ?? '';
      answer = await context.gateAnswer({
        choice,
        answeredBy: 'timeout',
        answeredAt: new Date().toISOString(),
      });
    }
  }
  if (answer === undefined) {
    await context.emit({ type: 'gate-presented', data: { prompt, options } });
    return {
      status: 'waiting',
      costUsd: 0,
      output: { prompt, options },
    };
  }
  return await takeAnswer(context, step, answer);
};

async function takeAnswer(
  context: StepContext,
  step: HumanGateStep,
  answer: GateAnswer,
): Promise<StepOutcome> {
  const option = step.options.find((candidate) => candidate.value === answer.choice);
  if (option === undefined) {
    const values = step.options.map((candidate) => candidate.value).join(', ');
    return {
      status: 'failed',
      costUsd: 0,
      error: {
        code: 'INVALID_INPUT',
        message: `gate "${step.name}" has no option "${answer.choice}" (options: ${values})`,
      },
    };
  }
  await context.emit({
    type: 'gate-taken',
    data: { choice: option.value, answeredBy: answer.answeredBy, answeredAt: answer.answeredAt },
  });
  const additional = option.promptFor === undefined ? {} : { [option.promptFor]: answer.text ?? '' };
  return {
    status: 'completed',
    costUsd: 0,
    output: { selected: option.value, additional_input: additional },
    next: option.route,
  };
}

async function waitForAnswer(context: StepContext, timeoutMs: number): Promise<GateAnswer | undefined> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    context.signal.throwIfAborted();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.min(GATE_POLL_MS, Math.max(0, until - Date.now())));
      context.signal.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          resolve();
        },
        { once: true },
      );
    });
    context.signal.throwIfAborted();
    const answer = await context.gateAnswer();
    if (answer !== undefined) return answer;
  }
  return undefined;
}
