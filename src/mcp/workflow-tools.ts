import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { configCallOptions } from '../cli/call-setup.js';
import { SwitchboardError } from '../core/errors.js';
import type {
  WorkflowEngineOptions,
  WorkflowEventRecord,
  WorkflowRunResult,
} from '../workflows/api-types.js';
import type { WorkflowDefinition } from '../workflows/model.js';
import { waitAtMost } from './background-runs.js';
import { checkCallerFile, checkRepository, checkWorkflow } from './command-policy.js';
import type { McpContext } from './context.js';
import { progressReporter, type ToolExtra } from './progress.js';
import {
  DEFAULT_WAIT_SECONDS,
  workflowGateInput,
  workflowGuideInput,
  workflowGuideOutput,
  workflowOutput,
  workflowRunInput,
  workflowStatusInput,
} from './schemas.js';
import { guarded, toolResult } from './tool-result.js';

/** Which provider every LLM step uses, as `workflow run --provider / --provider-map / --skip-gates`. */
interface EngineChoices {
  provider?: string | undefined;
  provider_map?: Record<string, string> | undefined;
  skip_gates?: boolean | undefined;
}

/** `workflow_run`, `workflow_status`, `workflow_gate`, `workflow_guide`: the workflow commands, on the same database. */
export function registerWorkflowTools(server: McpServer, context: McpContext): void {
  server.registerTool(
    'workflow_run',
    {
      title: 'Run a workflow',
      description:
        'Starts a run of a Conductor-format workflow file, checkpointed at every step (as `switchboard workflow run`). Answers when it ends or parks at a human gate (state "waiting": answer with workflow_gate), or after wait_seconds with state "running": ask workflow_status later.',
      inputSchema: workflowRunInput,
      outputSchema: workflowOutput,
      annotations: { openWorldHint: true },
    },
    guarded(async ({ file, inputs, run_id, wait_seconds, ...choices }, extra) => {
      checkCallerFile(context.commands, file, 'workflow file');
      const { newRunId } = await import('../workflows/engine-start.js');
      const { runWorkflow } = await import('../workflows/index.js');
      const runId = run_id ?? newRunId();
      return await advance(runId, wait_seconds, extra, context, (options) =>
        runWorkflow({ ...options, ...engineChoices(context, choices), file, inputs: inputs ?? {}, runId }),
      );
    }),
  );

  server.registerTool(
    'workflow_status',
    {
      title: 'State of a workflow run',
      description:
        'Status, current step, step table, pending gate and output of a workflow run, started here or by `switchboard workflow run` on the same state folder or database.',
      inputSchema: workflowStatusInput,
      outputSchema: workflowOutput,
      annotations: { readOnlyHint: true },
    },
    guarded(async ({ run_id, wait_seconds }) => {
      await context.runs.settle(`workflow:${run_id}`, wait_seconds ?? 0);
      const { workflowStatus } = await import('../workflows/index.js');
      return workflowResult(await workflowStatus(run_id, { stateDir: context.config.stateDir }));
    }),
  );

  server.registerTool(
    'workflow_gate',
    {
      title: 'Answer a human gate',
      description:
        'Records the answer to a human gate of a workflow run (before or after the run reaches it) and, unless continue is false, continues the run in this server.',
      inputSchema: workflowGateInput,
      outputSchema: workflowOutput,
      annotations: { openWorldHint: true },
    },
    guarded(async ({ run_id, step, choose, text, answers, by, continue: keepGoing, wait_seconds }, extra) => {
      if ((choose === undefined) === (answers === undefined)) {
        throw new SwitchboardError('INVALID_INPUT', 'give either choose or answers', {
          hint: 'a human_gate takes choose; a questions step takes answers {id: text} or choose skip_all|abort',
        });
      }
      const { answerGate } = await import('../workflows/index.js');
      const answer = {
        runId: run_id,
        choice: choose ?? 'answer',
        ...(answers === undefined ? {} : { answers }),
        continue: keepGoing !== false,
        ...(step === undefined ? {} : { step }),
        ...(text === undefined ? {} : { text }),
        ...(by === undefined ? {} : { answeredBy: by }),
      };
      // Recording alone is acting: the process parked at the gate, or a later resume, runs what follows.
      if (keepGoing === false) {
        const checked = (workflow: WorkflowDefinition) => checkWorkflow(context.commands, workflow);
        return workflowResult(
          await answerGate({ stateDir: context.config.stateDir, checkWorkflow: checked, ...answer }),
        );
      }
      return await advance(run_id, wait_seconds, extra, context, (options) =>
        answerGate({ ...options, ...engineChoices(context, {}), ...answer }),
      );
    }),
  );

  server.registerTool(
    'workflow_guide',
    {
      title: 'Steer a workflow run',
      description:
        "Records guidance for a running workflow run (as `switchboard workflow guide`): the next model turn of one of its steps (of step, when given) reads the text as a user message. A run parked at a gate passes it to the next step that calls a model. Answers with the guidance recorded; workflow_status's events show where it landed.",
      inputSchema: workflowGuideInput,
      outputSchema: workflowGuideOutput,
    },
    guarded(async ({ run_id, text, step, by }) => {
      const { guideWorkflowRun } = await import('../workflows/index.js');
      const guidance = await guideWorkflowRun({
        stateDir: context.config.stateDir,
        runId: run_id,
        text,
        ...(step === undefined ? {} : { step }),
        ...(by === undefined ? {} : { sentBy: by }),
      });
      return toolResult({ ...guidance });
    }),
  );
}

