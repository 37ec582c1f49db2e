import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/core/errors.js';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { claudeProcessIds, waitForNoNewClaudeProcesses } from './helpers/claude.js';
import { runCli } from './helpers/run-cli.js';

// Conductor's `session_key`: steps that share a key continue one Claude Code session. The built CLI
// runs the real Claude Code binary against the simulator, whose request log shows what each turn sent.

const claudeBefore = claudeProcessIds();
let sim: Simulator;
const temporary: string[] = [];
beforeAll(async () => {
  sim = await startSimulator({ maxLifetimeMs: 180_000 });
});
afterAll(async () => {
  await sim.close();
  expect(await waitForNoNewClaudeProcesses(claudeBefore)).toEqual([]);
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

const FLOW = `workflow:
  name: keyed
  entry_point: first
  runtime:
    provider: claude-agent-sdk
    default_model: claude-haiku-4.5
agents:
  - name: first
    session_key: investigation
    tools: []
    prompt: Remember the word heliotrope.
    routes:
      - to: second
  - name: second
    session_key: "  investigation "
    tools: []
    prompt: Which word did I ask you to remember?
    routes:
      - to: fresh
  - name: fresh
    tools: []
    prompt: Which word, if any, do you know?
    routes:
      - to: $end
`;

function space(): { cwd: string; env: NodeJS.ProcessEnv; configDir: string } {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-session-key-')));
  temporary.push(cwd);
  writeFileSync(join(cwd, 'flow.yaml'), FLOW);
  const configDir = join(cwd, 'claude-config');
  mkdirSync(configDir);
  return {
    cwd,
    configDir,
    env: {
      ...process.env,
      ANTHROPIC_API_KEY: 'sk-ant-session-key-test',
      ANTHROPIC_BASE_URL: sim.url,
      CLAUDE_CONFIG_DIR: configDir,
    },
  };
}

/** The texts of the user turns Claude Code sent with the request whose last turn matches `last`. */
function userTexts(last: RegExp): string[][] {
  return sim.requests
    .filter((request) => request.outcome === 'reply' && last.test(request.text ?? ''))
    .map((request) => {
      const messages = (request.body as { messages?: { role: string; content: unknown }[] }).messages ?? [];
      return messages
        .filter((message) => message.role === 'user')
        .map((message) => JSON.stringify(message.content));
    });
}

interface Event {
  type: string;
  step?: string;
  data?: Record<string, unknown>;
}
async function events(cwd: string, env: NodeJS.ProcessEnv, runId: string): Promise<Event[]> {
  const logs = await runCli(['workflow', 'logs', runId, '--json'], { cwd, env });
  return logs.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Event);
}

function transcripts(configDir: string, sessionId: string): string[] {
  const root = join(configDir, 'projects');
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .map((folder) => join(root, folder, `${sessionId}.jsonl`))
    .filter((file) => existsSync(file));
}

describe('session_key', () => {
  it('continues one Claude Code session across the steps that share it; a step without it starts fresh', async () => {
    sim.setScenario({ rules: [{ reply: { text: 'noted' } }] });
    sim.clearLog();
    const { cwd, env } = space();
    const run = await runCli(['workflow', 'run', 'flow.yaml', '--run-id', 'keyed-1', '--json'], { cwd, env });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout + run.stderr).not.toMatch(/session_key is not supported/);

    // The second step's request carries the first step's turn before its own; the third's does not.
    const second = userTexts(/Which word did I ask/);
    expect(second).toHaveLength(1);
    expect(second[0]!.some((text) => text.includes('Remember the word heliotrope'))).toBe(true);
    const fresh = userTexts(/Which word, if any/);
    expect(fresh).toHaveLength(1);
    expect(fresh[0]!.some((text) => text.includes('heliotrope'))).toBe(false);

    const logged = await events(cwd, env, 'keyed-1');
    const sessions = logged.filter((event) => event.type === 'claude-session');
    expect(
      sessions.map((event) => [event.step, event.data?.['sessionKey'], event.data?.['continued']]),
    ).toEqual([
      ['first', 'investigation', false],
      ['second', 'investigation', true],
    ]);
    // A resumed session's total counts what it spent before; the second step is charged its own part
    // only, about what the fresh step of the same size costs, not that plus the first step's.
    const cost = (step: string) =>
      Number(logged.find((event) => event.type === 'step-end' && event.step === step)?.data?.['costUsd']);
    expect(cost('second')).toBeGreaterThan(0);
    expect(cost('second')).toBeLessThan(1.5 * cost('fresh'));
  });

  it('starts a new session, and says so, when Claude Code no longer has the recorded one', async () => {
    // The second step is refused, so the run stops after the first recorded its session.
    sim.setScenario({
      rules: [
        {
          match: { text: 'Which word did I ask' },
          fault: { kind: 'status', status: 400, message: 'scripted refusal' },
        },
        { reply: { text: 'noted' } },
      ],
    });
    sim.clearLog();
    const { cwd, env, configDir } = space();
    const failed = await runCli(['workflow', 'run', 'flow.yaml', '--run-id', 'keyed-2'], { cwd, env });
    expect(failed.status, failed.stderr).not.toBe(0);
    const recorded = (await events(cwd, env, 'keyed-2')).find((event) => event.type === 'claude-session');
    const sessionId = String(recorded?.data?.['sessionId']);
    // Claude Code prunes transcripts on its own schedule; here the session is removed by hand.
    const files = transcripts(configDir, sessionId);
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) rmSync(file);
    sim.setScenario({ rules: [{ reply: { text: 'noted' } }] });

    const resumed = await runCli(['workflow', 'resume', 'keyed-2', '--json'], { cwd, env });
    expect(resumed.status, resumed.stderr).toBe(0);
    const after = await events(cwd, env, 'keyed-2');
    expect(after.find((event) => event.type === 'session-restarted')).toMatchObject({
      step: 'second',
      data: { sessionKey: 'investigation', sessionId },
    });
    expect(after.filter((event) => event.type === 'claude-session').at(-1)).toMatchObject({
      step: 'second',
      data: { continued: false },
    });
  });

  it('is refused at validate where it cannot hold: a template, or two executions at once', async () => {
    const { cwd, env } = space();
    writeFileSync(
      join(cwd, 'bad.yaml'),
      `workflow:
  name: bad
  entry_point: both
  runtime:
    provider: claude-agent-sdk
agents:
  - name: a
    session_key: "{{ workflow.input.key }}"
    prompt: a
  - name: b
    session_key: shared
    prompt: b
  - name: c
    session_key: shared
    prompt: c
parallel:
  - name: both
    agents: [b, c]
    routes:
      - to: a
`,
    );
    const result = await runCli(['workflow', 'validate', 'bad.yaml'], { cwd, env });
    expect(result.status).toBe(EXIT_CODES.WORKFLOW_INVALID);
    expect(result.stdout).toMatch(/\ba: field "session_key": session_key is a label, not a template/);
    expect(result.stdout).toMatch(/"c" and "b" run side by side in "both" and share session_key "shared"/);
  });

  it('on an API provider is a warning that each execution starts anew, not silence', async () => {
    const { cwd, env } = space();
    writeFileSync(join(cwd, 'api.yaml'), FLOW.replace('provider: claude-agent-sdk', 'provider: claude'));
    const result = await runCli(['workflow', 'validate', 'api.yaml'], { cwd, env });
    expect(result.status, result.stdout).toBe(0);
    expect(result.stdout).toMatch(
      /step "first" runs on anthropic:claude-haiku-4-5: its session_key "investigation" is not continued there/,
    );
  });
});

