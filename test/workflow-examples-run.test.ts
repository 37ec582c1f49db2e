import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/core/errors.js';
import { loadScenario } from '../src/sim/scenario.js';
import { startSimulator, type SimLogEntry, type Simulator } from '../src/sim/server.js';
import type { WorkflowRunResult } from '../src/workflows/api-types.js';
import { claudeProcessIds, waitForNoNewClaudeProcesses } from './helpers/claude.js';
import { createRepository, git } from './helpers/git-repo.js';
import { runCli, type CliRun } from './helpers/run-cli.js';

// The example workflows, run unchanged end to end as a user runs them: the built CLI, a real SQLite
// ledger, each file's own simulator scenario answering the official SDKs and the real Claude Code
// binary, real git in a temporary repository. One simulator serves every test; each loads its scenario.

const switchboardRoot = join(import.meta.dirname, '..');
const examples = join(switchboardRoot, 'examples/workflows');
const temporary: string[] = [];
const claudeBefore = claudeProcessIds();
let sim: Simulator;

beforeAll(async () => {
  sim = await startSimulator({ maxLifetimeMs: 300_000 });
});
afterAll(async () => {
  await sim.close();
  expect(await waitForNoNewClaudeProcesses(claudeBefore)).toEqual([]);
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

function temporaryDirectory(prefix: string): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  temporary.push(directory);
  return directory;
}

/** Loads the example's own scenario into the shared simulator and forgets earlier requests. */
function useScenario(name: string): void {
  sim.setScenario(loadScenario(join(examples, name)));
  sim.clearLog();
}

/** The simulator's model requests (not token counts or model lists). */
function modelRequests(): SimLogEntry[] {
  return sim.requests.filter((entry) => entry.outcome === 'reply' && !entry.path.includes('count_tokens'));
}

/** Every provider the examples use, pointed at the simulator. */
function providerEnvironment(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ANTHROPIC_BASE_URL: sim.url,
    ANTHROPIC_API_KEY: 'sk-ant-examples-run-test',
    GEMINI_BASE_URL: sim.url,
    GEMINI_API_KEY: 'gemini-examples-run-test',
    OPENAI_BASE_URL: sim.openAiBaseUrl,
    OPENAI_API_KEY: 'sk-examples-run-test',
    ...extra,
  };
}

/** The object a `--json` command printed (a run, or `ls`'s list of runs). */
function parseRun<T = WorkflowRunResult>(result: CliRun): T {
  expect(result.stderr).not.toMatch(/\n\s+at /);
  return JSON.parse(result.stdout) as T;
}

/** Polls `status --json` until the run satisfies `condition`. */
async function untilStatus(
  cli: (args: string[]) => Promise<CliRun>,
  runId: string,
  condition: (run: WorkflowRunResult) => boolean,
): Promise<WorkflowRunResult> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const result = await cli(['workflow', 'status', runId, '--json']);
    const run = result.status === 0 ? (JSON.parse(result.stdout) as WorkflowRunResult) : undefined;
    if (run !== undefined && condition(run)) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} never reached the state: ${result.stdout}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The step names of a run in the order they ran. */
const stepOrder = (run: WorkflowRunResult) => run.steps.map((step) => step.step);

