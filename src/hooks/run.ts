import { join } from 'node:path';
import type { RouteDecision, Skill } from '../core/route-types.js';
import { isPlainObject } from '../core/plain-object.js';
import { hookOutput } from './context.js';
import type { InProcessRouter } from './in-process-router.js';
import { DEFAULT_SERVER, routeOnServer } from './server-route.js';

/** What the hook needs to ask a server: no router, no config. */
export interface ServedHookOptions {
  /** Claude Code's hook input: JSON with `prompt`, `session_id`, `cwd`, … */
  input: string;
  server: URL;
  minConfidence: number;
  /** The skills folder that describes the server's decision (its description and file), if any. */
  skills?: string | undefined;
  /**
   * The server routes with that very folder (the background server of the hook's `--skills`): ask it
   * for the description and file, and read the folder only when it leaves them out.
   */
  serverHasSkills?: boolean;
  /** The state folder: whose token file for the server to read first (the registry is read after), and
   * whose parsed skill files to reuse. */
  stateDir?: string;
  /** Fires at the deadline: whatever is under way is abandoned. */
  abortSignal: AbortSignal;
  /** Hears that the server answered (for SWITCHBOARD_DEBUG). */
  onServed?: (server: URL) => void;
  /** Hears why the hook stays silent (for SWITCHBOARD_DEBUG). */
  onSilence?: (reason: string) => void;
}

/** Settings of one run of the prompt hook (`switchboard hooks run`). */
export interface PromptHookOptions extends Omit<ServedHookOptions, 'server' | 'skills'> {
  /** The in-process router (local tiers only); undefined: no skills, server only. */
  router: InProcessRouter | undefined;
  /** The server to ask first (named, or the default address to try), or none. */
  server: URL | undefined;
  /** Hears that the server gave no answer, before the hook routes in process (to start one for next time). */
  onServerMissing?: () => void;
}

/** The default server's address, tried when no server was named. */
export const DEFAULT_SERVER_URL = new URL(DEFAULT_SERVER);

/**
 * What the hook prints for a prompt: Claude Code's UserPromptSubmit output naming the routed skill, or
 * undefined to let the prompt through untouched (abstained, unsure, not a request, or nothing to route
 * with). Asks the server first when there is one, else routes in process.
 */
export async function promptHookOutput(options: PromptHookOptions): Promise<string | undefined> {
  const request = routeRequest(options);
  if (request === undefined) return undefined;
  if (options.server !== undefined) {
    const skills = options.router?.options.skills;
    const served = await askServer(request, {
      ...options,
      server: options.server,
      skills: typeof skills === 'string' ? skills : undefined,
    });
    if (served !== undefined) return served.output;
    if (options.abortSignal.aborted) return silent(options, 'past the deadline');
    options.onServerMissing?.();
  }
  if (options.router === undefined)
    return silent(options, 'the server did not answer and there are no skills to route with');
  const routed = await options.router.route(request, options.abortSignal);
  if ('error' in routed) return silent(options, routed.error);
  return named(routed.decision, routed.skill, options);
}

/**
 * What the hook prints when `options.server` answers: `{ output }` (undefined output: stay silent),
 * or undefined when the server gave no answer, for the caller to route otherwise. Loads no router:
 * the hook's quick path asks a running server with this before it reads its config.
 */
export async function servedPromptOutput(
  options: ServedHookOptions,
): Promise<{ output: string | undefined } | undefined> {
  const request = routeRequest(options);
  if (request === undefined) return { output: undefined };
  return askServer(request, options);
}

function silent(options: Pick<ServedHookOptions, 'onSilence'>, reason: string): undefined {
  options.onSilence?.(reason);
  return undefined;
}

/** The request to route for the hook's input, or undefined (said why) when there is nothing to route. */
function routeRequest(
  options: Pick<ServedHookOptions, 'input' | 'onSilence'>,
): { text: string; tags: Record<string, string> } | undefined {
  const input = parseInput(options.input);
  if (input === undefined) return silent(options, 'the hook input has no prompt');
  // A slash command is an instruction to Claude Code, not a request for a skill.
  if (input.prompt.trim() === '' || input.prompt.trimStart().startsWith('/'))
    return silent(options, 'nothing to route');
  const tags: Record<string, string> = { source: 'claude-code-hook' };
  if (input.sessionId !== undefined) tags['session'] = input.sessionId;
  return { text: input.prompt, tags };
}

async function askServer(
  request: { text: string; tags: Record<string, string> },
  options: ServedHookOptions,
): Promise<{ output: string | undefined } | undefined> {
  const body = options.serverHasSkills === true ? { ...request, describe: true } : request;
  const decision = await routeOnServer(options.server, body, options.abortSignal, options.stateDir);
  if (decision === undefined) return undefined;
  options.onServed?.(options.server);
  const { skillDescription: description, skillFile: file } = decision;
  const skill =
    options.serverHasSkills === true && typeof description === 'string' && typeof file === 'string'
      ? { description, file }
      : await describe(decision, options.skills, options.stateDir);
  return { output: named(decision, skill, options) };
}

function named(
  decision: RouteDecision,
  skill: Pick<Skill, 'description' | 'file'> | undefined,
  options: Pick<ServedHookOptions, 'minConfidence' | 'onSilence'>,
): string | undefined {
  const output = hookOutput(decision, skill, options.minConfidence);
  if (output === undefined)
    silent(options, `routed to ${decision.skill} at ${decision.confidence.toFixed(2)}: not sure enough`);
  return output;
}

function parseInput(text: string): { prompt: string; sessionId?: string } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isPlainObject(value) || typeof value['prompt'] !== 'string') return undefined;
  const sessionId = value['session_id'];
  return { prompt: value['prompt'], ...(typeof sessionId === 'string' ? { sessionId } : {}) };
}

/** The routed skill's description and file, from the skills folder (parsed files are cached). */
async function describe(
  decision: RouteDecision,
  folder: string | undefined,
  stateDir: string | undefined,
): Promise<Skill | undefined> {
  if (folder === undefined) return undefined;
  try {
    const { loadSkills } = await import('../route/skills.js');
    const cacheDir = stateDir === undefined ? undefined : join(stateDir, 'models');
    const { skills } = loadSkills(folder, cacheDir === undefined ? {} : { cacheDir });
    return skills.find((skill) => skill.name === decision.skill);
  } catch {
    return undefined;
  }
}
