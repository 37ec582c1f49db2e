import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['test/build-once.ts', 'test/postgres-server.ts', 'test/temp-root.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
