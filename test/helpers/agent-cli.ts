import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, expect } from 'vitest';
import { startSimulator, type Simulator, type SimLogEntry } from '../../src/sim/server.js';
import type { Scenario } from '../../src/sim/scenario.js';
import { claudeProcessIds, waitForNoNewClaudeProcesses } from './claude.js';
import { createRepository } from './git-repo.js';
import { runCli, type CliRun } from './run-cli.js';

// `switchboard agent` as a user runs it (test/cli-agent*.test.ts): the built CLI, real git in temporary
// repositories, the real Claude Code binary against `switchboard sim` on loopback.

/** The built CLI's entry point. */
export const cli = join(import.meta.dirname, '../..', 'dist/cli/main.js');

/** One test's repository, state folder, simulator and environment. */
export interface Fixture {
  root: string;
  repo: string;
  env: NodeJS.ProcessEnv;
  run(args: string[]): Promise<CliRun>;
  task(name: string, fields: Record<string, unknown>): string;
  json<T>(args: string[]): Promise<T>;
}

/** What `agent run --json` prints. */
export interface RunJson {
  id: string;
  ok: boolean;
  status: string;
  phase: string;
  errorCode?: string;
  attempts: number;
  costUsd: number;
  branch: string;
  worktree: string;
  mergedCommit?: string;
  durationMs: number;
  detail?: string;
}

/** What a test file gets from `agentCliSuite()`. */
export interface AgentCliSuite {
  /** Process ids the file started (runners, verify commands), killed when it ends. */
  children: number[];
  /** The Claude Code processes that ran before the file: none it started may outlive it. */
  claudeBefore: number[];
  fixture(scenario: Scenario): Promise<Fixture>;
  /** The requests the current test's simulator received. */
  simLog(): readonly SimLogEntry[];
  /** The current test's simulator URL. */
  simUrl(): string;
  /** Replaces the current test's scenario (one that names the fixture's paths). */
  setScenario(scenario: Scenario): void;
}

/**
 * Registers the file's clean-up (each test's simulator; then every process the file started, checking
 * that no Claude Code process outlived it, and the temporary folders) and returns the fixture maker.
 * Call it once at the top of a test file.
 */
export function agentCliSuite(): AgentCliSuite {
  const temporary: string[] = [];
  const children: number[] = [];
  let sim: Simulator | undefined;
  const claudeBefore = claudeProcessIds();

  afterEach(async () => {
    await sim?.close();
    sim = undefined;
  });
  afterAll(async () => {
    for (const pid of children) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone.
      }
    }
    expect(await waitForNoNewClaudeProcesses(claudeBefore)).toEqual([]);
    for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
  });

  async function fixture(scenario: Scenario): Promise<Fixture> {
    sim = await startSimulator({ scenario, maxLifetimeMs: 120_000 });
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-agent-cli-')));
    temporary.push(root);
    const repo = createRepository(join(root, 'repo'));
    const configDir = join(root, 'claude-config');
    mkdirSync(configDir);
    const env = {
      ...process.env,
      ANTHROPIC_API_KEY: 'sk-ant-agent-cli-test',
      // The orchestrator's other credentials: neither the agent nor the verify command may see them.
      OPENAI_API_KEY: 'sk-proj-agent-cli-secret',
      CLAUDE_CONFIG_DIR: configDir,
      SWITCHBOARD_STATE_DIR: join(root, 'state'),
    };
    const url = sim.url;
    const run = (args: string[]): Promise<CliRun> => {
      const withUrl = ['run', 'run-all', 'resume'].includes(args[1] ?? '')
        ? [...args, '--base-url', url]
        : args;
      return runCli(withUrl, { cwd: repo, env });
    };
    return {
      root,
      repo,
      env,
      run,
      task(name, fields) {
        const file = join(root, `${name}.json`);
        writeFileSync(file, JSON.stringify(fields));
        return file;
      },
      async json<T>(args: string[]) {
        const result = await run([...args, '--json']);
        return JSON.parse(result.stdout) as T;
      },
    };
  }

  return {
    children,
    claudeBefore,
    fixture,
    simLog: () => sim?.requests ?? [],
    simUrl: () => sim?.url ?? '',
    setScenario: (scenario) => sim?.setScenario(scenario),
  };
}

/** Polls `condition` every 50 ms; throws after `withinMs`. */
export async function waitUntil(condition: () => boolean, withinMs = 30_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A verify command held until the test lets it go (see `verifyGate`). */
export interface VerifyGate {
  /** The task's `verify`: it waits for the test, then runs `then` (when given). */
  command: string;
  /** Resolves with the run's worktree once the verify command is waiting in it. */
  waiting(): Promise<string>;
  /** Lets the waiting verify command go on. */
  release(worktree: string): Promise<void>;
}

/**
 * A verify command that waits, in its worktree, for the test to act while the run is in its verify phase
 * (e.g. to play the user committing on the base branch): the command itself runs in the sandbox and
 * cannot reach the checkout. It marks itself waiting with a file and blocks on a FIFO the test writes;
 * both are gone before the change is committed.
 */
export function verifyGate(f: Fixture, then = 'true'): VerifyGate {
  const worktrees = join(f.root, 'state', 'agents', 'worktrees');
  const waitingIn = (): string | undefined =>
    existsSync(worktrees)
      ? readdirSync(worktrees)
          .map((name) => join(worktrees, name))
          .find((worktree) => existsSync(join(worktree, '.verify-waiting')))
      : undefined;
  return {
    command: `mkfifo .verify-gate && : > .verify-waiting && read go < .verify-gate && rm -f .verify-gate .verify-waiting && ${then}`,
    async waiting() {
      await waitUntil(() => waitingIn() !== undefined, 60_000);
      return waitingIn() ?? '';
    },
    async release(worktree) {
      // Opening a FIFO to write blocks until its reader opens it: the verify command is reading.
      await writeFile(join(worktree, '.verify-gate'), 'go\n');
    },
  };
}
