import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator, type SimLogEntry } from '../src/sim/server.js';
import type { Scenario } from '../src/sim/scenario.js';
import { claudeProcessIds, waitForNoNewClaudeProcesses } from './helpers/claude.js';
import {
  costlyScenario,
  slowScenario,
  toolSequenceScenario,
  writeFilesScenario,
} from './helpers/agent-scenarios.js';
import { createRepository, git } from './helpers/git-repo.js';
import { IN_CI } from './helpers/ci.js';
import { runCli, type CliRun } from './helpers/run-cli.js';

// `switchboard agent` as a user runs it: the built CLI, real git in temporary repositories, the real
// Claude Code binary against `switchboard sim` on loopback, executing the tool calls the scenario scripts.

const cli = join(import.meta.dirname, '..', 'dist/cli/main.js');
const temporary: string[] = [];
const children: number[] = [];
let sim: Simulator | undefined;
const claudeBefore = claudeProcessIds();

afterEach(async () => {
  await sim?.close();
  sim = undefined;
});
afterAll(async () => {
  for (const pid of children) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone.
    }
  }
  expect(await waitForNoNewClaudeProcesses(claudeBefore)).toEqual([]);
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

interface Fixture {
  root: string;
  repo: string;
  env: NodeJS.ProcessEnv;
  run(args: string[]): Promise<CliRun>;
  task(name: string, fields: Record<string, unknown>): string;
  json<T>(args: string[]): Promise<T>;
}

async function fixture(scenario: Scenario): Promise<Fixture> {
  sim = await startSimulator({ scenario, maxLifetimeMs: 120_000 });
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-agent-cli-')));
  temporary.push(root);
  const repo = createRepository(join(root, 'repo'));
  const configDir = join(root, 'claude-config');
  mkdirSync(configDir);
  const env = {
    ...process.env,
    ANTHROPIC_API_KEY: 'sk-ant-agent-cli-test',
    // The orchestrator's other credentials: neither the agent nor the verify command may see them.
    OPENAI_API_KEY: 'sk-proj-agent-cli-secret',
    CLAUDE_CONFIG_DIR: configDir,
    SWITCHBOARD_STATE_DIR: join(root, 'state'),
  };
  const url = sim.url;
  const run = (args: string[]): Promise<CliRun> => {
    const withUrl = ['run', 'run-all', 'resume'].includes(args[1] ?? '')
      ? [...args, '--base-url', url]
      : args;
    return runCli(withUrl, { cwd: repo, env });
  };
  return {
    root,
    repo,
    env,
    run,
    task(name, fields) {
      const file = join(root, `${name}.json`);
      writeFileSync(file, JSON.stringify(fields));
      return file;
    },
    async json<T>(args: string[]) {
      const result = await run([...args, '--json']);
      return JSON.parse(result.stdout) as T;
    },
  };
}

function simLog(): readonly SimLogEntry[] {
  return sim?.requests ?? [];
}

interface RunJson {
  id: string;
  ok: boolean;
  status: string;
  phase: string;
  errorCode?: string;
  attempts: number;
  costUsd: number;
  branch: string;
  worktree: string;
  mergedCommit?: string;
  durationMs: number;
  detail?: string;
}

