import type { Server } from 'node:http';
import { InvalidArgumentError, type Command } from 'commander';
import type { AgentRunnerOptions } from '../agents/runner.js';
import type { SwitchboardConfig } from '../core/config.js';
import { SwitchboardError } from '../core/errors.js';
import type { SwitchboardWorker } from '../workers/worker.js';
import type { WorkflowJobRunnerOptions } from '../workers/workflow-job.js';
import { commandConfig, type GlobalFlags } from './shared.js';
import { flushTracing } from '../observe/tracing.js';

interface WorkerFlags {
  concurrency?: number;
  queues?: string;
  port?: number;
  host: string;
  grace?: number;
  claudePath?: string;
  baseUrl?: string;
  model?: string;
}

function wholeNumber(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1 || number > 64)
    throw new InvalidArgumentError('expected a whole number from 1 to 64');
  return number;
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value.trim()) || port > 65_535)
    throw new InvalidArgumentError('expected a port number from 0 to 65535 (0 picks a free port)');
  return port;
}

function nonNegative(value: string): number {
  const number = Number(value);
  if (value.trim() === '' || !Number.isFinite(number) || number < 0)
    throw new InvalidArgumentError('expected a number of seconds, 0 or more');
  return number;
}

export function registerWorkerCommand(program: Command): void {
  program
    .command('worker')
    .description(
      'take agent runs and workflow runs from the PostgreSQL job queues and run them (one of many machines)',
    )
    .option('--concurrency <n>', 'jobs at once (default: workers.concurrency, else 1)', wholeNumber)
    .option(
      '--queues <list>',
      'comma-separated queues to serve: agents (with merges), workflows (with members), members, merges (default: all)',
    )
    .option('--port <port>', 'serve /healthz and /metrics on this port (0 picks a free port)', parsePort)
    .option('--host <host>', 'address for /healthz and /metrics', '127.0.0.1')
    .option(
      '--grace <seconds>',
      'on SIGTERM, how long running jobs may finish before they go back to the queue (default 30)',
      nonNegative,
    )
    .option('--claude-path <path>', 'your own claude executable (env SWITCHBOARD_CLAUDE_PATH)')
    .option('--base-url <url>', 'API base URL for Claude Code, unless the job names one')
    .option('--model <model>', 'model for agents whose task names none')
    .action(async (flags: WorkerFlags, command: Command) => {
      const { AGENT_QUEUE, MEMBER_QUEUE, MERGE_QUEUE, requireWorkerDatabase, WORKER_QUEUES, WORKFLOW_QUEUE } =
        await import('../workers/queues.js');
      const config = commandConfig(command.optsWithGlobals<GlobalFlags>());
      const url = requireWorkerDatabase(config);
      // Every queue by default: a bare `worker` takes whatever `--enqueue` sent, agent run or workflow run.
      const queues = (flags.queues ?? Object.keys(WORKER_QUEUES).join(',')).split(',').map((name) => {
        const queue = WORKER_QUEUES[name.trim()];
        if (queue === undefined) {
          throw new SwitchboardError('INVALID_INPUT', `--queues names an unknown queue "${name.trim()}"`, {
            hint: `use one of: ${Object.keys(WORKER_QUEUES).join(', ')}`,
          });
        }
        return queue;
      });
      // A worker advancing workflows also runs group members, so a for_each always has someone to run it.
      if (queues.includes(WORKFLOW_QUEUE)) queues.push(MEMBER_QUEUE);
      // Agent runs on a remote hand their merges to the merge queue: whoever runs agents merges too.
      if (queues.includes(AGENT_QUEUE)) queues.push(MERGE_QUEUE);
      const settings = { ...config.workers };
      if (flags.concurrency !== undefined) settings.concurrency = flags.concurrency;
      if (flags.grace !== undefined) settings.graceSeconds = flags.grace;
      const runner: AgentRunnerOptions = { stateDir: config.stateDir, budgetRules: config.call.budgetRules };
      const connection: NonNullable<AgentRunnerOptions['connection']> = {};
      const executable = flags.claudePath ?? config.claude.executable;
      if (executable !== undefined) connection.executable = executable;
      const baseUrl = flags.baseUrl ?? config.claude.baseUrl;
      if (baseUrl !== undefined) connection.baseUrl = baseUrl;
      if (Object.keys(connection).length > 0) runner.connection = connection;
      if (flags.model !== undefined) runner.model = flags.model;
      // A worker that cannot start Claude Code would take agent jobs only to hand each back: refuse to start.
      if (queues.includes(AGENT_QUEUE)) {
        const { resolveClaudeExecutable } = await import('../providers/claude-code/executable.js');
        resolveClaudeExecutable(executable ?? process.env['SWITCHBOARD_CLAUDE_PATH']);
      }
      const workflows = queues.some((queue) => queue === WORKFLOW_QUEUE || queue === MEMBER_QUEUE)
        ? await workflowRunner(config, connection)
        : undefined;

      const { SwitchboardWorker } = await import('../workers/worker.js');
      const log = (line: string): void => void process.stderr.write(`${line}\n`);
      const worker = await SwitchboardWorker.start({
        url,
        settings,
        queues: [...new Set(queues)],
        runner,
        ...(workflows === undefined ? {} : { workflows }),
        log,
      });
      let server: Server | undefined;
      if (flags.port !== undefined) {
        const { serverUrl, startHealthServer } = await import('../workers/health-server.js');
        try {
          server = await startHealthServer(worker, { host: flags.host, port: flags.port });
        } catch (error) {
          await worker.drain(0);
          throw error;
        }
        process.stdout.write(`switchboard: worker listening on ${serverUrl(server)}\n`);
      }
      process.stdout.write(
        `switchboard: worker ready (pid ${process.pid}, queues ${[...new Set(queues)].join(',')}, concurrency ${settings.concurrency})\n`,
      );
      await untilStopped(worker, settings.graceSeconds * 1000, log);
      await workflows?.providers.close();
      server?.close();
      server?.closeAllConnections();
      log(`switchboard: worker ${process.pid} stopped`);
      await flushTracing();
      // Whatever a library left scheduled (pool timers, keep-alive sockets) must not hold a stopped worker.
      process.exit(0);
    });
}

