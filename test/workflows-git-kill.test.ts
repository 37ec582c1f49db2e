import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { costOf } from '../src/core/prices.js';
import { keyFingerprint } from '../src/sim/credentials.js';
import type { Scenario } from '../src/sim/scenario.js';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { AgentRunStore } from '../src/agents/run-store.js';
import { openLedger } from '../src/store/ledger.js';
import { WorkflowStore } from '../src/store/workflow-records.js';
import type { WorkflowRunResult } from '../src/workflows/api-types.js';
import { claudeProcessIds } from './helpers/claude.js';
import { createRepository, git } from './helpers/git-repo.js';
import { waitFor } from './helpers/wait-for.js';

// kill -9 at each boundary of an `effects: git` agent step, then resume in a fresh process: the real
// Claude Code binary against `switchboard sim`, real git in a temporary repository, the real SQLite
// ledger, the workflow driven through the built library (`runWorkflow` / `resumeWorkflow`) in child
// Node processes. After each: the run completes, the step's branch holds exactly one commit with its
// trailer, the outputs equal an uninterrupted run's, no process the agent started is left, and the
// step's cost is counted once. The cases share one simulator and run one after another (two of them swap its
// scenario); each has its own repository, ledger, API key and Claude Code config folder.

const dist = resolve(import.meta.dirname, '../dist');
const RUN_ID = 'run-kill';
const STEP_KEY = `${RUN_ID}/implement/0`;
const BRANCH = `wf/${RUN_ID}/implement-0`;
const MODEL = 'claude-haiku-4-5';

// Fixed usage per answer, so an agent run costs the same whatever the length of its prompt (which
// names the case's temporary folders).
const USAGE = { input: 2_000, output: 100, cacheRead: 0, cacheWrite: 0 };

/** The agent writes feature.txt, then says what it did. */
const AGENT_SCENARIO: Scenario = {
  rules: [
    {
      name: 'write',
      match: { turn: 1 },
      reply: {
        tool: { name: 'Write', input: { file_path: 'feature.txt', content: 'done\n' } },
        usage: USAGE,
      },
    },
    { name: 'final', match: { turn: 2 }, reply: { text: 'added feature.txt', usage: USAGE } },
  ],
};

/**
 * An attempt that leaves a stray file in the worktree and a background command that keeps writing
 * another (Claude Code starts Bash commands in sessions of their own, so they outlive its process
 * group), then waits for a model that does not answer.
 */
const HANGING_SCENARIO: Scenario = {
  rules: [
    {
      name: 'stray',
      match: { turn: 1 },
      reply: {
        tool: { name: 'Write', input: { file_path: 'partial.txt', content: 'half done\n' } },
        usage: USAGE,
      },
    },
    {
      name: 'background',
      match: { turn: 2 },
      reply: {
        tool: {
          name: 'Bash',
          input: { command: '(while :; do echo late > late.txt; sleep 0.1; done) >/dev/null 2>&1 &' },
        },
        usage: USAGE,
      },
    },
    { name: 'hang', match: { turn: 3 }, reply: { text: 'never seen', delayMs: 90_000 } },
  ],
};

/** Runs or resumes the workflow through the built library, printing the result (or error) as JSON. */
const CHILD = `
const config = JSON.parse(process.argv[2]);
const { runWorkflow, resumeWorkflow } = await import(${JSON.stringify(`${dist}/index.js`)});
const options = { stateDir: config.stateDir, runId: config.runId };
try {
  const result = config.mode === 'run' ? await runWorkflow({ ...options, file: config.file }) : await resumeWorkflow(options);
  process.stdout.write(JSON.stringify({ result }));
} catch (error) {
  process.stdout.write(JSON.stringify({ error: { code: error.code, message: error.message } }));
  process.exitCode = 3;
}
`;

interface ChildOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  result?: WorkflowRunResult;
  error?: { code: string; message: string };
}

interface Child {
  pid: number;
  done: Promise<ChildOutcome>;
}

