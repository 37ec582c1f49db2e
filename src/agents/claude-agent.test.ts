import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { claudeProcessIds } from '../../test/helpers/claude.js';
import { startSimulator, type Simulator } from '../sim/server.js';
import type { Scenario } from '../sim/scenario.js';
import {
  apiErrorScenario,
  bashScenario,
  costlyScenario,
  editFileScenario,
  endlessToolScenario,
  rateLimitScenario,
  slowScenario,
  stalledScenario,
  writeFileScenario,
  writeFilesScenario,
} from '../../test/helpers/agent-scenarios.js';
import { waitFor } from '../../test/helpers/wait-for.js';
import {
  createToolPolicy,
  matchesBashPattern,
  runAgent,
  splitBashCommand,
  type AgentInvocation,
  type AgentOutcome,
} from './claude-agent.js';

// Every run here is the real Claude Code binary (shipped by @anthropic-ai/claude-agent-sdk) against
// `switchboard sim` on loopback; it really executes the tool calls the scenario scripts.

const API_KEY = 'sk-ant-agent-test-key-0123456789';
const temporary: string[] = [];
let sim: Simulator | undefined;

function temporaryDirectory(prefix: string): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  temporary.push(directory);
  return directory;
}

afterEach(async () => {
  await sim?.close();
  sim = undefined;
  for (const directory of temporary.splice(0)) rmSync(directory, { recursive: true, force: true });
});

interface AgentHarness {
  sim: Simulator;
  cwd: string;
  /** A folder outside the worktree. */
  outside: string;
  transcriptPath: string;
  configDir: string;
  run(overrides?: Partial<AgentInvocation>): Promise<AgentOutcome>;
}

/** A worktree folder, a folder outside it, a throwaway CLAUDE_CONFIG_DIR and the simulator. */
async function agentHarness(
  scenario: (paths: { cwd: string; outside: string }) => Scenario,
): Promise<AgentHarness> {
  const cwd = temporaryDirectory('switchboard-agent-cwd-');
  const outside = temporaryDirectory('switchboard-agent-outside-');
  const configDir = temporaryDirectory('switchboard-claude-config-');
  const transcriptPath = join(temporaryDirectory('switchboard-agent-transcript-'), 'run', 'transcript.jsonl');
  sim = await startSimulator({ scenario: scenario({ cwd, outside }), maxLifetimeMs: 120_000 });
  const started = sim;
  return {
    sim: started,
    cwd,
    outside,
    transcriptPath,
    configDir,
    run: (overrides = {}) =>
      runAgent({
        cwd,
        prompt: 'do the task',
        allowedTools: ['Read', 'Write', 'Edit'],
        transcriptPath,
        model: 'claude-haiku-4-5',
        connection: { baseUrl: started.url, apiKey: API_KEY, configDir },
        idleTimeoutMs: 30_000,
        wallClockMs: 60_000,
        ...overrides,
      }),
  };
}

/**
 * Processes that still run. Killed orphans can linger as zombies until their new parent reaps them (this
 * VM's init is slow to); they hold no resources and run nothing, so they do not count.
 */
function liveProcesses(): { pid: number; pgid: number; args: string }[] {
  return execFileSync('ps', ['-eo', 'pid=,pgid=,stat=,args='], { encoding: 'utf8' })
    .split('\n')
    .map((line) => /^\s*(\d+)\s+(\d+)\s+(\S+)\s+(.*)$/.exec(line))
    .filter((match): match is RegExpExecArray => match !== null && !(match[3] ?? '').startsWith('Z'))
    .map((match) => ({ pid: Number(match[1]), pgid: Number(match[2]), args: match[4] ?? '' }));
}

/**
 * The Claude Code binaries in one process group. Tests look at their own group, never at every Claude
 * Code on the machine: other worktrees run theirs at the same time.
 */
function claudeInGroup(pgid: number): number[] {
  const ids = claudeProcessIds();
  return liveProcesses()
    .filter((process) => process.pgid === pgid && ids.includes(process.pid))
    .map((process) => process.pid);
}

function transcript(path: string): { type: string; subtype?: string; session_id?: string }[] {
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { type: string; subtype?: string; session_id?: string });
}

