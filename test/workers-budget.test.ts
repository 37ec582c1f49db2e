import type { ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { createTestDatabase, POSTGRES_SKIP, type TestDatabase } from './helpers/postgres.js';
import { runCli } from './helpers/run-cli.js';
import {
  killWorkers,
  startWorker,
  untilWorkflowsSettle,
  workerMachine,
  type WorkerMachine,
} from './helpers/worker-process.js';

// A daily budget shared by every machine: three worker processes, each taking two workflow jobs at once,
// race for a cap that allows two calls. The reservation lives in the shared PostgreSQL database, so the
// simulator sees at most two requests however the six jobs are spread.

const folders: string[] = [];
const children = new Set<ChildProcess>();

afterAll(() => {
  killWorkers(children);
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** One LLM step on OpenAI's gpt-4.1-mini. */
const ASK = `workflow:
  name: ask
  entry_point: ask
  runtime:
    provider: openai
    default_model: gpt-4.1-mini
  input:
    n: { type: string }
agents:
  - name: ask
    type: agent
    prompt: "hello number {{ workflow.input.n }}"
    routes:
      - to: $end
output:
  text: "{{ ask.output }}"
`;

describe.skipIf(POSTGRES_SKIP !== undefined)('budgets across workers on PostgreSQL', () => {
  let database: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    database = await createTestDatabase();
    sim = await startSimulator({
      maxLifetimeMs: 300_000,
      scenario: {
        rules: [
          // Slow enough that every worker's reservation is taken while the others' calls are in flight.
          {
            match: { provider: 'openai' },
            reply: { text: 'hello', usage: { input: 10, output: 1_200 }, delayMs: 2_000 },
          },
        ],
      },
    });
    return async () => {
      killWorkers(children);
      await sim.close();
      await database.drop();
    };
  });

  it('three workers racing six jobs on a daily cap that allows two calls send two; the other runs fail on the budget', async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-budget-workers-')));
    folders.push(root);
    writeFileSync(join(root, 'ask.yaml'), ASK);
    const machine = (name: string): WorkerMachine => {
      const m = workerMachine(root, name, database.url);
      m.env = { ...m.env, OPENAI_API_KEY: 'sk-proj-budget-workers-0001', OPENAI_BASE_URL: sim.openAiBaseUrl };
      return m;
    };
    // Every machine reads one switchboard.yaml (workerMachine writes it afresh): the cap goes in once all exist.
    const [submitter, ...workers] = ['submitter', 'w1', 'w2', 'w3'].map(machine) as [
      WorkerMachine,
      ...WorkerMachine[],
    ];
    // gpt-4.1-mini: each call is estimated at $0.00164 and costs $0.001924; $0.004 lets two reserve.
    appendFileSync(
      submitter.config,
      'call: { retries_per_provider: 0 }\nbudgets:\n  rules:\n    - { provider: openai, daily_usd: 0.004 }\n',
    );
    const runIds: string[] = [];
    for (let n = 0; n < 6; n++) {
      const queued = await runCli(
        [
          '--config',
          submitter.config,
          'workflow',
          'run',
          join(root, 'ask.yaml'),
          '-i',
          `n=${n}`,
          '--enqueue',
        ],
        submitter,
      );
      expect(queued.status, queued.stderr).toBe(0);
      runIds.push(queued.stdout.trim());
    }
    await Promise.all(
      workers.map((m) =>
        startWorker(['--config', m.config, 'worker', '--queues', 'workflows', '--concurrency', '2'], {
          cwd: m.cwd,
          env: m.env,
          children,
        }),
      ),
    );

    const ended = await untilWorkflowsSettle(submitter, runIds, Date.now() + 90_000);
    const completions = sim.requests.filter((entry) => entry.path.endsWith('/chat/completions'));
    expect(completions).toHaveLength(2);
    expect(ended.filter((run) => run.status === 'completed')).toHaveLength(2);
    const refused = ended.filter((run) => run.status === 'failed');
    expect(refused).toHaveLength(4);
    for (const run of refused) expect(run.error).toMatch(/daily budget of \$0\.004 for openai/);

    const stats = await runCli(['--config', submitter.config, 'stats', '--json'], submitter);
    const budgets = (JSON.parse(stats.stdout) as { budgets: { spent: number; reserved: number }[] }).budgets;
    expect(budgets[0]?.reserved).toBe(0);
    expect(budgets[0]?.spent).toBeCloseTo(2 * 0.001924, 9);
  });
});
