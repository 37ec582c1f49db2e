import { describe, it, type TestFunction } from 'vitest';

/** True in the PostgreSQL project (test/postgres-backend.ts sets it before each test file loads). */
export const ON_POSTGRES_PASS = process.env.SWITCHBOARD_TEST_PG_PASS === '1';

/**
 * A test of behaviour no store changes (git, processes, the terminal, refusals before anything is
 * recorded): the main project runs it; the PostgreSQL project, which runs store-heavy files again with
 * every store on PostgreSQL, leaves it out.
 */
export function storeNeutral(name: string, body: TestFunction, timeout?: number): void {
  (ON_POSTGRES_PASS ? it.skip : it)(name, body, timeout);
}

/** `storeNeutral` for a whole block. */
export function storeNeutralBlock(name: string, body: () => void): void {
  (ON_POSTGRES_PASS ? describe.skip : describe)(name, body);
}
