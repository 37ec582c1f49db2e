import { closestName } from '../core/closest-name.js';
import { readDataFile } from '../core/data-file.js';
import type { z } from 'zod';
import { SwitchboardError } from '../core/errors.js';
import { SWITCHBOARD_CREDENTIALS } from './environment.js';
import { loadZod } from '../core/lazy-packages.js';
import {
  literalCredential,
  MCP_SERVER_TYPES,
  mcpServerProblem,
  type McpServerEntry,
  type McpServerFields,
} from './mcp-servers.js';

/** How a finished change reaches the base branch (`pr`: pushed, and a GitHub pull request opened for it). */
export const MERGE_MODES = ['no-ff', 'ff', 'branch', 'pr'] as const;
export type MergeMode = (typeof MERGE_MODES)[number];

/** Tools an agent gets when the task names none: it can read, write and edit files, but not run commands. */
export const DEFAULT_AGENT_TOOLS: readonly string[] = ['Read', 'Write', 'Edit', 'Glob', 'Grep'];

/**
 * Claude Code's built-in tools (2.1.x). A task naming another tool would run without it and fail late,
 * after paying, so such a name is refused when the task is read.
 */
export const CLAUDE_CODE_TOOLS: readonly string[] = [
  'Agent',
  'Bash',
  'BashOutput',
  'Edit',
  'ExitPlanMode',
  'Glob',
  'Grep',
  'KillShell',
  'LS',
  'MultiEdit',
  'NotebookEdit',
  'NotebookRead',
  'Read',
  'Skill',
  'SlashCommand',
  'Task',
  'TodoWrite',
  'WebFetch',
  'WebSearch',
  'Write',
];

/** Why `entry` (`Read`, `Bash(npm test:*)`) names no Claude Code tool, with the closest name; undefined when it does. */
export function unknownToolProblem(entry: string): string | undefined {
  const name = /^([^(]*)(?:\(.*\))?$/s.exec(entry.trim())?.[1]?.trim() ?? entry;
  if (CLAUDE_CODE_TOOLS.includes(name)) return undefined;
  const closest = closestName(name, CLAUDE_CODE_TOOLS);
  return `"${entry}" is not a Claude Code tool${closest === undefined ? '' : ` (did you mean ${closest}?)`}`;
}

/** The task file's schema, built at the first task (zod is loaded then, not when the library is imported). */
function buildTaskFileSchema(z: ReturnType<typeof loadZod>) {
  const positive = z.number().positive();
  return z.strictObject({
    id: z
      .union([z.string(), z.number()])
      .transform(String)
      .pipe(
        z
          .string()
          .regex(
            /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/,
            'an id is 1–64 letters, digits, ".", "_" or "-", starting with a letter or digit',
          ),
      ),
    title: z.string().trim().min(1, 'a title is required'),
    description: z.string().default(''),
    /** What "done" means; a list or one paragraph. */
    acceptance: z.union([z.string(), z.array(z.string())]).optional(),
    /** Branch the work starts from and merges into. @default the repository's checked-out branch */
    base: z.string().min(1).optional(),
    /**
     * Shell command run once in a new worktree before the agent, e.g. `npm ci` (a worktree starts without
     * ignored files such as node_modules). What it makes must be ignored by git.
     */
    setup: z
      .union([
        z.string().min(1),
        z.strictObject({ command: z.string().min(1), timeout_seconds: positive.optional() }),
      ])
      .optional(),
    /** Shell command run in the worktree after the agent; exit status 0 means the change is good. */
    verify: z
      .union([
        z.string().min(1),
        z.strictObject({ command: z.string().min(1), timeout_seconds: positive.optional() }),
      ])
      .optional(),
    /** Claude Code tools the agent may use, e.g. `Read`, `Write`, `Edit`, `Bash(npm test:*)`. */
    tools: z
      .array(
        z
          .string()
          .min(1)
          .superRefine((tool, context) => {
            const problem = tool.startsWith('mcp__')
              ? "list an MCP server's tools under mcp_servers.<server>.tools, not in tools"
              : unknownToolProblem(tool);
            if (problem !== undefined) {
              context.addIssue({
                code: 'custom',
                message: problem,
                params: {
                  hint: `write Claude Code tool names: ${CLAUDE_CODE_TOOLS.join(', ')}, or Bash(command:*)`,
                },
              });
            }
          }),
      )
      .optional(),
    /** MCP servers the agent gets (and no others), each with the tools it may use. */
    mcp_servers: buildMcpServersSchema(z).optional(),
    model: z.string().min(1).optional(),
    merge: z.enum(MERGE_MODES).optional(),
    /** The GitHub issue the task came from, `OWNER/REPO#N`: merge mode `pr` comments on it. */
    issue: z
      .string()
      .regex(
        /^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*#[1-9][0-9]*$/,
        'write the issue as OWNER/REPO#NUMBER',
      )
      .optional(),
    /** Extra instructions appended to Claude Code's system prompt. */
    instructions: z.string().optional(),
    /** Credentials the agent and the verify command may see (others named like secrets are withheld). */
    pass_env: z
      .array(
        z
          .string()
          .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name')
          .superRefine((name, context) => {
            if (!SWITCHBOARD_CREDENTIALS.includes(name)) return;
            context.addIssue({
              code: 'custom',
              message: `${name} is a credential Switchboard holds itself, never handed to an agent's commands`,
              params: {
                hint: `remove ${name} from pass_env (Claude Code reaches the API through Switchboard's key forwarder); pass a separate credential made for the task instead`,
              },
            });
          }),
      )
      .optional(),
    limits: z
      .strictObject({
        max_turns: z.number().int().positive().optional(),
        max_cost_usd: positive.optional(),
        idle_timeout_seconds: positive.optional(),
        wall_clock_seconds: positive.optional(),
        /** Agent attempts in all, the first included. */
        max_attempts: z.number().int().min(1).max(20).optional(),
        verify_timeout_seconds: positive.optional(),
      })
      .optional(),
  });
}

/** `mcp_servers:` as Claude Code's MCP config spells a server, plus `tools`; see `mcpServerProblem`. */
function buildMcpServersSchema(z: ReturnType<typeof loadZod>) {
  const server = z.strictObject({
    type: z.enum(MCP_SERVER_TYPES).default('stdio'),
    command: z.string().optional(),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).default({}),
    url: z.string().optional(),
    headers: z.record(z.string(), z.string()).default({}),
    tools: z.array(z.string()).optional(),
  });
  return z.record(z.string(), server).superRefine((servers, context) => {
    for (const [name, entry] of Object.entries(servers)) {
      const problem = mcpServerProblem(name, entry) ?? literalCredential(name, entry);
      if (problem === undefined) continue;
      const field = problem.field === '' ? [] : problem.field.split('.');
      context.addIssue({
        code: 'custom',
        path: [name, ...field],
        message: problem.message,
        params: { hint: problem.hint },
      });
      return;
    }
  });
}

