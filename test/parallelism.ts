import { availableParallelism } from 'node:os';

/**
 * How many test files run at once: one per core, at least two. Vitest's default for `vitest run` is one
 * fewer than the cores, which on a 2-core machine runs every file one after another while the cores sit
 * half idle: much of a file's time is spent waiting on other processes (Claude Code, CLI and worker
 * processes, the simulator's scripted delays, heartbeats). Twice as many files as cores was hardly
 * faster, and starved the processes of CPU enough to open races that a loaded machine can hit (a gate
 * answer against the run's end, merges of `agent run-all` into a checked-out main). One more file than
 * cores saved under a minute on a quiet machine and, beside two busy loops, ran agent tests past their
 * 60 s limit. SWITCHBOARD_TEST_WORKERS overrides it.
 */
export function testWorkers(): number {
  const chosen = Number(process.env.SWITCHBOARD_TEST_WORKERS);
  if (Number.isInteger(chosen) && chosen > 0) return chosen;
  return Math.max(2, availableParallelism());
}
