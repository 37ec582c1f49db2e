import { closestName } from '../../core/closest-name.js';
import { SwitchboardError } from '../../core/errors.js';
import { fileToolFor, mcpToolReference } from '../tool-names.js';
import { mcpServersReached, stepToolChoice } from '../step-tools.js';
import { FilePolicy } from './file-policy.js';
import { fileTools } from './file-tools.js';
import { openMcpTools, type McpStepTool, type StepMcpServer } from './mcp-step-tools.js';
import type { StepTool } from './step-tool.js';
import { unknownToolProblem } from '../../agents/task.js';

/** The tools a step's model is offered, and what to close when the step ends. */
export interface StepToolset {
  tools: StepTool[];
  close(): Promise<void>;
}

export interface StepToolsetOptions {
  /** The step's `tools:`: undefined for the default set (every file tool and every allowed MCP tool). */
  names: readonly string[] | undefined;
  step: string;
  workingDirectory: string;
  /** Folders the file tools never read (Switchboard's state folders). */
  hidden: readonly string[];
  /** `run_command` keeps the machine's network (the step's `network: true`). @default false */
  network?: boolean | undefined;
  /** The MCP servers the engine let through for this step. */
  mcpServers: Readonly<Record<string, StepMcpServer>>;
  signal: AbortSignal;
}

/**
 * The tools a step on an API provider runs, from its `tools:` as Conductor reads them: omitted, the
 * default set (every file tool, those that write and run commands included, and the MCP tools); a
 * list, those names: a file tool (or the Claude Code tool it stands for, `Read`, `Glob`, `Grep`,
 * `Write`, `Edit`, `Bash`), an MCP tool as `server__tool` (also `mcp__server__tool`, `mcp__server` for all of a server's,
 * or the tool's own name). Names with nothing to run here are left out (Claude Code's `WebFetch`, `Bash(npm test:*)`, a server
 * the run did not allow); `validate` and `run` say so before the run. An MCP tool named on an allowed
 * server that does not offer it fails the step, naming the closest tool.
 */
export async function openStepToolset(options: StepToolsetOptions): Promise<StepToolset> {
  const servers = Object.keys(options.mcpServers);
  const choice = stepToolChoice(options.names, servers);
  const files = fileTools(new FilePolicy(options.workingDirectory, options.hidden), {
    network: options.network === true,
  });
  const wanted = new Set(mcpServersReached(choice, servers));
  const mcp =
    wanted.size === 0
      ? { tools: [], close: async () => undefined }
      : await openMcpTools(
          Object.fromEntries(Object.entries(options.mcpServers).filter(([name]) => wanted.has(name))),
          { cwd: options.workingDirectory, signal: options.signal },
        );
  try {
    const tools: StepTool[] = [
      ...choice.files.map((name) => files[name]),
      ...(options.names === undefined ? mcp.tools : namedMcpTools(options, mcp.tools)),
    ];
    return { tools: unique(tools), close: mcp.close };
  } catch (error) {
    await mcp.close();
    throw error;
  }
}

function namedMcpTools(options: StepToolsetOptions, offered: readonly McpStepTool[]): McpStepTool[] {
  const chosen: McpStepTool[] = [];
  const servers = Object.keys(options.mcpServers);
  for (const name of options.names ?? []) {
    if (fileToolFor(name) !== undefined || unknownToolProblem(name) === undefined) continue;
    const reference = mcpToolReference(name, servers);
    if (reference?.server === undefined) {
      chosen.push(...offered.filter((tool) => tool.tool === name));
      continue;
    }
    if (!servers.includes(reference.server)) continue;
    const own = offered.filter((tool) => tool.server === reference.server);
    const found = reference.tool === '*' ? own : own.filter((tool) => tool.tool === reference.tool);
    if (found.length === 0 && reference.tool !== '*') {
      const closest = closestName(
        reference.tool,
        own.map((tool) => tool.tool),
      );
      throw new SwitchboardError(
        'WORKFLOW_INVALID',
        `step "${options.step}": the MCP server "${reference.server}" offers no tool "${reference.tool}" that its tools: allow${closest === undefined ? '' : ` (did you mean ${reference.server}__${closest}?)`}`,
        {
          hint: `it offers: ${own.map((tool) => tool.tool).join(', ') || 'none that runtime.mcp_servers allows'}`,
        },
      );
    }
    chosen.push(...found);
  }
  return chosen;
}

function unique(tools: StepTool[]): StepTool[] {
  const seen = new Set<string>();
  return tools.filter((tool) => !seen.has(tool.definition.name) && seen.add(tool.definition.name));
}