describe('switchboard call --keep-session, then --resume', () => {
  it('continues the session a call kept, charging the resumed call its own spend only', async () => {
    sim.setScenario({ rules: [{ reply: { text: 'noted' } }] });
    sim.clearLog();
    const { cwd, env } = space();
    const call = async (args: string[]) => {
      const result = await runCli(['call', 'claude:haiku', '--base-url', sim.url, '--json', ...args], {
        cwd,
        env,
      });
      expect(result.status, result.stderr).toBe(0);
      return JSON.parse(result.stdout) as { sessionId?: string; costUsd: number };
    };
    const first = await call(['--keep-session', 'Remember the word heliotrope.']);
    expect(first.sessionId).toEqual(expect.any(String));
    const second = await call(['--resume', first.sessionId ?? '', 'Which word did I ask you to remember?']);
    expect(second.sessionId).toBe(first.sessionId);
    const resumed = userTexts(/Which word did I ask/);
    expect(resumed).toHaveLength(1);
    expect(resumed[0]!.some((text) => text.includes('Remember the word heliotrope'))).toBe(true);
    // Claude Code's total for the resumed session counts the first call again; the second is charged
    // its own part only, about what the first cost, not the two together.
    expect(second.costUsd).toBeGreaterThan(0);
    expect(second.costUsd).toBeLessThan(1.5 * first.costUsd);
  });
});
