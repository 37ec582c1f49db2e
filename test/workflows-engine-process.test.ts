import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openLedger } from '../src/store/ledger.js';
import { WorkflowStore } from '../src/store/workflow-records.js';
import { startWorkflowRun } from '../src/workflows/engine-start.js';
import { workflowStatus } from '../src/workflows/index.js';
import { isProcessAlive } from '../src/agents/repo-lock.js';
import type { WorkflowDefinition } from '../src/workflows/model.js';
import { completions, openAiAgainstSimulator } from './helpers/openai-sim.js';
import {
  engineOptions,
  forEach,
  gateStep,
  llmStep,
  setStep,
  stateDir,
  workflow,
} from './workflows-engine-support.js';
import { waitFor } from './helpers/wait-for.js';

// Several real processes on one ledger file: kill -9 at each step boundary then resume, two resumers at
// once, a gate answered from another process, a cancel that reaches the owner's running step.

const dist = resolve(import.meta.dirname, '../dist');

/**
 * A child process driving the engine from the built library: the test's workflow (sent as JSON), the
 * test executors, and a hook that SIGKILLs the process itself at a named boundary of a named key.
 */
const CHILD = `
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import { execFileSync, spawn } from 'node:child_process';
const config = JSON.parse(process.argv[2]);
const { startWorkflowRun } = await import('${dist}/workflows/engine-start.js');
const api = await import('${dist}/workflows/index.js');
const { coerceJson } = await import('${dist}/workflows/engine-deps.js');
const revive = (raw) => ({ ...raw, steps: new Map(raw.steps), groups: new Map(raw.groups) });
const definition = revive(config.definition);
const children = Object.fromEntries(Object.entries(config.children ?? {}).map(([file, raw]) => [file, revive(raw)]));
let providers;
if (config.openAiBaseUrl) {
  const { ProviderRegistry } = await import('${dist}/providers/registry.js');
  const { createOpenAiProvider } = await import('${dist}/providers/openai/openai-provider.js');
  providers = new ProviderRegistry();
  providers.register(createOpenAiProvider({ baseUrl: config.openAiBaseUrl, apiKey: 'sk-test-wf-key-0001' }));
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const set = async (context) => {
  if (context.step.name === config.blockStep) {
    writeFileSync(config.dir + '/blocked-' + process.pid, '');
    if (config.spawnChild) {
      const child = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
      // Written whole, then renamed: the test waits for the file to exist and reads it at once.
      writeFileSync(config.dir + '/child-pid.tmp', String(child.pid));
      renameSync(config.dir + '/child-pid.tmp', config.dir + '/child-pid');
      context.signal.addEventListener('abort', () => process.kill(-child.pid, 'SIGKILL'), { once: true });
    }
    while (!existsSync(config.dir + '/release') && !context.signal.aborted) await sleep(20);
    if (context.signal.aborted) return { status: 'failed', costUsd: 0, error: { code: 'ABORTED', message: 'aborted' } };
  }
  const output = {};
  for (const [name, template] of Object.entries(context.step.values ?? {})) output[name] = coerceJson(context.render(template, 'values.' + name));
  return { status: 'completed', output, costUsd: 0 };
};
const agent = async (context) => {
  const spec = context.resolveSpec(context.step.provider, context.step.model);
  const result = await context.call(spec, { prompt: context.render(context.step.prompt, 'prompt') });
  return { status: 'completed', output: { text: result.text }, costUsd: result.costUsd ?? 0 };
};
const options = {
  stateDir: config.dir,
  ...(providers ? { providers } : {}),
  _internal: {
    executors: { set, agent },
    load: (file) => children[file.split('/').pop()] ?? definition,
    pollMs: 50,
    onBoundary: (boundary, key) => {
      if (config.killAt && boundary === config.killAt.boundary && key === config.killAt.key) process.kill(process.pid, 'SIGKILL');
    },
  },
};
try {
  const result =
    config.mode === 'start' ? await startWorkflowRun(definition, { ...options, runId: config.runId })
    : config.mode === 'resume' ? await api.resumeWorkflow({ ...options, runId: config.runId })
    : await api.answerGate({ ...options, runId: config.runId, choice: config.choice, answeredBy: 'other-process' });
  process.stdout.write(JSON.stringify({ result }));
} catch (error) {
  process.stdout.write(JSON.stringify({ error: { code: error.code, message: error.message, hint: error.hint } }));
  process.exitCode = 3;
}
await providers?.close();
`;

