import type { Scenario } from '../../src/sim/scenario.js';

// Simulator scenarios that script an agent run of the real Claude Code binary. The simulator's `turn`
// is the number of user messages in a request: the prompt is turn 1 and each tool result Claude Code
// sends back adds one, so the answer to the n-th tool call's result is turn n + 1. A resumed session
// carries the earlier turns: its first request is turn (earlier turns) + 1.

/** One tool call as the simulated model makes it. */
export interface ScriptedToolCall {
  name: string;
  input: Record<string, unknown>;
}

export interface ToolSequenceOptions {
  /** One call per turn, in order. */
  calls: readonly ScriptedToolCall[];
  /** The closing answer once every call has its result. @default 'done' */
  finalText?: string;
  /** Number the first call's turn from here (a resumed session). @default 1 */
  firstTurn?: number;
}

/** Turn 1..n: the calls, one per turn; turn n + 1: the final text. */
export function toolSequenceScenario({
  calls,
  finalText = 'done',
  firstTurn = 1,
}: ToolSequenceOptions): Scenario {
  return {
    rules: [
      ...calls.map((call, index) => ({
        name: `call-${index + 1}-${call.name}`,
        match: { turn: firstTurn + index },
        reply: { tool: { name: call.name, input: call.input } },
      })),
      { name: 'final', match: { turn: firstTurn + calls.length }, reply: { text: finalText } },
    ],
    fallback: { text: finalText },
  };
}

/** Turn 1: a Write of `content` to `path` (relative to the agent's cwd, or absolute); turn 2: the final text. */
export function writeFileScenario({
  path,
  content,
  finalText,
}: {
  path: string;
  content: string;
  finalText?: string;
}): Scenario {
  return toolSequenceScenario({
    calls: [{ name: 'Write', input: { file_path: path, content } }],
    ...(finalText === undefined ? {} : { finalText }),
  });
}

/** Writes to several paths, one per turn (e.g. one inside the worktree and others that try to leave it). */
export function writeFilesScenario({
  files,
  finalText,
}: {
  files: readonly { path: string; content: string }[];
  finalText?: string;
}): Scenario {
  return toolSequenceScenario({
    calls: files.map((file) => ({ name: 'Write', input: { file_path: file.path, content: file.content } })),
    ...(finalText === undefined ? {} : { finalText }),
  });
}

/**
 * Turn 1: a Read of `path` (Claude Code refuses to edit a file it has not read); turn 2: an Edit that
 * replaces `oldString` with `newString`; turn 3: the final text. Needs `Read` and `Edit` allowed.
 */
export function editFileScenario({
  path,
  oldString,
  newString,
  finalText,
}: {
  path: string;
  oldString: string;
  newString: string;
  finalText?: string;
}): Scenario {
  return toolSequenceScenario({
    calls: [
      { name: 'Read', input: { file_path: path } },
      { name: 'Edit', input: { file_path: path, old_string: oldString, new_string: newString } },
    ],
    ...(finalText === undefined ? {} : { finalText }),
  });
}

/** Bash commands, one per turn, then the final text. */
export function bashScenario({
  commands,
  finalText,
}: {
  commands: readonly string[];
  finalText?: string;
}): Scenario {
  return toolSequenceScenario({
    calls: commands.map((command) => ({ name: 'Bash', input: { command } })),
    ...(finalText === undefined ? {} : { finalText }),
  });
}

/** Every request answers with the same Write, so the agent never finishes by itself (for maxTurns). */
export function endlessToolScenario({
  path = 'loop.txt',
  usage,
}: {
  path?: string;
  usage?: { input?: number; output?: number };
} = {}): Scenario {
  return {
    rules: [],
    fallback: {
      tool: { name: 'Write', input: { file_path: path, content: 'again' } },
      ...(usage === undefined ? {} : { usage }),
    },
  };
}

/**
 * Every response reports this much usage and asks for another Write, so the cost climbs turn after
 * turn until a cap stops the agent. 200k input tokens on a Sonnet model cost $0.60 per turn.
 */
export function costlyScenario({
  inputTokens = 200_000,
  outputTokens = 1_000,
  path = 'costly.txt',
}: { inputTokens?: number; outputTokens?: number; path?: string } = {}): Scenario {
  return endlessToolScenario({ path, usage: { input: inputTokens, output: outputTokens } });
}

/**
 * The model stops answering at `turn`: the request's headers never come (`stall`). Earlier turns run the
 * given calls. For the idle watchdog.
 */
export function stalledScenario({
  turn = 1,
  calls = [],
}: { turn?: number; calls?: readonly ScriptedToolCall[] } = {}): Scenario {
  return {
    rules: [
      ...calls.map((call, index) => ({
        name: `call-${index + 1}-${call.name}`,
        match: { turn: index + 1 },
        reply: { tool: { name: call.name, input: call.input } },
      })),
      { name: 'stall', match: { turn }, fault: { kind: 'stall' as const } },
    ],
  };
}

/** Every answer starts after `delayMs` (a slow model; the stream stays silent meanwhile). */
export function slowScenario({ delayMs, text = 'finally' }: { delayMs: number; text?: string }): Scenario {
  return { rules: [], fallback: { text, delayMs } };
}

/** The API answers 429 with a usage-limit message that names the reset time (epoch seconds). */
export function rateLimitScenario({
  resetsAt = Math.floor(Date.now() / 1000) + 3600,
}: { resetsAt?: number } = {}): Scenario {
  return {
    rules: [
      {
        name: 'rate-limit',
        fault: { status: 429, retryAfter: 60, message: `Claude AI usage limit reached|${resetsAt}` },
      },
    ],
  };
}

/** The API fails with `status`; Claude Code reports that as `subtype: success` with `is_error: true`. */
export function apiErrorScenario({ status = 500 }: { status?: number } = {}): Scenario {
  return { rules: [{ name: 'api-error', fault: { status } }] };
}