describe('examples/workflows/draft-review.yaml', () => {
  it('reviews until Gemini approves, parks at the gate, polishes with the notes given from another process, then publishes', async () => {
    useScenario('draft-review.scenario.json');
    const cwd = temporaryDirectory('switchboard-example-draft-');
    const env = providerEnvironment();
    const cli = (args: string[]) => runCli(args, { cwd, env });
    const file = join(examples, 'draft-review.yaml');

    const parked = await cli(['workflow', 'run', file, '-i', 'topic=idempotency keys', '--run-id', 'note-1']);
    expect(parked.status, parked.stderr).toBe(EXIT_CODES.WORKFLOW_WAITING);

    const waiting = parseRun(await cli(['workflow', 'status', 'note-1', '--json']));
    expect(waiting).toMatchObject({ status: 'waiting', step: 'decide' });
    // The scenario's reviewer asks for one revision, then approves: two review visits, far from max_visits: 3.
    expect(stepOrder(waiting)).toEqual(['draft', 'review', 'revise', 'review', 'decide']);
    expect(waiting.gate?.step).toBe('decide');
    expect(waiting.gate?.prompt).toContain('## Idempotency keys in practice');
    expect(waiting.gate?.prompt).toContain('The last review says **approve** with 0 open finding(s).');
    expect(waiting.gate?.options).toEqual([
      { label: 'Publish as it is', value: 'publish' },
      { label: 'Polish it with my notes first', value: 'polish', promptFor: 'notes' },
      { label: 'Drop it', value: 'drop', promptFor: 'reason' },
    ]);
    expect(modelRequests().map((entry) => [entry.provider, entry.rule])).toEqual([
      ['anthropic', 'draft (Claude, structured output through the forced emit_output tool)'],
      ['gemini', 'review round 1 (Gemini): revise'],
      ['anthropic', 'revise (Claude)'],
      ['gemini', 'later review rounds (Gemini): approve'],
    ]);
    // The revision is asked for with the first review's findings, numbered.
    const revise = modelRequests()[2];
    expect(revise?.text).toContain(
      '1. [major] It never says how long the server keeps a key. Suggestion: State the retention window.',
    );

    // Another process answers: polish, with notes. The run goes on in that process and parks again.
    const notes = 'Shorter intro, one example';
    const polished = await cli(['workflow', 'gate', 'note-1', '--choose', 'polish', '--text', notes]);
    expect(polished.status, polished.stderr).toBe(EXIT_CODES.WORKFLOW_WAITING);
    const polish = modelRequests().at(-1);
    expect(polish?.rule).toBe("polish (Claude, from the gate's notes)");
    expect(polish?.text).toContain(`Editor's notes: ${notes}`);
    expect(polish?.text).toContain('keep it for 24 hours');

    const published = await cli(['workflow', 'gate', 'note-1', '--choose', 'publish', '--json']);
    expect(published.status, published.stderr).toBe(EXIT_CODES.OK);
    const done = parseRun(published);
    expect(done.status).toBe('completed');
    expect(stepOrder(done)).toEqual(['draft', 'review', 'revise', 'review', 'decide', 'polish', 'decide']);
    expect(done.steps.every((step) => step.status === 'completed' && step.attempts === 1)).toBe(true);
    expect(done.output).toEqual({
      published: true,
      title: 'Idempotency keys, briefly',
      body: 'Send a key with every write; the server answers a repeated key with the first response.',
      verdict: 'approve',
      open_findings: [],
    });
    // Five model calls in all: finished steps were never run again by the two gate answers.
    expect(modelRequests()).toHaveLength(5);
    expect(done.costUsd).toBeGreaterThan(0);
  });
  it('ends the review loop at max_visits: 3 when the reviewer never approves; it publishes with the open findings of the last review', async () => {
    // The example's scenario, less its approving reviewer: every round asks for another revision.
    const scenario = loadScenario(join(examples, 'draft-review.scenario.json'));
    sim.setScenario({
      ...scenario,
      rules: scenario.rules
        .filter((rule) => rule.name !== 'later review rounds (Gemini): approve')
        .map(({ times: _times, ...rule }) => rule),
    });
    sim.clearLog();
    const cwd = temporaryDirectory('switchboard-example-draft-cap-');
    const file = join(examples, 'draft-review.yaml');
    const result = await runCli(
      ['workflow', 'run', file, '-i', 'topic=idempotency keys', '--skip-gates', '--json'],
      {
        cwd,
        env: providerEnvironment(),
      },
    );
    expect(result.status, result.stderr).toBe(EXIT_CODES.OK);
    const run = parseRun(result);
    // Three reviews, each followed by a revision; the fourth visit to review goes to on_cap: decide.
    expect(stepOrder(run)).toEqual([
      'draft',
      'review',
      'revise',
      'review',
      'revise',
      'review',
      'revise',
      'decide',
    ]);
    expect(run.output).toMatchObject({ published: true, verdict: 'revise' });
    expect((run.output as { open_findings: unknown[] }).open_findings).toHaveLength(2);
    expect(modelRequests().filter((entry) => entry.provider === 'gemini')).toHaveLength(3);
  });
});

