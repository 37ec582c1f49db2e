import { join } from 'node:path';
import type { RouteDecision, Skill } from '../core/route-types.js';
import { isPlainObject } from '../core/plain-object.js';
import type { RouterOptions } from '../route/router.js';
import { hookOutput } from './context.js';
import type { InProcessRouter } from './in-process-router.js';
import { DEFAULT_SERVER, routeOnServer } from './server-route.js';

/** Settings of one run of the prompt hook (`switchboard hooks run`). */
export interface PromptHookOptions {
  /** Claude Code's hook input: JSON with `prompt`, `session_id`, `cwd`, … */
  input: string;
  /** The in-process router (local tiers only); undefined: no skills, server only. */
  router: InProcessRouter | undefined;
  /** The server to ask first (named, or the default address to try), or none. */
  server: URL | undefined;
  minConfidence: number;
  /** The state folder whose token file for the server to read first (the registry is read after). */
  stateDir?: string;
  /** Fires at the deadline: whatever is under way is abandoned. */
  abortSignal: AbortSignal;
  /** Hears that the server answered (for SWITCHBOARD_DEBUG). */
  onServed?: (server: URL) => void;
  /** Hears that the server gave no answer, before the hook routes in process (to start one for next time). */
  onServerMissing?: () => void;
  /** Hears why the hook stays silent (for SWITCHBOARD_DEBUG). */
  onSilence?: (reason: string) => void;
}

/** The default server's address, tried when no server was named. */
export const DEFAULT_SERVER_URL = new URL(DEFAULT_SERVER);

/**
 * What the hook prints for a prompt: Claude Code's UserPromptSubmit output naming the routed skill, or
 * undefined to let the prompt through untouched (abstained, unsure, not a request, or nothing to route
 * with). Asks the server first when there is one, else routes in process.
 */
export async function promptHookOutput(options: PromptHookOptions): Promise<string | undefined> {
  const silent = (reason: string) => {
    options.onSilence?.(reason);
    return undefined;
  };
  const input = parseInput(options.input);
  if (input === undefined) return silent('the hook input has no prompt');
  // A slash command is an instruction to Claude Code, not a request for a skill.
  if (input.prompt.trim() === '' || input.prompt.trimStart().startsWith('/'))
    return silent('nothing to route');
  const tags: Record<string, string> = { source: 'claude-code-hook' };
  if (input.sessionId !== undefined) tags['session'] = input.sessionId;

  if (options.server !== undefined) {
    const decision = await routeOnServer(
      options.server,
      { text: input.prompt, tags },
      options.abortSignal,
      options.stateDir,
    );
    if (decision !== undefined) {
      options.onServed?.(options.server);
      return named(decision, await describe(decision, options.router?.options));
    }
    if (options.abortSignal.aborted) return silent('past the deadline');
    options.onServerMissing?.();
  }
  if (options.router === undefined)
    return silent('the server did not answer and there are no skills to route with');
  const routed = await options.router.route({ text: input.prompt, tags }, options.abortSignal);
  if ('error' in routed) return silent(routed.error);
  return named(routed.decision, routed.skill);

  function named(decision: RouteDecision, skill: Skill | undefined): string | undefined {
    const output = hookOutput(decision, skill, options.minConfidence);
    if (output === undefined)
      silent(`routed to ${decision.skill} at ${decision.confidence.toFixed(2)}: not sure enough`);
    return output;
  }
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
  router: RouterOptions | undefined,
): Promise<Skill | undefined> {
  if (typeof router?.skills !== 'string') return undefined;
  try {
    const { loadSkills } = await import('../route/skills.js');
    const cacheDir = router.stateDir === undefined ? undefined : join(router.stateDir, 'models');
    const { skills } = loadSkills(router.skills, cacheDir === undefined ? {} : { cacheDir });
    return skills.find((skill) => skill.name === decision.skill);
  } catch {
    return undefined;
  }
}