describe('switchboard agent run', () => {
  it('runs a task whose change passes verify and merges it; ls, show and logs report it', async () => {
    const f = await fixture(writeFilesScenario({ files: [{ path: 'hello.txt', content: 'hi\n' }] }));
    const task = f.task('task', {
      id: 'task-42',
      title: 'Say hello',
      acceptance: ['hello.txt exists'],
      // Passes only if the change is there and the orchestrator's OpenAI key is not.
      verify: 'test -f hello.txt && test -z "$OPENAI_API_KEY" && test -n "$PATH"',
    });
    const started = Date.now();
    const result = await f.run(['agent', 'run', '--task', task, '--json']);
    const wall = Date.now() - started;
    expect(result.status, result.stderr).toBe(0);
    const run = JSON.parse(result.stdout) as RunJson;
    expect(run).toMatchObject({ ok: true, phase: 'done', attempts: 1 });
    expect(readFileSync(join(f.repo, 'hello.txt'), 'utf8')).toBe('hi\n');
    expect(git(f.repo, 'log', '--format=%s', '-2')).toContain('feat(task-42): Say hello');
    expect(git(f.repo, 'status', '--porcelain', '--untracked-files=no')).toBe('');
    // Context files stay out of the commit; the transcript is kept under the state dir.
    expect(git(f.repo, 'ls-files')).not.toContain('EXECUTION_CONTEXT.md');
    const transcript = await f.run(['agent', 'logs', run.id, '--transcript']);
    expect(transcript.stdout).toContain('"session_id"');
    const events = await f.run(['agent', 'logs', run.id]);
    expect(events.stdout).toMatch(/verify passed/);
    const ls = await f.run(['agent', 'ls']);
    expect(ls.stdout).toContain(run.id);
    const show = await f.run(['agent', 'show', run.id]);
    expect(show.stdout).toContain('branch    agent/');
    console.log(`agent run, one turn + verify + merge: ${wall} ms wall, ${run.durationMs} ms in the runner`);
  });

  it('retries a failed verify with the failure fed back in the next prompt, then passes', async () => {
    const f = await fixture({
      rules: [
        {
          name: 'fix',
          match: { text: 'missing fixed.txt' },
          times: 1,
          reply: { tool: { name: 'Write', input: { file_path: 'fixed.txt', content: 'ok\n' } } },
        },
        {
          name: 'first',
          match: { turn: 1 },
          times: 1,
          reply: { tool: { name: 'Write', input: { file_path: 'wrong.txt', content: 'no\n' } } },
        },
      ],
      fallback: { text: 'done' },
    });
    const task = f.task('task', {
      id: 'retry',
      title: 'Make fixed.txt',
      verify: 'test -f fixed.txt || { echo "missing fixed.txt"; exit 1; }',
    });
    const result = await f.run(['agent', 'run', '--task', task, '--retry-delay', '0.05', '--json']);
    expect(result.status, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ ok: true, attempts: 2 });
    const fix = simLog().find((entry) => entry.rule === 'fix');
    expect(fix?.text).toContain('missing fixed.txt');
    expect(existsSync(join(f.repo, 'fixed.txt'))).toBe(true);
  });

  it('stops on a conflict with a change made on the base meanwhile: base unmoved, git output kept', async () => {
    const f = await fixture(writeFilesScenario({ files: [{ path: 'clash.txt', content: 'agent\n' }] }));
    // The verify command plays the user: it commits a different clash.txt on main while the run is going.
    const task = f.task('task', {
      id: 'clash',
      title: 'Clash',
      verify: `cd ${f.repo} && printf 'user\\n' > clash.txt && git add clash.txt && git commit -qm "user change"`,
    });
    const result = await f.run(['agent', 'run', '--task', task, '--json']);
    const run = JSON.parse(result.stdout) as RunJson;
    expect(result.status).toBe(42);
    expect(run).toMatchObject({ status: 'conflict', phase: 'conflict', errorCode: 'MERGE_CONFLICT' });
    expect(run.detail).toMatch(/CONFLICT \(add\/add\)/);
    expect(git(f.repo, 'log', '-1', '--format=%s', 'main')).toBe('user change');
    expect(readFileSync(join(f.repo, 'clash.txt'), 'utf8')).toBe('user\n');
    expect(git(f.repo, 'status', '--porcelain', '--untracked-files=no')).toBe('');
  });

  it('ends with TIMEOUT at the wall-clock limit, leaving no process behind', async () => {
    const f = await fixture(slowScenario({ delayMs: 30_000 }));
    const task = f.task('task', { id: 'slow', title: 'Slow', limits: { wall_clock_seconds: 3 } });
    const started = Date.now();
    const result = await f.run(['agent', 'run', '--task', task, '--json']);
    expect(result.status, result.stderr).toBe(23);
    expect(JSON.parse(result.stdout)).toMatchObject({ errorCode: 'TIMEOUT', phase: 'failed' });
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(await waitForNoNewClaudeProcesses(claudeBefore)).toEqual([]);
  });

  it('ends with BUDGET_EXCEEDED at the cost cap', async () => {
    const f = await fixture(costlyScenario());
    const task = f.task('task', { id: 'costly', title: 'Costly', limits: { max_cost_usd: 1 } });
    const result = await f.run(['agent', 'run', '--task', task, '--model', 'claude-sonnet-4-5', '--json']);
    expect(result.status, result.stderr).toBe(27);
    const run = JSON.parse(result.stdout) as RunJson;
    expect(run.errorCode).toBe('BUDGET_EXCEEDED');
    expect(run.costUsd).toBeGreaterThanOrEqual(1);
    expect(run.costUsd).toBeLessThan(2);
  });

  it('denies a write outside the worktree: the file is absent and the denial recorded', async () => {
    const outside = join(tmpdir(), `switchboard-outside-${process.pid}-${Date.now()}.txt`);
    const f = await fixture(
      writeFilesScenario({
        files: [
          { path: outside, content: 'escaped\n' },
          { path: 'inside.txt', content: 'inside\n' },
        ],
      }),
    );
    const task = f.task('task', { id: 'escape', title: 'Escape' });
    const result = await f.run(['agent', 'run', '--task', task, '--json']);
    expect(result.status, result.stderr).toBe(0);
    expect(existsSync(outside)).toBe(false);
    expect(existsSync(join(f.repo, 'inside.txt'))).toBe(true);
    const run = JSON.parse(result.stdout) as RunJson;
    const shown = await f.json<{ events: { kind: string; data?: { denied?: { tool: string }[] } }[] }>([
      'agent',
      'show',
      run.id,
    ]);
    const denied = shown.events.find((event) => event.kind === 'attempt-end')?.data?.denied ?? [];
    expect(denied.map((entry) => entry.tool)).toContain('Write');
  });

  it('with --merge branch leaves main where it was and the change on agent/<run-id>', async () => {
    const f = await fixture(writeFilesScenario({ files: [{ path: 'feature.txt', content: 'pr\n' }] }));
    const task = f.task('task', { id: 'pr-7', title: 'Open a pull request', verify: 'test -f feature.txt' });
    const mainBefore = git(f.repo, 'rev-parse', 'main');
    const result = await f.run(['agent', 'run', '--task', task, '--merge', 'branch', '--json']);
    expect(result.status, result.stderr).toBe(0);
    const run = JSON.parse(result.stdout) as RunJson;
    expect(run).toMatchObject({ ok: true, phase: 'done', branch: `agent/${run.id}` });
    expect(run.mergedCommit).toBeUndefined();
    expect(git(f.repo, 'rev-parse', 'main')).toBe(mainBefore);
    expect(existsSync(join(f.repo, 'feature.txt'))).toBe(false);
    expect(git(f.repo, 'log', '-1', '--format=%s', run.branch)).toBe('feat(pr-7): Open a pull request');
    expect(git(f.repo, 'rev-parse', `${run.branch}^`)).toBe(mainBefore);
    expect(git(f.repo, 'show', `${run.branch}:feature.txt`)).toBe('pr');
    const show = await f.run(['agent', 'show', run.id]);
    expect(show.stdout).toContain(`branch    agent/${run.id}`);
    expect(show.stdout).not.toContain('merged ');
  });

  it('with --merge ff fast-forwards an unmoved main to the agent commit, with no merge commit', async () => {
    const f = await fixture(writeFilesScenario({ files: [{ path: 'fast.txt', content: 'ff\n' }] }));
    const task = f.task('task', { id: 'ff-1', title: 'Fast forward', verify: 'test -f fast.txt' });
    const mainBefore = git(f.repo, 'rev-parse', 'main');
    const result = await f.run(['agent', 'run', '--task', task, '--merge', 'ff', '--json']);
    expect(result.status, result.stderr).toBe(0);
    const run = JSON.parse(result.stdout) as RunJson;
    expect(run).toMatchObject({ ok: true, phase: 'done' });
    const mainAfter = git(f.repo, 'rev-parse', 'main');
    expect(mainAfter).toBe(git(f.repo, 'rev-parse', run.branch));
    expect(run.mergedCommit).toBe(mainAfter);
    expect(git(f.repo, 'rev-parse', 'main^')).toBe(mainBefore);
    expect(git(f.repo, 'log', '-1', '--format=%s', 'main')).toBe('feat(ff-1): Fast forward');
    expect(git(f.repo, 'log', '--merges', '--oneline', 'main')).toBe('');
    // The checked-out main moved with its files.
    expect(readFileSync(join(f.repo, 'fast.txt'), 'utf8')).toBe('ff\n');
    expect(git(f.repo, 'status', '--porcelain', '--untracked-files=no')).toBe('');
  });

  it('writes EXECUTION_CONTEXT.md from --context-template and keeps it out of the commit', async () => {
    const f = await fixture(
      toolSequenceScenario({
        calls: [
          { name: 'Read', input: { file_path: 'EXECUTION_CONTEXT.md' } },
          { name: 'Write', input: { file_path: 'templated.txt', content: 'yes\n' } },
        ],
      }),
    );
    const template = join(f.root, 'context.md');
    writeFileSync(
      template,
      'House rules for {{title}}\n\nDone when:\n{{acceptance}}\n\nChecked by: {{verify}}\n\nLeft alone: {{nope}}\n',
    );
    const task = f.task('task', {
      id: 'templated',
      title: 'Use the template',
      acceptance: ['templated.txt says yes', 'nothing else changes'],
      verify: 'grep -q yes templated.txt',
    });
    const result = await f.run(['agent', 'run', '--task', task, '--context-template', template, '--json']);
    expect(result.status, result.stderr).toBe(0);
    const run = JSON.parse(result.stdout) as RunJson;
    const rendered = [
      'House rules for Use the template',
      '',
      'Done when:',
      '- templated.txt says yes',
      '- nothing else changes',
      '',
      'Checked by: The runner runs `grep -q yes templated.txt` in this directory; it must exit with status 0.',
      '',
      'Left alone: {{nope}}',
      '',
    ].join('\n');
    expect(readFileSync(join(run.worktree, 'EXECUTION_CONTEXT.md'), 'utf8')).toBe(rendered);
    // What the agent read: Claude Code's Read result, as the simulator received it with the next request.
    const read = simLog().find((entry) => entry.rule === 'call-2-Write')?.text ?? '';
    for (const line of rendered.split('\n').filter((line) => line !== '')) expect(read).toContain(line);
    expect(read).not.toContain('## Where you are');
    // The commit holds the agent's file only.
    expect(git(f.repo, 'show', '--name-only', '--format=', run.branch).split('\n')).toEqual([
      'templated.txt',
    ]);
    expect(git(f.repo, 'ls-tree', '-r', '--name-only', 'main')).not.toContain('EXECUTION_CONTEXT.md');
    expect(existsSync(join(f.repo, 'EXECUTION_CONTEXT.md'))).toBe(false);
  });

  it('refuses a --context-template that does not exist before creating a worktree', async () => {
    const f = await fixture({ rules: [] });
    const task = f.task('task', { id: 'no-template', title: 'No template' });
    const missing = join(f.root, 'missing-template.md');
    const result = await f.run(['agent', 'run', '--task', task, '--context-template', missing]);
    expect(result.status).toBe(2);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`context template ${missing} cannot be read`);
    expect(lines[0]).toContain('--context-template');
    expect(result.stdout).toBe('');
    expect(git(f.repo, 'worktree', 'list').split('\n')).toHaveLength(1);
    expect(git(f.repo, 'branch', '--list', 'agent/*')).toBe('');
    expect(existsSync(join(f.root, 'state', 'agents', 'worktrees'))).toBe(false);
    expect(await f.json<unknown[]>(['agent', 'ls'])).toEqual([]);
    expect(simLog()).toEqual([]);
  });

  it('rejects bad input with one line and a distinct exit code', async () => {
    const f = await fixture({ rules: [] });
    const broken = join(f.root, 'broken.yaml');
    writeFileSync(broken, 'id: [unclosed\n');
    const malformed = await f.run(['agent', 'run', '--task', broken]);
    expect(malformed.status).toBe(43);
    expect(malformed.stderr.trim().split('\n')).toHaveLength(1);
    const missingTitle = await f.run(['agent', 'run', '--task', f.task('t', { id: 'x' })]);
    expect(missingTitle).toMatchObject({ status: 43 });
    expect(missingTitle.stderr).toContain('field "title"');
    const good = f.task('good', { id: 'good', title: 'Good' });
    const notRepo = await f.run(['agent', 'run', '--task', good, '--repo', f.root]);
    expect(notRepo.status).toBe(44);
    expect(notRepo.stderr).toContain('is not a git repository');
    const unknownBase = await f.run(['agent', 'run', '--task', good, '--base', 'nope']);
    expect(unknownBase.status).toBe(45);
    const noClaude = await f.run(['agent', 'run', '--task', good, '--claude-path', join(f.root, 'claude')]);
    expect(noClaude.status).toBe(28);
    expect(noClaude.stderr).toContain('does not exist');
    const unknownRun = await f.run(['agent', 'show', 'no-such-run']);
    expect(unknownRun.status).toBe(47);
  });
});

