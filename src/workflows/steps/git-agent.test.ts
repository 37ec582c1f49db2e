import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { startSimulator, type Simulator } from '../../sim/server.js';
import type { Scenario } from '../../sim/scenario.js';
import type { AgentStep, GitEffectDefinition } from '../model.js';
import { toolSequenceScenario, writeFileScenario } from '../../../test/helpers/agent-scenarios.js';
import { createRepository, git } from '../../../test/helpers/git-repo.js';
import { waitFor } from '../../../test/helpers/wait-for.js';
import { testStepContext, type TestStepContext } from '../../../test/helpers/step-context.js';
import { createAgentStepExecutor } from './agent.js';

// `effects: git`: the real Claude Code binary against `switchboard sim`, real git in temporary
// repositories. The engine's crash points are played by handing a step the notes an interrupted
// execution of the same key left (`previous`), as the engine does on resume.

const API_KEY = 'sk-ant-git-step-key-0123456789';
const temporary: string[] = [];
let sim: Simulator | undefined;

afterEach(async () => {
  await sim?.close();
  sim = undefined;
});
afterAll(() => {
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

function folder(prefix: string): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  temporary.push(directory);
  return directory;
}

interface Harness {
  repo: string;
  stateDir: string;
  configDir: string;
  sim: Simulator;
  context(
    step: AgentStep,
    previous?: Record<string, unknown>,
    signal?: AbortSignal,
    where?: { visit: number; item: string },
  ): TestStepContext;
  execute(context: TestStepContext): ReturnType<ReturnType<typeof createAgentStepExecutor>>;
}

async function harness(scenario: Scenario): Promise<Harness> {
  const root = folder('switchboard-git-step-');
  const repo = createRepository(join(root, 'repo'));
  const stateDir = join(repo, '.switchboard');
  const configDir = folder('switchboard-claude-config-');
  sim = await startSimulator({ scenario, maxLifetimeMs: 120_000 });
  const started = sim;
  const executor = createAgentStepExecutor({
    connection: { baseUrl: started.url, apiKey: API_KEY, configDir },
  });
  return {
    repo,
    stateDir,
    configDir,
    sim: started,
    context: (step, previous, signal, where) =>
      testStepContext({
        ...where,
        ...(signal === undefined ? {} : { signal }),
        // Every step names its repository: a test must never fall back to the current directory.
        step: { ...step, git: { ...step.git, repo } },
        dir: repo,
        stateDir,
        runId: 'run-1',
        ...(previous === undefined ? {} : { previous }),
      }),
    execute: (context) => executor(context),
  };
}

function gitStep(git: GitEffectDefinition, fields: Partial<AgentStep> = {}): AgentStep {
  return {
    type: 'agent',
    name: 'implement',
    routes: [],
    input: [],
    provider: 'claude-agent-sdk',
    model: 'claude-haiku-4.5',
    prompt: 'Add feature.txt',
    git: { limits: { max_attempts: 1 }, ...git },
    ...fields,
  };
}

/** Commits on `branch` since `main`, newest first: subject and body. */
function commitsOn(repo: string, branch: string): { subject: string; body: string }[] {
  const log = git(repo, 'log', '--format=%s%x1f%b%x1e', `main..${branch}`);
  return log
    .split('\x1e')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => {
      const [subject = '', body = ''] = entry.split('\x1f');
      return { subject, body };
    });
}

