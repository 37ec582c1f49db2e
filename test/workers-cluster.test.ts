import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { costOf } from '../src/core/prices.js';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { claudeProcessIds, waitForNoNewClaudeProcesses } from './helpers/claude.js';
import { createRepository, git } from './helpers/git-repo.js';
import { adminQuery, createTestDatabase, POSTGRES_SKIP, type TestDatabase } from './helpers/postgres.js';
import { runCli } from './helpers/run-cli.js';
import {
  enqueueAgentTasks,
  killWorkers,
  startWorker,
  untilWorkflowsSettle,
  workerMachine,
  type WorkerMachine,
} from './helpers/worker-process.js';

// The scale-out path as a team runs it: three worker processes, each a "machine" with its own state
// folder and so its own clone of a bare remote, take 12 agent tasks and 3 workflows (each a for_each
// whose items are jobs of their own) from one PostgreSQL database. Real git, the real Claude Code binary
// and the official OpenAI SDK against `switchboard sim`, real pg-boss.

const folders: string[] = [];
const children = new Set<ChildProcess>();
const claudeBefore = claudeProcessIds();

afterAll(async () => {
  killWorkers(children);
  expect(await waitForNoNewClaudeProcesses(claudeBefore)).toEqual([]);
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** Enough for each of the three workers (two jobs at a time each) to take several. */
const TASKS = Array.from({ length: 12 }, (_, index) => `c${index + 1}`);
/** Workflows enqueued beside the tasks, each a for_each of three jobs. */
const WORKFLOW_COUNT = 3;
/** Usage every simulated answer reports: the ledger's cost must be these tokens at list price. */
const AGENT_USAGE = { input: 1_000, output: 100 };
const STEP_USAGE = { input: 120, output: 40 };

/** A for_each over three topics, each explained by an OpenAI step run as a job of its own. */
const FAN = `workflow:
  name: fan
  entry_point: topics
  runtime:
    provider: openai
    default_model: gpt-4.1-mini
  input:
    n: { type: string }
agents:
  - name: topics
    type: set
    values:
      items: '["queues", "locks", "leases"]'
    routes:
      - to: explain_all
  - name: count
    type: set
    value: "{{ explain_all.outputs | length }}"
    routes:
      - to: $end
for_each:
  - name: explain_all
    type: for_each
    source: topics.output.items
    as: topic
    max_concurrent: 2
    agent:
      name: explain
      type: agent
      prompt: "Explain {{ topic }} for fan {{ workflow.input.n }}"
    routes:
      - to: count
output:
  explained: "{{ count.output }}"
`;

describe.skipIf(POSTGRES_SKIP !== undefined)(
  'three workers sharing one PostgreSQL and one bare remote',
  () => {
    let database: TestDatabase;
    let sim: Simulator;

    beforeAll(async () => {
      database = await createTestDatabase();
      sim = await startSimulator({
        maxLifetimeMs: 600_000,
        scenario: {
          rules: [
            ...TASKS.map((id) => ({
              match: { text: `Task ${id}:` },
              reply: {
                tool: { name: 'Write', input: { file_path: `${id}.txt`, content: `${id}\n` } },
                usage: AGENT_USAGE,
              },
            })),
            { match: { provider: 'openai' }, reply: { text: 'explained', usage: STEP_USAGE } },
          ],
          fallback: { text: 'done', usage: AGENT_USAGE },
        },
      });
      return async () => {
        killWorkers(children);
        await sim.close();
        await database.drop();
      };
    });

    it('12 agent tasks and 3 for_each workflows all finish; every commit is on the remote main once; the ledger costs what the simulator billed', async () => {
      const root = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-cluster-')));
      folders.push(root);
      const seed = createRepository(join(root, 'seed'));
      const remote = join(root, 'remote.git');
      execFileSync('git', ['clone', '-q', '--bare', seed, remote]);
      writeFileSync(join(root, 'fan.yaml'), FAN);
      const machine = (name: string): WorkerMachine => {
        const m = workerMachine(root, name, database.url);
        m.env = { ...m.env, OPENAI_API_KEY: 'sk-proj-cluster-0001', OPENAI_BASE_URL: sim.openAiBaseUrl };
        return m;
      };
      const submitter = machine('submitter');

      const agentRuns = await enqueueAgentTasks(submitter, {
        root,
        ids: TASKS,
        repo: remote,
        baseUrl: sim.url,
      });
      expect(agentRuns).toHaveLength(TASKS.length);
      const workflowRuns: string[] = [];
      for (let n = 1; n <= WORKFLOW_COUNT; n++) {
        const queued = await runCli(
          [
            '--config',
            submitter.config,
            'workflow',
            'run',
            join(root, 'fan.yaml'),
            '-i',
            `n=${n}`,
            '--enqueue',
          ],
          submitter,
        );
        expect(queued.status, queued.stderr).toBe(0);
        workflowRuns.push(queued.stdout.trim());
      }

      const workers = await Promise.all(
        ['w1', 'w2', 'w3'].map((name) => {
          const m = machine(name);
          return startWorker(
            [
              '--config',
              m.config,
              'worker',
              '--queues',
              'agents,workflows',
              '--concurrency',
              '2',
              // A model both Claude Code's and Switchboard's price tables know, to compare their costs.
              '--model',
              'claude-sonnet-4-5',
            ],
            { cwd: m.cwd, env: m.env, children },
          );
        }),
      );

      const deadline = Date.now() + 420_000;
      const agentStatuses = async (): Promise<Map<string, string>> => {
        const listed = await runCli(['--config', submitter.config, 'agent', 'ls', '--json'], submitter);
        const runs = JSON.parse(listed.stdout) as { id: string; status: string }[];
        return new Map(runs.map((run) => [run.id, run.status]));
      };
      const shownFailures = (statuses: Map<string, string>): Promise<string[]> =>
        Promise.all(
          agentRuns
            .filter((id) => !['succeeded', 'running'].includes(statuses.get(id) ?? ''))
            .map(
              async (id) =>
                (await runCli(['--config', submitter.config, 'agent', 'show', id], submitter)).stdout,
            ),
        );
      // Waiting reads the database (a query per poll); the CLI gives the statuses checked below.
      for (;;) {
        const running = await adminQuery(
          `SELECT count(*)::int AS n FROM agent_runs WHERE status = 'running'`,
          database.url,
        );
        const stillRunning = (running.rows[0] as { n: number }).n;
        const recorded = await adminQuery(`SELECT count(*)::int AS n FROM agent_runs`, database.url);
        if (stillRunning === 0 && (recorded.rows[0] as { n: number }).n >= agentRuns.length) break;
        if (Date.now() > deadline) {
          const statuses = await agentStatuses();
          throw new Error(
            `agent runs still running: ${JSON.stringify([...statuses])}\n${(await shownFailures(statuses)).join('\n')}`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      const finished = await untilWorkflowsSettle(submitter, workflowRuns, deadline);

      // Every run succeeded; one that did not is shown whole (its error and attempts), to say why.
      const statuses = await agentStatuses();
      expect(await shownFailures(statuses)).toEqual([]);
      expect(agentRuns.map((id) => statuses.get(id))).toEqual(Array(TASKS.length).fill('succeeded'));
      expect(finished.map((run) => [run.status, run.output])).toEqual(
        Array(WORKFLOW_COUNT).fill(['completed', { explained: 3 }]),
      );

      // Every task's commit is on the remote's main exactly once, with its file.
      const subjects = git(remote, 'log', '--format=%s', 'main').split('\n');
      for (const id of TASKS) {
        expect(
          subjects.filter((subject) => subject === `feat(${id}): Add ${id}`),
          id,
        ).toHaveLength(1);
        expect(git(remote, 'show', `main:${id}.txt`)).toBe(id);
      }
      // The work spread: every worker ran agent jobs, and members of the for_each ran on more than one.
      const lines = workers.map((worker) => worker.jobLines());
      for (const own of lines)
        expect(own.some((line) => line.startsWith('job switchboard.agents '))).toBe(true);
      const memberHosts = await adminQuery(
        `SELECT DISTINCT claimed_by FROM workflow_steps WHERE claimed_by IS NOT NULL`,
        database.url,
      );
      expect(memberHosts.rows.length).toBeGreaterThan(1);

      // The ledger's cost is what the simulator billed: its reported usage at list price.
      const answered = sim.requests.filter((entry) => entry.outcome === 'reply');
      const billed = (provider: string, usage: { input: number; output: number }): number =>
        answered
          .filter((entry) => entry.provider === provider)
          .reduce(
            (sum, entry) =>
              sum +
              (costOf(entry.model ?? '', {
                inputTokens: usage.input,
                outputTokens: usage.output,
                cacheReadTokens: 0,
                cacheWriteTokens: 0,
              }) ?? Number.NaN),
            0,
          );
      expect(answered.filter((entry) => entry.provider === 'openai')).toHaveLength(WORKFLOW_COUNT * 3);
      const ledger = await adminQuery(
        `SELECT (SELECT sum(cost_usd) FROM agent_runs) AS agents,
                (SELECT sum(cost_usd) FROM call_attempts WHERE spec NOT LIKE 'agent:%') AS calls,
                (SELECT sum(cost_usd) FROM call_attempts WHERE spec LIKE 'agent:%') AS budgeted`,
        database.url,
      );
      const { agents, calls, budgeted } = ledger.rows[0] as {
        agents: number;
        calls: number;
        budgeted: number;
      };
      expect(Number(calls)).toBeCloseTo(billed('openai', STEP_USAGE), 9);
      expect(Number(agents)).toBeCloseTo(billed('anthropic', AGENT_USAGE), 6);
      // Agent attempts also count against budgets, as call_attempts rows of spec agent:<model>: once each.
      expect(Number(budgeted)).toBeCloseTo(Number(agents), 9);
    }, 600_000);
  },
);
