import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call } from '../../src/invoke/call.js';
import type { ProviderRegistry } from '../../src/providers/registry.js';
import type { Ledger } from '../../src/store/ledger.js';
import type { StepDefinition, WorkflowDefinition, WorkflowRuntime } from '../../src/workflows/model.js';
import type { StepContext, WorkflowEvent } from '../../src/workflows/step-executor.js';
import { resolveStepSpec } from '../../src/workflows/providers.js';
import { renderTemplate } from '../../src/workflows/template.js';

// A StepContext as the engine would build one, for tests of one step type: real template rendering,
// the real call() over a given registry, progress notes and events kept in arrays. The engine builds
// the real ones (with the run's ledger rows, budgets and fencing).

export interface TestStepContext extends StepContext {
  /** Every `recordProgress` write, oldest first. */
  progress: Record<string, unknown>[];
  events: WorkflowEvent[];
  /** Specs `call` was given, in order. */
  specs: string[];
}

export interface TestStepContextOptions {
  step: StepDefinition;
  dir: string;
  stateDir: string;
  registry?: ProviderRegistry;
  ledger?: Ledger;
  runId?: string;
  visit?: number;
  /** The key's item part (`<run>/<step>/<visit>/<item>`). */
  item?: string;
  scope?: Record<string, unknown>;
  previous?: Record<string, unknown>;
  runtime?: Partial<WorkflowRuntime>;
  mcpServers?: StepContext['mcpServers'];
  signal?: AbortSignal;
  /** Wall-clock end of the step (ms since epoch). */
  deadline?: number;
}

export function testStepContext(options: TestStepContextOptions): TestStepContext {
  const { step, dir } = options;
  const runId = options.runId ?? 'run-1';
  const visit = options.visit ?? 0;
  const workflow: WorkflowDefinition = {
    file: `${dir}/workflow.yaml`,
    dir,
    hash: '0'.repeat(64),
    name: 'test-workflow',
    entryPoint: step.name,
    input: {},
    limits: { maxIterations: 10, budgetMode: 'audit' },
    // The folder of the test, never the process's current directory (the checkout the tests run in).
    runtime: { mcpServers: {}, workingDir: dir, ...options.runtime },
    metadata: {},
    contextMode: 'accumulate',
    output: {},
    steps: new Map([[step.name, step]]),
    groups: new Map(),
    warnings: [],
  };
  const scope = options.scope ?? { workflow: { input: {}, name: workflow.name, dir } };
  const progress: Record<string, unknown>[] = [];
  const events: WorkflowEvent[] = [];
  const specs: string[] = [];
  const key = `${runId}/${step.name}/${visit}${options.item === undefined ? '' : `/${options.item}`}`;
  const context: TestStepContext = {
    workflow,
    step,
    runId,
    key,
    visit,
    attempt: options.previous === undefined ? 1 : 2,
    scope,
    render: (template, field, extra) =>
      renderTemplate(template, { ...scope, ...extra }, { file: workflow.file, step: step.name, field }),
    stateDir: options.stateDir,
    ledger: options.ledger as Ledger,
    call: (spec, request, callOptions = {}) => {
      specs.push(spec);
      return call(
        spec,
        { ...request, tags: { workflow_run: runId, workflow_step: key } },
        {
          ...callOptions,
          ledger: options.ledger ?? false,
          ...(options.registry === undefined ? {} : { providers: options.registry }),
          retry: { baseDelayMs: 1, ...callOptions.retry },
        },
      );
    },
    resolveSpec: (provider, model) =>
      resolveStepSpec({ provider: provider ?? 'claude', model, runtime: workflow.runtime, step: step.name }),
    mcpServers: options.mcpServers ?? {},
    signal: options.signal ?? new AbortController().signal,
    recordProgress: async (notes) => {
      progress.push(structuredClone(notes));
    },
    emit: async (event) => {
      events.push(event);
    },
    runChild: () => Promise.reject(new Error('no sub-workflows in step tests')),
    gateAnswer: async () => undefined,
    progress,
    events,
    specs,
  };
  if (options.previous !== undefined) context.previous = options.previous;
  if (options.deadline !== undefined) context.deadline = options.deadline;
  return context;
}

/** What the simple step types' tests give: the step's scope, `workflow.input`, and run state. */
export interface SimpleContextOptions {
  /** Scope entries beside `workflow` (finished steps as `{<name>: {output}}`, loop variables). */
  scope?: Record<string, unknown>;
  input?: Record<string, unknown>;
  signal?: AbortSignal;
  deadline?: number;
  previous?: Record<string, unknown>;
}

/** A context for a step that needs no provider (script, set, wait, terminate), in a fresh temporary folder. */
export function simpleStepContext(
  step: StepDefinition,
  options: SimpleContextOptions = {},
): { context: TestStepContext; events: WorkflowEvent[]; progress: Record<string, unknown>[] } {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-step-'));
  const scope = {
    workflow: { input: options.input ?? {}, name: 'test-workflow', dir, file: `${dir}/workflow.yaml` },
    context: { iteration: 1, history: [] },
    ...options.scope,
  };
  const context = testStepContext({
    step,
    dir,
    stateDir: dir,
    scope,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    ...(options.deadline === undefined ? {} : { deadline: options.deadline }),
    ...(options.previous === undefined ? {} : { previous: options.previous }),
  });
  return { context, events: context.events, progress: context.progress };
}
