import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { AgentInvocation, AgentOutcome } from '../agents/claude-agent.js';
import { AgentRunStore } from '../agents/run-store.js';
import { parseTask } from '../agents/task.js';
import { DEFAULT_WORKER_SETTINGS } from '../core/config.js';
import { createRepository, git } from '../../test/helpers/git-repo.js';
import { createTestDatabase, POSTGRES_SKIP } from '../../test/helpers/postgres.js';
import { enqueueAgentTasks, startWorker, AGENT_QUEUE } from './index.js';

// Workers from the library, in one process: the URL is given as an option (no SWITCHBOARD_DATABASE_URL),
// the agent is an injected function; real PostgreSQL, pg-boss and git.

const folders: string[] = [];
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

const outcome: AgentOutcome = {
  status: 'success',
  subtype: 'success',
  isError: false,
  costUsd: 0.01,
  turns: 1,
  durationMs: 5,
  denied: [],
};

describe.skipIf(POSTGRES_SKIP !== undefined)('enqueueAgentTasks and startWorker', () => {
  it('run the queued tasks on the database given as an option and merge each change', async () => {
    const database = await createTestDatabase();
    const root = mkdtempSync(join(tmpdir(), 'switchboard-worker-lib-'));
    folders.push(root);
    const repo = createRepository(join(root, 'repo'));
    const stateDir = join(root, 'state');
    const previous = process.env.SWITCHBOARD_DATABASE_URL;
    delete process.env.SWITCHBOARD_DATABASE_URL;
    const settings = { ...DEFAULT_WORKER_SETTINGS, heartbeatSeconds: 10, pollingIntervalSeconds: 0.5 };
    const worker = await startWorker({
      url: database.url,
      settings: { ...settings, concurrency: 2 },
      queues: [AGENT_QUEUE],
      runner: {
        stateDir,
        _internal: {
          runAgent: async (invocation: AgentInvocation) => {
            const id = /Task (\w+):/.exec(invocation.prompt)?.[1] ?? 'unknown';
            writeFileSync(join(invocation.cwd, `${id}.txt`), `${id}\n`);
            return outcome;
          },
        },
      },
    });
    try {
      const tasks = ['one', 'two'].map((id) =>
        parseTask({ id, title: `Add ${id}`, verify: `test -f ${id}.txt` }),
      );
      const queued = await enqueueAgentTasks({ tasks, url: database.url, settings, repo, stateDir });
      expect(queued.map((entry) => entry.error)).toEqual([undefined, undefined]);

      const store = await AgentRunStore.open(stateDir, { url: database.url });
      try {
        const deadline = Date.now() + 30_000;
        let runs = await store.list();
        while (runs.some((run) => run.status === 'running') && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          runs = await store.list();
        }
        expect(runs.map((run) => run.status)).toEqual(['succeeded', 'succeeded']);
      } finally {
        await store.close();
      }
      const subjects = git(repo, 'log', '--format=%s', 'main');
      expect(subjects).toContain('feat(one): Add one');
      expect(subjects).toContain('feat(two): Add two');
    } finally {
      await worker.drain(1000);
      if (previous !== undefined) process.env.SWITCHBOARD_DATABASE_URL = previous;
      await database.drop();
    }
    expect(worker.health()).toMatchObject({ ok: false, state: 'stopped', active: 0 });
  });
});