let taskFileSchema: ReturnType<typeof buildTaskFileSchema> | undefined;

export type TaskFile = z.input<ReturnType<typeof buildTaskFileSchema>>;

/** Limits on one run; times in milliseconds. */
export interface AgentLimits {
  /** @default 30 */
  maxTurns: number;
  /** Dollars for the whole run, all attempts together. @default 5 */
  maxCostUsd: number;
  /** Fail an attempt when Claude Code prints nothing for this long. @default 300_000 */
  idleTimeoutMs: number;
  /** Wall-clock limit for the whole run. @default 1_800_000 */
  wallClockMs: number;
  /** @default 3 */
  maxAttempts: number;
  /** @default 600_000 */
  verifyTimeoutMs: number;
}

export const DEFAULT_LIMITS: AgentLimits = {
  maxTurns: 30,
  maxCostUsd: 5,
  idleTimeoutMs: 300_000,
  wallClockMs: 1_800_000,
  maxAttempts: 3,
  verifyTimeoutMs: 600_000,
};

/** A task as the runner uses it: validated, defaults applied. */
export interface AgentTask {
  id: string;
  title: string;
  description: string;
  acceptance: string[];
  base?: string;
  /** Run once in a new worktree before the agent; what it makes must be ignored by git. */
  setup?: { command: string; timeoutMs: number };
  verify?: string;
  tools: string[];
  /** MCP servers as the task declares them (`${VAR}` references unexpanded, so a record holds no secret). */
  mcpServers?: Record<string, McpServerEntry>;
  model?: string;
  merge?: MergeMode;
  /** The GitHub issue the task came from, `OWNER/REPO#N`. */
  issue?: string;
  instructions?: string;
  /** Credentials the agent and the verify command may see; other secret-like variables are withheld. */
  passEnvironment: string[];
  limits: AgentLimits;
}

/**
 * Validates a task given as an object (parsed YAML/JSON or built by a program).
 *
 * @throws SwitchboardError `TASK_INVALID` naming the field and what to write instead.
 */
