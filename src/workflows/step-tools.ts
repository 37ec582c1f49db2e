import { unknownToolProblem } from '../agents/task.js';
import {
  CLAUDE_CODE_TOOL_FOR_FILE_TOOL,
  changesFiles,
  FILE_TOOL_NAMES,
  fileToolFor,
  mcpToolReference,
  type FileToolName,
} from './tool-names.js';

/**
 * Claude Code's tools an LLM step gets when it names none, as Conductor gives such a step the
 * provider's whole set: those the file tools stand for (`Read`, `Glob`, `Grep`, `Write`, `Edit`, `Bash`),
 * held to its working directory and Bash to Claude Code's sandbox, as the API providers' step gets the
 * file tools themselves. A step that should only read names `Read`, `Glob`, `Grep`.
 */
export const CLAUDE_CODE_DEFAULT_TOOLS: readonly string[] = FILE_TOOL_NAMES.map(
  (name) => CLAUDE_CODE_TOOL_FOR_FILE_TOOL[name],
);

/**
 * What an LLM step's model may use, read from its `tools:` as Conductor does: omitted, the default set
 * (on the API providers every file tool, `write_file`, `edit_file` and `run_command` included, as
 * Conductor gives such a step the provider's whole set; on Claude Code `CLAUDE_CODE_DEFAULT_TOOLS`, the tools they stand for; and
 * every tool of the MCP servers the step gets); `[]`, nothing; a list, those names. Both providers' executors build their tools from it (the API tool loop, Claude Code's
 * allowed tools) and `serve`'s command policy judges the step by it: one reading of `tools:`, so the
 * policy cannot count as harmless a step the engine then runs with tools.
 */
export interface StepToolChoice {
  /**
   * The file tools a step on an API provider runs (on Claude Code the tools they stand for: `Read`,
   * `Glob`, `Grep`, `Write`, `Edit`, `Bash`): they read, write and run commands in the working directory.
   */
  files: FileToolName[];
  /**
   * The Claude Code tools the step names, as written (`Read(src/**)`, `Bash`, `WebFetch`), a file tool by
   * the Claude Code tool it stands for; omitted, `CLAUDE_CODE_DEFAULT_TOOLS`. Only Claude Code runs those
   * beyond the file tools.
   */
  claudeCode: string[];
  /** MCP tools named by server: `*` for all the tools the server allows, else those names. */
  mcp: Map<string, '*' | Set<string>>;
  /** MCP tools named by their own name alone: whichever server offers them. */
  bareMcp: string[];
}

/** Reads a step's `tools:` against the MCP servers it gets (their names). */
export function stepToolChoice(
  names: readonly string[] | undefined,
  servers: readonly string[],
): StepToolChoice {
  if (names === undefined) {
    return {
      files: [...FILE_TOOL_NAMES],
      claudeCode: [...CLAUDE_CODE_DEFAULT_TOOLS],
      mcp: new Map(servers.map((server) => [server, '*'])),
      bareMcp: [],
    };
  }
  const choice: StepToolChoice = { files: [], claudeCode: [], mcp: new Map(), bareMcp: [] };
  for (const name of names) {
    const file = fileToolFor(name);
    if (file !== undefined && !choice.files.includes(file)) choice.files.push(file);
    if (file !== undefined || unknownToolProblem(name) === undefined) {
      choice.claudeCode.push(CLAUDE_CODE_TOOL_FOR_FILE_TOOL[name.trim() as FileToolName] ?? name);
    } else {
      const reference = mcpToolReference(name, servers);
      if (reference?.server === undefined) choice.bareMcp.push(name.trim());
      else if (servers.includes(reference.server)) addMcpTool(choice.mcp, reference.server, reference.tool);
    }
  }
  return choice;
}

function addMcpTool(mcp: StepToolChoice['mcp'], server: string, tool: string): void {
  const current = mcp.get(server);
  if (current === '*') return;
  if (tool === '*') mcp.set(server, '*');
  else mcp.set(server, new Set([...(current ?? []), tool]));
}

/** The servers whose tools the step may use: those it names, all of them for a bare tool name. */
export function mcpServersReached(choice: StepToolChoice, servers: readonly string[]): string[] {
  return choice.bareMcp.length > 0 ? [...servers] : servers.filter((server) => choice.mcp.has(server));
}

/**
 * Whether the step's model can change its working directory or run a command, whichever provider runs
 * it: a changing file tool (`write_file`, `edit_file`, `run_command`, which `tools:` omitted gives the
 * API providers), or a Claude Code tool beyond `Read`, `Glob`, `Grep` (`Bash`, `Write`, `WebFetch`, …).
 */
export function changesOrRunsCommands(choice: StepToolChoice): boolean {
  if (choice.files.some(changesFiles)) return true;
  return choice.claudeCode.some((name) => {
    const file = fileToolFor(name);
    return file === undefined || changesFiles(file);
  });
}

/**
 * The allowed-tool entries of a Claude Code step for its MCP servers: of the entries the servers'
 * `tools` allow (`mcp__server` for all, `mcp__server__tool`), those the step's `tools:` names.
 */
export function claudeCodeMcpTools(choice: StepToolChoice, allowed: readonly string[]): string[] {
  const chosen: string[] = [];
  for (const server of new Set(allowed.map((entry) => /^mcp__(.+?)(?:__|$)/.exec(entry)?.[1] ?? ''))) {
    const own = allowed.filter((entry) => entry === `mcp__${server}` || entry.startsWith(`mcp__${server}__`));
    const named = choice.mcp.get(server);
    if (named === '*') {
      chosen.push(...own);
      continue;
    }
    const everything = own.includes(`mcp__${server}`);
    for (const tool of new Set([...(named ?? []), ...choice.bareMcp])) {
      const entry = `mcp__${server}__${tool}`;
      if (everything || own.includes(entry)) chosen.push(entry);
    }
  }
  return chosen;
}
