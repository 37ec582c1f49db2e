import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  costlyScenario,
  slowScenario,
  toolSequenceScenario,
  writeFilesScenario,
} from './helpers/agent-scenarios.js';
import { agentCliSuite, verifyGate, type RunJson } from './helpers/agent-cli.js';
import { waitForNoNewClaudeProcesses } from './helpers/claude.js';
import { storeNeutral } from './helpers/passes.js';
import { git } from './helpers/git-repo.js';
import { costOf } from '../src/core/prices.js';

// `switchboard agent` as a user runs it: the built CLI, real git in temporary repositories, the real
// Claude Code binary against `switchboard sim` on loopback, executing the tool calls the scenario scripts.
// `agent run` itself; test/cli-agent-lifecycle.test.ts has resume, cancel, run-all and the rest, in a
// file of its own so the two run side by side.

const { claudeBefore, fixture, simLog } = agentCliSuite();

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
    // The session's work, as a workflow step's: each model turn, the tool call and its result, in order.
    const shown = await f.json<{ events: { kind: string; data?: Record<string, unknown> }[] }>([
      'agent',
      'show',
      run.id,
    ]);
    const session = shown.events.filter((event) =>
      ['model-turn', 'tool-call', 'tool-result'].includes(event.kind),
    );
    expect(session.map((event) => event.kind)).toEqual([
      'model-turn',
      'tool-call',
      'tool-result',
      'model-turn',
    ]);
    expect(session[0]?.data).toMatchObject({ model: expect.any(String), inputTokens: expect.any(Number) });
    expect(session[1]?.data).toMatchObject({ tool: 'Write', input: expect.stringContaining('hello.txt') });
    expect(session[2]?.data).toMatchObject({ tool: 'Write', error: false, durationMs: expect.any(Number) });
    expect(events.stdout).toMatch(/Write ok in \d+ ms/);
    const ls = await f.run(['agent', 'ls']);
    expect(ls.stdout).toContain(run.id);
    const show = await f.run(['agent', 'show', run.id]);
    expect(show.stdout).toContain('branch    agent/');
    console.log(`agent run, one turn + verify + merge: ${wall} ms wall, ${run.durationMs} ms in the runner`);
  });

  it('retries a failed verify with the failure fed back in the next prompt, then passes, paying each answer once', async () => {
    // Every answer reports the same usage, so the run costs the answers the simulator gave at list price.
    const usage = { input: 1_000, output: 100 };
    const f = await fixture({
      rules: [
        {
          name: 'fix',
          match: { text: 'missing fixed.txt' },
          times: 1,
          reply: { tool: { name: 'Write', input: { file_path: 'fixed.txt', content: 'ok\n' } }, usage },
        },
        {
          name: 'first',
          match: { turn: 1 },
          times: 1,
          reply: { tool: { name: 'Write', input: { file_path: 'wrong.txt', content: 'no\n' } }, usage },
        },
      ],
      fallback: { text: 'done', usage },
    });
    const task = f.task('task', {
      id: 'retry',
      title: 'Make fixed.txt',
      verify: 'test -f fixed.txt || { echo "missing fixed.txt"; exit 1; }',
    });
    // A model both Claude Code's price table and Switchboard's know.
    const model = 'claude-sonnet-4-5';
    const result = await f.run([
      'agent',
      'run',
      '--task',
      task,
      '--retry-delay',
      '0.05',
      '--model',
      model,
      '--json',
    ]);
    expect(result.status, result.stderr).toBe(0);
    const run = JSON.parse(result.stdout) as RunJson;
    expect(run).toMatchObject({ ok: true, attempts: 2 });
    const fix = simLog().find((entry) => entry.rule === 'fix');
    expect(fix?.text).toContain('missing fixed.txt');
    expect(existsSync(join(f.repo, 'fixed.txt'))).toBe(true);
    // The second attempt resumes the first one's session, whose total Claude Code restores: the run
    // counts each answer once all the same.
    const answers = simLog().filter((entry) => entry.outcome === 'reply');
    expect(answers.length).toBeGreaterThanOrEqual(4);
    const each = costOf(model, {
      inputTokens: usage.input,
      outputTokens: usage.output,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
    })!;
    expect(run.costUsd).toBeCloseTo(answers.length * each, 6);
  });

  storeNeutral(
    'stops on a conflict with a change made on the base meanwhile: base unmoved, git output kept',
    async () => {
      const f = await fixture(writeFilesScenario({ files: [{ path: 'clash.txt', content: 'agent\n' }] }));
      // While the run verifies, the user commits a different clash.txt on main.
      const gate = verifyGate(f);
      const task = f.task('task', { id: 'clash', title: 'Clash', verify: gate.command });
      const running = f.run(['agent', 'run', '--task', task, '--json']);
      const worktree = await gate.waiting();
      writeFileSync(join(f.repo, 'clash.txt'), 'user\n');
      git(f.repo, 'add', 'clash.txt');
      git(f.repo, 'commit', '-qm', 'user change');
      await gate.release(worktree);
      const result = await running;
      const run = JSON.parse(result.stdout) as RunJson;
      expect(result.status).toBe(42);
      expect(run).toMatchObject({ status: 'conflict', phase: 'conflict', errorCode: 'MERGE_CONFLICT' });
      expect(run.detail).toMatch(/CONFLICT \(add\/add\)/);
      expect(git(f.repo, 'log', '-1', '--format=%s', 'main')).toBe('user change');
      expect(readFileSync(join(f.repo, 'clash.txt'), 'utf8')).toBe('user\n');
      expect(git(f.repo, 'status', '--porcelain', '--untracked-files=no')).toBe('');
    },
  );

  storeNeutral('ends with TIMEOUT at the wall-clock limit, leaving no process behind', async () => {
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

  storeNeutral('with --merge branch leaves main where it was and the change on agent/<run-id>', async () => {
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

  storeNeutral(
    'with --merge ff fast-forwards an unmoved main to the agent commit, with no merge commit',
    async () => {
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
    },
  );

  storeNeutral(
    'writes EXECUTION_CONTEXT.md from --context-template and keeps it out of the commit',
    async () => {
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
    },
  );

  storeNeutral('refuses a --context-template that does not exist before creating a worktree', async () => {
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

  storeNeutral(
    "refuses a task whose pass_env names Switchboard's own credentials, every one named",
    async () => {
      const f = await fixture({ rules: [] });
      const task = f.task('greedy', {
        id: 'greedy',
        title: 'Greedy',
        verify: 'printenv ANTHROPIC_API_KEY',
        pass_env: ['NPM_TOKEN', 'ANTHROPIC_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN', 'SWITCHBOARD_SERVER_TOKEN'],
      });
      const result = await f.run(['agent', 'run', '--task', task]);
      expect(result.status).toBe(43);
      const lines = result.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('3 problems');
      for (const name of ['ANTHROPIC_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN', 'SWITCHBOARD_SERVER_TOKEN']) {
        expect(lines[0]).toContain(`${name} is a credential Switchboard holds itself`);
      }
      expect(lines[0]).toContain('remove ANTHROPIC_API_KEY from pass_env');
      expect(lines[0]).not.toContain('NPM_TOKEN is');
      expect(git(f.repo, 'branch', '--list', 'agent/*')).toBe('');
      expect(simLog()).toEqual([]);
    },
  );

  storeNeutral('rejects bad input with one line and a distinct exit code', async () => {
    const f = await fixture({ rules: [] });
    const broken = join(f.root, 'broken.yaml');
    writeFileSync(broken, 'id: [unclosed\n');
    const malformed = await f.run(['agent', 'run', '--task', broken]);
    expect(malformed.status).toBe(43);
    expect(malformed.stderr.trim().split('\n')).toHaveLength(1);
    const missingTitle = await f.run(['agent', 'run', '--task', f.task('t', { id: 'x' })]);
    expect(missingTitle).toMatchObject({ status: 43 });
    expect(missingTitle.stderr).toContain('field "title"');
    // The hint points at the page that shows the format, and that page does.
    expect(missingTitle.stderr).toContain('docs/agent.md ("A task file") shows the format');
    expect(readFileSync(join(import.meta.dirname, '../docs/agent.md'), 'utf8')).toContain(
      'A task file (YAML or JSON)',
    );
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
