import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/core/errors.js';
import type { Scenario } from '../src/sim/scenario.js';
import { agentCliSuite } from './helpers/agent-cli.js';
import { runCli } from './helpers/run-cli.js';

// `workflow guide` for an `effects: git` step: the real Claude Code binary runs the agent in its
// worktree against the simulator, and the guidance sent while the run waited at a gate is in the
// agent's first model request.

const { fixture, simUrl, simLog } = agentCliSuite();

const SCENARIO: Scenario = {
  rules: [
    {
      name: 'write',
      match: { system: 'step implement', turn: 1 },
      reply: { tool: { name: 'Write', input: { file_path: 'feature.txt', content: 'blue\n' } } },
    },
    { name: 'written', match: { system: 'step implement' }, reply: { text: 'Added feature.txt.' } },
  ],
  fallback: { text: 'ok' },
};

describe('guidance for a git agent step', () => {
  it("sent while the run waits at a gate, it follows the agent's prompt in its first model request", async () => {
    const f = await fixture(SCENARIO);
    writeFileSync(
      join(f.root, 'flow.yaml'),
      `workflow:
  name: guided-git
  entry_point: approve
  runtime:
    provider: claude-agent-sdk
    working_dir: ${JSON.stringify(f.repo)}
agents:
  - name: approve
    type: human_gate
    prompt: Go ahead?
    options:
      - { label: Go, value: go, route: implement }
  - name: implement
    type: agent
    model: claude-haiku-4.5
    prompt: Add feature.txt
    tools: [Read, Write]
    effects: git
    merge: branch
    limits: { max_attempts: 1 }
    routes:
      - to: $end
`,
    );
    const env = { ...f.env, ANTHROPIC_API_KEY: 'sk-ant-guidance-git', ANTHROPIC_BASE_URL: simUrl() };
    const cli = (args: string[]) => runCli(args, { cwd: f.root, env });
    const parked = await cli(['workflow', 'run', 'flow.yaml', '--run-id', 'git-guided']);
    expect(parked.status, parked.stderr).toBe(EXIT_CODES.WORKFLOW_WAITING);
    const guided = await cli([
      'workflow',
      'guide',
      'git-guided',
      'write blue, not red',
      '--step',
      'implement',
      '--by',
      'tester',
    ]);
    expect(guided.status, guided.stderr).toBe(0);
    const answered = await cli(['workflow', 'gate', 'git-guided', '--choose', 'go']);
    expect(answered.status, answered.stderr).toBe(0);

    const first = simLog().find((entry) => entry.rule === 'write');
    expect(JSON.stringify(first?.body)).toMatch(/Guidance from tester at [^"]+Z: write blue, not red/);
    const logs = await cli(['workflow', 'logs', 'git-guided', '--json']);
    const delivered = logs.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; step?: string; data?: Record<string, unknown> })
      .find((event) => event.type === 'guidance-delivered');
    expect(delivered).toMatchObject({ step: 'implement', data: { turn: 1, sentBy: 'tester' } });
  });
});
