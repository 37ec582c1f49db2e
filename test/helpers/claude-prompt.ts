import { spawn } from 'node:child_process';
import { resolveClaudeExecutable } from '../../src/providers/claude-code/executable.js';

/** One hook run as Claude Code reports it (`--include-hook-events`), with when each event arrived. */
export interface HookEvent {
  hookEvent: string;
  outcome: string;
  exitCode: number | null;
  stdout: string;
  /** Milliseconds between the `hook_started` and `hook_response` events reaching us. */
  elapsedMs: number;
}

export interface ClaudePromptRun {
  status: number | null;
  /** The final `result` event's text. */
  result: string | undefined;
  hooks: HookEvent[];
  stderr: string;
}

/**
 * Runs the real Claude Code binary on one prompt (`claude -p … --output-format stream-json
 * --include-hook-events`) with settings from `configDir` and the project in `cwd`, against `baseUrl`
 * (the simulator). The environment is the caller's plus these; hooks run with it.
 */
export function promptClaude(
  prompt: string,
  {
    cwd,
    configDir,
    baseUrl,
    env = process.env,
  }: { cwd: string; configDir: string; baseUrl: string; env?: NodeJS.ProcessEnv },
): Promise<ClaudePromptRun> {
  const child = spawn(
    resolveClaudeExecutable(),
    ['-p', prompt, '--output-format', 'stream-json', '--verbose', '--include-hook-events'],
    {
      cwd,
      env: {
        ...env,
        CLAUDE_CONFIG_DIR: configDir,
        ANTHROPIC_BASE_URL: baseUrl,
        ANTHROPIC_API_KEY: 'sk-ant-hook-test-key-0001',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const started = new Map<string, number>();
  const hooks: HookEvent[] = [];
  let result: string | undefined;
  let stderr = '';
  let pending = '';
  const onLine = (line: string) => {
    let event: Record<string, unknown>;
    try {
      event = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    const id = String(event['hook_id']);
    if (event['subtype'] === 'hook_started') started.set(id, performance.now());
    if (event['subtype'] === 'hook_response') {
      hooks.push({
        hookEvent: String(event['hook_event']),
        outcome: String(event['outcome']),
        exitCode: typeof event['exit_code'] === 'number' ? event['exit_code'] : null,
        stdout: String(event['stdout'] ?? ''),
        elapsedMs: performance.now() - (started.get(id) ?? Number.NaN),
      });
    }
    if (event['type'] === 'result' && typeof event['result'] === 'string') result = event['result'];
  };
  child.stdout.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    lines.forEach(onLine);
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
  return new Promise((resolve) => {
    child.on('close', (status) => {
      clearTimeout(timer);
      onLine(pending);
      resolve({ status, result, hooks, stderr });
    });
  });
}
