import { flushTracing } from '../observe/tracing.js';
import type { Command } from 'commander';
import type { McpContext } from '../mcp/context.js';
import { parseSeconds } from './parse-seconds.js';
import { parsePoolSize, startServices } from './serve.js';
import { addRoutingFlags, resolveConfig, type GlobalFlags, type RoutingFlags } from './shared.js';

interface McpFlags extends RoutingFlags {
  pool: number;
  poolModel: string;
  maxTimeout: number;
}

export function registerMcpCommand(program: Command): void {
  addRoutingFlags(
    program
      .command('mcp')
      .description(
        'an MCP server on stdin/stdout: route, call, agent_run, workflow_run, stats, … as tools (e.g. `claude mcp add switchboard -- switchboard mcp --skills DIR`)',
      )
      .option('--pool <n>', 'Claude Code processes kept warm for the call tool (0: none)', parsePoolSize, 0)
      .option('--pool-model <model>', 'the model of the warm processes', 'haiku')
      .option(
        '--max-timeout <seconds>',
        'the longest one call may run; a longer timeoutMs is cut to it',
        parseSeconds,
        600,
      ),
  ).action(async (flags: McpFlags, command: Command) => {
    const config = resolveConfig(command.optsWithGlobals<GlobalFlags>(), flags);
    const services = await startServices(config, { ...flags, metrics: false });
    const stopping = new AbortController();
    const { BackgroundRuns } = await import('../mcp/background-runs.js');
    const context: McpContext = {
      config,
      router: services.router,
      calls: services.calls,
      runs: new BackgroundRuns(),
      abortSignal: stopping.signal,
    };
    const { createMcpServer } = await import('../mcp/server.js');
    const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
    const server = createMcpServer(context);
    try {
      await server.connect(new StdioServerTransport());
      if (flags.pool > 0) services.calls.warm();
      await untilClientLeaves(stopping);
      // A client that hung up leaves its runs to finish (they are in the state folder, and
      // `switchboard agent show` / `workflow status` report them); a signal stops them cleanly.
      await context.runs.drain();
      await server.close();
    } finally {
      await services.router?.close();
      await services.calls.close();
    }
    // Its last spans go out (within their own bound) before the exit below can cut them off.
    await flushTracing();
    // Open sockets of the LLM providers' clients must not keep a stopped server's process alive.
    setTimeout(() => process.exit(), 2_000).unref();
  });
}

/**
 * Resolves when the client closes stdin (it has left) or at SIGINT/SIGTERM, which also aborts
 * `stopping`, so that runs still going stop cleanly and stay resumable.
 */
function untilClientLeaves(stopping: AbortController): Promise<void> {
  return new Promise((resolve) => {
    const stop = (): void => {
      stopping.abort();
      resolve();
    };
    process.stdin.once('end', resolve);
    process.stdin.once('close', resolve);
    // `on`, not `once`: a `once` listener is gone by the time signal-exit's (execa's) runs, which then
    // sees only its own listeners and kills the process before the runs have stopped.
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
