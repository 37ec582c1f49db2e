import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { claudeProcessIds, waitForNoNewClaudeProcesses } from './helpers/claude.js';
import { promptClaude } from './helpers/claude-prompt.js';

// The real Claude Code binary keeps the simulator's signed thinking in its conversation and sends it
// back on the next turn, unchanged: the simulator's check accepts it, as the API would.

const claudeBefore = claudeProcessIds();
const directories: string[] = [];
let sim: Simulator | undefined;

afterAll(async () => {
  await sim?.close();
  expect(await waitForNoNewClaudeProcesses(claudeBefore)).toEqual([]);
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

describe('simulator: signed thinking with the real Claude Code binary', () => {
  it('takes thinking, a tool call and its result through two turns, signatures verified', async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-sim-thinking-')));
    directories.push(root);
    const cwd = join(root, 'project');
    const configDir = join(root, 'claude-config');
    mkdirSync(cwd);
    mkdirSync(configDir);
    writeFileSync(join(cwd, 'notes.txt'), 'the launch is on Tuesday\n');
    const firstThought = 'The user asks about the notes. I should read notes.txt before answering.';
    sim = await startSimulator({
      maxLifetimeMs: 120_000,
      scenario: {
        rules: [
          {
            match: { tools: 'Read', turn: 1 },
            reply: {
              thinking: firstThought,
              tool: { name: 'Read', input: { file_path: join(cwd, 'notes.txt') } },
            },
          },
          {
            match: { tools: 'Read', turn: 2 },
            reply: { thinking: 'The file says Tuesday.', text: 'The launch is on Tuesday.' },
          },
        ],
      },
    });
    const run = await promptClaude('when is the launch? see notes.txt', { cwd, configDir, baseUrl: sim.url });
    expect(run.status, run.stderr).toBe(0);
    expect(run.result).toBe('The launch is on Tuesday.');
    const calls = sim.requests.filter((entry) => entry.tools.includes('Read'));
    expect(calls.map((entry) => [entry.turn, entry.outcome])).toEqual([
      [1, 'reply'],
      [2, 'reply'],
    ]);
    expect(sim.requests.filter((entry) => entry.outcome === 'invalid_request')).toEqual([]);
    const sentBack = JSON.stringify(calls[1]?.body);
    expect(sentBack).toContain(JSON.stringify(firstThought));
    expect(sentBack).toContain('"signature"');
  }, 90_000);
});
