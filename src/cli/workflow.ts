import { InvalidArgumentError, type Command } from 'commander';
import type { SwitchboardConfig } from '../core/config.js';
import { EXIT_CODES, exitCodeFor, SwitchboardError, type ErrorCode } from '../core/errors.js';
import type { ProviderRegistry } from '../providers/registry.js';
import type {
  ResumeWorkflowOptions,
  WorkflowEngineOptions,
  WorkflowEventRecord,
  WorkflowRunResult,
} from '../workflows/api-types.js';
import type { WorkflowJobOptions } from '../workers/queues.js';
import { commandConfig, warn, type GlobalFlags } from './shared.js';
import {
  createRunView,
  dollars,
  eventLine,
  gateCommand,
  questionsCommand,
  gateText,
  runLine,
  statusText,
  type RunView,
} from './workflow-view.js';

/** Flags of every command that advances a run (`run`, `resume`, `gate`). */
interface EngineFlags {
  /** Record the request and queue it for a `switchboard worker --queues workflows` instead of advancing here. */
  enqueue?: boolean;
  provider?: string;
  providerMap?: Record<string, string>;
  skipGates?: boolean;
  allowMcp?: boolean;
  json?: boolean;
}

interface RunFlags extends EngineFlags {
  input?: Record<string, string>;
  runId?: string;
  dryRun?: boolean;
}

interface ResumeFlags extends EngineFlags {
  migrate?: boolean;
  maxIterations?: number;
  timeout?: number;
  budget?: number;
}

interface GateFlags extends EngineFlags {
  choose?: string;
  answer?: Record<string, string>;
  text?: string;
  by?: string;
  continue?: boolean;
}

/** Input and provider names as Conductor writes them: a letter or `_`, then letters, digits, `_`, `-`, `.`. */
const NAME = /^[A-Za-z_][\w.-]*$/;

/** `-i name=value` (repeatable): the value is kept as written; the engine coerces it to the input's type. */
function collectInput(value: string, previous: Record<string, string> | undefined): Record<string, string> {
  return collectPair(value, previous, 'name=value, e.g. -i issue=42');
}

/** `--answer id=text` (repeatable): a questions step's answer to one question. */
function collectAnswer(value: string, previous: Record<string, string> | undefined): Record<string, string> {
  return collectPair(value, previous, 'id=text, e.g. --answer q1="yes, by Friday"');
}

/** `--provider-map name=spec` (repeatable). */
function collectProvider(
  value: string,
  previous: Record<string, string> | undefined,
): Record<string, string> {
  return collectPair(value, previous, 'name=spec, e.g. --provider-map copilot=claude:sonnet');
}

function collectPair(
  value: string,
  previous: Record<string, string> | undefined,
  expected: string,
): Record<string, string> {
  const split = value.indexOf('=');
  const name = split < 0 ? '' : value.slice(0, split).trim();
  if (split < 0 || !NAME.test(name)) throw new InvalidArgumentError(`expected ${expected}`);
  if (previous !== undefined && Object.hasOwn(previous, name))
    throw new InvalidArgumentError(`"${name}" is given twice; give each name once`);
  return { ...previous, [name]: value.slice(split + 1) };
}

function wholeNumber(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1)
    throw new InvalidArgumentError('expected a whole number of 1 or more');
  return number;
}

function positiveNumber(value: string): number {
  const number = Number(value);
  if (value.trim() === '' || !Number.isFinite(number) || number <= 0)
    throw new InvalidArgumentError('expected a positive number');
  return number;
}

function settingsOf(command: Command): SwitchboardConfig {
  return commandConfig(command.optsWithGlobals<GlobalFlags>());
}

function quiet(command: Command): boolean {
  return command.optsWithGlobals<GlobalFlags>().quiet === true;
}

/**
 * The engine's options from the config and the flags: `workflows.provider_map` in switchboard.yaml
 * under `--provider-map`. A value (or `--provider`) that names a role of switchboard.yaml becomes its
 * chain; anything else goes to the engine as written, which also takes a bare provider
 * (`copilot=anthropic`: the step's model on Anthropic).
 */
