import { defineConfig } from 'vitest/config';
import { testWorkers } from './test/parallelism.js';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['test/build-once.ts', 'test/postgres-server.ts', 'test/temp-root.ts'],
    setupFiles: ['test/file-temp.ts'],
    maxWorkers: testWorkers(),
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
