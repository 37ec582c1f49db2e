import { randomBytes } from 'node:crypto';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { AgentRunProgress, AgentRunResult, AgentRunnerOptions } from '../agents/runner.js';
import type { AgentTask, MergeMode } from '../agents/task.js';
import type { SwitchboardConfig } from '../core/config.js';
import { SwitchboardError } from '../core/errors.js';
import { waitAtMost } from './background-runs.js';
import { checkAgentRun, checkCallerFile } from './command-policy.js';
import type { McpContext } from './context.js';
import { progressReporter, type ToolExtra } from './progress.js';
import { agentOutput, agentRunInput, agentStatusInput, DEFAULT_WAIT_SECONDS } from './schemas.js';
import { guarded, toolResult } from './tool-result.js';

type AgentRunArguments = {
  task?: Record<string, unknown> | undefined;
  task_file?: string | undefined;
  repo?: string | undefined;
  merge?: MergeMode | undefined;
  wait_seconds?: number | undefined;
};

/** `agent_run` and `agent_status`: `switchboard agent run` and `agent show`, on the same state folder. */
export function registerAgentTools(server: McpServer, context: McpContext): void {
  server.registerTool(
    'agent_run',
    {
      title: 'Run Claude Code on a task',
      description:
        'Runs Claude Code autonomously on a task in its own git worktree, verifies it, and merges the change (as `switchboard agent run`). Answers when the run ends, or after wait_seconds with state "running" and the run id: ask agent_status later (or `switchboard agent show RUN`).',
      inputSchema: agentRunInput,
      outputSchema: agentOutput,
      annotations: { destructiveHint: false, openWorldHint: true },
    },
    guarded(async (args, extra) => {
      return await startAgentRun(args, extra, context);
    }),
  );

  server.registerTool(
    'agent_status',
    {
      title: 'State of an agent run',
      description:
        'Phase, state, cost and outcome of an agent run, started here or by `switchboard agent run` in the same state folder.',
      inputSchema: agentStatusInput,
      outputSchema: agentOutput,
      annotations: { readOnlyHint: true },
    },
    guarded(async ({ run_id, wait_seconds }) => {
      await context.runs.settle(`agent:${run_id}`, wait_seconds ?? 0);
      return await agentStatus(run_id, context.config);
    }),
  );
}

async function startAgentRun(
  args: AgentRunArguments,
  extra: ToolExtra,
  context: McpContext,
): Promise<CallToolResult> {
  if (args.task_file !== undefined) checkCallerFile(context.commands, args.task_file, 'task file');
  await checkAgentRun(context.commands, { repo: args.repo, taskFile: args.task_file });
  const task = await taskOf(args);
  const runId = `${task.id}-${randomBytes(3).toString('hex')}`;
  const progress = progressReporter(extra);
  let started: () => void = () => undefined;
  const recorded = new Promise<void>((resolve) => (started = resolve));
  const { runAgentTask } = await import('../agents/runner.js');
  const work = context.runs.track(
    `agent:${runId}`,
    runAgentTask({
      ...runnerOptions(context.config),
      task,
      runId,
      abortSignal: context.abortSignal,
      onProgress: (update: AgentRunProgress) => {
        started();
        progress.report(
          `${update.phase}, attempt ${update.attempt}, $${update.costUsd.toFixed(4)}: ${update.message}`,
        );
      },
      ...(args.repo === undefined ? {} : { repo: args.repo }),
      ...(args.merge === undefined ? {} : { merge: args.merge }),
    }),
  );
  try {
    // Bad input (no repository, an unknown base, no Claude Code) fails before the run is recorded and
    // must come back as this call's error, whatever wait_seconds says.
    await Promise.race([recorded, work]);
    const waited = await waitAtMost(work, (args.wait_seconds ?? DEFAULT_WAIT_SECONDS) * 1000);
    if (waited.done) return agentResult(waited.value);
    return await agentStatus(runId, context.config);
  } finally {
    progress.stop();
  }
}

async function taskOf({ task, task_file }: AgentRunArguments): Promise<AgentTask> {
  const { loadTask, parseTask } = await import('../agents/task.js');
  if ((task === undefined) === (task_file === undefined)) {
    throw new SwitchboardError('TASK_INVALID', 'agent_run needs either "task" or "task_file"', {
      hint: 'give the task as an object with at least id and title, or the path of a task file',
    });
  }
  return task_file === undefined ? parseTask(task, 'agent_run task') : loadTask(task_file);
}

/** As the CLI's `agent run` sets the runner up from the config (the Claude Code executable, the API URL). */
function runnerOptions(config: SwitchboardConfig): AgentRunnerOptions {
  const options: AgentRunnerOptions = { stateDir: config.stateDir, budgetRules: config.call.budgetRules };
  const connection: NonNullable<AgentRunnerOptions['connection']> = {};
  if (config.claude.executable !== undefined) connection.executable = config.claude.executable;
  if (config.claude.baseUrl !== undefined) connection.baseUrl = config.claude.baseUrl;
  if (Object.keys(connection).length > 0) options.connection = connection;
  return options;
}

function agentResult(result: AgentRunResult): CallToolResult {
  const { id, status, ...rest } = result;
  return toolResult({ runId: id, state: status, ...rest });
}

async function agentStatus(runId: string, config: SwitchboardConfig): Promise<CallToolResult> {
  const { showAgentRun } = await import('../agents/lifecycle.js');
  const {
    id,
    status,
    task: _task,
    events,
    ...run
  } = await showAgentRun(runId, { stateDir: config.stateDir });
  return toolResult({ runId: id, state: status, ...run, lastEvent: events.at(-1)?.message });
}
