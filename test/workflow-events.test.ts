import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Scenario } from '../src/sim/scenario.js';
import type { WorkflowRunResult } from '../src/workflows/api-types.js';
import { agentCliSuite } from './helpers/agent-cli.js';
import { filesHolding } from './helpers/planted.js';
import { runCli } from './helpers/run-cli.js';

// Issue 25: a run's events show each step's work. One run of the built CLI with a Claude Code step that
// reads a file (a tool loop), a script that lists items, a for_each over them, a gate answered from a
// second process and an `effects: git` step that commits: `workflow logs --json` holds all of it, in the
// order it happened, and no planted secret. The real Claude Code binary plays against the simulator.

const { fixture, simUrl } = agentCliSuite();

interface LoggedEvent {
  runId: string;
  seq: number;
  at: string;
  type: string;
  step?: string;
  key?: string;
  data?: Record<string, unknown>;
}

const SCENARIO: Scenario = {
  rules: [
    // The git step (its system prompt names it) writes a file, then says it is done.
    {
      name: 'write',
      match: { system: 'step implement', turn: 1 },
      reply: { tool: { name: 'Write', input: { file_path: 'feature.txt', content: 'shipped\n' } } },
    },
    { name: 'written', match: { system: 'step implement' }, reply: { text: 'Added feature.txt.' } },
    // Each for_each item is one call to the Anthropic API.
    { name: 'shout', match: { text: '^Shout' }, reply: { text: 'LOUDLY: ', echo: true } },
    // The reading step reads NOTES.md, then answers with what it read.
    {
      name: 'read',
      match: { turn: 1 },
      reply: { tool: { name: 'Read', input: { file_path: 'NOTES.md' } } },
    },
    { name: 'answer', match: { turn: 2 }, reply: { text: 'From the notes: ', echo: true } },
  ],
  fallback: { text: 'ok' },
};

function workflow(repo: string): string {
  return `workflow:
  name: traced
  entry_point: reader
  runtime:
    provider: claude-agent-sdk
    working_dir: ${JSON.stringify(repo)}
agents:
  - name: reader
    model: claude-haiku-4.5
    prompt: Read NOTES.md and tell me the codeword.
    routes:
      - to: list
  - name: list
    type: script
    command: node
    args: ['-e', 'console.log(JSON.stringify({ items: ["red", "green", "blue"] })); console.error("token=" + process.env.DEPLOY_TOKEN)']
    routes:
      - to: shout
  - name: approve
    type: human_gate
    prompt: Ship {{ shout.outputs | length }} colours?
    options:
      - { label: Ship, value: ship, route: implement }
      - { label: Stop, value: stop, route: $end }
  - name: implement
    type: agent
    model: claude-haiku-4.5
    prompt: Add feature.txt
    tools: [Read, Write]
    effects: git
    merge: branch
    limits: { max_attempts: 1 }
    routes:
      - to: $end
for_each:
  - name: shout
    type: for_each
    source: list.output.items
    as: colour
    max_concurrent: 1
    agent:
      name: shout
      provider: claude
      model: claude-haiku-4.5
      prompt: Shout {{ colour }}
    routes:
      - to: $end
        when: "{{ shout.outputs | length < 3 }}"
      - to: approve
`;
}

