import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../sim/server.js';
import type { Scenario } from '../sim/scenario.js';
import { writeFileScenario, writeFilesScenario } from '../../test/helpers/agent-scenarios.js';
import { runAgent, type AgentInvocation, type AgentOutcome } from './claude-agent.js';

// Every run here is the real Claude Code binary (shipped by @anthropic-ai/claude-agent-sdk) against
// `switchboard sim` on loopback; it really executes the tool calls the scenario scripts.

const API_KEY = 'sk-ant-agent-test-key-0123456789';
const temporary: string[] = [];
let sim: Simulator | undefined;

function temporaryDirectory(prefix: string): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  temporary.push(directory);
  return directory;
}

afterEach(async () => {
  await sim?.close();
  sim = undefined;
  for (const directory of temporary.splice(0)) rmSync(directory, { recursive: true, force: true });
});

interface AgentHarness {
  sim: Simulator;
  cwd: string;
  /** A folder outside the worktree. */
  outside: string;
  transcriptPath: string;
  configDir: string;
  run(overrides?: Partial<AgentInvocation>): Promise<AgentOutcome>;
}

/** A worktree folder, a folder outside it, a throwaway CLAUDE_CONFIG_DIR and the simulator. */
async function agentHarness(
  scenario: (paths: { cwd: string; outside: string }) => Scenario,
): Promise<AgentHarness> {
  const cwd = temporaryDirectory('switchboard-agent-cwd-');
  const outside = temporaryDirectory('switchboard-agent-outside-');
  const configDir = temporaryDirectory('switchboard-claude-config-');
  const transcriptPath = join(temporaryDirectory('switchboard-agent-transcript-'), 'run', 'transcript.jsonl');
  sim = await startSimulator({ scenario: scenario({ cwd, outside }), maxLifetimeMs: 120_000 });
  const started = sim;
  return {
    sim: started,
    cwd,
    outside,
    transcriptPath,
    configDir,
    run: (overrides = {}) =>
      runAgent({
        cwd,
        prompt: 'do the task',
        allowedTools: ['Read', 'Write', 'Edit'],
        transcriptPath,
        model: 'claude-haiku-4-5',
        connection: { baseUrl: started.url, apiKey: API_KEY, configDir },
        idleTimeoutMs: 30_000,
        wallClockMs: 60_000,
        ...overrides,
      }),
  };
}

function transcript(path: string): { type: string; subtype?: string; session_id?: string }[] {
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { type: string; subtype?: string; session_id?: string });
}

describe('runAgent with the real Claude Code binary', () => {
  it('writes a file in its worktree, reports success with the session id, and keeps a transcript', async () => {
    const harness = await agentHarness(() =>
      writeFileScenario({
        path: 'notes/hello.txt',
        content: 'hello from the agent\n',
        finalText: 'wrote it',
      }),
    );
    mkdirSync(join(harness.cwd, 'notes'));
    const spawned: number[] = [];
    const progress: number[] = [];
    const outcome = await harness.run({
      onSpawn: (pid) => spawned.push(pid),
      onProgress: ({ costUsd }) => progress.push(costUsd),
    });

    expect(outcome).toMatchObject({
      status: 'success',
      subtype: 'success',
      isError: false,
      resultText: 'wrote it',
      turns: 2,
      denied: [],
    });
    expect(readFileSync(join(harness.cwd, 'notes/hello.txt'), 'utf8')).toBe('hello from the agent\n');
    expect(outcome.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(outcome.costUsd).toBeGreaterThan(0);
    expect(spawned).toHaveLength(1);
    expect(progress.length).toBeGreaterThanOrEqual(2);

    const lines = transcript(harness.transcriptPath);
    expect(lines[0]).toMatchObject({ type: 'system', subtype: 'init', session_id: outcome.sessionId });
    expect(lines.at(-1)).toMatchObject({ type: 'result', subtype: 'success' });
    expect(lines.some((line) => line.type === 'assistant')).toBe(true);
    const raw = readFileSync(harness.transcriptPath, 'utf8');
    expect(raw).not.toContain(API_KEY);
    expect(raw).not.toContain('ANTHROPIC_API_KEY=');
  });

  it('denies writes that leave the worktree: an absolute path, `..`, and a link to outside', async () => {
    const harness = await agentHarness(({ outside }) =>
      writeFilesScenario({
        files: [
          { path: join(outside, 'absolute.txt'), content: 'escaped' },
          { path: `../${outside.split('/').at(-1)}/dotdot.txt`, content: 'escaped' },
          { path: 'link/through-link.txt', content: 'escaped' },
          { path: 'inside.txt', content: 'fine' },
        ],
        finalText: 'tried',
      }),
    );
    symlinkSync(harness.outside, join(harness.cwd, 'link'));
    const outcome = await harness.run();

    expect(outcome.status).toBe('success');
    for (const name of ['absolute.txt', 'dotdot.txt', 'through-link.txt']) {
      expect(existsSync(join(harness.outside, name))).toBe(false);
    }
    expect(readFileSync(join(harness.cwd, 'inside.txt'), 'utf8')).toBe('fine');
    expect(outcome.denied).toHaveLength(3);
    for (const denial of outcome.denied) {
      expect(denial.tool).toBe('Write');
      expect(denial.reason).toMatch(/outside the worktree/);
    }
    expect(outcome.denied.map((denial) => (denial.input as { file_path: string }).file_path)).toEqual([
      join(harness.outside, 'absolute.txt'),
      expect.stringContaining('dotdot.txt'),
      expect.stringContaining('link/through-link.txt'),
    ]);
  });
});
