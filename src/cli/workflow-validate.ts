import { relative } from 'node:path';
import { EXIT_CODES, isSwitchboardError } from '../core/errors.js';
import type { Problem } from '../workflows/format/index.js';
import type { StepDefinition, WorkflowDefinition } from '../workflows/model.js';

/** How a step's provider is resolved: the config's map under `--provider-map`, `--provider`, the roles. */
export interface ProviderSettings {
  providerMap: Record<string, string>;
  provider?: string;
  roles: Record<string, string>;
}

/** What `validate --json` prints. */
export interface ValidateReport {
  file: string;
  valid: boolean;
  problems: Problem[];
  warnings: Problem[];
}

/**
 * `workflow validate FILE`: every problem the loader and the format's checks find, plus providers
 * mapped nowhere, listed on stdout; exit 0 when there are none (warnings allowed), WORKFLOW_INVALID
 * otherwise, with one line on stderr saying so.
 */
export async function validateFile(file: string, providers: ProviderSettings, json: boolean): Promise<void> {
  const { loadWorkflow, validateWorkflow } = await import('../workflows/format/index.js');
  const shown = displayName(file);
  let report: ValidateReport;
  let summary: string | undefined;
  let placed = false;
  try {
    const definition = loadWorkflow(file);
    const checks = validateWorkflow(definition);
    report = {
      file: shown,
      valid: false,
      problems: [...checks.errors, ...(await providerProblems(definition, providers))],
      warnings: [...checks.warnings, ...(await providerNotices(definition, providers))],
    };
    report.valid = report.problems.length === 0;
    summary = `${definition.steps.size} step${definition.steps.size === 1 ? '' : 's'}, ${definition.groups.size} group${definition.groups.size === 1 ? '' : 's'}; starts at ${definition.entryPoint}`;
  } catch (error) {
    // The loader stops at the first problem (the file cannot be read as a workflow at all).
    if (!isSwitchboardError(error) || error.code !== 'WORKFLOW_INVALID') throw error;
    // Its message already names the file, line, step and field; `--json` readers get them apart too.
    const message = error.hint === undefined ? error.message : `${error.message} (${error.hint})`;
    const problem: Problem = { message };
    const { step, field } = error.details ?? {};
    if (typeof step === 'string') problem.step = step;
    if (typeof field === 'string') problem.field = field;
    report = { file: shown, valid: false, problems: [problem], warnings: [] };
    placed = true;
  }
  if (json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else process.stdout.write(reportText(report, summary, placed));
  if (report.valid) return;
  const count = `${report.problems.length} problem${report.problems.length === 1 ? '' : 's'}`;
  process.stderr.write(
    `switchboard: ${shown} is not a valid workflow: ${count} (fix ${report.problems.length === 1 ? 'it' : 'them'} as listed, then validate again)\n`,
  );
  process.exitCode = EXIT_CODES.WORKFLOW_INVALID;
}

/** The file as the user would write it: relative to the working directory when it is below it. */
function displayName(file: string): string {
  const shown = relative(process.cwd(), file);
  return shown === '' || shown.startsWith('..') ? file : shown;
}

function problemLine(kind: 'error' | 'warning', problem: Problem, placed = false): string {
  if (placed) return `${kind.padEnd(8)} ${problem.message}`;
  const where = [problem.step, problem.field === undefined ? undefined : `field "${problem.field}"`]
    .filter((part) => part !== undefined)
    .join(': ');
  return `${kind.padEnd(8)} ${where === '' ? '' : `${where}: `}${problem.message}`;
}

/**
 * The report as text. `placed`: the one problem is the loader's, whose message already starts with
 * the file, line, step and field.
 */
function reportText(report: ValidateReport, summary: string | undefined, placed: boolean): string {
  const counts = [
    `${report.problems.length} problem${report.problems.length === 1 ? '' : 's'}`,
    `${report.warnings.length} warning${report.warnings.length === 1 ? '' : 's'}`,
  ].join(', ');
  const head = report.valid ? `${report.file}: valid (${summary ?? ''})` : `${report.file}: ${counts}`;
  const lines = [
    head,
    ...report.problems.map((problem) => problemLine('error', problem, placed)),
    ...report.warnings.map((problem) => problemLine('warning', problem)),
  ];
  return `${lines.join('\n')}\n`;
}

/** The LLM steps (top-level and for_each inline) whose provider must resolve to a spec. */
function llmSteps(definition: WorkflowDefinition): StepDefinition[] {
  const inline = [...definition.groups.values()].flatMap((group) =>
    group.kind === 'for_each' ? [group.agent] : [],
  );
  return [...definition.steps.values(), ...inline].filter(
    (step) => step.type === 'agent' && step.git === undefined,
  );
}

/** Warnings naming the `copilot` steps that will run on Claude Code and the tools that will not run, as `run` says too. */
async function providerNotices(
  definition: WorkflowDefinition,
  settings: ProviderSettings,
): Promise<Problem[]> {
  const { stepProviderNotices } = await import('../workflows/providers.js');
  const notices = stepProviderNotices(
    llmSteps(definition),
    {
      runtime: { provider: definition.runtime.provider, defaultModel: definition.runtime.defaultModel },
      providerMap: settings.providerMap,
      override: settings.provider,
      roles: settings.roles,
    },
    definition.runtime.mcpServers,
  );
  return notices.map((message) => ({ message }));
}

/** A problem for each LLM step whose provider nothing maps (templated models are left to run time). */
async function providerProblems(
  definition: WorkflowDefinition,
  settings: ProviderSettings,
): Promise<Problem[]> {
  const { resolveStepSpec } = await import('../workflows/providers.js');
  const problems: Problem[] = [];
  for (const step of llmSteps(definition)) {
    if (step.type !== 'agent' || step.model?.includes('{{') === true) continue;
    try {
      resolveStepSpec({
        provider: step.provider,
        model: step.model,
        runtime: { provider: definition.runtime.provider, defaultModel: definition.runtime.defaultModel },
        providerMap: settings.providerMap,
        override: settings.provider,
        roles: settings.roles,
      });
    } catch (error) {
      if (!isSwitchboardError(error)) throw error;
      const message = error.hint === undefined ? error.message : `${error.message} (${error.hint})`;
      problems.push({ step: step.name, field: 'provider', message });
    }
  }
  return problems;
}