describe('switchboard agent lifecycle', () => {
  it('resumes a run whose runner was killed with SIGKILL mid-run, with nothing lost', async () => {
    const f = await fixture({
      rules: [
        {
          name: 'resume',
          match: { text: 'interrupted' },
          times: 1,
          reply: { tool: { name: 'Write', input: { file_path: 'part2.txt', content: 'two\n' } } },
        },
        {
          name: 'first',
          match: { turn: 1 },
          times: 1,
          reply: { tool: { name: 'Write', input: { file_path: 'part1.txt', content: 'one\n' } } },
        },
        { name: 'slow', match: { turn: 2 }, times: 1, reply: { text: 'late', delayMs: 60_000 } },
      ],
      fallback: { text: 'done' },
    });
    const task = f.task('task', {
      id: 'crash',
      title: 'Survive',
      verify: 'test -f part1.txt && test -f part2.txt',
    });
    const runner = spawn(
      process.execPath,
      [cli, 'agent', 'run', '--task', task, '--base-url', sim?.url ?? ''],
      {
        cwd: f.repo,
        env: f.env,
        stdio: 'ignore',
      },
    );
    children.push(runner.pid ?? 0);
    await waitUntil(() => simLog().some((entry) => entry.rule === 'slow'));
    const [before] = await f.json<{ id: string; phase: string; live: boolean }[]>(['agent', 'ls']);
    expect(before).toMatchObject({ phase: 'agent', live: true });
    runner.kill('SIGKILL');
    await new Promise((resolve) => runner.once('exit', resolve));
    const [crashed] = await f.json<{ id: string; resumable: boolean; worktree: string }[]>(['agent', 'ls']);
    expect(crashed?.resumable).toBe(true);
    expect(existsSync(join(crashed?.worktree ?? '', 'part1.txt'))).toBe(true);

    const resumed = await f.run(['agent', 'resume', crashed?.id ?? '', '--json']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ ok: true, phase: 'done' });
    expect(readFileSync(join(f.repo, 'part1.txt'), 'utf8')).toBe('one\n');
    expect(readFileSync(join(f.repo, 'part2.txt'), 'utf8')).toBe('two\n');
    const events = await f.run(['agent', 'logs', crashed?.id ?? '']);
    expect(events.stdout).toMatch(/resume/);
  });

  it('SIGTERM to `agent run` stops it cleanly: the run is cancelled, exit 130, no Claude Code left', async () => {
    const f = await fixture(slowScenario({ delayMs: 60_000 }));
    const task = f.task('task', { id: 'terminated', title: 'Take your time' });
    const runner = spawn(
      process.execPath,
      [cli, 'agent', 'run', '--task', task, '--base-url', sim?.url ?? ''],
      {
        cwd: f.repo,
        env: f.env,
        stdio: 'ignore',
      },
    );
    children.push(runner.pid ?? 0);
    await waitUntil(() => simLog().length > 0);
    const exited = new Promise<number | null>((resolve) => runner.once('exit', (code) => resolve(code)));
    runner.kill('SIGTERM');
    expect(await exited).toBe(130);
    const [stopped] = await f.json<{ id: string; status: string }[]>(['agent', 'ls']);
    expect(stopped).toMatchObject({ status: 'cancelled' });
  });

  it('cancel leaves no process behind; clean removes merged work and leaves live work alone', async () => {
    const f = await fixture({
      rules: [
        {
          match: { text: 'Task quick:' },
          reply: { tool: { name: 'Write', input: { file_path: 'quick.txt', content: 'q\n' } } },
        },
        { match: { text: 'Task slow:' }, reply: { text: 'late', delayMs: 60_000 } },
      ],
      fallback: { text: 'done' },
    });
    const quick = await f.run([
      'agent',
      'run',
      '--task',
      f.task('quick', { id: 'quick', title: 'Quick' }),
      '--json',
    ]);
    expect(quick.status, quick.stderr).toBe(0);
    const quickRun = JSON.parse(quick.stdout) as RunJson;

    const runner = spawn(
      process.execPath,
      [
        cli,
        'agent',
        'run',
        '--task',
        f.task('slow', { id: 'slow', title: 'Slow' }),
        '--base-url',
        sim?.url ?? '',
      ],
      { cwd: f.repo, env: f.env, stdio: 'ignore' },
    );
    children.push(runner.pid ?? 0);
    const runnerExit = new Promise<number | null>((resolve) => runner.once('exit', (code) => resolve(code)));
    await waitUntil(() => simLog().some((entry) => entry.text?.includes('Task slow:') === true));
    const live = (
      await f.json<{ id: string; taskId: string; childPid?: number; worktree: string }[]>(['agent', 'ls'])
    ).find((run) => run.taskId === 'slow');
    expect(live?.childPid).toBeGreaterThan(0);

    const cleaned = await f.json<{ removed: { id: string }[]; kept: { id: string; reason: string }[] }>([
      'agent',
      'clean',
    ]);
    expect(cleaned.removed.map((entry) => entry.id)).toEqual([quickRun.id]);
    expect(cleaned.kept).toEqual([{ id: live?.id, reason: 'running' }]);
    expect(existsSync(live?.worktree ?? '')).toBe(true);
    expect(existsSync(quickRun.worktree)).toBe(false);

    const cancel = await f.run(['agent', 'cancel', live?.id ?? '']);
    expect(cancel).toMatchObject({ status: 0, stdout: `${live?.id} cancelled\n` });
    expect(await runnerExit).toBe(130);
    expect(await waitForNoNewClaudeProcesses(claudeBefore)).toEqual([]);
    // The agent's whole process group is gone (zombies are reaped within moments).
    await waitUntil(() => !groupAlive(live?.childPid ?? 0), 5_000).catch(() => undefined);
    expect(
      groupAlive(live?.childPid ?? 0),
      execFileSync('ps', ['-eo', 'pid,pgid,stat,args'], { encoding: 'utf8' })
        .split('\n')
        .filter((line) => line.includes(String(live?.childPid)))
        .join('\n'),
    ).toBe(false);
    const shown = await f.json<{ status: string; phase: string }>(['agent', 'show', live?.id ?? '']);
    expect(shown).toMatchObject({ status: 'cancelled', phase: 'failed' });
    const abandoned = await f.json<{ removed: { id: string }[] }>([
      'agent',
      'clean',
      '--abandon',
      live?.id ?? '',
    ]);
    expect(abandoned.removed.map((entry) => entry.id)).toEqual([live?.id]);
    expect(git(f.repo, 'worktree', 'list').split('\n')).toHaveLength(1);
  });

  it('run-all runs several tasks in parallel and lands every merge', async () => {
    const ids = ['alpha', 'beta', 'gamma', 'delta'];
    const f = await fixture({
      rules: ids.map((id) => ({
        match: { text: `Task ${id}:` },
        reply: { tool: { name: 'Write', input: { file_path: `${id}.txt`, content: `${id}\n` } } },
      })),
      fallback: { text: 'done' },
    });
    const files = ids.map((id) => f.task(id, { id, title: `Add ${id}`, verify: `test -f ${id}.txt` }));
    const started = Date.now();
    const result = await f.run(['agent', 'run-all', ...files, '--parallel', '3', '--json']);
    const wall = Date.now() - started;
    expect(result.status, result.stderr).toBe(0);
    const runs = JSON.parse(result.stdout) as RunJson[];
    expect(runs.map((run) => run.ok)).toEqual([true, true, true, true]);
    for (const id of ids) expect(readFileSync(join(f.repo, `${id}.txt`), 'utf8')).toBe(`${id}\n`);
    const subjects = git(f.repo, 'log', '--format=%s', 'main');
    for (const id of ids) expect(subjects).toContain(`feat(${id}): Add ${id}`);
    expect(result.stderr).toMatch(/\[alpha-[0-9a-f]+\] merge/);
    console.log(`run-all of 4 tasks, --parallel 3: ${wall} ms wall`);
  });
});