async function engineOptions(
  settings: SwitchboardConfig,
  flags: EngineFlags,
  view: RunView,
  signal: AbortSignal,
): Promise<WorkflowEngineOptions & { providers: ProviderRegistry }> {
  const roles = settings.call.roles;
  const role = (spec: string): string => (Object.hasOwn(roles, spec) ? (roles[spec] as string) : spec);
  const providerMap = Object.fromEntries(
    Object.entries({ ...settings.workflows.providerMap, ...flags.providerMap }).map(([name, spec]) => [
      name,
      role(spec),
    ]),
  );
  // The providers and call settings every step uses, set up as `switchboard call` sets them up.
  const setup = await import('./call-setup.js');
  const options: WorkflowEngineOptions & { providers: ProviderRegistry } = {
    stateDir: settings.stateDir,
    providers: setup.providerRegistry(settings),
    callDefaults: setup.configCallOptions(settings),
    providerMap,
    roles,
    onEvent: (event) => view.onEvent(event),
    abortSignal: signal,
  };
  if (flags.provider !== undefined) options.provider = role(flags.provider);
  if (flags.skipGates === true) options.skipGates = true;
  if (flags.allowMcp === true) options.allowMcp = true;
  return options;
}

/** Ctrl-C or SIGTERM stops the run cleanly: the engine kills the running step's process tree and records where it stopped. */
function abortOnSignals(): AbortController {
  const controller = new AbortController();
  const stop = (): void =>
    controller.abort(
      new SwitchboardError('ABORTED', 'the run was interrupted', {
        hint: 'continue it with `switchboard workflow resume RUN`',
      }),
    );
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return controller;
}

/**
 * Runs `advance` (a run, resume or continuing gate) with the live view and the providers, then
 * reports the result and sets the exit code.
 */
async function advanceRun(
  command: Command,
  flags: EngineFlags,
  steps: readonly string[],
  advance: (options: WorkflowEngineOptions) => Promise<WorkflowRunResult>,
): Promise<WorkflowRunResult> {
  const settings = settingsOf(command);
  const view = createRunView({ quiet: quiet(command), steps });
  const controller = abortOnSignals();
  const options = await engineOptions(settings, flags, view, controller.signal);
  let result: WorkflowRunResult;
  try {
    result = await advance(options);
  } finally {
    view.stop();
    await options.providers.close();
  }
  return result;
}

/** The exit code a run's state stands for: 0 completed, WORKFLOW_WAITING parked, its error's code failed. */
export function exitCodeOfRun(result: WorkflowRunResult): number {
  switch (result.status) {
    case 'completed':
      return EXIT_CODES.OK;
    case 'waiting':
      return EXIT_CODES.WORKFLOW_WAITING;
    case 'cancelled':
      return EXIT_CODES.WORKFLOW_CANCELLED;
    case 'running':
      // Returned while still running only when another process advances it.
      return EXIT_CODES.WORKFLOW_LOCKED;
    case 'failed':
      return exitCodeFor((result.errorCode ?? 'WORKFLOW_FAILED') as ErrorCode);
  }
}

/** Which limit ended the run, read from the engine's message (the result carries no more). */
function limitFix(result: WorkflowRunResult): string {
  const id = result.id;
  const error = result.error ?? '';
  if (error.includes('max_visits'))
    return `raise max_visits or add on_cap in the file, then: switchboard workflow resume ${id} --migrate`;
  if (error.includes('timeout_seconds'))
    return `raise the limit: switchboard workflow resume ${id} --timeout SECONDS`;
  if (error.includes('max_iterations'))
    return `raise the limit: switchboard workflow resume ${id} --max-iterations N`;
  return `raise the limit: switchboard workflow resume ${id} --max-iterations N (or --timeout SECONDS)`;
}

/** What to do next about a run that did not complete, for the one-line message on stderr. */
function nextStep(result: WorkflowRunResult): string {
  const id = result.id;
  if (result.terminatedBy !== undefined)
    return `the workflow's terminate step "${result.terminatedBy}" ended it: resuming reports the same end; start a new run to go again`;
  switch (result.errorCode) {
    case 'WORKFLOW_LIMIT':
      return limitFix(result);
    case 'BUDGET_EXCEEDED':
      return `raise the budget: switchboard workflow resume ${id} --budget USD`;
    case 'WORKFLOW_INVALID':
      return `fix the file (or map its provider: --provider-map NAME=SPEC), then: switchboard workflow resume ${id}`;
    case 'ABORTED':
      return `continue it: switchboard workflow resume ${id}`;
    case 'WORKFLOW_TEMPLATE':
      return `fix the template, then: switchboard workflow resume ${id} --migrate`;
    default:
      return `see switchboard workflow status ${id} and logs ${id}; switchboard workflow resume ${id} continues at the failed step`;
  }
}

