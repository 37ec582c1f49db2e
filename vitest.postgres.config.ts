import { defineConfig } from 'vitest/config';
import { testWorkers } from './test/parallelism.js';

// The PostgreSQL pass: test files whose behaviour does not depend on where the stores live, run with
// every store on PostgreSQL (see test/postgres-backend.ts). `npm test` runs it after the main pass.
export default defineConfig({
  test: {
    include: [
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
    ],
    globalSetup: ['test/build-once.ts', 'test/postgres-server.ts', 'test/temp-root.ts'],
    setupFiles: ['test/file-temp.ts', 'test/postgres-backend.ts'],
    maxWorkers: testWorkers(),
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