export function parseTask(value: unknown, source = 'task'): AgentTask {
  taskFileSchema ??= buildTaskFileSchema(loadZod());
  const result = taskFileSchema.safeParse(value ?? {});
  if (!result.success) {
    // Every problem at once: fixing them one run at a time is slow.
    const { issues } = result.error;
    const problems = issues.map((issue) =>
      issue.path.length === 0 ? issue.message : `field "${issue.path.join('.')}": ${issue.message}`,
    );
    const summary =
      problems.length === 1
        ? ` ${problems[0] ?? 'invalid task'}`.replace(/^ (?!field)/, ': ')
        : `: ${problems.length} problems: ${problems.join('; ')}`;
    throw new SwitchboardError('TASK_INVALID', `${source}${summary}`, {
      hint:
        issues.map(ownHint).find((hint) => hint !== undefined) ??
        'a task needs at least `id` and `title`; docs/agent.md ("A task file") shows the format',
      details: { source, path: issues[0]?.path ?? [], problems },
    });
  }
  const file = result.data;
  const limits = file.limits ?? {};
  const verifyTimeoutSeconds =
    (typeof file.verify === 'object' ? file.verify.timeout_seconds : undefined) ??
    limits.verify_timeout_seconds;
  const task: AgentTask = {
    id: file.id,
    title: file.title,
    description: file.description,
    acceptance:
      file.acceptance === undefined
        ? []
        : typeof file.acceptance === 'string'
          ? [file.acceptance]
          : file.acceptance,
    tools: file.tools ?? [...DEFAULT_AGENT_TOOLS],
    passEnvironment: file.pass_env ?? [],
    limits: {
      maxTurns: limits.max_turns ?? DEFAULT_LIMITS.maxTurns,
      maxCostUsd: limits.max_cost_usd ?? DEFAULT_LIMITS.maxCostUsd,
      idleTimeoutMs: secondsOr(limits.idle_timeout_seconds, DEFAULT_LIMITS.idleTimeoutMs),
      wallClockMs: secondsOr(limits.wall_clock_seconds, DEFAULT_LIMITS.wallClockMs),
      maxAttempts: limits.max_attempts ?? DEFAULT_LIMITS.maxAttempts,
      verifyTimeoutMs: secondsOr(verifyTimeoutSeconds, DEFAULT_LIMITS.verifyTimeoutMs),
    },
  };
  if (file.base !== undefined) task.base = file.base;
  if (file.verify !== undefined)
    task.verify = typeof file.verify === 'string' ? file.verify : file.verify.command;
  if (file.setup !== undefined) {
    task.setup =
      typeof file.setup === 'string'
        ? { command: file.setup, timeoutMs: DEFAULT_LIMITS.verifyTimeoutMs }
        : {
            command: file.setup.command,
            timeoutMs: secondsOr(file.setup.timeout_seconds, DEFAULT_LIMITS.verifyTimeoutMs),
          };
  }
  if (file.mcp_servers !== undefined) task.mcpServers = mcpServerEntries(file.mcp_servers);
  if (file.model !== undefined) task.model = file.model;
  if (file.merge !== undefined) task.merge = file.merge;
  if (file.issue !== undefined) task.issue = file.issue;
  if (file.instructions !== undefined) task.instructions = file.instructions;
  return task;
}

/** The fix a check of the task gave with its issue (the MCP server checks do). */
function ownHint(issue: z.core.$ZodIssue | undefined): string | undefined {
  const hint = issue?.code === 'custom' ? issue.params?.['hint'] : undefined;
  return typeof hint === 'string' ? hint : undefined;
}

function mcpServerEntries(servers: Record<string, McpServerFields>): Record<string, McpServerEntry> {
  return Object.fromEntries(
    Object.entries(servers).map(([name, server]) => {
      const entry: McpServerEntry = {
        type: server.type,
        args: server.args ?? [],
        env: server.env ?? {},
        headers: server.headers ?? {},
        tools: server.tools ?? ['*'],
      };
      if (server.command != null) entry.command = server.command;
      if (server.url != null) entry.url = server.url;
      return [name, entry];
    }),
  );
}

function secondsOr(seconds: number | undefined, fallbackMs: number): number {
  return seconds === undefined ? fallbackMs : Math.round(seconds * 1000);
}

/** Reads and validates a task file (YAML or JSON). */
export function loadTask(file: string): AgentTask {
  const data = readDataFile(file, {
    code: 'TASK_INVALID',
    kind: 'task file',
    readHint: 'check the --task path',
  });
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new SwitchboardError('TASK_INVALID', `task file ${file} does not hold a task object`, {
      hint: 'write the task as a mapping with at least `id` and `title`',
    });
  }
  return parseTask(data, `task file ${file}`);
}
