import { describe, expect, it } from 'vitest';
import { executeTerminateStep } from './terminate.js';
import { simpleStepContext } from '../../../test/helpers/step-context.js';
import type { TerminateStep } from '../model.js';

function terminate(fields: Partial<TerminateStep>): TerminateStep {
  return { name: 'stop', type: 'terminate', status: 'success', routes: [], input: [], ...fields };
}

describe('terminate steps', () => {
  it('ends the run with its status and rendered reason', async () => {
    const { context } = simpleStepContext(
      terminate({ status: 'failed', reason: 'unsafe: {{ precheck.output.why }}' }),
      {
        scope: { precheck: { output: { why: 'secrets in diff' } } },
      },
    );
    const outcome = await executeTerminateStep(context);
    expect(outcome).toEqual({
      status: 'terminated',
      terminateStatus: 'failed',
      output: { status: 'failed', reason: 'unsafe: secrets in diff', terminated_by: 'stop' },
      costUsd: 0,
    });
  });

  it('renders output_template and coerces each value from JSON, replacing the workflow output', async () => {
    const { context } = simpleStepContext(
      terminate({
        reason: 'nothing to do',
        outputTemplate: {
          aborted: 'true',
          count: '{{ items | length }}',
          items: '{{ items | tojson }}',
          stage: 'precheck',
          why: '{{ stop.output.reason }}',
        },
      }),
      { scope: { items: ['a', 'b'] } },
    );
    const outcome = await executeTerminateStep(context);
    expect(outcome.finalOutput).toEqual({
      aborted: true,
      count: 2,
      items: ['a', 'b'],
      stage: 'precheck',
      why: 'nothing to do',
    });
  });

  it('leaves the workflow output to the engine when there is no output_template', async () => {
    const { context } = simpleStepContext(terminate({}));
    const outcome = await executeTerminateStep(context);
    expect(outcome.finalOutput).toBeUndefined();
    expect(outcome.output).toEqual({ status: 'success', reason: '', terminated_by: 'stop' });
  });
});