describe('switchboard agent failures that are not the agent', () => {
  it('reports an API failure as AUTH / RATE_LIMITED / PROVIDER_UNAVAILABLE with its exit code, and does not retry it', async () => {
    const f = await fixture({
      rules: [
        { name: 'auth', match: { text: 'Task auth:' }, fault: { status: 401, message: 'invalid x-api-key' } },
        {
          name: 'limited',
          match: { text: 'Task limited:' },
          fault: {
            status: 429,
            retryAfter: 60,
            message: `Claude AI usage limit reached|${Math.floor(Date.now() / 1000) + 3600}`,
          },
        },
        { name: 'drop', match: { text: 'Task drop:' }, fault: { kind: 'drop-before' } },
      ],
    });
    const cases = [
      ['auth', 'AUTH', 22],
      ['limited', 'RATE_LIMITED', 20],
      ['drop', 'PROVIDER_UNAVAILABLE', 28],
    ] as const;
    for (const [id, code, exit] of cases) {
      const task = f.task(id, { id, title: `Fail ${id}`, limits: { max_attempts: 3 } });
      const result = await f.run(['agent', 'run', '--task', task, '--retry-delay', '0.05', '--json']);
      expect(result.status, `${id}: ${result.stderr}`).toBe(exit);
      const run = JSON.parse(result.stdout) as RunJson;
      expect(run).toMatchObject({ status: 'failed', errorCode: code, attempts: 1 });
      // The runner did not try again. Claude Code sends one request, except on a 401: it then asks its
      // apiKeyHelper for the key again and resends, twice, in case the key was rotated.
      expect(simLog().filter((entry) => entry.rule === id)).toHaveLength(id === 'auth' ? 3 : 1);
      const show = await f.run(['agent', 'show', run.id]);
      expect(show.stdout).toMatch(new RegExp(`^error {5}${code}: the API failed, not the agent`, 'm'));
      expect(show.stdout).not.toContain('agent_error');
      expect(show.stdout).not.toContain('sk-ant-agent-cli-test');
    }
  });

  it('refuses a dirty checkout before the agent runs; one dirtied meanwhile is merged by resume once clean', async () => {
    const f = await fixture(writeFilesScenario({ files: [{ path: 'landed.txt', content: 'landed\n' }] }));
    writeFileSync(join(f.repo, 'README.md'), 'work in progress\n');
    const early = await f.run([
      'agent',
      'run',
      '--task',
      f.task('early', { id: 'early', title: 'Too early' }),
    ]);
    expect(early.status).toBe(46);
    expect(early.stderr.trim().split('\n')).toHaveLength(1);
    expect(early.stderr).toMatch(/uncommitted changes \(README\.md\).*commit or stash them/);
    expect(simLog()).toEqual([]);
    expect(await f.json<unknown[]>(['agent', 'ls'])).toEqual([]);
    git(f.repo, 'checkout', '--', 'README.md');

    // The verify command plays the user, editing the checkout while the run is going.
    const task = f.task('late', {
      id: 'late',
      title: 'Land later',
      verify: `test -f landed.txt && printf 'edit\\n' >> ${f.repo}/README.md`,
    });
    const stopped = await f.run(['agent', 'run', '--task', task, '--json']);
    expect(stopped.status, stopped.stderr).toBe(46);
    const run = JSON.parse(stopped.stdout) as RunJson;
    expect(run).toMatchObject({ status: 'conflict', errorCode: 'DIRTY_CHECKOUT', attempts: 1 });
    expect(git(f.repo, 'show', `${run.branch}:landed.txt`)).toBe('landed');
    expect(existsSync(join(f.repo, 'landed.txt'))).toBe(false);
    const requests = simLog().length;
    expect(requests).toBeGreaterThan(0);

    const refused = await f.run(['agent', 'resume', run.id]);
    expect(refused.status).toBe(46);
    expect(refused.stderr).toContain(`switchboard agent resume ${run.id}`);

    git(f.repo, 'checkout', '--', 'README.md');
    const resumed = await f.run(['agent', 'resume', run.id, '--json']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ ok: true, phase: 'done', attempts: 1 });
    expect(readFileSync(join(f.repo, 'landed.txt'), 'utf8')).toBe('landed\n');
    expect(simLog()).toHaveLength(requests);
  });
});

