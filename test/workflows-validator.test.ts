import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Scenario } from '../src/sim/scenario.js';
import type { Simulator } from '../src/sim/server.js';
import type { Ledger } from '../src/store/ledger.js';
import type { CallOptions } from '../src/invoke/call.js';
import { runWorkflow, type WorkflowEventRecord } from '../src/workflows/index.js';
import { completions, openAiAgainstSimulator } from './helpers/openai-sim.js';
import { stateDir } from './workflows-engine-support.js';

// Conductor's `validator:` on an LLM step, through the real loader and engine: the step's call and the
// grader's go through call() and the real `openai` SDK to `switchboard sim`, and the ledger prices them.

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A one-step review workflow whose step carries `validator` (YAML lines under the step). */
const flow = (validator: string, { extra = '', answer = 'review.output.result' } = {}) => `workflow:
  name: review
  entry_point: review
  runtime:
    provider: openai
agents:
  - name: review
    model: gpt-4.1-mini
    prompt: Say what colour the sky is.
${extra}    validator:
${validator}
    routes: [{ to: $end }]
output:
  answer: "{{ ${answer} }}"
`;

// The grader's requests are the ones whose system prompt holds the criteria; the re-run's is the one
// whose prompt carries the feedback; the rest are the step's first call.
const GRADER = { system: 'acceptance criteria' };
const RERUN = { text: 'Feedback on your previous answer' };

const cost = (model: 'mini' | 'nano', input: number, output: number) =>
  model === 'mini' ? (input * 0.4 + output * 1.6) / 1_000_000 : (input * 0.1 + output * 0.4) / 1_000_000;

interface Run {
  sim: Simulator;
  ledger: Ledger;
  events: WorkflowEventRecord[];
  result: Awaited<ReturnType<typeof runWorkflow>>;
}

async function run(yaml: string, scenario: Scenario): Promise<Run> {
  const { sim, ledger, options } = await openAiAgainstSimulator(scenario, cleanups);
  const dir = stateDir();
  writeFileSync(join(dir, 'review.yaml'), yaml);
  const events: WorkflowEventRecord[] = [];
  const result = await runWorkflow({
    file: join(dir, 'review.yaml'),
    stateDir: join(dir, '.switchboard'),
    ledger,
    providers: options.providers as NonNullable<CallOptions['providers']>,
    onEvent: (event) => events.push(event),
  });
  return { sim, ledger, events, result };
}

const validatorEvents = (events: WorkflowEventRecord[]) =>
  events.filter((event) => event.type.startsWith('validator-')).map(({ type, data }) => ({ type, data }));

