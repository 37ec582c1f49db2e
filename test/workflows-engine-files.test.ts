import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isProcessAlive } from '../src/agents/repo-lock.js';
import {
  answerGate,
  cancelWorkflowRun,
  resumeWorkflow,
  runWorkflow,
  workflowStatus,
  type WorkflowEventRecord,
} from '../src/workflows/index.js';
import { ProviderRegistry } from '../src/providers/registry.js';
import { loadScenario } from '../src/sim/scenario.js';
import { startSimulator } from '../src/sim/server.js';
import { stateDir } from './workflows-engine-support.js';
import { waitFor } from './helpers/wait-for.js';

// Conductor-format files through the real loader and the real step executors (set, script, gate,
// for_each, parallel, sub-workflow, terminate): what `switchboard workflow run` does under the CLI.

const PARENT = `
workflow:
  name: tour
  entry_point: plan
  input:
    topic: { type: string, required: true }
  limits: { max_iterations: 30 }
output:
  summary: "{{ finish.output.summary }}"
agents:
  - name: plan
    type: set
    values:
      items: '["a", "b", "c"]'
    routes: [{ to: each }]
  - name: count
    type: script
    command: node
    args: ["-e", "console.log(JSON.stringify({ n: {{ each.outputs | length }} }))"]
    routes:
      - { to: checks, when: "n == 3" }
      - { to: $end }
  - name: lint
    type: set
    value: "lint ok"
  - name: spell
    type: set
    value: "spelling ok"
  - name: approve
    type: human_gate
    prompt: "Ship {{ workflow.input.topic }} ({{ count.output.n }} items)?"
    options:
      - { label: Ship, value: ship, route: child }
      - { label: Stop, value: stop, route: stop }
  - name: child
    type: workflow
    workflow: child.yaml
    input_mapping:
      word: "{{ each.outputs | join('') }}"
    routes: [{ to: finish }]
  - name: finish
    type: set
    values:
      summary: "{{ workflow.input.topic }} - {{ child.output.shout }} after {{ checks.outputs.lint }}"
  - name: stop
    type: terminate
    status: failed
    reason: "stopped at the gate"
for_each:
  - name: each
    type: for_each
    source: plan.output.items
    as: item
    agent:
      name: upper
      type: set
      value: "{{ item | upper }}"
    routes: [{ to: count }]
parallel:
  - name: checks
    agents: [lint, spell]
    routes: [{ to: approve }]
`;

const CHILD = `
workflow:
  name: child
  entry_point: shout
  input:
    word: { type: string, required: true }
output:
  shout: "{{ shout.output }}!"
agents:
  - name: shout
    type: set
    value: "{{ workflow.input.word }}"
`;

function files(): { dir: string; file: string } {
  const dir = stateDir();
  writeFileSync(join(dir, 'tour.yaml'), PARENT);
  writeFileSync(join(dir, 'child.yaml'), CHILD);
  return { dir, file: join(dir, 'tour.yaml') };
}

describe('workflow files end to end', () => {
  it('runs a Conductor file to its gate, then to the end once the gate is answered', async () => {
    const { dir, file } = files();
    const parked = await runWorkflow({
      file,
      inputs: { topic: 'docs' },
      stateDir: join(dir, '.switchboard'),
    });
    expect(parked).toMatchObject({
      status: 'waiting',
      step: 'approve',
      gate: { step: 'approve', prompt: 'Ship docs (3 items)?' },
    });
    const done = await answerGate({ runId: parked.id, choice: 'ship', stateDir: join(dir, '.switchboard') });
    expect(done).toMatchObject({ status: 'completed', output: { summary: 'docs - ABC! after lint ok' } });
    expect(done.steps.filter((step) => step.key.split('/').length === 3).map((step) => step.step)).toEqual([
      'plan',
      'each',
      'count',
      'checks',
      'approve',
      'child',
      'finish',
    ]);
  });

  it('ends with a terminate step’s failure, and refuses to resume once the file was edited', async () => {
    const { dir, file } = files();
    const state = join(dir, '.switchboard');
    const parked = await runWorkflow({ file, inputs: { topic: 'docs' }, stateDir: state });
    const stopped = await answerGate({ runId: parked.id, choice: 'stop', stateDir: state });
    expect(stopped).toMatchObject({ status: 'failed', step: 'stop' });
    writeFileSync(file, PARENT.replace('limits: { max_iterations: 30 }', 'limits: { max_iterations: 31 }'));
    await expect(resumeWorkflow({ runId: parked.id, stateDir: state })).rejects.toMatchObject({
      code: 'WORKFLOW_CHANGED',
    });
    expect((await workflowStatus(parked.id, { stateDir: state })).status).toBe('failed');
  });

  it('names the missing input of a file in one line', async () => {
    const { dir, file } = files();
    await expect(runWorkflow({ file, stateDir: join(dir, '.switchboard') })).rejects.toMatchObject({
      code: 'WORKFLOW_INVALID',
      message: expect.stringContaining('"topic"'),
    });
  });
});

