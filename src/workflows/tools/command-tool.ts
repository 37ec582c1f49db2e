import { secretPaths } from '../../confinement/file-access.js';
import { confinementShortfall, SANDBOX_VARIABLE } from '../../confinement/sandbox.js';
import type { FilePolicy } from './file-policy.js';
import { toolError, type StepTool, type ToolOutcome } from './step-tool.js';

/** How long a command runs when the call says nothing, in seconds. */
const DEFAULT_TIMEOUT_SECONDS = 120;
/** The longest a call may ask for, in seconds. */
const MAX_TIMEOUT_SECONDS = 600;
/** The output the model gets: the last this many characters of stdout and stderr together. */
const MAX_OUTPUT_CHARS = 30_000;

/**
 * `run_command` for a step on an API provider: a shell command in the working directory, inside the
 * same bubblewrap sandbox as a task's verify command (`confinedCommand`): the working directory
 * writable, the deny list's files in it masked, `HOME`, the temporary folders and the state folders
 * hidden, no network unless the step says `network: true`, no secret in its environment (`agentEnvironment`). Bounded in time (the
 * process group is killed) and in output (its last part, saying how much was cut). Refused, in one
 * line, where the sandbox is missing, unless the user turned it off (`SWITCHBOARD_AGENT_SANDBOX=off`).
 */
export function commandTool(policy: FilePolicy, { network = false }: { network?: boolean } = {}): StepTool {
  return {
    definition: {
      name: 'run_command',
      description: `Runs a shell command (sh -c) in the working directory, in a sandbox: it may change files there; it has ${network ? 'the network but' : 'no network and'} no home folder. Answers its exit code and output (the last ${MAX_OUTPUT_CHARS} characters). Stopped after "timeout_seconds".`,
      inputSchema: {
        type: 'object',
        properties: {
          command: { type: 'string', description: 'The command, as for sh -c, e.g. "npm test".' },
          timeout_seconds: {
            type: 'integer',
            minimum: 1,
            maximum: MAX_TIMEOUT_SECONDS,
            description: `How long it may run. Default ${DEFAULT_TIMEOUT_SECONDS}.`,
          },
        },
        required: ['command'],
      },
    },
    run: (input, signal) => runCommandTool(policy, input, signal, network),
  };
}

async function runCommandTool(
  policy: FilePolicy,
  input: Record<string, unknown>,
  signal: AbortSignal,
  network: boolean,
): Promise<ToolOutcome> {
  const command = input['command'];
  if (typeof command !== 'string' || command.trim() === '') {
    return toolError('give "command": a shell command to run in the working directory');
  }
  const shortfall = confinementShortfall();
  if (shortfall !== undefined && process.env[SANDBOX_VARIABLE] !== 'off') {
    return toolError(
      `run_command runs only in the sandbox, and ${shortfall}: install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or set ${SANDBOX_VARIABLE}=off to run commands unsandboxed`,
    );
  }
  const asked = input['timeout_seconds'];
  const seconds =
    typeof asked === 'number' && Number.isFinite(asked) && asked > 0
      ? Math.min(asked, MAX_TIMEOUT_SECONDS)
      : DEFAULT_TIMEOUT_SECONDS;
  const { runVerify } = await import('../../agents/verify.js');
  const result = await runVerify({
    command,
    cwd: policy.root,
    timeoutMs: Math.round(seconds * 1000),
    abortSignal: signal,
    tailLength: MAX_OUTPUT_CHARS,
    label: 'command',
    // The working directory is the caller's folder, not a worktree: what Claude Code's Bash gets masked there.
    confine: {
      hiddenDirectories: policy.hidden,
      maskDenied: true,
      maskedPaths: secretPaths(policy.root),
      network,
    },
  });
  const output = result.outputTail.startsWith('…') ? result.outputTail.slice(1) : result.outputTail;
  const lines = [
    result.timedOut ? `timed out after ${seconds} s` : `exit code ${result.exitCode ?? 'none'}`,
    ...(result.omittedChars > 0
      ? [`[output cut: the first ${result.omittedChars} characters are not shown]`]
      : []),
    output,
  ];
  const content = lines.join('\n').trimEnd();
  return result.passed ? { content } : { content, isError: true };
}