describe('a run’s events show each step’s work', () => {
  it('a tool loop, a script, a for_each, a gate and a git step are all in `workflow logs --json`, in order, with no secret', async () => {
    const f = await fixture(SCENARIO);
    const codeword = `codeword-${randomBytes(4).toString('hex')}`;
    writeFileSync(join(f.repo, 'NOTES.md'), `The ${codeword} opens the door.\n`);
    // Planted secrets: the API key the run is given, and a token in the .env of the folder it runs in,
    // which the script prints on stderr.
    const apiKey = `sk-ant-events-${randomBytes(8).toString('hex')}`;
    const deployToken = `deploy-${randomBytes(12).toString('hex')}`;
    writeFileSync(join(f.root, '.env'), `DEPLOY_TOKEN=${deployToken}\n`);
    writeFileSync(join(f.root, 'traced.yaml'), workflow(f.repo));
    const env = { ...f.env, ANTHROPIC_API_KEY: apiKey, ANTHROPIC_BASE_URL: simUrl() };
    const cli = (args: string[]) => runCli(args, { cwd: f.root, env });

    const parked = await cli(['workflow', 'run', 'traced.yaml', '--json']);
    expect(parked.status, parked.stderr).toBe(52);
    const runId = (JSON.parse(parked.stdout) as WorkflowRunResult).id;
    const answered = await cli(['workflow', 'gate', runId, 'approve', '--choose', 'ship', '--json']);
    expect(answered.status, answered.stderr).toBe(0);
    const done = JSON.parse(answered.stdout) as WorkflowRunResult;
    expect(done.status).toBe('completed');

    const logs = await cli(['workflow', 'logs', runId, '--json']);
    expect(logs.status, logs.stderr).toBe(0);
    const events = logs.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as LoggedEvent);
    // One log, numbered in the order it was written.
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    const types = events.map((event) => event.type);
    const first = (type: string, step?: string): number =>
      events.findIndex((event) => event.type === type && (step === undefined || event.step === step));
    const only = (type: string, step?: string): LoggedEvent => {
      const found = events.filter(
        (event) => event.type === type && (step === undefined || event.step === step),
      );
      expect(found, `${type} ${step ?? ''}`).toHaveLength(1);
      return found[0] as LoggedEvent;
    };

    // The run starts with its graph: every step and group, their routes and conditions.
    expect(types[0]).toBe('run-start');
    const graph = events[0]?.data?.['graph'] as {
      entryPoint: string;
      steps: {
        name: string;
        type: string;
        provider?: string;
        model?: string;
        routes: { to: string; when?: string }[];
      }[];
      groups: { name: string; kind: string; source?: string; routes: { to: string; when?: string }[] }[];
    };
    expect(graph.entryPoint).toBe('reader');
    expect(graph.steps.map((step) => [step.name, step.type])).toEqual([
      ['reader', 'agent'],
      ['list', 'script'],
      ['approve', 'human_gate'],
      ['implement', 'agent'],
    ]);
    expect(graph.steps[0]).toMatchObject({ provider: 'claude-agent-sdk', model: 'claude-haiku-4.5' });
    expect(graph.groups[0]).toMatchObject({ name: 'shout', kind: 'for_each', source: 'list.output.items' });
    expect(graph.groups[0]?.routes[0]).toEqual({ to: '$end', when: '{{ shout.outputs | length < 3 }}' });

    // The reading step: its rendered prompt, then its session (a turn, the tool call, its result, a
    // turn), then its end with the output and the route it took.
    const reader = events.filter((event) => event.step === 'reader').map((event) => event.type);
    expect(reader).toEqual([
      'step-start',
      'step-prompt',
      'model-turn',
      'tool-call',
      'tool-result',
      'model-turn',
      'step-end',
    ]);
    expect(only('step-prompt', 'reader').data).toMatchObject({
      provider: 'claude:claude-haiku-4-5',
      prompt: 'Read NOTES.md and tell me the codeword.',
    });
    expect(only('tool-call', 'reader').data).toMatchObject({
      tool: 'Read',
      input: expect.stringContaining('NOTES.md'),
    });
    expect(String(only('tool-result', 'reader').data?.['result'])).toContain(codeword);
    const turn = events.find((event) => event.type === 'model-turn' && event.step === 'reader');
    expect(turn?.data).toMatchObject({
      model: expect.stringMatching(/haiku/),
      inputTokens: expect.any(Number),
    });
    const readerEnd = only('step-end', 'reader');
    expect(readerEnd.data).toMatchObject({ status: 'completed', next: 'list', route: { index: 0 } });
    expect(String((readerEnd.data?.['output'] as { result?: string }).result)).toContain(codeword);

    // The script: what it printed, bounded, with its exit code; the secret it printed is redacted.
    const script = only('script-output', 'list');
    expect(script.data).toMatchObject({ exitCode: 0, stdout: expect.stringContaining('"items"') });
    // The script was handed the .env's token and printed it: the event has it redacted.
    expect(String(script.data?.['stderr'])).toMatch(/^token=\[redacted\]\s*$/);

    // The for_each: its start, each item as a step of its own (start, output, end) in item order, its end.
    const itemStarts = events.filter(
      (event) => event.type === 'step-start' && event.data?.['group'] !== undefined,
    );
    expect(itemStarts.map((event) => event.data?.['item'])).toEqual([0, 1, 2]);
    const items = events.filter((event) => event.step === 'shout' && event.key?.split('/').length === 4);
    expect(items.map((event) => event.type)).toEqual(
      Array.from({ length: 3 }, () => ['step-start', 'step-prompt', 'model-turn', 'step-end']).flat(),
    );
    const itemEnds = items.filter((event) => event.type === 'step-end');
    expect(itemEnds.map((event) => (event.data?.['output'] as { result: string }).result)).toEqual([
      'LOUDLY: Shout red',
      'LOUDLY: Shout green',
      'LOUDLY: Shout blue',
    ]);
    // An API call is one model turn: provider, model, tokens, its cost and how long it took.
    expect(items.find((event) => event.type === 'model-turn')?.data).toMatchObject({
      provider: 'anthropic:claude-haiku-4-5',
      inputTokens: expect.any(Number),
      outputTokens: expect.any(Number),
      costUsd: expect.any(Number),
      durationMs: expect.any(Number),
    });
    expect(first('group-start', 'shout')).toBeLessThan(events.indexOf(itemStarts[0] as LoggedEvent));
    // How many items there are, before the first one starts: what `n/N` counts to.
    expect(only('group-members', 'shout').data).toMatchObject({ count: itemStarts.length });
    expect(first('group-members', 'shout')).toBeLessThan(events.indexOf(itemStarts[0] as LoggedEvent));
    const groupEnd = only('group-end', 'shout');
    // The first route's condition did not hold: the second one, without one, was taken.
    expect(groupEnd.data).toMatchObject({ status: 'completed', next: 'approve', route: { index: 1 } });

    // The gate: presented with its prompt and options, the run parked; then the answer and who gave it.
    expect(only('gate-presented', 'approve').data).toMatchObject({
      prompt: 'Ship 3 colours?',
      options: [expect.objectContaining({ value: 'ship' }), expect.objectContaining({ value: 'stop' })],
    });
    expect(first('gate-presented')).toBeLessThan(first('run-waiting'));
    expect(first('run-waiting')).toBeLessThan(first('gate-answer'));
    expect(only('gate-answer').data).toMatchObject({ choice: 'ship', answeredBy: expect.any(String) });
    expect(only('gate-taken', 'approve').data).toMatchObject({ choice: 'ship' });

    // The git step: its session (Write), then its commit on its branch, then its end.
    const implement = events.filter((event) => event.step === 'implement').map((event) => event.type);
    expect(implement.indexOf('tool-call')).toBeGreaterThan(implement.indexOf('step-start'));
    expect(only('tool-call', 'implement').data).toMatchObject({ tool: 'Write' });
    expect(implement.indexOf('git-commit')).toBeGreaterThan(implement.indexOf('tool-result'));
    expect(implement.at(-1)).toBe('step-end');
    expect(types.at(-1)).toBe('run-end');
    expect(events.at(-1)?.data).toMatchObject({ status: 'completed' });

    // `status --json`: per step its tokens, output and latest event; the run's latest events.
    const status = JSON.parse(
      (await cli(['workflow', 'status', runId, '--json'])).stdout,
    ) as WorkflowRunResult;
    const readerView = status.steps.find((step) => step.step === 'reader');
    expect(readerView?.tokens?.input).toBeGreaterThan(0);
    expect(JSON.stringify(readerView?.output)).toContain(codeword);
    expect(readerView?.lastEvent?.type).toBe('step-end');
    expect(status.events?.at(-1)?.type).toBe('run-end');

    // No planted secret in any event, in what the commands printed, or in any file of the state folder.
    const printed = [parked.stdout, parked.stderr, answered.stdout, answered.stderr, logs.stdout].join('\n');
    for (const secret of [apiKey, deployToken]) expect(printed).not.toContain(secret);
    expect(filesHolding(join(f.root, 'state'), [apiKey, deployToken])).toEqual([]);
    expect(readFileSync(join(f.root, '.env'), 'utf8')).toContain(deployToken);
  });
});