/**
 * Advances a run in the background with the server's providers, reporting each step as progress;
 * answers with the result when it comes within `waitSeconds`, else with the run's state so far.
 */
async function advance(
  runId: string,
  waitSeconds: number | undefined,
  extra: ToolExtra,
  context: McpContext,
  step: (options: WorkflowEngineOptions) => Promise<WorkflowRunResult>,
): Promise<CallToolResult> {
  const progress = progressReporter(extra);
  let started: () => void = () => undefined;
  const recorded = new Promise<void>((resolve) => (started = resolve));
  let id = runId;
  const options: WorkflowEngineOptions = {
    ...serverEngineOptions(context),
    onEvent: (event: WorkflowEventRecord) => {
      // A run_key may name an existing run: its events say which.
      id = event.runId;
      started();
      progress.report(`${event.type}${event.step === undefined ? '' : ` ${event.step}`}`);
    },
  };
  const work = context.runs.track(`workflow:${runId}`, step(options));
  try {
    // A bad file or input fails before the run is recorded: this call's error, whatever the wait.
    await Promise.race([recorded, work]);
    const waited = await waitAtMost(work, (waitSeconds ?? DEFAULT_WAIT_SECONDS) * 1000);
    if (waited.done) return workflowResult(waited.value);
    const { workflowStatus } = await import('../workflows/index.js');
    return workflowResult(await workflowStatus(id, { stateDir: context.config.stateDir }));
  } finally {
    progress.stop();
  }
}

/**
 * How this server advances a run: its providers and call defaults, the config's roles, and the command
 * policy checking every workflow file and repository the run reaches.
 */
export function serverEngineOptions(context: McpContext): WorkflowEngineOptions {
  return {
    stateDir: context.config.stateDir,
    providers: context.calls.providers,
    callDefaults: configCallOptions(context.config),
    roles: context.config.call.roles,
    abortSignal: context.abortSignal,
    checkWorkflow: (workflow) => checkWorkflow(context.commands, workflow),
    checkRepository: (repo) => checkRepository(context.commands, repo, 'a git agent step'),
  };
}

/** The provider settings of a run: the config's provider map and roles under the tool's arguments. */
export function engineChoices(
  context: McpContext,
  { provider, provider_map, skip_gates }: EngineChoices,
): Pick<WorkflowEngineOptions, 'provider' | 'providerMap' | 'skipGates'> {
  const roles = context.config.call.roles;
  const role = (spec: string): string => (Object.hasOwn(roles, spec) ? (roles[spec] as string) : spec);
  const providerMap = Object.fromEntries(
    Object.entries({ ...context.config.workflows.providerMap, ...provider_map }).map(([name, spec]) => [
      name,
      role(spec),
    ]),
  );
  return {
    providerMap,
    ...(provider === undefined ? {} : { provider: role(provider) }),
    ...(skip_gates === true ? { skipGates: true } : {}),
  };
}

function workflowResult(result: WorkflowRunResult): CallToolResult {
  const { id, status, ...rest } = result;
  return toolResult({ runId: id, state: status, ...rest });
}