describe('switchboard agent: nothing outlives the runner', () => {
  it('kills the verify command when the runner is killed with SIGKILL', async () => {
    const f = await fixture(writeFilesScenario({ files: [{ path: 'done.txt', content: 'done\n' }] }));
    const pidFile = join(f.root, 'verify.pid');
    const task = f.task('task', {
      id: 'long-verify',
      title: 'Long verify',
      verify: `echo $$ > ${pidFile} && exec sleep 300`,
    });
    const runner = spawn(
      process.execPath,
      [cli, 'agent', 'run', '--task', task, '--base-url', sim?.url ?? ''],
      { cwd: f.repo, env: f.env, stdio: 'ignore' },
    );
    children.push(runner.pid ?? 0);
    await waitUntil(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '');
    const verifyPid = Number(readFileSync(pidFile, 'utf8').trim());
    children.push(verifyPid);
    expect(processRunning(verifyPid)).toBe(true);
    runner.kill('SIGKILL');
    await new Promise((resolve) => runner.once('exit', resolve));
    await waitUntil(() => !processRunning(verifyPid), 10_000).catch(() => undefined);
    expect(processRunning(verifyPid), `verify command ${verifyPid} outlived its runner`).toBe(false);
  });
});

describe('switchboard agent: no key left behind', () => {
  it('deletes the apiKeyHelper key file when the runner is killed with SIGKILL', async () => {
    const f = await fixture({
      rules: [{ name: 'slow', match: { turn: 1 }, reply: { text: 'late', delayMs: 60_000 } }],
      fallback: { text: 'done' },
    });
    const task = f.task('task', { id: 'key-file', title: 'Wait on the API' });
    // The runner's own temporary folder, where its key file lives while Claude Code runs.
    const temporaryFolder = join(f.root, 'tmp');
    mkdirSync(temporaryFolder);
    const keyFolders = (): string[] =>
      readdirSync(temporaryFolder).filter((name) => name.startsWith('switchboard-key-'));
    const runner = spawn(
      process.execPath,
      [cli, 'agent', 'run', '--task', task, '--base-url', sim?.url ?? ''],
      { cwd: f.repo, env: { ...f.env, TMPDIR: temporaryFolder }, stdio: 'ignore' },
    );
    children.push(runner.pid ?? 0);
    await waitUntil(() => simLog().some((entry) => entry.rule === 'slow'));
    expect(keyFolders()).toHaveLength(1);
    runner.kill('SIGKILL');
    await new Promise((resolve) => runner.once('exit', resolve));
    await waitUntil(() => keyFolders().length === 0, 10_000).catch(() => undefined);
    expect(keyFolders(), 'the API key stayed on disk after its runner died').toEqual([]);
  });
});

