import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SwitchboardError } from '../../core/errors.js';
import { openLedger, type Ledger } from '../../store/ledger.js';
import { renderTemplate } from '../template.js';
import type { StepDefinition, WorkflowDefinition } from '../model.js';
import type { StepContext, TemplateScope, WorkflowEvent } from '../step-executor.js';

/** What a test gives: the step, and what of the run it needs. */
export interface TestContextOptions {
  /** Scope entries beside `workflow` (finished steps as `{<name>: {output}}`, loop variables). */
  scope?: TemplateScope;
  /** `workflow.input`. */
  input?: Record<string, unknown>;
  signal?: AbortSignal;
  deadline?: number;
  /** Notes an interrupted earlier attempt recorded (`StepContext.previous`). */
  previous?: Record<string, unknown>;
}

/** A `StepContext`, and the events and progress notes its executor recorded. */
export interface TestContext {
  context: StepContext;
  events: WorkflowEvent[];
  progress: Record<string, unknown>[];
}

/**
 * A real `StepContext` for one step, for the step executors' own tests: real template rendering, a
 * ledger opened on first use in a temporary folder. What only the engine can do (calls, sub-workflows,
 * gates) throws. The engine builds the contexts of real runs.
 */
export function testStepContext(step: StepDefinition, options: TestContextOptions = {}): TestContext {
  const stateDir = mkdtempSync(join(tmpdir(), 'switchboard-step-'));
  const workflow = testWorkflow(step, stateDir);
  const scope: TemplateScope = {
    workflow: { input: options.input ?? {}, name: workflow.name, dir: workflow.dir, file: workflow.file },
    context: { iteration: 1, history: [] },
    ...options.scope,
  };
  const events: WorkflowEvent[] = [];
  const progress: Record<string, unknown>[] = [];
  let ledger: Ledger | undefined;
  const engineOnly = (what: string): never => {
    throw new SwitchboardError('INTERNAL', `the test step context has no ${what}`);
  };
  const context: StepContext = {
    workflow,
    step,
    runId: 'run-test',
    key: `run-test/${step.name}/1`,
    visit: 0,
    attempt: 1,
    scope,
    render: (template, field, extra) =>
      renderTemplate(template, { ...scope, ...extra }, { file: workflow.file, step: step.name, field }),
    stateDir,
    get ledger() {
      ledger ??= openLedger({ stateDir });
      return ledger;
    },
    call: () => engineOnly('call()'),
    resolveSpec: () => engineOnly('provider resolution'),
    mcpServers: {},
    signal: options.signal ?? new AbortController().signal,
    recordProgress: (notes) => progress.push(notes),
    emit: (event) => events.push(event),
    runChild: () => engineOnly('sub-workflows'),
    gateAnswer: () => undefined,
  };
  if (options.deadline !== undefined) context.deadline = options.deadline;
  if (options.previous !== undefined) context.previous = options.previous;
  return { context, events, progress };
}

function testWorkflow(step: StepDefinition, dir: string): WorkflowDefinition {
  return {
    file: join(dir, 'test.yaml'),
    dir,
    hash: '0'.repeat(64),
    name: 'test',
    entryPoint: step.name,
    input: {},
    limits: { maxIterations: 10, budgetMode: 'audit' },
    runtime: { mcpServers: {} },
    metadata: {},
    contextMode: 'accumulate',
    output: {},
    steps: new Map([[step.name, step]]),
    groups: new Map(),
    warnings: [],
  };
}
