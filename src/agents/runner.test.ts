import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { AgentInvocation, AgentOutcome } from './claude-agent.js';
import { cleanAgentRuns, listAgentRuns, showAgentRun } from './lifecycle.js';
import { runAgentTasks } from './run-all.js';
import { resumeAgentRun, runAgentTask, type AgentFunction } from './runner.js';
import { createRepository, git } from '../../test/helpers/git-repo.js';
import { AgentRunStore } from './run-store.js';
import { parseTask, type TaskFile } from './task.js';

// The runner with an injected agent function (the real Claude Code runs in test/cli-agent*.test.ts):
// real git in temporary repositories, a real ledger file.

const temporary: string[] = [];
afterAll(() => {
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

function makeRepo(): { repo: string; stateDir: string } {
  const root = mkdtempSync(join(tmpdir(), 'switchboard-agent-lib-'));
  temporary.push(root);
  const repo = createRepository(join(root, 'repo'));
  return { repo, stateDir: join(root, 'state') };
}

function task(fields: Partial<TaskFile> = {}) {
  return parseTask({ id: 'task-1', title: 'Add a file', ...fields });
}

const success = (extra: Partial<AgentOutcome> = {}): AgentOutcome => ({
  status: 'success',
  subtype: 'success',
  isError: false,
  costUsd: 0.01,
  turns: 2,
  durationMs: 5,
  denied: [],
  sessionId: '11111111-2222-3333-4444-555555555555',
  ...extra,
});

/** An agent that writes files into its working directory and records what it was asked. */
function fakeAgent(
  act: (invocation: AgentInvocation, call: number) => Partial<AgentOutcome> | void,
): AgentFunction & { invocations: AgentInvocation[] } {
  const invocations: AgentInvocation[] = [];
  const agent = async (invocation: AgentInvocation): Promise<AgentOutcome> => {
    invocations.push(invocation);
    return success(act(invocation, invocations.length) ?? {});
  };
  return Object.assign(agent, { invocations });
}

describe('runAgentTask', () => {
  it('runs the agent in a worktree, verifies, commits without the context files and merges into a clean checkout', async () => {
    const { repo, stateDir } = makeRepo();
    const agent = fakeAgent((invocation) => {
      expect(existsSync(join(invocation.cwd, 'EXECUTION_CONTEXT.md'))).toBe(true);
      writeFileSync(join(invocation.cwd, 'feature.txt'), 'done\n');
    });
    const result = await runAgentTask({
      task: task({ verify: 'test -f feature.txt' }),
      repo,
      stateDir,
      _internal: { runAgent: agent },
    });
    expect(result).toMatchObject({ ok: true, status: 'succeeded', phase: 'done', attempts: 1 });
    expect(result.costUsd).toBeCloseTo(0.01);
    // The user's checkout moved with the branch: file present, nothing staged, a merge commit on top.
    expect(readFileSync(join(repo, 'feature.txt'), 'utf8')).toBe('done\n');
    expect(git(repo, 'status', '--porcelain', '--untracked-files=no')).toBe('');
    expect(git(repo, 'rev-parse', 'HEAD')).toBe(result.mergedCommit);
    expect(git(repo, 'log', '-1', '--format=%P').split(' ')).toHaveLength(2);
    expect(git(repo, 'log', '-1', '--format=%s', result.commit ?? '')).toBe('feat(task-1): Add a file');
    expect(git(repo, 'show', '--name-only', '--format=', result.commit ?? '')).toBe('feature.txt');
    expect(agent.invocations[0]?.allowedTools).toEqual(['Read', 'Write', 'Edit', 'Glob', 'Grep']);
    const phases = (await showAgentRun(result.id, { stateDir })).events
      .filter((event) => event.kind === 'phase')
      .map((event) => event.phase);
    expect(phases).toEqual(['queued', 'worktree', 'agent', 'verify', 'merge']);
  });

  it("keeps a state folder inside the repository out of the user's git status, with one exclude line", async () => {
    const { repo } = makeRepo();
    const stateDir = join(repo, '.switchboard');
    for (const id of ['first', 'second']) {
      const agent = fakeAgent((invocation) => writeFileSync(join(invocation.cwd, `${id}.txt`), `${id}\n`));
      const result = await runAgentTask({
        task: task({ id }),
        repo,
        stateDir,
        _internal: { runAgent: agent },
      });
      expect(result.ok).toBe(true);
    }
    // Worktrees and the ledger live under .switchboard; `git add -A` must not pick them up.
    expect(git(repo, 'status', '--porcelain')).toBe('');
    const exclude = readFileSync(join(repo, '.git', 'info', 'exclude'), 'utf8');
    expect(exclude.split('\n').filter((line) => line === '/.switchboard/')).toHaveLength(1);
  });

  it('runs the setup command once in the new worktree before the agent, in an environment without foreign keys', async () => {
    const { repo, stateDir } = makeRepo();
    writeFileSync(join(repo, '.gitignore'), 'deps/\n');
    git(repo, 'add', '.gitignore');
    git(repo, 'commit', '-q', '-m', 'ignore deps');
    const agent = fakeAgent((invocation) => {
      // What setup made is there when the agent starts.
      expect(readFileSync(join(invocation.cwd, 'deps', 'ready'), 'utf8')).toBe('yes\n');
      writeFileSync(join(invocation.cwd, 'feature.txt'), 'done\n');
    });
    process.env['OPENAI_API_KEY'] = 'sk-proj-not-for-setup';
    try {
      const result = await runAgentTask({
        task: task({
          setup: 'test -z "$OPENAI_API_KEY" && mkdir -p deps && echo yes > deps/ready',
          verify: 'test -f deps/ready && test -f feature.txt',
        }),
        repo,
        stateDir,
        _internal: { runAgent: agent },
      });
      expect(result).toMatchObject({ ok: true, phase: 'done' });
    } finally {
      delete process.env['OPENAI_API_KEY'];
    }
    expect(git(repo, 'show', '--name-only', '--format=', 'HEAD^2')).toBe('feature.txt');
    const [latest] = await listAgentRuns({ stateDir });
    const messages = (await showAgentRun(latest?.id ?? '', { stateDir })).events.map(
      (event) => event.message,
    );
    expect(messages).toContain(
      'setting up: ' + 'test -z "$OPENAI_API_KEY" && mkdir -p deps && echo yes > deps/ready',
    );
  });

  it('ends with SETUP_FAILED, the agent never started, when setup fails or leaves files git would commit', async () => {
    for (const [setup, reason] of [
      ['exit 3', /setup command `exit 3` failed with exit status 3/],
      ['echo x > stray.txt', /left files git does not ignore \(stray\.txt\); add them to \.gitignore/],
    ] as const) {
      const { repo, stateDir } = makeRepo();
      const agent = fakeAgent(() => undefined);
      const result = await runAgentTask({
        task: task({ setup }),
        repo,
        stateDir,
        _internal: { runAgent: agent },
      });
      expect(result).toMatchObject({ ok: false, errorCode: 'SETUP_FAILED', phase: 'failed' });
      expect(result.error).toMatch(reason);
      expect(agent.invocations).toHaveLength(0);
      expect(git(repo, 'log', '--format=%s')).toBe('initial');
    }
  });

  it('feeds a failed verify back to the agent, resumes its session and passes on the next attempt', async () => {
    const { repo, stateDir } = makeRepo();
    const agent = fakeAgent((invocation, call) => {
      writeFileSync(join(invocation.cwd, 'value.txt'), call === 1 ? 'wrong\n' : 'right\n');
    });
    const result = await runAgentTask({
      task: task({
        verify: 'grep -q right value.txt || { echo "expected right, found $(cat value.txt)"; exit 3; }',
      }),
      repo,
      stateDir,
      retryDelayMs: 1,
      _internal: { runAgent: agent },
    });
    expect(result).toMatchObject({ ok: true, attempts: 2 });
    expect(agent.invocations[1]?.prompt).toContain('expected right, found wrong');
    expect(agent.invocations[1]?.resumeSessionId).toBe('11111111-2222-3333-4444-555555555555');
    expect(readFileSync(join(repo, 'value.txt'), 'utf8')).toBe('right\n');
  });

  it('gives up after the attempts with VERIFY_FAILED and leaves the base alone', async () => {
    const { repo, stateDir } = makeRepo();
    const before = git(repo, 'rev-parse', 'main');
    const agent = fakeAgent((invocation) => writeFileSync(join(invocation.cwd, 'x.txt'), 'x'));
    const result = await runAgentTask({
      task: task({ verify: 'echo nope; exit 1', limits: { max_attempts: 2 } }),
      repo,
      stateDir,
      retryDelayMs: 1,
      _internal: { runAgent: agent },
    });
    expect(result).toMatchObject({ ok: false, errorCode: 'VERIFY_FAILED', phase: 'failed', attempts: 2 });
    expect(result.detail).toContain('nope');
    expect(git(repo, 'rev-parse', 'main')).toBe(before);
  });

  it('treats is_error with subtype success, and an empty change, as failures', async () => {
    const { repo, stateDir } = makeRepo();
    const agent = fakeAgent((invocation, call) =>
      call === 1 ? { isError: true, resultText: 'API Error: 500' } : undefined,
    );
    const result = await runAgentTask({
      task: task({ limits: { max_attempts: 2 } }),
      repo,
      stateDir,
      retryDelayMs: 1,
      _internal: { runAgent: agent },
    });
    expect(result).toMatchObject({ ok: false, errorCode: 'AGENT_FAILED' });
    expect(agent.invocations[1]?.prompt).toContain('API Error: 500');
  });

  it('stops on a conflict with the base moved meanwhile: base unmoved, phase conflict, git output kept', async () => {
    const { repo, stateDir } = makeRepo();
    const agent = fakeAgent((invocation) => {
      writeFileSync(join(invocation.cwd, 'README.md'), 'agent version\n');
      // Someone commits a different change to the same line on the base in the meantime.
      writeFileSync(join(repo, 'README.md'), 'user version\n');
      git(repo, 'commit', '-qam', 'user change');
    });
    const result = await runAgentTask({ task: task(), repo, stateDir, _internal: { runAgent: agent } });
    const userHead = git(repo, 'rev-parse', 'main');
    expect(result).toMatchObject({
      ok: false,
      status: 'conflict',
      phase: 'conflict',
      errorCode: 'MERGE_CONFLICT',
    });
    expect(result.detail).toContain('CONFLICT');
    expect(git(repo, 'log', '-1', '--format=%s', 'main')).toBe('user change');
    expect(git(repo, 'rev-parse', 'main')).toBe(userHead);
    expect(readFileSync(join(repo, 'README.md'), 'utf8')).toBe('user version\n');
    expect(git(repo, 'rev-parse', result.branch)).toBe(result.commit);
  });

  it('refuses to merge into a checkout dirtied during the run, keeps the branch, and resume merges it once clean', async () => {
    const { repo, stateDir } = makeRepo();
    const agent = fakeAgent((invocation) => {
      writeFileSync(join(invocation.cwd, 'new.txt'), 'new\n');
      writeFileSync(join(repo, 'README.md'), 'uncommitted edit\n');
    });
    const before = git(repo, 'rev-parse', 'main');
    const result = await runAgentTask({ task: task(), repo, stateDir, _internal: { runAgent: agent } });
    expect(result).toMatchObject({ ok: false, status: 'conflict', errorCode: 'DIRTY_CHECKOUT' });
    expect(result.error).toContain('uncommitted changes');
    expect(git(repo, 'rev-parse', 'main')).toBe(before);
    expect(readFileSync(join(repo, 'README.md'), 'utf8')).toBe('uncommitted edit\n');
    expect(git(repo, 'rev-parse', '--verify', result.branch)).toBe(result.commit);

    // Still dirty: resume refuses and the run stays as it was.
    await expect(
      resumeAgentRun({ runId: result.id, stateDir, _internal: { runAgent: agent } }),
    ).rejects.toMatchObject({ code: 'DIRTY_CHECKOUT' });
    expect(await showAgentRun(result.id, { stateDir })).toMatchObject({ status: 'conflict' });

    git(repo, 'checkout', '--', 'README.md');
    const resumed = await resumeAgentRun({ runId: result.id, stateDir, _internal: { runAgent: agent } });
    expect(resumed).toMatchObject({ ok: true, phase: 'done', commit: result.commit });
    expect(agent.invocations).toHaveLength(1);
    expect(readFileSync(join(repo, 'new.txt'), 'utf8')).toBe('new\n');
    expect(git(repo, 'rev-parse', 'main^2')).toBe(result.commit);
  });

  it('refuses a dirty base checkout before the agent runs, unless the change stays on its branch', async () => {
    const { repo, stateDir } = makeRepo();
    writeFileSync(join(repo, 'README.md'), 'uncommitted edit\n');
    const agent = fakeAgent((invocation) => writeFileSync(join(invocation.cwd, 'new.txt'), 'new\n'));
    await expect(
      runAgentTask({ task: task(), repo, stateDir, _internal: { runAgent: agent } }),
    ).rejects.toMatchObject({ code: 'DIRTY_CHECKOUT', message: expect.stringContaining('README.md') });
    expect(agent.invocations).toHaveLength(0);
    expect(await listAgentRuns({ stateDir })).toHaveLength(0);
    expect(git(repo, 'branch', '--list', 'agent/*')).toBe('');

    const branch = await runAgentTask({
      task: task({ merge: 'branch' }),
      repo,
      stateDir,
      _internal: { runAgent: agent },
    });
    expect(branch).toMatchObject({ ok: true, phase: 'done' });
  });

  it('ends at once with the API failure code (AUTH, RATE_LIMITED), without retrying the agent', async () => {
    const { repo, stateDir } = makeRepo();
    const failures: Partial<AgentOutcome>[] = [
      { status: 'api_error', isError: true, errorCode: 'AUTH', error: 'Claude Code could not authenticate' },
      { status: 'rate_limited', isError: true, errorCode: 'RATE_LIMITED', retryAfterMs: 3_600_000 },
    ];
    for (const failure of failures) {
      const agent = fakeAgent(() => failure);
      const result = await runAgentTask({
        task: task({ limits: { max_attempts: 3 } }),
        repo,
        stateDir,
        retryDelayMs: 1,
        _internal: { runAgent: agent },
      });
      expect(result).toMatchObject({
        ok: false,
        status: 'failed',
        errorCode: failure.errorCode,
        attempts: 1,
      });
      expect(result.error).toMatch(/the API failed, not the agent/);
      expect(agent.invocations).toHaveLength(1);
    }
  });

  it('moves a base branch that is not checked out by compare-and-swap, and fast-forwards with merge: ff', async () => {
    const { repo, stateDir } = makeRepo();
    git(repo, 'branch', 'develop');
    const agent = fakeAgent((invocation) => writeFileSync(join(invocation.cwd, 'dev.txt'), 'dev\n'));
    const result = await runAgentTask({
      task: task({ base: 'develop', merge: 'ff' }),
      repo,
      stateDir,
      _internal: { runAgent: agent },
    });
    expect(result).toMatchObject({ ok: true, baseBranch: 'develop' });
    expect(git(repo, 'rev-parse', 'develop')).toBe(result.commit);
    expect(existsSync(join(repo, 'dev.txt'))).toBe(false);
  });

  it('stops without another write when another process claims the run mid-attempt: no commit, no merge, the claim kept', async () => {
    const { repo, stateDir } = makeRepo();
    const before = git(repo, 'rev-parse', 'HEAD');
    const agent = fakeAgent((invocation) => {
      writeFileSync(join(invocation.cwd, 'feature.txt'), 'done\n');
    });
    // While the agent works, a worker elsewhere takes the run over (its job came back to the queue).
    const claiming: AgentFunction = async (invocation) => {
      const store = await AgentRunStore.open(stateDir);
      try {
        const [run] = await store.list();
        expect(await store.claim(run?.id ?? '', run ?? {}, 424_242)).toBe(true);
      } finally {
        await store.close();
      }
      return agent(invocation);
    };
    await expect(
      runAgentTask({
        task: task({ verify: 'test -f feature.txt' }),
        repo,
        stateDir,
        _internal: { runAgent: claiming },
      }),
    ).rejects.toMatchObject({ code: 'INVALID_INPUT', details: { claimed: true } });
    const [run] = await listAgentRuns({ stateDir });
    expect(run).toMatchObject({ status: 'running', phase: 'agent', runnerPid: 424_242 });
    expect(git(repo, 'rev-parse', 'HEAD')).toBe(before);
    expect(git(repo, 'rev-list', '--count', `${before}..${run?.branch ?? ''}`)).toBe('0');
    const kinds = (await showAgentRun(run?.id ?? '', { stateDir })).events.map((event) => event.kind);
    expect(kinds.at(-1)).toBe('attempt-start');
  });

  it('rejects bad input before recording anything', async () => {
    const { repo, stateDir } = makeRepo();
    const notRepo = mkdtempSync(join(tmpdir(), 'switchboard-not-repo-'));
    temporary.push(notRepo);
    const options = { stateDir, _internal: { runAgent: fakeAgent(() => undefined) } };
    await expect(runAgentTask({ ...options, task: task(), repo: notRepo })).rejects.toMatchObject({
      code: 'NOT_A_GIT_REPO',
    });
    await expect(runAgentTask({ ...options, task: task({ base: 'nope' }), repo })).rejects.toMatchObject({
      code: 'UNKNOWN_BASE',
    });
    expect(() => parseTask({ id: 'bad id!', title: 'x' })).toThrow(/field "id"/);
    expect(() => parseTask({ id: 'ok' })).toThrow(expect.objectContaining({ code: 'TASK_INVALID' }));
    expect(await listAgentRuns({ stateDir })).toHaveLength(0);
  });
});

describe('resume, clean and run-all', () => {
  it('resumes a run whose runner died mid-attempt, redoing the attempt with the files kept', async () => {
    const { repo, stateDir } = makeRepo();
    // First runner: the agent writes a file, then the "runner dies" (the agent never returns).
    let release: () => void = () => undefined;
    const hung = new Promise<void>((resolve) => (release = resolve));
    const firstAgent: AgentFunction = async (invocation) => {
      writeFileSync(join(invocation.cwd, 'part1.txt'), 'one\n');
      writeFileSync(
        invocation.transcriptPath,
        '{"type":"system","session_id":"aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"}\n',
      );
      await hung;
      return success();
    };
    const abort = new AbortController();
    const first = runAgentTask({
      task: task({ verify: 'test -f part1.txt && test -f part2.txt' }),
      repo,
      stateDir,
      runId: 'crash-1',
      abortSignal: abort.signal,
      _internal: { runAgent: firstAgent },
    });
    await waitFor(() => existsSync(join(stateDir, 'agents/worktrees/crash-1/part1.txt')));
    // Simulate the crash: the ledger says runner pid X (a dead process), phase agent, attempt 1.
    const store = await AgentRunStore.open(stateDir);
    await store.update('crash-1', { runnerPid: 999_999_99 });
    await store.close();
    const second = fakeAgent((invocation) => {
      expect(existsSync(join(invocation.cwd, 'part1.txt'))).toBe(true);
      writeFileSync(join(invocation.cwd, 'part2.txt'), 'two\n');
    });
    const resumed = await resumeAgentRun({ runId: 'crash-1', stateDir, _internal: { runAgent: second } });
    expect(resumed).toMatchObject({ ok: true, attempts: 1 });
    expect(second.invocations[0]?.resumeSessionId).toBe('aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee');
    expect(second.invocations[0]?.prompt).toContain('interrupted');
    expect(
      git(repo, 'show', '--name-only', '--format=', resumed.commit ?? '')
        .split('\n')
        .sort(),
    ).toEqual(['part1.txt', 'part2.txt']);
    abort.abort();
    release();
    // The first runner lost its run to the resume. Whether it notices the claim (its poll, which under
    // load comes before the abort) or only the abort, it records nothing more; when it noticed, it says so.
    await first.catch((error: unknown) => {
      expect(error).toMatchObject({ code: 'INVALID_INPUT', details: { claimed: true } });
    });
  });

  it('runs several tasks in parallel, merging each onto the last: no commit lost; clean removes only merged work', async () => {
    const { repo, stateDir } = makeRepo();
    const agent = fakeAgent((invocation) => {
      const id = /Task (\S+):/.exec(invocation.prompt)?.[1] ?? 'x';
      writeFileSync(join(invocation.cwd, `${id}.txt`), `${id}\n`);
    });
    const tasks = ['a', 'b', 'c', 'd'].map((id) => parseTask({ id, title: `Task ${id}` }));
    const outcomes = await runAgentTasks({
      tasks,
      parallel: 3,
      repo,
      stateDir,
      _internal: { runAgent: agent },
    });
    expect(outcomes.map((outcome) => outcome.result?.ok)).toEqual([true, true, true, true]);
    for (const id of ['a', 'b', 'c', 'd'])
      expect(readFileSync(join(repo, `${id}.txt`), 'utf8')).toBe(`${id}\n`);
    expect(git(repo, 'log', '--format=%s', 'main')).toContain('feat(d): Task d');

    // A failed, unmerged run is kept unless abandoned; merged ones are removed.
    const failing = fakeAgent(() => ({ status: 'agent_error', isError: true }));
    const failed = await runAgentTask({
      task: task({ id: 'keep', limits: { max_attempts: 1 } }),
      repo,
      stateDir,
      _internal: { runAgent: failing },
    });
    const cleaned = await cleanAgentRuns({ stateDir });
    expect(cleaned.removed.map((entry) => entry.reason)).toEqual(['merged', 'merged', 'merged', 'merged']);
    expect(cleaned.kept.map((entry) => entry.id)).toEqual([failed.id]);
    expect(existsSync(failed.worktree)).toBe(true);
    const abandoned = await cleanAgentRuns({ stateDir, abandon: [failed.id] });
    expect(abandoned.removed).toEqual([expect.objectContaining({ id: failed.id, reason: 'abandoned' })]);
    expect(existsSync(failed.worktree)).toBe(false);
    expect(git(repo, 'worktree', 'list').split('\n')).toHaveLength(1);
  });
});

async function waitFor(condition: () => boolean, withinMs = 10_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