describe('type: agent with effects: git', () => {
  it('records its base, branch and worktree before the agent starts, then makes exactly one commit with the trailer', async () => {
    const h = await harness(
      writeFileScenario({ path: 'feature.txt', content: 'done\n', finalText: 'added it' }),
    );
    const context = h.context(gitStep({ verify: 'test -f feature.txt' }));
    const worktreeExisted: boolean[] = [];
    const record = context.recordProgress;
    context.recordProgress = (notes) => {
      worktreeExisted.push(existsSync(String(notes['worktree'])));
      return record(notes);
    };
    const outcome = await h.execute(context);

    expect(outcome.status).toBe('completed');
    const base = git(h.repo, 'rev-parse', 'main');
    expect(context.progress[0]).toMatchObject({
      repo: h.repo,
      base,
      branch: 'wf/run-1/implement-0',
      spentUsd: 0,
    });
    expect(worktreeExisted[0]).toBe(false);
    expect(outcome.output).toEqual({
      branch: 'wf/run-1/implement-0',
      commit: git(h.repo, 'rev-parse', 'wf/run-1/implement-0'),
      base,
      files_changed: ['feature.txt'],
      summary: 'added it',
    });
    const commits = commitsOn(h.repo, 'wf/run-1/implement-0');
    expect(commits).toHaveLength(1);
    expect(commits[0]?.body).toContain('Switchboard-Step: run-1/implement/0');
    expect(git(h.repo, 'show', '--name-only', '--format=', 'wf/run-1/implement-0')).toBe('feature.txt');
    // merge: branch (the default) leaves main alone; the worktree is gone, the branch stays.
    expect(git(h.repo, 'rev-parse', 'main')).toBe(base);
    expect(existsSync(String(context.progress[0]?.['worktree']))).toBe(false);
    expect(git(h.repo, 'worktree', 'list')).not.toContain('implement-0');
    expect(outcome.costUsd).toBeGreaterThan(0);
  });

  it('merges into the base branch with merge: no-ff and reports the merge commit', async () => {
    const h = await harness(writeFileScenario({ path: 'feature.txt', content: 'done\n' }));
    const outcome = await h.execute(h.context(gitStep({ merge: 'no-ff' })));
    expect(outcome.status).toBe('completed');
    const output = outcome.output as { merged_commit: string; commit: string };
    expect(git(h.repo, 'rev-parse', 'main')).toBe(output.merged_commit);
    expect(git(h.repo, 'log', '-1', '--format=%P', 'main').split(' ')).toContain(output.commit);
    expect(readFileSync(join(h.repo, 'feature.txt'), 'utf8')).toBe('done\n');
  });

  it('adopts the commit an interrupted execution made: no agent run, the same output', async () => {
    const h = await harness(
      writeFileScenario({ path: 'feature.txt', content: 'done\n', finalText: 'added it' }),
    );
    const first = h.context(gitStep({}));
    const finished = await h.execute(first);
    expect(finished.status).toBe('completed');
    // The process died after the commit, before the completion row: the engine resumes with the notes.
    const requests = h.sim.requests.length;
    const resumed = h.context(gitStep({}), first.progress.at(-1));
    const outcome = await h.execute(resumed);

    expect(outcome).toMatchObject({ status: 'completed', output: finished.output });
    expect(h.sim.requests.length).toBe(requests);
    expect(resumed.events.map((event) => event.type)).toContain('git-adopted');
    expect(commitsOn(h.repo, 'wf/run-1/implement-0')).toHaveLength(1);
  });

  it('resets the worktree to the recorded base when the interrupted execution left files but no trailer commit', async () => {
    const h = await harness(writeFileScenario({ path: 'stray.txt', content: 'half done\n' }));
    const step = gitStep({ verify: 'test -f feature.txt' });
    const first = h.context(step);
    expect((await h.execute(first)).status).toBe('failed');
    const notes = first.progress.at(-1) as { worktree: string };
    expect(existsSync(join(notes.worktree, 'stray.txt'))).toBe(true);
    // And a commit without the trailer on the branch, as a bypassing agent might have left.
    writeFileSync(join(notes.worktree, 'sneaky.txt'), 'x\n');
    git(notes.worktree, 'add', 'sneaky.txt');
    git(notes.worktree, 'commit', '-qm', 'not the runner');

    h.sim.setScenario(writeFileScenario({ path: 'feature.txt', content: 'done\n' }));
    const resumed = h.context(step, notes);
    const outcome = await h.execute(resumed);

    expect(outcome.status).toBe('completed');
    expect(resumed.events.map((event) => event.type)).toContain('git-reset');
    const commits = commitsOn(h.repo, 'wf/run-1/implement-0');
    expect(commits).toHaveLength(1);
    expect(commits[0]?.body).toContain('Switchboard-Step: run-1/implement/0');
    expect(git(h.repo, 'show', '--name-only', '--format=', 'wf/run-1/implement-0')).toBe('feature.txt');
    expect((outcome.output as { files_changed: string[] }).files_changed).toEqual(['feature.txt']);
  });

  it('denies the agent git commit through Bash, and undoes a commit that slipped past: only the runner commits', async () => {
    // In the jail git's folder is read-only, so no commit can slip past at all; without it (no bubblewrap,
    // or turned off) the runner's undo is what stops one, and that is what this test drives.
    vi.stubEnv('SWITCHBOARD_AGENT_SANDBOX', 'off');
    const h = await harness(
      toolSequenceScenario({
        calls: [
          { name: 'Write', input: { file_path: 'feature.txt', content: 'done\n' } },
          { name: 'Bash', input: { command: 'git add -A && git commit -qm sneaky-one' } },
          { name: 'Bash', input: { command: 'git -C . commit -qam sneaky-two' } },
          { name: 'Bash', input: { command: "bash -c 'git push origin HEAD'" } },
          // A script hides `git` from the policy, so the runner must catch its commit afterwards.
          {
            name: 'Write',
            input: {
              file_path: 'sneak.sh',
              content: 'git add feature.txt\ngit commit -qm sneaky-three\nrm -- "$0"\n',
            },
          },
          { name: 'Bash', input: { command: 'sh sneak.sh' } },
        ],
      }),
    );
    const context = h.context(gitStep({}, { tools: ['Read', 'Write', 'Bash'] }));
    const outcome = await h.execute(context);

    expect(outcome.status).toBe('completed');
    const attempt = context.events.find((event) => event.type === 'agent-attempt');
    const denied = (attempt?.data?.['denied'] ?? []) as string[];
    expect(attempt?.data?.['status']).toBe('success');
    expect(denied).toHaveLength(3);
    expect(denied.every((reason) => /`git (commit|push)` is not allowed/.test(reason))).toBe(true);
    // The model was told why.
    expect(h.sim.requests.find((request) => request.turn === 3)?.text).toMatch(/`git commit` is not allowed/);
    expect(context.events.map((event) => event.type)).toContain('agent-commit-undone');
    const commits = commitsOn(h.repo, 'wf/run-1/implement-0');
    expect(commits).toHaveLength(1);
    expect(commits[0]?.subject).not.toMatch(/sneaky/);
    expect(commits[0]?.body).toContain('Switchboard-Step: run-1/implement/0');
    expect(git(h.repo, 'show', '--name-only', '--format=', 'wf/run-1/implement-0')).toBe('feature.txt');
  });

  it('after a cancel mid-agent, keeps what the attempt spent in its notes; the resumed step starts over from the base', async () => {
    const h = await harness({
      rules: [
        {
          match: { turn: 1 },
          reply: { tool: { name: 'Write', input: { file_path: 'stray.txt', content: 'half\n' } } },
        },
        { match: { turn: 2 }, reply: { text: 'never', delayMs: 60_000 } },
      ],
    });
    const cancel = new AbortController();
    const step = gitStep({});
    const first = h.context(step, undefined, cancel.signal);
    const running = h.execute(first);
    await waitFor(() => h.sim.requests.some((request) => request.turn === 2), { what: 'the second turn' });
    cancel.abort(new Error('cancelled'));
    await expect(running).rejects.toBeDefined();
    const notes = first.progress.at(-1) as { worktree: string; spentUsd: number };
    expect(notes.spentUsd).toBeGreaterThan(0);
    expect(existsSync(join(notes.worktree, 'stray.txt'))).toBe(true);

    h.sim.setScenario(writeFileScenario({ path: 'feature.txt', content: 'done\n' }));
    const resumed = h.context(step, notes);
    const outcome = await h.execute(resumed);
    expect(outcome.status).toBe('completed');
    expect(outcome.costUsd).toBeGreaterThan(notes.spentUsd);
    expect(git(h.repo, 'show', '--name-only', '--format=', 'wf/run-1/implement-0')).toBe('feature.txt');
    expect(commitsOn(h.repo, 'wf/run-1/implement-0')).toHaveLength(1);
  });

  it('names the branch of a for_each item and a later visit after both: wf/<run>/<step>-<visit>-<item>', async () => {
    const h = await harness(writeFileScenario({ path: 'feature.txt', content: 'done\n' }));
    const context = h.context(gitStep({}), undefined, undefined, { visit: 2, item: 'task #7' });
    const outcome = await h.execute(context);
    expect(outcome).toMatchObject({ status: 'completed', output: { branch: 'wf/run-1/implement-2-task-7' } });
    expect(commitsOn(h.repo, 'wf/run-1/implement-2-task-7')[0]?.body).toContain(
      'Switchboard-Step: run-1/implement/2/task #7',
    );
  });
});