/** Workflow steps call providers as `switchboard workflow run` sets them up from this machine's config. */
async function workflowRunner(
  config: SwitchboardConfig,
  connection: { executable?: string; baseUrl?: string },
): Promise<WorkflowJobRunnerOptions> {
  const { configCallOptions, providerRegistry } = await import('./call-setup.js');
  const roles = config.call.roles;
  const role = (spec: string): string => (Object.hasOwn(roles, spec) ? (roles[spec] as string) : spec);
  return {
    stateDir: config.stateDir,
    providers: providerRegistry(config, connection),
    callDefaults: configCallOptions(config),
    // A run held by a worker on another machine is taken for abandoned after as long a silence as its
    // jobs are (the run lock beats every second), so a dead machine's workflow moves on with its jobs.
    staleAfterMs: config.workers.heartbeatSeconds * 1000,
    providerMap: Object.fromEntries(
      Object.entries(config.workflows.providerMap).map(([name, spec]) => [name, role(spec)]),
    ),
    roles,
  };
}

/** Resolves once the worker drained after SIGTERM or SIGINT; a second signal releases the running jobs at once. */
function untilStopped(
  worker: SwitchboardWorker,
  graceMs: number,
  log: (line: string) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const hurry = new AbortController();
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals): void => {
      if (stopping) {
        log(`switchboard: ${signal} again: releasing running jobs now`);
        hurry.abort();
        return;
      }
      stopping = true;
      log(
        `switchboard: ${signal}: draining; running jobs have ${graceMs / 1000}s to finish (send it again to release them now)`,
      );
      worker.drain(graceMs, hurry.signal).then(resolve, reject);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}
