import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimulator, type Simulator } from '../../src/sim/server.js';
import type { Scenario } from '../../src/sim/scenario.js';
import {
  createClaudeCodeProvider,
  type ClaudeCodeProvider,
  type ClaudeCodeProviderOptions,
} from '../../src/providers/claude-code/claude-code-provider.js';

/** True when the process inherited this test run's TMPDIR (see test/temp-root.ts), so is ours. */
function startedByThisRun(pid: number): boolean {
  const marker = process.env.TMPDIR;
  if (marker === undefined || !marker.includes('switchboard-test-run-')) return true;
  try {
    return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(`TMPDIR=${marker}`);
  } catch {
    return false; // gone already, or not ours to read
  }
}

/**
 * Process ids of running Claude Code binaries (the Agent SDK's native CLI) started by this test run:
 * other checkouts' test runs on the same machine must not make these tests fail.
 */
export function claudeProcessIds(): number[] {
  const output = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return output
    .split('\n')
    .filter((line) => /claude-agent-sdk-[a-z0-9-]+\/claude(\s|$)/.test(line))
    .map((line) => Number(line.trim().split(/\s+/, 1)[0]))
    .filter(startedByThisRun);
}

/** Waits until no Claude Code process from `before`'s complement is left, or the time is up. */
export async function waitForNoNewClaudeProcesses(
  before: readonly number[],
  withinMs = 8_000,
): Promise<number[]> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const extra = claudeProcessIds().filter((pid) => !before.includes(pid));
    if (extra.length === 0 || Date.now() > deadline) return extra;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export interface ClaudeHarness {
  sim: Simulator;
  provider: ClaudeCodeProvider;
  close(): Promise<void>;
}

/** The real Claude Code binary against `switchboard sim`, with its own throwaway config folder. */
export async function claudeAgainstSimulator(
  scenario: Scenario,
  options: Partial<ClaudeCodeProviderOptions> = {},
): Promise<ClaudeHarness> {
  const sim = await startSimulator({ scenario, maxLifetimeMs: 120_000 });
  const provider = createClaudeCodeProvider({
    baseUrl: sim.url,
    apiKey: 'sk-ant-test-key',
    configDir: mkdtempSync(join(tmpdir(), 'switchboard-claude-config-')),
    ...options,
  });
  return {
    sim,
    provider,
    async close() {
      await provider.close();
      await sim.close();
    },
  };
}