describe('switchboard agent run-all progress', () => {
  // south answers at once, north after 3 s: south is done well before the table stops.
  const delays: Record<string, number> = { north: 3_000, south: 200 };
  const ids = Object.keys(delays);
  const scenario = (): Scenario => ({
    rules: ids.map((id) => ({
      match: { text: `Task ${id}:` },
      reply: {
        tool: { name: 'Write', input: { file_path: `${id}.txt`, content: `${id}\n` } },
        delayMs: delays[id] ?? 0,
      },
    })),
    fallback: { text: 'done' },
  });
  const runId = '(north|south)-[0-9a-f]{6}';
  const phase = '(queued|worktree|agent|verify|merge|done|failed|conflict)';
  const summaryLine = new RegExp(
    `^${runId}: done — merged into main at [0-9a-f]{12} \\(1 attempt, \\$\\d+\\.\\d{4}, (\\d+\\.\\d)s\\)$`,
  );

  it('on a terminal shows a live table of phase, elapsed time and cost per run', async ({ skip }) => {
    if (!hasScript()) {
      // `.ci/run` installs `script`: under CI its absence is a broken image, not a reason to skip.
      const missing =
        '`script` (util-linux; Debian bsdutils) is not installed: no pseudo-terminal to run the CLI in';
      if (IN_CI) throw new Error(`${missing}; install it (.ci/run does)`);
      skip(missing);
    }
    const f = await fixture(scenario());
    const files = ids.map((id) => f.task(id, { id, title: `Add ${id}`, verify: `test -f ${id}.txt` }));
    const command = [process.execPath, cli, 'agent', 'run-all', ...files, '--base-url', sim?.url ?? '']
      .map(shellQuote)
      .join(' ');
    const result = await runInTerminal(command, { cwd: f.repo, env: f.env });
    expect(result.status, result.output).toBe(0);

    // Every redraw moves the cursor up over the previous table and clears each line it rewrites.
    const row = new RegExp(`^${runId} +${phase} +(\\d+\\.\\d)s \\$(\\d+\\.\\d{4})  (.*)$`);
    const parse = (text: string): RegExpExecArray[] =>
      text
        .split(/\r?\n/)
        .filter((line) => line.includes(CLEAR_LINE))
        .map((line) => row.exec(line.slice(line.lastIndexOf(CLEAR_LINE) + CLEAR_LINE.length)))
        .filter((match) => match !== null);
    const rows = parse(result.output);
    expect(rows.length, result.output).toBeGreaterThan(4);
    for (const id of ids) {
      const own = rows.filter((match) => match[1] === id);
      expect(new Set(own.map((match) => match[2]))).toContain('agent');
      const seconds = own.map((match) => Number(match[3]));
      expect(seconds.at(-1)).toBeGreaterThan(seconds[0] ?? 0);
      expect(seconds).toEqual([...seconds].sort((a, b) => a - b));
    }
    const lastRedraw = result.output.lastIndexOf(`${ESCAPE}[2A`);
    expect(lastRedraw, result.output).toBeGreaterThan(0);
    const final = parse(result.output.slice(lastRedraw));
    expect(final.map((match) => [match[1], match[2]]).sort()).toEqual([
      ['north', 'done'],
      ['south', 'done'],
    ]);
    for (const match of final) {
      expect(Number(match[4])).toBeGreaterThan(0);
      expect(match[5]).toMatch(/^merged into main at [0-9a-f]{12}$/);
    }

    // Then one summary per run; a finished run's clock stopped when it ended.
    const summaries = result.output
      .split(/\r?\n/)
      .map((line) => summaryLine.exec(line))
      .filter((match) => match !== null);
    expect(summaries.map((match) => match[1])).toEqual(ids);
    for (const summary of summaries) {
      const shown = final.find((match) => match[1] === summary[1]);
      expect(Math.abs(Number(shown?.[3]) - Number(summary[2])), result.output).toBeLessThanOrEqual(0.2);
    }
  });

  it('without a terminal prints log lines, not the table', async () => {
    const f = await fixture(scenario());
    const files = ids.map((id) => f.task(id, { id, title: `Add ${id}`, verify: `test -f ${id}.txt` }));
    const result = await f.run(['agent', 'run-all', ...files]);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stderr).not.toContain(ESCAPE);
    const lines = result.stderr.trimEnd().split('\n');
    const logLine = new RegExp(`^\\[${runId}\\] ${phase} \\d+\\.\\ds \\$\\d+\\.\\d{4}: .+$`);
    for (const line of lines) expect(line).toMatch(logLine);
    for (const id of ids) {
      const own = lines.filter((line) => line.startsWith(`[${id}-`));
      expect(own.some((line) => line.includes('] agent '))).toBe(true);
      expect(own.at(-1)).toMatch(/\] done .*: merged into main at /);
    }
    const summaries = result.stdout.trimEnd().split('\n');
    expect(summaries.map((line) => summaryLine.exec(line)?.[1])).toEqual(ids);
  });
});

const ESCAPE = '\u001b';
const CLEAR_LINE = `${ESCAPE}[2K`;

function hasScript(): boolean {
  return spawnSync('sh', ['-c', 'command -v script'], { stdio: 'ignore' }).status === 0;
}

/** Quotes a word for `sh -c`. */
function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** Runs a shell command under a pseudo-terminal (util-linux `script`): stdout and stderr in one `output`. */
function runInTerminal(
  command: string,
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<{ status: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qfec', command, '/dev/null'], {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child.pid ?? 0);
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('error', reject);
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, output });
    });
  });
}

/** Whether `pid` runs (a zombie waiting to be reaped runs nothing and does not count). */
function processRunning(pid: number): boolean {
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /s, '')
      .charAt(0);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitUntil(condition: () => boolean, withinMs = 30_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
