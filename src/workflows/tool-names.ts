import { closestName } from '../core/closest-name.js';
import { CLAUDE_CODE_TOOLS, unknownToolProblem } from '../agents/task.js';

/**
 * The names an LLM step's `tools:` may hold, whichever provider runs it: Claude Code's tools, the
 * read-only file tools Switchboard runs for steps on the API providers, and the tools of the
 * workflow's MCP servers. Kept apart from the tools themselves so that validating a file loads none of them.
 */

/** Switchboard's file tools that only read, run for LLM steps on the API providers. */
export const READ_FILE_TOOL_NAMES = ['read_file', 'list_files', 'search_files'] as const;

/**
 * The tools that change the working directory: they write a file, edit one in place, or run a command
 * (in the sandbox, which may write there too).
 */
export const CHANGING_TOOL_NAMES = ['write_file', 'edit_file', 'run_command'] as const;

/** Switchboard's file tools, run for LLM steps on the API providers: those that read, and those that change. */
export const FILE_TOOL_NAMES = [...READ_FILE_TOOL_NAMES, ...CHANGING_TOOL_NAMES] as const;
export type FileToolName = (typeof FILE_TOOL_NAMES)[number];

/** Claude Code's tools, and the file tool that does their job on the API providers. */
export const FILE_TOOL_FOR_CLAUDE_CODE_TOOL: Readonly<Record<string, FileToolName>> = {
  Read: 'read_file',
  Glob: 'list_files',
  LS: 'list_files',
  Grep: 'search_files',
  Write: 'write_file',
  Edit: 'edit_file',
  Bash: 'run_command',
};

/** The other way: the Claude Code tool a file tool's name stands for on a step run by Claude Code. */
export const CLAUDE_CODE_TOOL_FOR_FILE_TOOL: Readonly<Record<FileToolName, string>> = {
  read_file: 'Read',
  list_files: 'Glob',
  search_files: 'Grep',
  write_file: 'Write',
  edit_file: 'Edit',
  run_command: 'Bash',
};

/** Whether a file tool changes the working directory (`write_file`, `edit_file`, `run_command`). */
export function changesFiles(tool: FileToolName): boolean {
  return (CHANGING_TOOL_NAMES as readonly string[]).includes(tool);
}

/** MCP's tool names allow `.`; the providers do not. */
const NOT_IN_TOOL_NAMES = /[^A-Za-z0-9_-]/g;

/**
 * How the model of a step on an API provider sees an MCP server's tool: `<server>__<tool>`, as
 * Conductor names them, within the 64 characters every provider accepts.
 */
export function mcpToolName(server: string, tool: string): string {
  return `${server}__${tool.replace(NOT_IN_TOOL_NAMES, '_')}`.slice(0, 64);
}

/** `Bash(npm test:*)` → `Bash`. */
export function toolBaseName(entry: string): string {
  return /^([^(]*)(?:\(.*\))?$/s.exec(entry.trim())?.[1]?.trim() ?? entry.trim();
}

/**
 * Whether a `tools:` entry names one of the file tools, or a Claude Code tool one of them stands in for.
 * A changing tool with a rule (`Bash(npm test:*)`, `Write(docs/**)`) stands for none: the file tools
 * cannot keep to the rule, and would do more than the step allows.
 */
export function fileToolFor(entry: string): FileToolName | undefined {
  const name = toolBaseName(entry);
  if ((FILE_TOOL_NAMES as readonly string[]).includes(name)) return name as FileToolName;
  const tool = FILE_TOOL_FOR_CLAUDE_CODE_TOOL[name];
  if (tool !== undefined && changesFiles(tool) && name !== entry.trim()) return undefined;
  return tool;
}

/** An MCP tool named in a step's `tools:`: by its server (`server__tool`, `mcp__server__tool`) or alone. */
export interface McpToolReference {
  /** Undefined when the entry is a bare tool name, to be found on whichever server has it. */
  server?: string;
  /** `*` for every tool of the server (`mcp__server`). */
  tool: string;
}

/** The MCP tool an entry names, read against the servers the workflow declares; undefined when it names none. */
export function mcpToolReference(entry: string, servers: readonly string[]): McpToolReference | undefined {
  const name = entry.trim();
  const whole = /^mcp__([A-Za-z0-9_-]+?)(?:__(.+))?$/.exec(name);
  if (whole !== null) return { server: whole[1] as string, tool: whole[2] ?? '*' };
  for (const server of servers) {
    if (name.startsWith(`${server}__`) && name.length > server.length + 2) {
      return { server, tool: name.slice(server.length + 2) };
    }
  }
  return undefined;
}

/** What the workflow declares that a step's tool names are checked against. */
export interface DeclaredTools {
  /** The workflow's top-level `tools:` (Conductor's list). */
  workflowTools: ReadonlySet<string>;
  /** `runtime.mcp_servers`: each server's `tools` allow list (`['*']` for all). */
  mcpServers: Readonly<Record<string, { tools: readonly string[] }>>;
}

/**
 * Why an LLM step's `tools:` entry names nothing any provider can run, with the closest name; undefined
 * when it names a Claude Code tool, a file tool, a tool of a declared MCP server (by `server__tool`, or
 * by its own name when a server lists it) or an entry of the workflow's `tools:`. A server that allows
 * all its tools (`*`) cannot be checked before it runs: its `server__tool` names are taken as written.
 */
export function llmToolProblem(entry: string, declared: DeclaredTools): string | undefined {
  if (unknownToolProblem(entry) === undefined || fileToolFor(entry) !== undefined) return undefined;
  if (declared.workflowTools.has(entry)) return undefined;
  const servers = Object.keys(declared.mcpServers);
  const reference = mcpToolReference(entry, servers);
  if (reference?.server !== undefined) {
    const allowed = declared.mcpServers[reference.server]?.tools;
    // `mcp__…` names were accepted before servers were checked; Claude Code reports an unknown one itself.
    if (allowed === undefined) return entry.startsWith('mcp__') ? undefined : unknownProblem(entry, declared);
    if (reference.tool === '*' || allowed.includes('*') || allowed.includes(reference.tool)) return undefined;
    const closest = closestName(reference.tool, allowed);
    return `"${reference.tool}" is not among the tools runtime.mcp_servers.${reference.server}.tools allows${closest === undefined ? '' : ` (did you mean ${reference.server}__${closest}?)`}`;
  }
  if (Object.values(declared.mcpServers).some((server) => server.tools.includes(entry))) return undefined;
  return unknownProblem(entry, declared);
}

function unknownProblem(entry: string, declared: DeclaredTools): string {
  const candidates = [
    ...CLAUDE_CODE_TOOLS,
    ...FILE_TOOL_NAMES,
    ...declared.workflowTools,
    ...Object.entries(declared.mcpServers).flatMap(([server, { tools }]) =>
      tools.filter((tool) => tool !== '*').flatMap((tool) => [tool, `${server}__${tool}`]),
    ),
  ];
  const closest = closestName(toolBaseName(entry), candidates);
  return `"${entry}" is not a Claude Code tool, a file tool (${FILE_TOOL_NAMES.join(', ')}) or a tool of runtime.mcp_servers${closest === undefined ? '' : ` (did you mean ${closest}?)`}`;
}