describe('examples/workflows/issue-to-merge.yaml', () => {
  it('routes, plans, waits for approval, has Claude Code implement each task in a worktree, commits once per task, merges; run_key makes a second run the same run', async () => {
    useScenario('issue-to-merge.scenario.json');
    const root = temporaryDirectory('switchboard-example-issue-');
    const repo = createRepository(join(root, 'repo'));
    const configDir = join(root, 'claude-config');
    mkdirSync(configDir);
    const env = providerEnvironment({ CLAUDE_CONFIG_DIR: configDir });
    // The file names no `repo:`: the repository is the one the command runs in, as its header says.
    const cli = (args: string[]) => runCli(args, { cwd: repo, env });
    const request = 'Add a greeting file and a farewell file for new users';
    const start = [
      'workflow',
      'run',
      join(examples, 'issue-to-merge.yaml'),
      '-i',
      'issue=42',
      '-i',
      `request=${request}`,
    ];
    const base = git(repo, 'rev-parse', 'HEAD');

    const parked = await cli(start);
    expect(parked.status, parked.stderr).toBe(EXIT_CODES.WORKFLOW_WAITING);
    const runs = parseRun<WorkflowRunResult[]>(await cli(['workflow', 'ls', '--json']));
    expect(runs).toHaveLength(1);
    const runId = runs[0]?.id as string;
    const waiting = parseRun(await cli(['workflow', 'status', runId, '--json']));
    expect(stepOrder(waiting)).toEqual(['pick_brief', 'read_brief', 'plan', 'approve_plan']);
    expect(waiting.gate?.prompt).toContain('## Issue #42: plan (add-feature brief)');
    expect(waiting.gate?.prompt).toContain('1. **Add a greeting file** (`greeting`, GREETING.md)');
    expect(waiting.gate?.options.map((option) => option.value)).toEqual(['implement', 'stop']);
    expect(git(repo, 'rev-parse', 'HEAD'), 'nothing lands before the plan is approved').toBe(base);

    // The same issue again: run_key finds the parked run instead of starting a second one.
    const again = await cli(start);
    expect(again.status, again.stderr).toBe(EXIT_CODES.WORKFLOW_WAITING);
    expect(again.stdout).toContain(`switchboard workflow gate ${runId} approve_plan --choose implement`);
    expect(parseRun<WorkflowRunResult[]>(await cli(['workflow', 'ls', '--json']))).toHaveLength(1);
    expect(modelRequests().filter((entry) => entry.rule?.startsWith('plan'))).toHaveLength(1);

    const answered = await cli(['workflow', 'gate', runId, '--choose', 'implement', '--json']);
    expect(answered.status, answered.stderr).toBe(EXIT_CODES.OK);
    const done = parseRun(answered);
    expect(done.status).toBe('completed');
    // The line per event shows what this process spent so far: the agents, each counted once.
    const spentBefore = waiting.steps.reduce((sum, step) => sum + step.costUsd, 0);
    const runEnd = answered.stderr.split('\n').find((line) => / run-end /.test(line)) ?? '';
    const shown = Number(/ \$(\d+\.\d{4}) run-end /.exec(runEnd)?.[1]);
    expect(shown, runEnd).toBeCloseTo(done.costUsd - spentBefore, 3);
    expect(stepOrder(done)).toEqual([
      'pick_brief',
      'read_brief',
      'plan',
      'approve_plan',
      'implement',
      'implement_task',
      'implement_task',
      'check_merged',
    ]);
    const output = done.output as Record<string, unknown>;
    expect(output).toMatchObject({
      issue: 42,
      brief: 'add-feature',
      tasks: ['greeting', 'farewell'],
      merged: 2,
    });
    const results = output['results'] as Record<string, Record<string, unknown>>;
    expect(Object.keys(results).sort()).toEqual(['farewell', 'greeting']);

    // One runner commit per task, with its step's trailer, each merged into main.
    const trailers = git(repo, 'log', 'main', '--format=%(trailers:key=Switchboard-Step,valueonly)')
      .split('\n')
      .filter(Boolean);
    expect(trailers.sort()).toEqual([`${runId}/implement/0/farewell`, `${runId}/implement/0/greeting`]);
    for (const [task, file, content] of [
      ['greeting', 'GREETING.md', 'Welcome aboard!\n'],
      ['farewell', 'FAREWELL.md', 'Goodbye, and thanks!\n'],
    ] as const) {
      const result = results[task] ?? {};
      expect(result).toMatchObject({ base, files_changed: [file] });
      expect(git(repo, 'merge-base', '--is-ancestor', String(result['commit']), 'main')).toBe('');
      expect(git(repo, 'show', `main:${file}`)).toBe(content.trimEnd());
      expect(
        git(
          repo,
          'log',
          '-1',
          '--format=%(trailers:key=Switchboard-Step,valueonly)',
          String(result['commit']),
        ),
      ).toBe(`${runId}/implement/0/${task}`);
    }
    expect(git(repo, 'branch', '--show-current')).toBe('main');
    expect(git(repo, 'status', '--porcelain')).toBe('');
    // The agents ran in the temporary repository only.
    expect(git(switchboardRoot, 'branch', '--list', `wf/${runId}/*`)).toBe('');

    // Once more after it finished: the same completed run, nothing runs or commits again.
    const requestsBefore = modelRequests().length;
    const headBefore = git(repo, 'rev-parse', 'HEAD');
    const replayed = await cli([...start, '--json']);
    expect(replayed.status, replayed.stderr).toBe(EXIT_CODES.OK);
    expect(parseRun(replayed)).toMatchObject({ id: runId, status: 'completed', output });
    expect(modelRequests()).toHaveLength(requestsBefore);
    expect(git(repo, 'rev-parse', 'HEAD')).toBe(headBefore);
    expect(modelRequests().every((entry) => entry.rule !== null)).toBe(true);
  });
});