describe('validator: on an LLM step', () => {
  it('a failed grade re-runs the step once with the issues in its prompt; the second answer is final and every call is in its cost', async () => {
    const { sim, ledger, events, result } = await run(
      flow('      criteria: The answer names a colour.\n      model: gpt-4.1-nano'),
      {
        rules: [
          {
            match: GRADER,
            reply: {
              json: { passed: false, issues: ['Name the colour instead of describing the weather.'] },
              usage: { input: 400, output: 30 },
            },
          },
          { match: RERUN, reply: { text: 'Blue.', usage: { input: 120, output: 900 } } },
        ],
        fallback: { text: 'It is a lovely day.', usage: { input: 100, output: 1_000 } },
      },
    );
    expect(result).toMatchObject({ status: 'completed', output: { answer: 'Blue.' } });

    const requests = completions(sim);
    expect(requests.map((request) => request.model)).toEqual([
      'gpt-4.1-mini',
      'gpt-4.1-nano',
      'gpt-4.1-mini',
    ]);
    // The grader saw the task and the answer; the re-run got the task again with the grader's issues.
    expect(requests[1]?.text).toContain('Say what colour the sky is.');
    expect(requests[1]?.text).toContain('It is a lovely day.');
    expect(requests[2]?.text).toMatch(/^Say what colour the sky is\.\n/);
    expect(requests[2]?.text).toContain('- Name the colour instead of describing the weather.');

    const graderCost = cost('nano', 400, 30);
    expect(validatorEvents(events)).toEqual([
      { type: 'validator-start', data: { model: 'openai:gpt-4.1-nano' } },
      {
        type: 'validator-end',
        data: {
          passed: false,
          issues: ['Name the colour instead of describing the weather.'],
          costUsd: expect.closeTo(graderCost, 12) as number,
        },
      },
      { type: 'validator-retry', data: { issues: ['Name the colour instead of describing the weather.'] } },
    ]);

    const total = cost('mini', 100, 1_000) + graderCost + cost('mini', 120, 900);
    expect(result.steps).toEqual([expect.objectContaining({ step: 'review', status: 'completed' })]);
    expect(result.steps[0]?.costUsd).toBeCloseTo(total, 12);
    expect(result.costUsd).toBeCloseTo(total, 12);
    expect(await ledger.spendSince(0, { tag: `workflow_run=${result.id}` })).toBeCloseTo(total, 12);
    expect((await ledger.callStats()).calls).toBe(3);
  });

  it('a passing grade keeps the answer: two calls, no re-run; a structured output reaches the grader as JSON', async () => {
    const { sim, events, result } = await run(
      flow('      criteria: The colour is a real colour.', {
        extra: '    output:\n      colour: { type: string }\n',
        answer: 'review.output.colour',
      }),
      {
        rules: [{ match: GRADER, reply: { json: { passed: true, issues: [] } } }],
        fallback: { json: { colour: 'blue' } },
      },
    );
    expect(result).toMatchObject({ status: 'completed', output: { answer: 'blue' } });
    const requests = completions(sim);
    expect(requests).toHaveLength(2);
    expect(requests[1]?.text).toContain('"colour": "blue"');
    expect(validatorEvents(events).map((event) => event.type)).toEqual(['validator-start', 'validator-end']);
    expect(validatorEvents(events)[1]?.data).toMatchObject({ passed: true, issues: [] });
  });

  it('max_retries: 0 reports a failed grade in the events and keeps the answer without a re-run', async () => {
    const { sim, events, result } = await run(
      flow('      criteria: The answer names a colour.\n      max_retries: 0'),
      {
        rules: [{ match: GRADER, reply: { json: { passed: false, issues: ['No colour named.'] } } }],
        fallback: { text: 'It is a lovely day.' },
      },
    );
    expect(result).toMatchObject({
      status: 'completed',
      output: { answer: 'It is a lovely day.' },
    });
    expect(completions(sim)).toHaveLength(2);
    expect(validatorEvents(events).map((event) => event.type)).toEqual(['validator-start', 'validator-end']);
    expect(validatorEvents(events)[1]?.data).toMatchObject({ passed: false, issues: ['No colour named.'] });
  });

  it('fails open: a grader that answers no grade, or errs, counts as a pass and the step completes', async () => {
    const answer = cost('mini', 100, 1_000);
    const graders: Array<[string, Scenario['rules'], string[], number, RegExp]> = [
      // call() re-asks twice for JSON before it gives up; the step pays for all three.
      [
        'no grade',
        [
          {
            name: 'grader',
            match: GRADER,
            reply: { text: 'Looks fine to me.', usage: { input: 300, output: 10 } },
          },
        ],
        ['grader', 'grader', 'grader'],
        3 * cost('mini', 300, 10),
        /JSON/,
      ],
      [
        'an error',
        [{ name: 'grader', match: GRADER, fault: { kind: 'status', status: 400, message: 'bad request' } }],
        ['grader'],
        0,
        /HTTP 400/,
      ],
    ];
    for (const [what, rules, graderRequests, graderCost, error] of graders) {
      const { sim, events, result } = await run(flow('      criteria: The answer names a colour.'), {
        rules,
        fallback: { text: 'Blue.', usage: { input: 100, output: 1_000 } },
      });
      expect(result, what).toMatchObject({ status: 'completed', output: { answer: 'Blue.' } });
      // The step's call, then only the grader's: no re-run.
      expect(
        completions(sim).map((request) => request.rule),
        what,
      ).toEqual([null, ...graderRequests]);
      expect(validatorEvents(events), what).toEqual([
        { type: 'validator-start', data: { model: 'openai:gpt-4.1-mini' } },
        {
          type: 'validator-end',
          data: {
            passed: true,
            issues: [],
            costUsd: expect.closeTo(graderCost, 12) as number,
            errored: true,
            error: expect.stringMatching(error) as string,
          },
        },
      ]);
      expect(result.costUsd, what).toBeCloseTo(answer + graderCost, 12);
    }
  });
});