interface ChildOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  json?: {
    result?: { status: string; steps: unknown[] };
    error?: { code: string; message: string; hint?: string };
  };
}

let scriptFile: string | undefined;
const children: ReturnType<typeof spawn>[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

function serialise(definition: WorkflowDefinition) {
  return { ...definition, steps: [...definition.steps], groups: [...definition.groups] };
}

function runChild(
  config: Record<string, unknown>,
  env: Record<string, string> = {},
): { done: Promise<ChildOutcome>; pid: number } {
  if (scriptFile === undefined) {
    scriptFile = join(stateDir(), 'child.mjs');
    writeFileSync(scriptFile, CHILD);
  }
  const child = spawn(process.execPath, [scriptFile, JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  children.push(child);
  let stdout = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const done = new Promise<ChildOutcome>((resolveDone) =>
    child.on('close', (code, signal) => {
      let json: ChildOutcome['json'];
      try {
        json = JSON.parse(stdout) as ChildOutcome['json'];
      } catch {
        json = undefined;
      }
      resolveDone({ code, signal, stdout, ...(json === undefined ? {} : { json }) });
    }),
  );
  return { done, pid: child.pid as number };
}

const chain = () =>
  workflow(
    [
      setStep('a', { v: '"A"' }, [{ to: 'b' }]),
      llmStep('b', 'Continue {{ a.output.v }}', [{ to: 'c' }]),
      setStep('c', { v: '{{ a.output.v }}-{{ b.output.text }}' }),
    ],
    { output: { v: '{{ c.output.v }}' } },
  );

// gpt-4.1-mini: 10 in / 1,200 out costs $0.001924 an answer.
const ANSWER_COST = (10 * 0.4 + 1_200 * 1.6) / 1_000_000;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('kill -9 at each step boundary, then resume', () => {
  for (const [boundary, calls, attempts] of [
    ['step-start', 1, 2],
    ['step-effect', 2, 2],
    ['step-complete', 1, 1],
  ] as const) {
    it(`at ${boundary}: outputs equal an uninterrupted run, each key completes once, no cost counted twice`, async () => {
      const { sim } = await openAiAgainstSimulator(
        { rules: [{ reply: { text: 'ok', usage: { input: 10, output: 1_200 } } }] },
        cleanups,
      );
      const dir = stateDir();
      const definition = chain();
      const base = {
        dir,
        definition: serialise(definition),
        openAiBaseUrl: sim.openAiBaseUrl,
        runId: 'run-kill',
      };
      // The last case kills through the environment variable the CLI's tests use.
      const killed =
        boundary === 'step-complete'
          ? await runChild({ ...base, mode: 'start' }, { SWITCHBOARD_TEST_KILL_AT: `${boundary}:/b/0` }).done
          : await runChild({ ...base, mode: 'start', killAt: { boundary, key: 'run-kill/b/0' } }).done;
      expect(killed.signal).toBe('SIGKILL');
      // The dead owner's fields stay in the row; status must not call its step running.
      const interrupted = (await workflowStatus('run-kill', { stateDir: dir })).steps.find(
        (step) => step.key === 'run-kill/b/0',
      );
      expect(interrupted?.status).toBe(boundary === 'step-complete' ? 'completed' : 'interrupted');
      const resumed = await runChild({ ...base, mode: 'resume' }).done;
      expect(resumed.json?.error).toBeUndefined();
      expect(resumed.json?.result).toMatchObject({ status: 'completed', output: { v: 'A-ok' } });
      expect(completions(sim)).toHaveLength(calls);
      const store = await WorkflowStore.open({ stateDir: dir });
      const rows = await store.steps('run-kill');
      await store.close();
      expect(rows.map((row) => [row.key, row.status])).toEqual([
        ['run-kill/a/0', 'completed'],
        ['run-kill/b/0', 'completed'],
        ['run-kill/c/0', 'completed'],
      ]);
      expect(rows[1]?.attempt).toBe(attempts);
      const ledger = openLedger({ stateDir: dir });
      expect((await ledger.callStats()).calls).toBe(calls);
      expect(await ledger.spendSince(0, { tag: 'workflow_run=run-kill' })).toBeCloseTo(
        calls * ANSWER_COST,
        9,
      );
      await ledger.close();
      expect((await workflowStatus('run-kill', { stateDir: dir })).costUsd).toBeCloseTo(
        calls * ANSWER_COST,
        9,
      );
    });
  }
});

describe('kill -9 inside a for_each group, then resume', () => {
  it('reruns only the item that was running; finished items keep their single execution', async () => {
    const dir = stateDir();
    const definition = workflow(
      [
        setStep('find', { items: '[1, 2, 3, 4]' }, [{ to: 'each' }]),
        setStep('sum', { total: '{{ each.outputs | map(attribute="double") | sum }}' }),
      ],
      {
        groups: [
          forEach('each', 'find.output.items', setStep('work', { double: '{{ item * 2 }}' }), {
            maxConcurrent: 1,
            routes: [{ to: 'sum' }],
          }),
        ],
        output: { total: '{{ sum.output.total }}' },
      },
    );
    const base = { dir, definition: serialise(definition), runId: 'run-each' };
    const killed = await runChild({
      ...base,
      mode: 'start',
      killAt: { boundary: 'step-effect', key: 'run-each/each/0/2' },
    }).done;
    expect(killed.signal).toBe('SIGKILL');
    const resumed = await runChild({ ...base, mode: 'resume' }).done;
    expect(resumed.json?.result).toMatchObject({ status: 'completed', output: { total: 20 } });
    const store = await WorkflowStore.open({ stateDir: dir });
    const attempts = Object.fromEntries(
      (await store.steps('run-each')).map((row) => [row.key.slice('run-each/'.length), row.attempt]),
    );
    await store.close();
    expect(attempts).toEqual({
      'find/0': 1,
      'each/0': 2,
      'each/0/0': 1,
      'each/0/1': 1,
      'each/0/2': 2,
      'each/0/3': 1,
      'sum/0': 1,
    });
  });
});

describe('kill -9 inside a sub-workflow, then resume the parent', () => {
  it('continues the same child run: its finished steps are not run again', async () => {
    const dir = stateDir();
    const child = workflow(
      [
        setStep('one', { v: '{{ workflow.input.x }}1' }, [{ to: 'two' }]),
        setStep('two', { v: '{{ one.output.v }}2' }),
      ],
      {
        file: '/virtual/child.yaml',
        name: 'child',
        input: { x: { type: 'string', required: true } },
        output: { v: '{{ two.output.v }}' },
      },
    );
    const parent = workflow(
      [
        setStep('start', { x: '"go"' }, [{ to: 'sub' }]),
        {
          type: 'workflow',
          name: 'sub',
          workflow: 'child.yaml',
          inputMapping: { x: '{{ start.output.x }}' },
          routes: [{ to: 'end' }],
          input: [],
        },
        setStep('end', { v: '{{ sub.output.v }}' }),
      ],
      { output: { v: '{{ end.output.v }}' } },
    );
    const base = {
      dir,
      definition: serialise(parent),
      children: { 'child.yaml': serialise(child) },
      runId: 'run-sub',
    };
    const killed = await runChild({
      ...base,
      mode: 'start',
      killAt: { boundary: 'step-effect', key: 'run-sub.sub.0/two/0' },
    }).done;
    expect(killed.signal).toBe('SIGKILL');
    const resumed = await runChild({ ...base, mode: 'resume' }).done;
    expect(resumed.json?.result).toMatchObject({ status: 'completed', output: { v: 'go12' } });
    const store = await WorkflowStore.open({ stateDir: dir });
    const attempts = async (runId: string) =>
      (await store.steps(runId)).map((row) => `${row.step}:${row.attempt}`);
    expect(await attempts('run-sub')).toEqual(['start:1', 'sub:2', 'end:1']);
    expect(await attempts('run-sub.sub.0')).toEqual(['one:1', 'two:2']);
    await store.close();
  });
});

describe('one process advances a run at a time', () => {
  it('of two resumers started together, one advances and the other is told who holds the run', async () => {
    const dir = stateDir();
    const definition = workflow([
      setStep('a', { v: '1' }, [{ to: 'b' }]),
      setStep('b', { v: '2' }, [{ to: 'c' }]),
      setStep('c', { v: '3' }),
    ]);
    const base = { dir, definition: serialise(definition), runId: 'run-two' };
    const killed = await runChild({
      ...base,
      mode: 'start',
      killAt: { boundary: 'step-start', key: 'run-two/b/0' },
    }).done;
    expect(killed.signal).toBe('SIGKILL');
    const first = runChild({ ...base, mode: 'resume', blockStep: 'b' });
    const second = runChild({ ...base, mode: 'resume', blockStep: 'b' });
    const loser = await Promise.race([first.done, second.done]);
    expect(loser.code).toBe(3);
    expect(loser.json?.error?.code).toBe('WORKFLOW_LOCKED');
    expect(loser.json?.error?.message).toMatch(
      /^workflow run run-two is being advanced by pid \d+ on \S+ \(heartbeat \d+s ago\)$/,
    );
    expect(loser.json?.error?.hint).toMatch(/wait for it/);
    // The winner holds the run; it reaches step b (and blocks there) in its own time.
    await waitFor(() => readdirSync(dir).some((name) => name.startsWith('blocked-')), {
      what: 'the winner at b',
    });
    expect(readdirSync(dir).filter((name) => name.startsWith('blocked-'))).toHaveLength(1);
    writeFileSync(join(dir, 'release'), '');
    const winner = await (loser === (await first.done) ? second.done : first.done);
    expect(winner.json?.result).toMatchObject({ status: 'completed' });
    expect((winner.json?.result?.steps ?? []).length).toBe(3);
  });
});

describe('gates and cancel across processes', () => {
  it('continues a parked run from another process that answers its gate', async () => {
    const dir = stateDir();
    const definition = workflow(
      [
        gateStep('approve', [{ value: 'ship', route: 'ship' }]),
        setStep('ship', { by: '{{ approve.output.selected }}' }),
      ],
      { output: { by: '{{ ship.output.by }}' } },
    );
    const parked = await startWorkflowRun(definition, {
      ...engineOptions(dir, definition),
      runId: 'run-remote',
    });
    expect(parked.status).toBe('waiting');
    const answered = await runChild({
      dir,
      definition: serialise(definition),
      runId: 'run-remote',
      mode: 'answer',
      choice: 'ship',
    }).done;
    expect(answered.json?.result).toMatchObject({ status: 'completed', output: { by: 'ship' } });
    const store = await WorkflowStore.open({ stateDir: dir });
    expect(
      (await store.events('run-remote')).find((event) => event.type === 'gate-answer')?.data,
    ).toMatchObject({
      answeredBy: 'other-process',
    });
    await store.close();
  });

  it('cancel from another process aborts the owner’s running step, whose child process dies', async () => {
    const dir = stateDir();
    const definition = workflow([setStep('a', {}, [{ to: 'b' }]), setStep('b', { v: '2' })]);
    const owner = runChild({
      dir,
      definition: serialise(definition),
      runId: 'run-cancel',
      mode: 'start',
      blockStep: 'b',
      spawnChild: true,
    });
    await waitFor(() => existsSync(join(dir, 'child-pid')));
    const sleeper = Number(readFileSync(join(dir, 'child-pid'), 'utf8'));
    expect(isProcessAlive(sleeper)).toBe(true);
    const { cancelWorkflowRun } = await import('../src/workflows/index.js');
    const cancelled = await cancelWorkflowRun('run-cancel', { stateDir: dir });
    expect(cancelled.status).toBe('cancelled');
    const ended = await owner.done;
    expect(ended.json?.result).toMatchObject({ status: 'cancelled' });
    await waitFor(() => !isProcessAlive(sleeper));
    expect(
      (await workflowStatus('run-cancel', { stateDir: dir })).steps.map((step) => [step.step, step.status]),
    ).toEqual([
      ['a', 'completed'],
      ['b', 'failed'],
    ]);
  });
});

describe('the engine modules load in any order', () => {
  it('imports each engine module first in a fresh process without tripping over an import cycle', () => {
    for (const module of [
      'steps/sub-workflow.js',
      'steps/index.js',
      'engine-step.js',
      'engine-child.js',
      'index.js',
    ]) {
      const script = `await import(${JSON.stringify(join(dist, 'workflows', module))});`;
      expect(() =>
        execFileSync(process.execPath, ['--input-type=module', '-e', script], { stdio: 'pipe' }),
      ).not.toThrow();
    }
  });
});