describe('runAgent with the real Claude Code binary', () => {
  it('writes a file in its worktree, reports success with the session id, and keeps a transcript', async () => {
    const harness = await agentHarness(() =>
      writeFileScenario({
        path: 'notes/hello.txt',
        content: 'hello from the agent\n',
        finalText: 'wrote it',
      }),
    );
    mkdirSync(join(harness.cwd, 'notes'));
    const spawned: number[] = [];
    const progress: number[] = [];
    const outcome = await harness.run({
      onSpawn: (pid) => spawned.push(pid),
      onProgress: ({ costUsd }) => progress.push(costUsd),
    });

    expect(outcome).toMatchObject({
      status: 'success',
      subtype: 'success',
      isError: false,
      resultText: 'wrote it',
      turns: 2,
      denied: [],
    });
    expect(readFileSync(join(harness.cwd, 'notes/hello.txt'), 'utf8')).toBe('hello from the agent\n');
    expect(outcome.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(outcome.costUsd).toBeGreaterThan(0);
    expect(spawned).toHaveLength(1);
    expect(progress.length).toBeGreaterThanOrEqual(2);

    const lines = transcript(harness.transcriptPath);
    expect(lines[0]).toMatchObject({ type: 'system', subtype: 'init', session_id: outcome.sessionId });
    expect(lines.at(-1)).toMatchObject({ type: 'result', subtype: 'success' });
    expect(lines.some((line) => line.type === 'assistant')).toBe(true);
    const raw = readFileSync(harness.transcriptPath, 'utf8');
    expect(raw).not.toContain(API_KEY);
    expect(raw).not.toContain('ANTHROPIC_API_KEY=');
  });

  it('denies writes that leave the worktree: an absolute path, `..`, and a link to outside', async () => {
    const harness = await agentHarness(({ outside }) =>
      writeFilesScenario({
        files: [
          { path: join(outside, 'absolute.txt'), content: 'escaped' },
          { path: `../${outside.split('/').at(-1)}/dotdot.txt`, content: 'escaped' },
          { path: 'link/through-link.txt', content: 'escaped' },
          { path: 'inside.txt', content: 'fine' },
        ],
        finalText: 'tried',
      }),
    );
    symlinkSync(harness.outside, join(harness.cwd, 'link'));
    const outcome = await harness.run();

    expect(outcome.status).toBe('success');
    for (const name of ['absolute.txt', 'dotdot.txt', 'through-link.txt']) {
      expect(existsSync(join(harness.outside, name))).toBe(false);
    }
    expect(readFileSync(join(harness.cwd, 'inside.txt'), 'utf8')).toBe('fine');
    expect(outcome.denied).toHaveLength(3);
    for (const denial of outcome.denied) {
      expect(denial.tool).toBe('Write');
      expect(denial.reason).toMatch(/outside the worktree/);
    }
    expect(outcome.denied.map((denial) => (denial.input as { file_path: string }).file_path)).toEqual([
      join(harness.outside, 'absolute.txt'),
      expect.stringContaining('dotdot.txt'),
      expect.stringContaining('link/through-link.txt'),
    ]);
  });

  it('edits a file it has read', async () => {
    const harness = await agentHarness(() =>
      editFileScenario({ path: 'app.txt', oldString: 'colour = red', newString: 'colour = blue' }),
    );
    writeFileSync(join(harness.cwd, 'app.txt'), 'name = app\ncolour = red\n');
    const outcome = await harness.run();
    expect(outcome).toMatchObject({ status: 'success', turns: 3, denied: [] });
    expect(readFileSync(join(harness.cwd, 'app.txt'), 'utf8')).toBe('name = app\ncolour = blue\n');
  });

  it('runs Bash commands that match an allowed pattern and denies the rest, read-only ones included', async () => {
    const harness = await agentHarness(() =>
      bashScenario({
        commands: [
          'echo hello world',
          'touch pwned.txt',
          'echo hello; touch pwned-too.txt',
          'echo hello > redirected.txt',
          'ls',
        ],
      }),
    );
    const outcome = await harness.run({ allowedTools: ['Bash(echo hello:*)'] });

    expect(outcome.status).toBe('success');
    for (const name of ['pwned.txt', 'pwned-too.txt', 'redirected.txt']) {
      expect(existsSync(join(harness.cwd, name))).toBe(false);
    }
    expect(outcome.denied.map((denial) => (denial.input as { command: string }).command)).toEqual([
      'touch pwned.txt',
      'echo hello; touch pwned-too.txt',
      'echo hello > redirected.txt',
      'ls',
    ]);
    expect(outcome.denied[0]?.reason).toMatch(/matches no allowed pattern.*Bash\(echo hello:\*\)/);
    // The allowed command really ran: its output is what the model saw next.
    expect(harness.sim.requests.find((entry) => entry.turn === 2)?.text).toContain('hello world');
    // Tools not listed are not even offered to the model.
    expect(harness.sim.requests.find((entry) => entry.turn === 1)?.tools).toEqual(['Bash']);
  });

  it('stops at maxTurns with the max_turns status', async () => {
    const harness = await agentHarness(() => endlessToolScenario());
    const outcome = await harness.run({ maxTurns: 2 });
    expect(outcome).toMatchObject({ status: 'max_turns', subtype: 'error_max_turns', isError: true });
    expect(harness.sim.requests.filter((entry) => entry.outcome === 'reply')).toHaveLength(2);
  });

  it('stops at the cost cap with budget_exceeded, reporting the running cost on the way', async () => {
    // $0.615 per turn on Sonnet: the second turn crosses a $1 cap.
    const harness = await agentHarness(() => costlyScenario({ inputTokens: 200_000, outputTokens: 1_000 }));
    const progress: { costUsd: number; turns: number; lastTool?: string }[] = [];
    const outcome = await harness.run({
      model: 'claude-sonnet-4-5',
      maxCostUsd: 1,
      onProgress: (update) => progress.push(update),
    });
    expect(outcome).toMatchObject({
      status: 'budget_exceeded',
      subtype: 'error_max_budget_usd',
      isError: true,
    });
    expect(outcome.costUsd).toBeGreaterThanOrEqual(1);
    expect(outcome.costUsd).toBeLessThan(2);
    expect(harness.sim.requests.filter((entry) => entry.outcome === 'reply')).toHaveLength(2);
    expect(progress.at(-1)).toMatchObject({ turns: 2, lastTool: 'Write' });
    expect(progress.at(-1)?.costUsd).toBeGreaterThanOrEqual(1.2);
  });

  it('kills the agent when the API stalls past the idle timeout, leaving no process behind', async () => {
    const harness = await agentHarness(() => stalledScenario());
    const pids: number[] = [];
    const claudeSeen = new Set<number>();
    // While the API stalls the CLI runs in the group: sample it, to prove it was there and is gone after.
    const sampler = setInterval(() => {
      if (pids[0] !== undefined) for (const pid of claudeInGroup(pids[0])) claudeSeen.add(pid);
    }, 100);
    const outcome = await harness
      .run({ idleTimeoutMs: 2_000, onSpawn: (pid) => pids.push(pid) })
      .finally(() => clearInterval(sampler));
    expect(outcome).toMatchObject({ status: 'idle_timeout', isError: true });
    expect(outcome.error).toMatch(/sent nothing for 2000 ms/);
    // It waited out the idle time (the stalled API would have kept it forever); how long the kill took
    // on a loaded machine is not the behaviour.
    expect(outcome.durationMs).toBeGreaterThanOrEqual(2_000);
    expect(outcome.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    // The CLI, and the shell around it that watches the parent (its arguments name the binary too).
    expect(claudeSeen.size).toBeGreaterThanOrEqual(1);
    expect(liveProcesses().filter((process) => process.pgid === pids[0])).toEqual([]);
    expect(claudeProcessIds().filter((pid) => claudeSeen.has(pid))).toEqual([]);
  });

  it('kills the whole process group at the wall clock, the tool it is running included', async () => {
    // Claude Code refuses a bare long `sleep`; a script it runs is what a slow test suite looks like.
    const harness = await agentHarness(() => bashScenario({ commands: ['sh slow.sh'] }));
    writeFileSync(join(harness.cwd, 'slow.sh'), 'sleep 41.25\n');
    const pids: number[] = [];
    const outcome = await harness.run({
      allowedTools: ['Bash(sh slow.sh)'],
      wallClockMs: 3_000,
      onSpawn: (pid) => pids.push(pid),
    });
    expect(outcome).toMatchObject({ status: 'timeout', isError: true });
    expect(outcome.error).toMatch(/within 3000 ms/);
    // Stopped at the wall clock, long before the script it was running would have ended by itself.
    expect(outcome.durationMs).toBeGreaterThanOrEqual(3_000);
    expect(outcome.durationMs).toBeLessThan(41_250);
    expect(liveProcesses().some((process) => process.args === 'sleep 41.25')).toBe(false);
    expect(liveProcesses().filter((process) => process.pgid === pids[0])).toEqual([]);
  });

  it('leaves no background command running after a successful run, orphaned ones included', async () => {
    const harness = await agentHarness(() => bashScenario({ commands: ['sh start-server.sh'] }));
    // The shell exits at once; its child is re-parented away from Claude Code's tree.
    writeFileSync(join(harness.cwd, 'start-server.sh'), 'nohup sleep 42.75 >/dev/null 2>&1 &\n');
    const outcome = await harness.run({ allowedTools: ['Bash(sh start-server.sh)'] });
    expect(outcome.status).toBe('success');
    expect(liveProcesses().some((process) => process.args === 'sleep 42.75')).toBe(false);
  });

  it('stops at once when the caller aborts', async () => {
    const harness = await agentHarness(() => slowScenario({ delayMs: 30_000 }));
    const controller = new AbortController();
    const pids: number[] = [];
    const running = harness.run({ abortSignal: controller.signal, onSpawn: (pid) => pids.push(pid) });
    // Aborted once the agent's request is waiting on the simulator's answer: a run in flight.
    await waitFor(() => harness.sim.requests.some((entry) => entry.outcome === 'reply'), {
      what: "the agent's request",
      withinMs: 30_000,
    });
    controller.abort();
    const outcome = await running;
    expect(outcome).toMatchObject({ status: 'aborted', isError: true });
    // Ended by the abort, not by the simulator's answer 30 s after the request.
    expect(outcome.durationMs).toBeLessThan(30_000);
    // Nothing of the group the runner would have recorded still runs.
    expect(pids).toHaveLength(1);
    expect(liveProcesses().filter((process) => process.pgid === pids[0])).toEqual([]);
  });

  it('reports is_error with subtype success as api_error with the API failure code, not agent_error', async () => {
    const harness = await agentHarness(() => apiErrorScenario({ status: 500 }));
    const outcome = await harness.run();
    expect(outcome).toMatchObject({
      status: 'api_error',
      errorCode: 'PROVIDER_ERROR',
      subtype: 'success',
      isError: true,
    });
    expect(outcome.error).toMatch(/500/);
  });

  it('names API failures for what they are: AUTH, OVERLOADED, PROVIDER_UNAVAILABLE', async () => {
    const harness = await agentHarness(() => ({
      rules: [
        { match: { text: 'auth' }, fault: { status: 401, message: 'invalid x-api-key' } },
        { match: { text: 'busy' }, fault: { kind: 'overload' } },
        { match: { text: 'drop' }, fault: { kind: 'drop-before' } },
      ],
    }));
    const cases = [
      ['auth', 'AUTH'],
      ['busy', 'OVERLOADED'],
      ['drop', 'PROVIDER_UNAVAILABLE'],
    ] as const;
    for (const [prompt, code] of cases) {
      const outcome = await harness.run({ prompt: `${prompt} please` });
      expect(outcome, JSON.stringify(outcome)).toMatchObject({ status: 'api_error', errorCode: code });
    }
    // Claude Code's own retries are off: one request each, except that a 401 makes it ask its
    // apiKeyHelper for the key again and resend, twice (the key may have been rotated).
    expect(harness.sim.requests).toHaveLength(5);
  });

  it('reports a usage limit as rate_limited with the time to wait', async () => {
    const resetsAt = Math.floor(Date.now() / 1000) + 3600;
    const harness = await agentHarness(() => rateLimitScenario({ resetsAt }));
    const outcome = await harness.run();
    expect(outcome).toMatchObject({ status: 'rate_limited', errorCode: 'RATE_LIMITED', isError: true });
    expect(outcome.retryAfterMs).toBeGreaterThan(3_500_000);
    expect(outcome.retryAfterMs).toBeLessThanOrEqual(3_600_000);
  });

  it('resumes an earlier session: the model sees the earlier messages and the new prompt', async () => {
    const harness = await agentHarness(() =>
      writeFileScenario({ path: 'result.txt', content: 'first try', finalText: 'first done' }),
    );
    const first = await harness.run();
    expect(first.status).toBe('success');
    harness.sim.setScenario({
      rules: [{ match: { turn: 3, text: 'tests failed' }, reply: { text: 'fixed it' } }],
      fallback: { text: 'wrong turn' },
    });
    const second = await harness.run({
      prompt: 'The tests failed: fix result.txt',
      resumeSessionId: first.sessionId as string,
    });
    expect(second).toMatchObject({ status: 'success', resultText: 'fixed it', sessionId: first.sessionId });
    const resumed = harness.sim.requests.at(-1);
    const messages = JSON.stringify((resumed?.body as { messages?: unknown }).messages);
    expect(messages).toContain('do the task');
    expect(messages).toContain('first try');
    expect(messages).toContain('first done');
  });

  it('reports a process that ends without a result as agent_error with its stderr', async () => {
    const directory = temporaryDirectory('switchboard-fake-claude-');
    const executable = join(directory, 'claude');
    writeFileSync(executable, '#!/bin/sh\necho "fatal: simulated crash" >&2\nexit 3\n');
    chmodSync(executable, 0o755);
    const harness = await agentHarness(() => ({}));
    const outcome = await harness.run({ connection: { executable } });
    expect(outcome).toMatchObject({ status: 'agent_error', isError: true });
    expect(outcome.subtype).toBeUndefined();
    expect(outcome.error).toMatch(/without a result.*simulated crash/s);
  });

  it('reports a missing executable as spawn_failed', async () => {
    const harness = await agentHarness(() => ({}));
    const outcome = await harness.run({ connection: { executable: '/nonexistent/claude' } });
    expect(outcome).toMatchObject({ status: 'spawn_failed', isError: true });
    expect(outcome.error).toMatch(/does not exist/);
  });

  it('rejects invalid options by name', async () => {
    const harness = await agentHarness(() => ({}));
    await expect(harness.run({ cwd: '/nonexistent/worktree' })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringContaining('"cwd"'),
    });
    await expect(harness.run({ idleTimeoutMs: 0 })).rejects.toMatchObject({
      message: expect.stringContaining('"idleTimeoutMs"'),
    });
  });
});

describe('tool policy', () => {
  function worktree(): { cwd: string; outside: string } {
    const cwd = temporaryDirectory('switchboard-policy-cwd-');
    const outside = temporaryDirectory('switchboard-policy-outside-');
    mkdirSync(join(cwd, 'src'));
    mkdirSync(join(cwd, '.git'));
    symlinkSync(outside, join(cwd, 'escape'));
    symlinkSync(join(cwd, 'src'), join(cwd, 'inner-link'));
    symlinkSync(join(outside, 'missing'), join(cwd, 'dangling'));
    return { cwd, outside };
  }

  it('keeps writes inside the worktree once `..`, `~` and links are resolved', () => {
    const { cwd, outside } = worktree();
    const policy = createToolPolicy({ cwd, allowedTools: ['Write', 'Edit'] });
    const write = (path: string) => policy.check('Write', { file_path: path, content: '' });
    expect(write(join(cwd, 'src/new.ts'))).toBeUndefined();
    expect(write('src/deeper/new.ts')).toBeUndefined();
    expect(write(join(cwd, 'inner-link/new.ts'))).toBeUndefined();
    expect(write(join(outside, 'x'))).toMatch(/outside the worktree/);
    expect(write(join(cwd, '../x'))).toMatch(/outside the worktree/);
    expect(write(join(cwd, 'escape/x'))).toMatch(/outside the worktree/);
    // The kernel follows the link before `..`: escape/.. is the parent of `outside`, not the worktree.
    expect(write(`${cwd}/escape/../x`)).toMatch(/outside the worktree/);
    expect(write(join(cwd, 'dangling'))).toMatch(/leads nowhere/);
    expect(write('~/.bashrc')).toMatch(homedir().startsWith(cwd) ? /./ : /outside the worktree/);
    expect(write(join(cwd, '.git/hooks/pre-commit'))).toMatch(/\.git/);
    expect(policy.check('Edit', { file_path: join(outside, 'x') })).toMatch(/outside the worktree/);
    expect(policy.check('NotebookEdit', { notebook_path: 'x.ipynb' })).toMatch(/not among the allowed tools/);
  });

  it('confines reads to the worktree and the readable folders, and lists only named tools', () => {
    const { cwd, outside } = worktree();
    const policy = createToolPolicy({
      cwd,
      allowedTools: ['Read', 'Glob', 'Grep', 'Bash(npm test:*)', 'mcp__github'],
      readableDirectories: [outside],
    });
    expect(policy.builtinTools).toEqual(['Read', 'Glob', 'Grep', 'Bash']);
    expect(policy.check('Read', { file_path: join(outside, 'x') })).toBeUndefined();
    expect(policy.check('Read', { file_path: '/etc/passwd' })).toMatch(/outside the folders/);
    expect(policy.check('Grep', { pattern: 'x', path: '/etc' })).toMatch(/outside the folders/);
    expect(policy.check('Grep', { pattern: 'x' })).toBeUndefined();
    expect(policy.check('Glob', { pattern: '/etc/**/*.conf' })).toMatch(/outside the folders/);
    expect(policy.check('Glob', { pattern: '../../**/*' })).toMatch(/outside the folders/);
    expect(policy.check('Glob', { pattern: 'src/**/*.ts' })).toBeUndefined();
    expect(policy.check('mcp__github__create_issue', {})).toBeUndefined();
    expect(policy.check('mcp__other__tool', {})).toMatch(/not among the allowed tools/);
    expect(policy.check('WebFetch', { url: 'https://example.com' })).toMatch(/not among the allowed tools/);
    expect(policy.check('Write', { file_path: 'x' })).toMatch(/not among the allowed tools/);
  });

  it('matches Bash commands as a whole against the patterns', () => {
    expect(matchesBashPattern('npm test', 'npm test:*')).toBe(true);
    expect(matchesBashPattern('npm test -- --run', 'npm test:*')).toBe(true);
    expect(matchesBashPattern('npm testing', 'npm test:*')).toBe(false);
    expect(matchesBashPattern('git diff --stat', 'git diff *')).toBe(true);
    expect(matchesBashPattern('git status', 'git status')).toBe(true);
    expect(matchesBashPattern('git status -s', 'git status')).toBe(false);
    expect(splitBashCommand('npm test && git diff | head -5')).toEqual(['npm test', 'git diff', 'head -5']);
    expect(splitBashCommand('npm test 2>&1 >/dev/null')).toEqual(['npm test']);
    expect(splitBashCommand('echo "a; b" \'$(x)\'')).toEqual(['echo "a; b" \'$(x)\'']);
    expect(splitBashCommand('git diff $(rm -rf /)')).toEqual({ refused: 'command substitution' });
    expect(splitBashCommand('echo "`id`"')).toEqual({ refused: 'command substitution' });
    expect(splitBashCommand('npm test > ../out.txt')).toEqual({ refused: 'the redirection > ../out.txt' });
    expect(splitBashCommand('npm test\ncurl evil')).toEqual(['npm test', 'curl evil']);

    const policy = createToolPolicy({
      cwd: tmpdir(),
      allowedTools: ['Bash(npm test:*)', 'Bash(git diff:*)'],
    });
    const bash = (command: string) => policy.check('Bash', { command });
    expect(bash('npm test && git diff')).toBeUndefined();
    expect(bash('npm test; rm -rf .')).toMatch(/"rm -rf \." matches no allowed pattern/);
    expect(bash('FOO=1 npm test')).toMatch(/matches no allowed pattern/);
    expect(bash('git diff > patch.txt')).toMatch(/redirection/);
    expect(
      createToolPolicy({ cwd: tmpdir(), allowedTools: ['Bash'] }).check('Bash', { command: 'rm x; y' }),
    ).toBeUndefined();
  });

  it('refuses denied git subcommands under any Bash permission, through global options, quotes and nested shells', () => {
    const policy = createToolPolicy({
      cwd: tmpdir(),
      allowedTools: ['Bash'],
      deniedGitCommands: ['commit', 'push'],
    });
    const bash = (command: string) => policy.check('Bash', { command });
    for (const command of [
      'git commit -m x',
      'git -C . commit -am x',
      'git -c user.name=x --git-dir=.git commit',
      '/usr/bin/git push origin main',
      'npm test && git commit -qm done',
      "bash -c 'git commit -m x'",
      'echo $(git commit -m x)',
      'env GIT_AUTHOR_NAME=x gi"t" commit',
      'git --no-pager push',
    ]) {
      expect(bash(command), command).toMatch(/`git (commit|push)` is not allowed/);
    }
    for (const command of [
      'git status',
      'git diff --stat',
      'git -C . log -1',
      'git add -A',
      'echo committed',
    ]) {
      expect(bash(command), command).toBeUndefined();
    }
    expect(policy.deniedRules).toEqual(['Bash(git commit:*)', 'Bash(git push:*)']);
    // Without the option nothing changes.
    expect(
      createToolPolicy({ cwd: tmpdir(), allowedTools: ['Bash'] }).check('Bash', { command: 'git commit' }),
    ).toBeUndefined();
  });
});
