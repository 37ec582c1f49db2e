import { defineConfig } from 'vitest/config';
import { hangBoundMs, testWorkers } from './test/parallelism.js';
import LongestFirst from './test/sequencer.js';

/**
 * Two projects in one run, sharing the workers, so that neither waits for the other's slowest file:
 * - `main`: every test file, stores on SQLite files in each test's state folder.
 * - `postgres`: the files whose behaviour does not depend on where the stores live, again with every
 *   store on PostgreSQL (test/postgres-backend.ts). `npm run test:postgres` runs it alone.
 */
const POSTGRES_FILES = [
  'src/agents/runner.test.ts',
  'src/agents/runner-liveness.test.ts',
  'src/invoke/budget.test.ts',
  'src/route/tiers/cache-tier.test.ts',
  'test/workflows-engine*.test.ts',
  'test/workflows-git-kill.test.ts',
  'test/cli-agent.test.ts',
  'test/agent-budgets.test.ts',
  'test/cli-agent-lifecycle.test.ts',
  'test/agent-verify-sandbox.test.ts',
  'test/cli-workflow-runs.test.ts',
  'test/serve-ui.test.ts',
  'test/workflow-guidance.test.ts',
];

export default defineConfig({
  test: {
    globalSetup: ['test/build-once.ts', 'test/postgres-server.ts', 'test/temp-root.ts'],
    maxWorkers: testWorkers(),
    // A worker process runs one test file after another without re-importing the modules each time:
    // about 0.8 CPU-seconds a file saved, a sixth of the suite's time on 2 cores. test/file-temp.ts
    // gives every file the environment, working folder and a TMPDIR of its own all the same.
    isolate: false,
    unstubEnvs: true,
    // A bound on a hang, scaled by how busy the machine was at the start (see hangBoundMs).
    testTimeout: hangBoundMs(),
    hookTimeout: hangBoundMs(),
    sequence: { sequencer: LongestFirst },
    projects: [
      {
        extends: true,
        test: {
          name: 'main',
          include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
          setupFiles: ['test/file-temp.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'postgres',
          include: POSTGRES_FILES,
          setupFiles: ['test/file-temp.ts', 'test/postgres-backend.ts'],
        },
      },
    ],
  },
});