/** Prints a run's result (one JSON object with `--json`) and sets the exit code by its status. */
function reportResult(result: WorkflowRunResult, json: boolean): void {
  for (const warning of result.warnings ?? []) warn(warning);
  if (json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  else {
    const at = result.step === undefined ? '' : ` at ${result.step}`;
    const count = `${result.steps.length} step${result.steps.length === 1 ? '' : 's'}`;
    process.stdout.write(`${result.id}: ${result.status}${at} (${count}, ${dollars(result.costUsd)})\n`);
    if (result.gate !== undefined) process.stdout.write(`${gateText(result.id, result.gate).join('\n')}\n`);
    // A workflow without `output:` ends with `{}`: nothing worth a line.
    if (result.output !== undefined && Object.keys(result.output).length > 0)
      process.stdout.write(`${JSON.stringify(result.output, null, 2)}\n`);
  }
  process.exitCode = exitCodeOfRun(result);
  if (result.status === 'waiting') {
    const gate = result.gate;
    const fix =
      gate?.questions !== undefined
        ? `answer it: ${questionsCommand(result.id, gate)}`
        : gate === undefined || gate.options[0] === undefined
          ? `answer it: switchboard workflow gate ${result.id} --choose VALUE`
          : `answer it: ${gateCommand(result.id, gate, gate.options[0].value)}`;
    process.stderr.write(
      `switchboard: run ${result.id} is waiting at gate "${gate?.step ?? result.step ?? '?'}" (${fix})\n`,
    );
  } else if (result.status === 'failed') {
    process.stderr.write(
      `switchboard: ${result.error ?? result.errorCode ?? 'the workflow failed'} (${nextStep(result)})\n`,
    );
  } else if (result.status === 'cancelled') {
    process.stderr.write(
      `switchboard: run ${result.id} was cancelled (see switchboard workflow status ${result.id})\n`,
    );
  } else if (result.status === 'running') {
    process.stderr.write(
      `switchboard: run ${result.id} is being advanced by another process (follow it: switchboard workflow logs ${result.id} --follow)\n`,
    );
  }
}

/**
 * `run --dry-run`: nothing ran, so the exit code says only that the file, the inputs and the entry
 * step's template are good; the output holds the entry point, the typed inputs and the rendered prompt.
 */
function reportDryRun(result: WorkflowRunResult, json: boolean): void {
  for (const warning of result.warnings ?? []) warn(warning);
  if (json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  else {
    process.stdout.write(
      `${result.workflow}: valid; a run would start at ${result.step ?? '?'} (dry run: nothing ran)\n`,
    );
    if (result.output !== undefined) process.stdout.write(`${JSON.stringify(result.output, null, 2)}\n`);
  }
  process.exitCode = EXIT_CODES.OK;
}

/** The flags `run`, `resume` and `gate` share: how steps reach providers, gates and MCP servers. */
function addEngineFlags(command: Command): Command {
  return command
    .option(
      '--provider <spec>',
      'spec, chain or role every LLM step uses unless the provider map names its provider, e.g. claude:haiku',
    )
    .option(
      '--provider-map <name=spec>',
      'map a Conductor provider name to a spec, e.g. copilot=claude:sonnet; repeatable; over workflows.provider_map',
      collectProvider,
    )
    .option('--skip-gates', "take each human gate's first option instead of parking the run")
    .option('--allow-mcp', "let steps start the workflow's MCP servers (off by default)")
    .option(
      '--enqueue',
      'let a `switchboard worker --queues workflows` advance the run (needs SWITCHBOARD_DATABASE_URL); print the run id',
    )
    .option('--json', 'print the result as one JSON object on stdout');
}

/** The step and group names of a workflow file, for the live view's pending count (none when unreadable). */
async function declaredSteps(file: string): Promise<string[]> {
  const { loadWorkflow } = await import('../workflows/format/index.js');
  try {
    const definition = loadWorkflow(file);
    return [...definition.steps.keys(), ...definition.groups.keys()];
  } catch {
    // The engine loads the file again and reports the problem as the run's error.
    return [];
  }
}

export function registerWorkflowCommand(program: Command): void {
  const workflow = program
    .command('workflow')
    .alias('wf')
    .description(
      'run Conductor-format workflows, checkpointed at every step: run, resume, status, ls, gate, guide, cancel, validate, logs',
    );
  addRunCommand(workflow);
  addResumeCommand(workflow);
  addStatusCommand(workflow);
  addLsCommand(workflow);
  addGateCommand(workflow);
  addGuideCommand(workflow);
  addCancelCommand(workflow);
  addValidateCommand(workflow);
  addLogsCommand(workflow);
}

function addRunCommand(workflow: Command): void {
  addEngineFlags(
    workflow
      .command('run')
      .description('start a run of a workflow file and advance it until it ends or parks at a gate')
      .argument('<file>', 'the workflow file (Conductor YAML)')
      .option('-i, --input <name=value>', 'a workflow input; repeatable', collectInput)
      .option('--run-id <id>', 'the id of the new run (default: generated)')
      .option('--dry-run', 'validate and render the entry step without running anything'),
  ).action(async (file: string, flags: RunFlags, command: Command) => {
    if (flags.enqueue === true) {
      await enqueueRun(command, file, flags);
      return;
    }
    const { runWorkflow } = await import('../workflows/index.js');
    const start = (options: WorkflowEngineOptions): Promise<WorkflowRunResult> =>
      runWorkflow({
        ...options,
        file,
        inputs: flags.input ?? {},
        ...(flags.runId === undefined ? {} : { runId: flags.runId }),
        ...(flags.dryRun === true ? { dryRun: true } : {}),
      });
    if (flags.dryRun === true) {
      const settings = settingsOf(command);
      const options = await engineOptions(
        settings,
        flags,
        createRunView({ quiet: true }),
        new AbortController().signal,
      );
      try {
        reportDryRun(await start(options), flags.json === true);
      } finally {
        await options.providers.close();
      }
      return;
    }
    // Only a live view counts pending steps; a pipe's lines need no second read of the file.
    const steps = process.stderr.isTTY === true && !quiet(command) ? await declaredSteps(file) : [];
    reportResult(await advanceRun(command, flags, steps, start), flags.json === true);
  });
}

/** What the enqueuer's flags ask of the worker that advances the run. */
function jobOptions(settings: SwitchboardConfig, flags: EngineFlags): WorkflowJobOptions {
  const roles = settings.call.roles;
  const role = (spec: string): string => (Object.hasOwn(roles, spec) ? (roles[spec] as string) : spec);
  const job: WorkflowJobOptions = {};
  if (flags.provider !== undefined) job.provider = role(flags.provider);
  if (flags.providerMap !== undefined)
    job.providerMap = Object.fromEntries(
      Object.entries(flags.providerMap).map(([name, spec]) => [name, role(spec)]),
    );
  if (flags.skipGates === true) job.skipGates = true;
  if (flags.allowMcp === true) job.allowMcp = true;
  return job;
}

/**
 * `run --enqueue`: the file and inputs are checked as `run` checks them, the run is recorded in the
 * shared database and a worker advances it; prints the run id.
 */
async function enqueueRun(command: Command, file: string, flags: RunFlags): Promise<void> {
  if (flags.dryRun === true) {
    throw new SwitchboardError('INVALID_INPUT', '--enqueue and --dry-run do not go together', {
      hint: 'check the file with --dry-run first, then queue it with --enqueue',
    });
  }
  const settings = settingsOf(command);
  const { requireWorkerDatabase } = await import('../workers/queues.js');
  const url = requireWorkerDatabase(settings);
  const { enqueueWorkflowRun } = await import('../workers/enqueue-workflow.js');
  const queued = await enqueueWorkflowRun({
    url,
    settings: settings.workers,
    stateDir: settings.stateDir,
    file,
    inputs: flags.input ?? {},
    ...(flags.runId === undefined ? {} : { runId: flags.runId }),
    job: jobOptions(settings, flags),
  });
  // `id`, as `run --json` names the run: one name for one thing in every command's output.
  const { runId, ...rest } = queued;
  if (flags.json === true) process.stdout.write(`${JSON.stringify({ id: runId, ...rest }, null, 2)}\n`);
  else process.stdout.write(`${runId}\n`);
  if (!queued.created && queued.jobId === undefined && !quiet(command)) {
    process.stderr.write(
      `switchboard: run_key names run ${queued.runId} (${queued.status}); no second job was queued (see switchboard workflow status ${queued.runId})\n`,
    );
  }
}

/** `gate --enqueue`, `resume --enqueue`: a worker continues the run; prints its id. */
async function enqueueAdvance(
  command: Command,
  runId: string,
  job: WorkflowJobOptions,
  json: boolean,
  what: 'gate' | 'resume',
): Promise<void> {
  const settings = settingsOf(command);
  const { requireWorkerDatabase } = await import('../workers/queues.js');
  const url = requireWorkerDatabase(settings);
  const { workflowStatus } = await import('../workflows/index.js');
  // The full id (a prefix may have been given) is the job's key, and a missing run is refused here.
  const run = await workflowStatus(runId, { stateDir: settings.stateDir });
  const { enqueueWorkflowAdvance } = await import('../workers/enqueue-workflow.js');
  const jobId = await enqueueWorkflowAdvance({ runId: run.id, url, settings: settings.workers, job });
  if (json) process.stdout.write(`${JSON.stringify({ id: run.id, jobId: jobId ?? null }, null, 2)}\n`);
  else process.stdout.write(`${run.id}\n`);
  if (!quiet(command)) {
    const queued = jobId === undefined ? 'a job was already queued for it' : 'queued for a worker';
    const recorded = what === 'gate' ? 'answer recorded; ' : '';
    process.stderr.write(
      `switchboard: ${recorded}run ${run.id} ${queued} (follow it: switchboard workflow logs ${run.id} --follow)\n`,
    );
  }
}

function addResumeCommand(workflow: Command): void {
  addEngineFlags(
    workflow
      .command('resume')
      .description(
        'continue a run at its first step without a completed row (after a crash, a limit, a failure)',
      )
      .argument('<run>', 'run id')
      .option(
        '--migrate',
        'resume under an edited workflow file (its hash differs from the one the run pinned)',
      )
      .option('--max-iterations <n>', "raise the run's max_iterations", wholeNumber)
      .option('--timeout <seconds>', "raise the run's timeout_seconds", positiveNumber)
      .option('--budget <usd>', "raise the run's budget_usd", positiveNumber),
  ).action(async (runId: string, flags: ResumeFlags, command: Command) => {
    const { resumeWorkflow } = await import('../workflows/index.js');
    const limits: NonNullable<ResumeWorkflowOptions['limits']> = {};
    if (flags.maxIterations !== undefined) limits.maxIterations = flags.maxIterations;
    if (flags.timeout !== undefined) limits.timeoutSeconds = flags.timeout;
    if (flags.budget !== undefined) limits.budgetUsd = flags.budget;
    if (flags.enqueue === true) {
      const job = { ...jobOptions(settingsOf(command), flags), resume: true };
      if (flags.migrate === true) job.migrate = true;
      if (Object.keys(limits).length > 0) job.limits = limits;
      await enqueueAdvance(command, runId, job, flags.json === true, 'resume');
      return;
    }
    const result = await advanceRun(command, flags, [], (options) => {
      const resume: ResumeWorkflowOptions = { ...options, runId };
      if (flags.migrate === true) resume.migrate = true;
      if (Object.keys(limits).length > 0) resume.limits = limits;
      return resumeWorkflow(resume);
    });
    reportResult(result, flags.json === true);
  });
}

function addStatusCommand(workflow: Command): void {
  workflow
    .command('status')
    .description('show a run: status, current step, per-step table, pending gate, output')
    .argument('<run>', 'run id')
    .option('--json', 'print the run as one JSON object')
    .action(async (runId: string, flags: { json?: boolean }, command: Command) => {
      const { workflowStatus } = await import('../workflows/index.js');
      const result = await workflowStatus(runId, { stateDir: settingsOf(command).stateDir });
      process.stdout.write(flags.json === true ? `${JSON.stringify(result, null, 2)}\n` : statusText(result));
    });
}

function addLsCommand(workflow: Command): void {
  workflow
    .command('ls')
    .description('list runs, newest first')
    .option('--limit <n>', 'at most this many runs (default: all)', wholeNumber)
    .option('--json', 'print a JSON array')
    .action(async (flags: { json?: boolean; limit?: number }, command: Command) => {
      const { listWorkflowRuns } = await import('../workflows/index.js');
      const runs = await listWorkflowRuns({
        stateDir: settingsOf(command).stateDir,
        ...(flags.limit === undefined ? {} : { limit: flags.limit }),
      });
      if (flags.json === true) process.stdout.write(`${JSON.stringify(runs, null, 2)}\n`);
      else for (const run of runs) process.stdout.write(`${runLine(run)}\n`);
    });
}

function addGateCommand(workflow: Command): void {
  addEngineFlags(
    workflow
      .command('gate')
      .description(
        'answer a human gate (before or after the run reaches it) and, by default, continue the run here',
      )
      .argument('<run>', 'run id')
      .argument('[step]', 'the gate step (default: the gate the run is parked at)')
      .option('--choose <value>', "the option's value (a questions step: skip_all or abort)")
      .option('--text <text>', "text for the option's prompt_for field")
      .option('--answer <id=text>', "a questions step's answer to one question (repeatable)", collectAnswer)
      .option('--by <name>', 'who answered, as recorded in the ledger (default: your user name)')
      .option('--no-continue', 'only record the answer; the run continues at the next run or resume'),
  ).action(async (runId: string, step: string | undefined, flags: GateFlags, command: Command) => {
    if ((flags.choose === undefined) === (flags.answer === undefined)) {
      throw new SwitchboardError(
        'INVALID_INPUT',
        flags.choose === undefined ? 'nothing to answer with' : '--choose and --answer do not go together',
        {
          hint: 'a human_gate takes --choose VALUE; a questions step takes --answer ID=TEXT (repeatable) or --choose skip_all|abort',
        },
      );
    }
    const { answerGate } = await import('../workflows/index.js');
    const keepGoing = flags.continue !== false && flags.enqueue !== true;
    const chosen = flags.choose ?? 'answer';
    const answer = {
      runId,
      choice: chosen,
      ...(flags.answer === undefined ? {} : { answers: flags.answer }),
      continue: keepGoing,
      ...(step === undefined ? {} : { step }),
      ...(flags.text === undefined ? {} : { text: flags.text }),
      ...(flags.by === undefined ? {} : { answeredBy: flags.by }),
    };
    if (keepGoing) {
      const result = await advanceRun(command, flags, [], (options) => answerGate({ ...options, ...answer }));
      if (result.status !== 'running' && result.takenByOtherProcess !== true) {
        reportResult(result, flags.json === true);
        return;
      }
      // Another live process advances the run (waiting at this gate with a timeout): it takes the answer.
      if (flags.json === true) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      else
        process.stdout.write(
          `recorded ${chosen} for ${result.id}; the process advancing it takes the answer (follow it: switchboard workflow logs ${result.id} --follow)\n`,
        );
      return;
    }
    if (flags.enqueue === true) {
      // Checked before the answer is recorded: without the shared database no worker could continue it.
      const { requireWorkerDatabase } = await import('../workers/queues.js');
      requireWorkerDatabase(settingsOf(command));
    }
    const result = await answerGate({ stateDir: settingsOf(command).stateDir, ...answer });
    if (flags.enqueue === true && flags.continue !== false) {
      await enqueueAdvance(
        command,
        result.id,
        jobOptions(settingsOf(command), flags),
        flags.json === true,
        'gate',
      );
      return;
    }
    if (flags.json === true) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    else
      process.stdout.write(
        `recorded ${chosen} for gate ${step ?? result.gate?.step ?? result.step ?? ''} of ${result.id} (continue it: switchboard workflow resume ${result.id})\n`,
      );
  });
}

function addGuideCommand(workflow: Command): void {
  workflow
    .command('guide')
    .description(
      "steer a run: its next model turn (a step's next request) reads the text as a user message; from any process on the run's ledger",
    )
    .argument('<run>', 'run id')
    .argument('<text>', 'the words for the model')
    .option(
      '--step <name>',
      "only this step's model turns take it (default: whichever step calls a model next)",
    )
    .option('--by <name>', 'who sent it, as the model and the ledger see it (default: your user name)')
    .option('--json', 'print the recorded guidance as one JSON object')
    .action(
      async (
        runId: string,
        text: string,
        flags: { step?: string; by?: string; json?: boolean },
        command: Command,
      ) => {
        const { guideWorkflowRun } = await import('../workflows/index.js');
        const guidance = await guideWorkflowRun({
          stateDir: settingsOf(command).stateDir,
          runId,
          text,
          ...(flags.step === undefined ? {} : { step: flags.step }),
          ...(flags.by === undefined ? {} : { sentBy: flags.by }),
        });
        if (flags.json === true) process.stdout.write(`${JSON.stringify(guidance, null, 2)}\n`);
        else
          process.stdout.write(
            `recorded guidance ${guidance.id} for ${guidance.runId}; ${guidance.step === undefined ? 'the next model turn' : `the next model turn of "${guidance.step}"`} reads it (see where it lands: switchboard workflow logs ${guidance.runId})\n`,
          );
      },
    );
}

function addCancelCommand(workflow: Command): void {
  workflow
    .command('cancel')
    .description("stop a run: kill the running step's process tree, mark the run cancelled")
    .argument('<run>', 'run id')
    .option('--json', 'print the run as one JSON object')
    .action(async (runId: string, flags: { json?: boolean }, command: Command) => {
      const { cancelWorkflowRun } = await import('../workflows/index.js');
      const result = await cancelWorkflowRun(runId, { stateDir: settingsOf(command).stateDir });
      if (flags.json === true) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      else
        process.stdout.write(
          result.status === 'cancelled'
            ? `${result.id} cancelled\n`
            : `${result.id} had already ended (${result.status})\n`,
        );
    });
}

function addValidateCommand(workflow: Command): void {
  workflow
    .command('validate')
    .description(
      'check a workflow file without running it: keys, route targets, reachability, template references, loops, providers',
    )
    .argument('<file>', 'the workflow file')
    .option('--provider <spec>', 'check providers as `run --provider SPEC` would resolve them')
    .option(
      '--provider-map <name=spec>',
      'check providers with this mapping too, as `run --provider-map` would; repeatable',
      collectProvider,
    )
    .option('--json', 'print {file, valid, problems, warnings} as JSON')
    .action(async (file: string, flags: EngineFlags, command: Command) => {
      const { validateFile } = await import('./workflow-validate.js');
      const settings = settingsOf(command);
      await validateFile(
        file,
        {
          providerMap: { ...settings.workflows.providerMap, ...flags.providerMap },
          roles: settings.call.roles,
          ...(flags.provider === undefined ? {} : { provider: flags.provider }),
        },
        flags.json === true,
      );
    });
}

function addLogsCommand(workflow: Command): void {
  workflow
    .command('logs')
    .description("print a run's event log, oldest first")
    .argument('<run>', 'run id')
    .option('--follow', 'keep printing new events until the run completes, fails or is cancelled')
    .option('--json', 'one JSON object per event, one per line')
    .action(async (runId: string, flags: { follow?: boolean; json?: boolean }, command: Command) => {
      await printLogs(runId, settingsOf(command).stateDir, flags.follow === true, flags.json === true);
    });
}

const ENDED = new Set(['completed', 'failed', 'cancelled']);

/** Prints events after `afterSeq`; with `follow`, polls until the run has ended (a parked run is followed on). */
async function printLogs(runId: string, stateDir: string, follow: boolean, json: boolean): Promise<void> {
  const { readWorkflowEvents, workflowStatus } = await import('../workflows/index.js');
  let afterSeq: number | undefined;
  const print = (events: WorkflowEventRecord[]): void => {
    for (const event of events) {
      process.stdout.write(`${json ? JSON.stringify(event) : eventLine(event)}\n`);
      afterSeq = Math.max(afterSeq ?? event.seq, event.seq);
    }
  };
  const read = (): Promise<WorkflowEventRecord[]> =>
    readWorkflowEvents(runId, afterSeq === undefined ? { stateDir } : { stateDir, afterSeq });
  // The status is read before the events, so events written just before the run ended are still printed.
  let ended = ENDED.has((await workflowStatus(runId, { stateDir })).status);
  print(await read());
  if (!follow) return;
  const stopped = new AbortController();
  process.once('SIGINT', () => stopped.abort());
  while (!ended && !stopped.signal.aborted) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    ended = ENDED.has((await workflowStatus(runId, { stateDir })).status);
    print(await read());
  }
}
