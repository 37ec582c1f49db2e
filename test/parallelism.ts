import { availableParallelism, loadavg } from 'node:os';

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

/**
 * The longest a test or hook may take before it counts as hung: 60 s on a machine with nothing else
 * running, scaled by the work that was already waiting for a core when the run began (the one-minute
 * load average over the cores), up to 3×. Beside two busy loops on 2 cores every test process gets about
 * half a core, and a file that starts real Claude Code and worker processes takes twice as long; what
 * the tests assert is what was done and what was left behind, never how long it took. This bound only
 * stops a test that will never end. SWITCHBOARD_TEST_TIMEOUT_MS sets it outright.
 */
export function hangBoundMs(): number {
  const chosen = Number(process.env.SWITCHBOARD_TEST_TIMEOUT_MS);
  if (Number.isInteger(chosen) && chosen > 0) return chosen;
  const cores = availableParallelism();
  const busy = Math.min(3, Math.max(1, 1 + (loadavg()[0] ?? 0) / cores));
  return Math.round(60_000 * busy);
}