describe('examples/workflows/feature-tour.yaml', () => {
  it('runs with the provider map its header gives; every template feature renders; a named rule answers every request', async () => {
    useScenario('feature-tour.scenario.json');
    const cwd = temporaryDirectory('switchboard-example-tour-');
    const result = await runCli(
      [
        'workflow',
        'run',
        join(examples, 'feature-tour.yaml'),
        '--provider-map',
        'copilot=anthropic',
        '--skip-gates',
        '--json',
      ],
      { cwd, env: providerEnvironment() },
    );
    expect(result.status, result.stderr).toBe(EXIT_CODES.OK);
    const run = parseRun(result);
    expect(run.status).toBe('completed');
    // The script's stdin is prepare's topics through `tojson`: it counts the bytes it read.
    const topicsJson =
      '[{"name": "caching", "rank": 1}, {"name": "retries", "rank": 2}, {"name": "queues", "rank": 3}]';
    expect(run.output).toEqual({
      headline: 'Caching, retries and queues in ten minutes',
      topics: ['caching', 'retries', 'queues'],
      explained: 3,
      failed: 0,
      outline: ['Why it matters', 'How it works', 'Where it breaks'],
      risks: [
        { topic: 'caching', risk: 'Serving stale data after a write' },
        { topic: 'retries', risk: 'Retrying a write that is not idempotent' },
      ],
      stamp: 'feature-tour for new engineers',
      difficulty: 7,
      waited_seconds: expect.any(Number) as number,
      script_bytes: topicsJson.length,
      decision: 'publish',
      digest:
        '1. caching: Keep answers close to where they are needed; decide when they expire.\n' +
        '2. retries: Try again after a transient failure, with backoff, only when repeating is safe.\n' +
        '3. queues: Let producers and consumers work at their own pace.\n',
    });
    expect((run.output as { waited_seconds: number }).waited_seconds).toBeGreaterThanOrEqual(0.2);
    expect(new Set(run.steps.map((step) => step.type))).toEqual(
      new Set(['set', 'script', 'parallel', 'agent', 'for_each', 'wait', 'workflow', 'human_gate']),
    );
    expect(run.steps.every((step) => step.status === 'completed')).toBe(true);

    const requests = modelRequests();
    expect(requests.map((entry) => entry.rule)).not.toContain(null);
    expect(requests.map((entry) => entry.rule?.split(' (')[0]).sort()).toEqual([
      'explain caching',
      'explain queues',
      'explain retries',
      'headline',
      'outline',
      'risks',
    ]);
    // copilot=anthropic with the step's model appended; the sub-workflow's openai step went to chat completions.
    expect(requests.filter((entry) => entry.provider === 'anthropic').map((entry) => entry.model)).toEqual(
      Array(5).fill('claude-haiku-4-5'),
    );
    expect(requests.filter((entry) => entry.provider === 'openai').map((entry) => entry.model)).toEqual([
      'gpt-4.1-mini',
    ]);
  });
  it('without --skip-gates its timed gate waits in the running process for an answer from another one: shelve ends the run failed with the reason', async () => {
    useScenario('feature-tour.scenario.json');
    const cwd = temporaryDirectory('switchboard-example-tour-gate-');
    const env = providerEnvironment();
    const cli = (args: string[]) => runCli(args, { cwd, env });
    const running = cli([
      'workflow',
      'run',
      join(examples, 'feature-tour.yaml'),
      '--provider-map',
      'copilot=anthropic',
      '--run-id',
      'tour-1',
      '--json',
    ]);
    // The process waits at the timed gate; status shows the gate, its options and when it times out.
    const waiting = await untilStatus(cli, 'tour-1', (run) => run.gate?.step === 'publish_gate');
    expect(waiting.status).toBe('running');
    expect(waiting.gate?.options.map((option) => option.value)).toContain('shelve');
    expect(Date.parse(waiting.gate?.timesOutAt ?? '')).toBeGreaterThan(Date.now());
    const answer = await cli([
      'workflow',
      'gate',
      'tour-1',
      'publish_gate',
      '--choose',
      'shelve',
      '--text',
      'needs a diagram',
    ]);
    expect(answer.status, answer.stderr).toBe(EXIT_CODES.OK);
    const ended = await running;
    expect(ended.status, ended.stderr).toBe(EXIT_CODES.WORKFLOW_FAILED);
    const run = parseRun(await cli(['workflow', 'status', 'tour-1', '--json']));
    expect(run.status).toBe('failed');
    expect(stepOrder(run).slice(-2)).toEqual(['publish_gate', 'shelved']);
    expect(run.error).toBe('step "shelved" terminated the run: Shelved: needs a diagram');
    expect(ended.stderr.trimEnd().split('\n').at(-1)).toContain('Shelved: needs a diagram');
  });
});