/** Whether any process of the group the script led is still there (its backgrounded sleep included). */
function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

const SLEEPER = (limits: string) => `
workflow:
  name: sleeper
  entry_point: nap
  limits: ${limits}
agents:
  - name: nap
    type: script
    command: sh
    args: ["-c", "sleep 30 & sleep 30"]
    routes: [{ to: after }]
  - name: after
    type: set
    value: done
`;

describe('stopping a running script step', () => {
  it('cancel marks the run cancelled and the running script’s process tree dies', async () => {
    const dir = stateDir();
    const file = join(dir, 'sleeper.yaml');
    writeFileSync(file, SLEEPER('{ max_iterations: 5 }'));
    const state = join(dir, '.switchboard');
    const events: WorkflowEventRecord[] = [];
    const running = runWorkflow({ file, stateDir: state, onEvent: (event) => events.push(event) });
    await waitFor(() => events.some((event) => event.type === 'process-start'));
    const pid = Number(events.find((event) => event.type === 'process-start')?.data?.['pid']);
    expect(isProcessAlive(pid)).toBe(true);
    const runId = events[0]?.runId as string;
    const cancelled = await cancelWorkflowRun(runId, { stateDir: state });
    expect(cancelled.status).toBe('cancelled');
    expect(await running).toMatchObject({ status: 'cancelled', step: 'nap' });
    await waitFor(() => !isProcessAlive(pid) && !groupAlive(pid));
    expect(await resumeWorkflow({ runId, stateDir: state })).toMatchObject({ status: 'cancelled' });
  });

  it('timeout_seconds stops the running script and fails the run with WORKFLOW_LIMIT', async () => {
    const dir = stateDir();
    const file = join(dir, 'sleeper.yaml');
    writeFileSync(file, SLEEPER('{ max_iterations: 5, timeout_seconds: 1 }'));
    const state = join(dir, '.switchboard');
    const events: WorkflowEventRecord[] = [];
    const result = await runWorkflow({ file, stateDir: state, onEvent: (event) => events.push(event) });
    expect(result).toMatchObject({ status: 'failed', errorCode: 'WORKFLOW_LIMIT', step: 'nap' });
    expect(result.error).toMatch(/timeout_seconds \(1\)/);
    const pid = Number(events.find((event) => event.type === 'process-start')?.data?.['pid']);
    await waitFor(() => !isProcessAlive(pid) && !groupAlive(pid));
  });
});

describe('the draft-review example through the engine', () => {
  it('drafts, loops review and revise on the simulator, parks at the gate and publishes once answered', async () => {
    const folder = join(import.meta.dirname, '../examples/workflows');
    const sim = await startSimulator({
      scenario: loadScenario(join(folder, 'draft-review.scenario.json')),
      maxLifetimeMs: 60_000,
    });
    const providers = new ProviderRegistry({
      anthropic: { baseUrl: sim.url, apiKey: 'sk-ant-sim-engine-0001' },
      gemini: { baseUrl: sim.url, apiKeys: ['sim-engine-key-0001'] },
    });
    try {
      const state = join(stateDir(), '.switchboard');
      const file = join(folder, 'draft-review.yaml');
      const parked = await runWorkflow({
        file,
        inputs: { topic: 'idempotency keys' },
        stateDir: state,
        providers,
      });
      expect(parked).toMatchObject({ status: 'waiting', gate: { step: 'decide' } });
      expect(parked.costUsd).toBeGreaterThan(0);
      const done = await answerGate({ runId: parked.id, choice: 'publish', stateDir: state, providers });
      expect(done).toMatchObject({ status: 'completed', output: { published: true } });
      expect(done.steps.map((step) => `${step.step}:${step.status}`)).toEqual([
        'draft:completed',
        'review:completed',
        'revise:completed',
        'review:completed',
        'decide:completed',
      ]);
    } finally {
      await providers.close();
      await sim.close();
    }
  });
});