interface Case {
  name: string;
  repo: string;
  stateDir: string;
  file: string;
  apiKey: string;
  configDir: string;
}

let sim: Simulator;
let childScript: string;
const children: ReturnType<typeof spawn>[] = [];

beforeAll(async () => {
  sim = await startSimulator({ scenario: AGENT_SCENARIO, maxLifetimeMs: 600_000 });
  childScript = join(realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-git-kill-'))), 'child.mjs');
  writeFileSync(childScript, CHILD);
});
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});
afterAll(async () => {
  await sim.close();
});

/** A repository, a state folder and a workflow file of its own: an agent step with effects: git, then a set step. */
function newCase(name: string): Case {
  const root = realpathSync(mkdtempSync(join(tmpdir(), `switchboard-git-kill-${name}-`)));
  const repo = createRepository(join(root, 'repo'));
  const stateDir = join(root, 'state');
  const configDir = join(root, 'claude-config');
  mkdirSync(configDir);
  const file = join(root, 'implement.yaml');
  writeFileSync(
    file,
    `workflow:
  name: git-kill
  entry_point: implement
agents:
  - name: implement
    type: agent
    provider: claude-agent-sdk
    model: ${MODEL}
    prompt: Add feature.txt saying done
    tools: [Read, Write, Bash]
    effects: git
    repo: ${JSON.stringify(repo)}
    verify: test -f feature.txt
    limits:
      max_attempts: 1
    routes:
      - to: record
  - name: record
    type: set
    values:
      branch: '{{ implement.output.branch }}'
      commit: '{{ implement.output.commit }}'
      base: '{{ implement.output.base }}'
      files: "{{ implement.output.files_changed | join(',') }}"
      summary: '{{ implement.output.summary }}'
    routes:
      - to: $end
output:
  branch: '{{ record.output.branch }}'
  commit: '{{ record.output.commit }}'
  base: '{{ record.output.base }}'
  files: '{{ record.output.files }}'
  summary: '{{ record.output.summary }}'
`,
  );
  return { name, repo, stateDir, file, apiKey: `sk-ant-git-kill-${name}-0123456789`, configDir };
}

/** A child Node process that runs (or resumes) the case's workflow; `killAt` is SWITCHBOARD_TEST_KILL_AT. */
function startChild(
  c: Case,
  mode: 'run' | 'resume',
  killAt?: string,
  extraEnv: Record<string, string> = {},
): Child {
  const child = spawn(
    process.execPath,
    [childScript, JSON.stringify({ mode, file: c.file, stateDir: c.stateDir, runId: RUN_ID })],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        ANTHROPIC_BASE_URL: sim.url,
        ANTHROPIC_API_KEY: c.apiKey,
        CLAUDE_CONFIG_DIR: c.configDir,
        SWITCHBOARD_TEST_KILL_AT: killAt ?? '',
        ...extraEnv,
      },
    },
  );
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const done = new Promise<ChildOutcome>((resolveDone) =>
    child.on('close', (code, signal) => {
      let parsed: Pick<ChildOutcome, 'result' | 'error'> = {};
      try {
        parsed = JSON.parse(stdout) as Pick<ChildOutcome, 'result' | 'error'>;
      } catch {
        // killed before it printed anything
      }
      resolveDone({ code, signal, stderr, ...parsed });
    }),
  );
  return { pid: child.pid as number, done };
}

/** The simulator's requests made with the case's API key (that is, by its Claude Code runs). */
function requestsOf(c: Case): number {
  const key = keyFingerprint(c.apiKey);
  return sim.requests.filter(
    (entry) => entry.key === key && entry.turn !== null && !entry.path.includes('count_tokens'),
  ).length;
}

function requestOf(c: Case, turn: number): boolean {
  const key = keyFingerprint(c.apiKey);
  return sim.requests.some((entry) => entry.key === key && entry.turn === turn);
}

/**
 * Live processes this case started: Claude Code and the commands its tools ran carry the case's config
 * folder in their environment (a zombie's environment reads empty).
 */
