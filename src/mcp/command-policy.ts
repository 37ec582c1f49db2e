import { statSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { git, listWorktrees } from '../agents/git.js';
import { realOrResolved } from '../agents/paths.js';
import { fileRefusal } from '../confinement/file-access.js';
import { SwitchboardError } from '../core/errors.js';
import {
  everyStep,
  type AgentStep,
  type StepDefinition,
  type WorkflowDefinition,
} from '../workflows/model.js';
import { changesOrRunsCommands, mcpServersReached, stepToolChoice } from '../workflows/step-tools.js';

/**
 * What tools that run commands or agents may do for callers over HTTP (`serve`'s `/mcp`). Stdio
 * (`switchboard mcp`) has none: its client is the user's own, started by them, as the CLI is.
 */
export interface CommandPolicy {
  /** `--allow-commands` / `serve.allow_commands`. */
  allowCommands: boolean;
  /** The real paths of `--repo-root` / `serve.repo_roots`: the only folders such tools work in. */
  repoRoots: readonly string[];
}

const ENABLE_HINT =
  'start serve with --allow-commands --repo-root DIR (or serve.allow_commands and serve.repo_roots in switchboard.yaml), or use `switchboard mcp` on stdio';

/** `scheme://…` and scp-like `user@host:path`: a repository no root can hold. */
const REMOTE_PATTERN = /^(?:[a-z][a-z0-9+.-]*:\/\/|[^\s/:@]+@[^\s/:]+:)/i;

/**
 * Refuses a file an HTTP caller names for Switchboard to load (a workflow, a task file) that the one
 * file policy keeps from every tool (`.env` files, keys, credentials, state folders), before a byte of
 * it is read: serve reads on the caller's behalf, and must not be a way around the deny list.
 */
export function checkCallerFile(
  policy: CommandPolicy | undefined,
  path: string,
  what: string,
  cwd = process.cwd(),
): void {
  if (policy === undefined) return;
  const written = resolve(cwd, path);
  for (const candidate of new Set([written, realOrResolved(written)])) {
    const refused = fileRefusal(candidate, { named: path });
    if (refused !== undefined) {
      throw new SwitchboardError('FORBIDDEN', `${what} ${refused}`, {
        hint: 'name a workflow or task file of your own; secrets and credentials are never loaded over HTTP',
      });
    }
  }
}

/**
 * Refuses `agent_run` unless commands are allowed, and then a repository or task file outside the
 * roots (see `checkRepository`). `repo` defaults to `cwd`.
 */
export async function checkAgentRun(
  policy: CommandPolicy | undefined,
  { repo, taskFile }: { repo?: string | undefined; taskFile?: string | undefined },
  cwd = process.cwd(),
): Promise<void> {
  if (policy === undefined) return;
  if (!policy.allowCommands) {
    throw new SwitchboardError(
      'FORBIDDEN',
      'agent_run runs an agent and commands, which this server does not allow over HTTP',
      { hint: ENABLE_HINT },
    );
  }
  await checkRepository(policy, repo ?? '.', 'agent_run', cwd);
  if (taskFile !== undefined) checkUnderRoots(policy, resolve(cwd, taskFile), 'the task file');
}

/**
 * Refuses a repository an agent would work in and merge into unless it lies wholly under a root: the
 * folder given, and the repository git finds from there (its top level, its main worktree and its
 * shared `.git`), each with links followed. A folder under a root may belong to a repository that
 * encloses the root, or hold a `.git` that links to a repository elsewhere: git would work there.
 */
export async function checkRepository(
  policy: CommandPolicy | undefined,
  repo: string,
  what: string,
  cwd = process.cwd(),
): Promise<void> {
  if (policy === undefined) return;
  if (REMOTE_PATTERN.test(repo)) {
    throw new SwitchboardError(
      'FORBIDDEN',
      `${what} over HTTP works only in local repositories, not ${repo}`,
      {
        hint: 'clone it under one of the --repo-root folders and pass that path',
      },
    );
  }
  const directory = resolve(cwd, repo);
  checkUnderRoots(policy, directory, 'the repository');
  for (const [place, path] of await repositoryPlaces(directory)) {
    checkUnderRoots(policy, path, `${directory} is in a repository whose ${place}`, {
      hint: `git works on the repository that holds ${directory}: use one whose folder and .git are both under ${policy.repoRoots.join(', ')} (\`git init\` a folder of its own), or start serve with a --repo-root that holds that repository`,
    });
  }
}

/** Where git works from `directory`: none when it is no repository (the run then fails on its own). */
async function repositoryPlaces(directory: string): Promise<Array<[string, string]>> {
  if (!existsFolder(directory)) return [];
  const common = await git(directory, ['rev-parse', '--path-format=absolute', '--git-common-dir']);
  if (common.exitCode !== 0) return [];
  const places: Array<[string, string]> = [['git folder', common.stdout.trim()]];
  const top = await git(directory, ['rev-parse', '--path-format=absolute', '--show-toplevel']);
  if (top.exitCode === 0 && top.stdout.trim() !== '') places.push(['top level', top.stdout.trim()]);
  const main = (await listWorktrees(directory))[0]?.path;
  if (main !== undefined) places.push(['main worktree', main]);
  return places;
}

/**
 * Refuses a workflow (the run's file, or a sub-workflow it reaches) whose steps run commands, unless
 * commands are allowed and the file is under a root; and one whose steps read files (the default tools
 * included: `tools:` omitted gives every file tool) in a working directory outside every root.
 * Each step is read as the engine will run it (`stepToolChoice`). Called as each file is loaded, before
 * any step.
 */
export function checkWorkflow(policy: CommandPolicy | undefined, workflow: WorkflowDefinition): void {
  if (policy === undefined) return;
  for (const step of everyStep(workflow)) checkFileTools(policy, workflow, step);
  const step = everyStep(workflow).find((candidate) => runsCommands(workflow, candidate));
  if (step === undefined) return;
  if (!policy.allowCommands) {
    throw new SwitchboardError(
      'FORBIDDEN',
      `workflow ${workflow.name}: step "${step.name}" ${whatItRuns(step)}, which this server does not allow over HTTP`,
      { hint: ENABLE_HINT },
    );
  }
  checkUnderRoots(policy, workflow.file, `workflow file ${workflow.file}`);
}

/** The MCP servers a step gets over HTTP: those it opts into (`--allow-mcp` is the CLI's alone). */
function stepServers(workflow: WorkflowDefinition, step: AgentStep): string[] {
  const declared = Object.keys(workflow.runtime.mcpServers);
  if (step.mcp === true) return declared;
  return Array.isArray(step.mcp) ? step.mcp.filter((name) => declared.includes(name)) : [];
}

/**
 * Script steps, agent steps that work in a git worktree, and LLM steps whose tools can write or run a
 * command (`write_file`, `edit_file`, `run_command`, which `tools:` omitted gives a step on an API
 * provider; Claude Code tools beyond `Read`, `Glob`, `Grep`) or reach an MCP server: each can change
 * files or run a command here.
 */
function runsCommands(workflow: WorkflowDefinition, step: StepDefinition): boolean {
  if (step.type === 'script') return true;
  if (step.type !== 'agent') return false;
  if (step.git !== undefined) return true;
  const servers = stepServers(workflow, step);
  const choice = stepToolChoice(step.tools, servers);
  return changesOrRunsCommands(choice) || mcpServersReached(choice, servers).length > 0;
}

/**
 * A step whose model reads files (the file tools, Claude Code's `Read`, `Glob`, `Grep`; those that write
 * and run commands work there too) reads its working directory: over HTTP that folder must be under a root, as a repository must. A templated
 * working directory is known only at run time, so it is refused here.
 */
function checkFileTools(policy: CommandPolicy, workflow: WorkflowDefinition, step: StepDefinition): void {
  if (step.type !== 'agent' || step.git !== undefined) return;
  if (stepToolChoice(step.tools, stepServers(workflow, step)).files.length === 0) return;
  const written = step.workingDir ?? workflow.runtime.workingDir;
  const what = `workflow ${workflow.name}: step "${step.name}" reads files (its tools: ${step.tools === undefined ? 'left out: every file tool' : step.tools.join(', ')}) in its working directory`;
  const hint = `give the step tools: [] (no file tools), or a working_dir under ${policy.repoRoots.join(', ') || 'a --repo-root folder'} (start serve with --repo-root DIR)`;
  if (written?.includes('{{') === true) {
    throw new SwitchboardError('FORBIDDEN', `${what}, a template this server cannot check before it runs`, {
      hint,
    });
  }
  const directory = written === undefined ? process.cwd() : resolve(workflow.dir, written);
  checkUnderRoots(policy, directory, what, { hint });
}

function whatItRuns(step: StepDefinition): string {
  if (step.type === 'script') return 'runs a command';
  return step.type === 'agent' && step.git !== undefined
    ? 'runs a Claude Code agent in a worktree'
    : `gives the model tools that write files or run commands (${step.type === 'agent' && step.tools === undefined ? 'tools: left out gives a step on an API provider write_file, edit_file and run_command; name only read_file, list_files, search_files to keep it read-only' : 'write_file, edit_file, run_command, Claude Code tools beyond Read, Glob and Grep, or MCP servers'})`;
}

function checkUnderRoots(
  policy: CommandPolicy,
  path: string,
  what: string,
  { hint = `use a path under ${policy.repoRoots.join(', ')}, or start serve with another --repo-root` } = {},
): void {
  const real = realOrResolved(path);
  if (policy.repoRoots.some((root) => isInside(real, root))) return;
  throw new SwitchboardError('FORBIDDEN', `${what} (${real}) is outside the folders this server works in`, {
    hint,
  });
}

function isInside(path: string, root: string): boolean {
  const way = relative(root, path);
  return way === '' || (!isAbsolute(way) && way !== '..' && !way.startsWith(`..${sep}`));
}

/**
 * The real paths of the configured roots; each must exist (a typo would otherwise refuse every run
 * with a puzzling error).
 */
export function resolveRepoRoots(roots: readonly string[]): string[] {
  return roots.map((root) => {
    const real = realOrResolved(root);
    if (!existsFolder(real)) {
      throw new SwitchboardError('INVALID_INPUT', `repository root ${root} does not exist`, {
        hint: 'pass an existing folder to --repo-root (or serve.repo_roots)',
      });
    }
    return real;
  });
}

function existsFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