function processesOf(c: Case): number[] {
  const mark = `CLAUDE_CONFIG_DIR=${c.configDir}`;
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(mark);
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Of those, the Claude Code binaries. */
function claudeProcessesOf(c: Case): number[] {
  const own = new Set(processesOf(c));
  return claudeProcessIds().filter((pid) => own.has(pid));
}

/** Commits on the step's branch carrying the step's trailer, and on the branch since main at all. */
function stepCommits(c: Case): { trailer: string[]; all: string[] } {
  const list = (...args: string[]) =>
    git(c.repo, 'log', '--format=%H', ...args)
      .split('\n')
      .filter(Boolean);
  return {
    trailer: list(`--grep=Switchboard-Step: ${STEP_KEY}`, '--fixed-strings', BRANCH),
    all: list(`main..${BRANCH}`),
  };
}

/**
 * The workflow's output with what differs between two repositories replaced by what must not: the
 * step's commit by its tree and message (the commit's hash has its own repository's base and clock in
 * it), the base by whether it is the repository's main.
 */
function comparable(c: Case, output: Record<string, unknown> | undefined): Record<string, unknown> {
  const { commit, base, ...rest } = output ?? {};
  return {
    ...rest,
    commit: git(c.repo, 'show', '-s', '--format=%T%n%B', String(commit)),
    baseIsMain: base === git(c.repo, 'rev-parse', 'main'),
  };
}

interface Ledger {
  rows: { key: string; status: string; attempt: number; costUsd: number }[];
  runCostUsd: number;
  events: string[];
  taggedAttempts: number;
  agentRuns: number;
}

async function readLedger(c: Case): Promise<Ledger> {
  const store = await WorkflowStore.open({ stateDir: c.stateDir });
  try {
    const rows = (await store.steps(RUN_ID)).map(({ key, status, attempt, costUsd }) => ({
      key,
      status,
      attempt,
      costUsd,
    }));
    const events = (await store.events(RUN_ID)).map((event) => event.type);
    const runCostUsd = (await store.getRun(RUN_ID))?.costUsd ?? Number.NaN;
    // Through the stores, so the same reading works on SQLite and PostgreSQL. Every attempt in this
    // case's ledger is the run's: the case has a state folder (and database) of its own.
    const ledger = openLedger({ stateDir: c.stateDir });
    const agents = await AgentRunStore.open(c.stateDir);
    try {
      const taggedAttempts = (await ledger.callStats()).attempts;
      const agentRuns = (await agents.list()).length;
      return { rows, runCostUsd, events, taggedAttempts, agentRuns };
    } finally {
      await agents.close();
      await ledger.close();
    }
  } finally {
    await store.close();
  }
}

/** What the step's progress notes say its agent attempts have spent so far. */
async function spentSoFar(c: Case): Promise<number> {
  const store = await WorkflowStore.open({ stateDir: c.stateDir });
  try {
    const notes = (await store.steps(RUN_ID)).find((row) => row.key === STEP_KEY)?.progress;
    return typeof notes?.['spentUsd'] === 'number' ? notes['spentUsd'] : Number.NaN;
  } finally {
    await store.close();
  }
}

/** Dollars of `tokens` input tokens on the step's model. */
function inputCost(tokens: number): number {
  return (
    costOf(MODEL, { inputTokens: tokens, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 }) ??
    Number.NaN
  );
}

/** What every run of the case, interrupted or not, must end with. */
async function expectFinished(c: Case, finished: ChildOutcome): Promise<{ output: Record<string, unknown> }> {
  expect(finished.error, finished.stderr).toBeUndefined();
  expect(finished.result?.status, finished.stderr).toBe('completed');
  const output = finished.result?.output ?? {};
  const commits = stepCommits(c);
  expect(commits.trailer).toHaveLength(1);
  expect(commits.all).toEqual(commits.trailer);
  expect(output['commit']).toBe(commits.trailer[0]);
  expect(git(c.repo, 'show', '--name-only', '--format=', BRANCH)).toBe('feature.txt');
  // Nothing the case's agents started outlives the run (the resume kills what an interrupted one left).
  let left: number[] = [];
  await waitFor(() => (left = processesOf(c)).length === 0, {
    withinMs: 10_000,
    what: 'no process of the case left',
  }).catch(() => undefined);
  expect(left).toEqual([]);
  const ledger = await readLedger(c);
  expect(ledger.rows.map((row) => [row.key, row.status])).toEqual([
    [STEP_KEY, 'completed'],
    [`${RUN_ID}/record/0`, 'completed'],
  ]);
  // The step's cost is its row's, once: the run's total is the sum of its rows, and nothing else in the
  // ledger (call attempts, agent runs) carries the agent's spending a second time.
  expect(ledger.runCostUsd).toBeCloseTo(
    ledger.rows.reduce((sum, row) => sum + row.costUsd, 0),
    10,
  );
  expect(finished.result?.costUsd).toBeCloseTo(ledger.runCostUsd, 10);
  expect(ledger.taggedAttempts).toBe(0);
  expect(ledger.agentRuns).toBe(0);
  return { output };
}

describe('kill -9 at each boundary of an effects: git agent step, then resume', () => {
  let baseline: { output: Record<string, unknown>; comparable: Record<string, unknown>; costUsd: number };

  beforeAll(async () => {
    sim.setScenario(AGENT_SCENARIO);
    const c = newCase('baseline');
    const finished = await startChild(c, 'run').done;
    const { output } = await expectFinished(c, finished);
    const ledger = await readLedger(c);
    baseline = { output, comparable: comparable(c, output), costUsd: ledger.rows[0]?.costUsd ?? Number.NaN };
  }, 120_000);

  it('an uninterrupted run: one commit with the trailer, its output, the agent paid for', () => {
    expect(baseline.output).toMatchObject({
      branch: BRANCH,
      files: 'feature.txt',
      summary: 'added feature.txt',
    });
    expect(baseline.comparable['commit']).toMatch(/Switchboard-Step: run-kill\/implement\/0/);
    expect(baseline.comparable['baseIsMain']).toBe(true);
    expect(baseline.costUsd).toBeGreaterThan(0);
  });

  it('before the agent (step-start): the resume runs the agent once, as if nothing happened', async () => {
    sim.setScenario(AGENT_SCENARIO);
    const c = newCase('start');
    const killed = await startChild(c, 'run', 'step-start:/implement/0').done;
    expect(killed.signal).toBe('SIGKILL');
    expect(requestsOf(c)).toBe(0);
    expect(existsSync(join(c.stateDir, 'workflows', 'worktrees'))).toBe(false);

    const finished = await startChild(c, 'resume').done;
    const { output } = await expectFinished(c, finished);
    expect(comparable(c, output)).toEqual(baseline.comparable);
    const ledger = await readLedger(c);
    expect(ledger.rows[0]).toMatchObject({ attempt: 2 });
    expect(ledger.rows[0]?.costUsd).toBeCloseTo(baseline.costUsd, 10);
    expect(ledger.runCostUsd).toBeCloseTo(baseline.costUsd, 10);
  });

  it('during the agent: the resume kills what the killed attempt left running, resets the worktree and runs the step again', async () => {
    sim.setScenario(HANGING_SCENARIO);
    const c = newCase('during');
    // Claude Code's sandbox (bwrap) ends every command with the agent, so nothing would be left over:
    // the reconciling this test checks is for machines without it, where a leftover survives.
    const running = startChild(c, 'run', undefined, { SWITCHBOARD_AGENT_SANDBOX: 'off' });
    await waitFor(() => requestOf(c, 3), { withinMs: 60_000, what: 'the agent to ask for its third turn' });
    process.kill(running.pid, 'SIGKILL');
    expect((await running.done).signal).toBe('SIGKILL');
    // Claude Code's group dies with its runner (a watcher sees to that), but the background command
    // it started lives on and keeps writing into the worktree.
    await waitFor(() => claudeProcessesOf(c).length === 0, { what: "the killed run's Claude Code to end" });
    const worktree = join(c.stateDir, 'workflows', 'worktrees', RUN_ID, 'implement-0');
    expect(existsSync(join(worktree, 'partial.txt'))).toBe(true);
    rmSync(join(worktree, 'late.txt'), { force: true });
    await waitFor(() => existsSync(join(worktree, 'late.txt')), {
      what: 'the leftover command to write again',
    });
    expect(processesOf(c).length).toBeGreaterThan(0);
    const requestsBefore = requestsOf(c);
    // What the killed attempt spent is in the ledger: both answers it got, their input tokens at least
    // (Claude Code reports an answer's output tokens only at its end, after the SDK has passed it on).
    const killedSpent = await spentSoFar(c);
    expect(killedSpent).toBeGreaterThanOrEqual(2 * inputCost(USAGE.input));

    sim.setScenario(AGENT_SCENARIO);
    const finished = await startChild(c, 'resume').done;
    const { output } = await expectFinished(c, finished);
    // Neither the stray file nor the leftover command's is part of the step's one commit.
    expect(comparable(c, output)).toEqual(baseline.comparable);
    expect(requestsOf(c)).toBeGreaterThan(requestsBefore);
    const ledger = await readLedger(c);
    expect(ledger.events).toContain('git-reset');
    expect(ledger.rows[0]).toMatchObject({ attempt: 2 });
    // The killed attempt's spending stays, and the rerun's is added once.
    expect(ledger.rows[0]?.costUsd).toBeCloseTo(killedSpent + baseline.costUsd, 10);
    expect(ledger.runCostUsd).toBeCloseTo(ledger.rows[0]?.costUsd ?? Number.NaN, 10);
  });

  it('after the commit, before the completion row (step-effect): the resume adopts the commit, no agent run', async () => {
    sim.setScenario(AGENT_SCENARIO);
    const c = newCase('effect');
    const killed = await startChild(c, 'run', 'step-effect:/implement/0').done;
    expect(killed.signal).toBe('SIGKILL');
    const committed = stepCommits(c).trailer;
    expect(committed).toHaveLength(1);
    expect((await readLedger(c)).rows.map((row) => row.status)).toEqual(['running']);
    const requestsBefore = requestsOf(c);

    const finished = await startChild(c, 'resume').done;
    const { output } = await expectFinished(c, finished);
    expect(requestsOf(c)).toBe(requestsBefore);
    expect(output['commit']).toBe(committed[0]);
    expect(comparable(c, output)).toEqual(baseline.comparable);
    const ledger = await readLedger(c);
    expect(ledger.events).toContain('git-adopted');
    expect(ledger.rows[0]?.costUsd).toBeCloseTo(baseline.costUsd, 10);
    expect(ledger.runCostUsd).toBeCloseTo(baseline.costUsd, 10);
  });

  it('after the completion row (step-complete): the resume goes on to the next step, the agent step untouched', async () => {
    sim.setScenario(AGENT_SCENARIO);
    const c = newCase('complete');
    const killed = await startChild(c, 'run', 'step-complete:/implement/0').done;
    expect(killed.signal).toBe('SIGKILL');
    const committed = stepCommits(c).trailer;
    expect((await readLedger(c)).rows.map((row) => row.status)).toEqual(['completed']);
    const requestsBefore = requestsOf(c);

    const finished = await startChild(c, 'resume').done;
    const { output } = await expectFinished(c, finished);
    expect(requestsOf(c)).toBe(requestsBefore);
    expect(output['commit']).toBe(committed[0]);
    expect(comparable(c, output)).toEqual(baseline.comparable);
    const ledger = await readLedger(c);
    expect(ledger.rows[0]).toMatchObject({ attempt: 1 });
    expect(ledger.rows[0]?.costUsd).toBeCloseTo(baseline.costUsd, 10);
    expect(ledger.runCostUsd).toBeCloseTo(baseline.costUsd, 10);
  });
});
