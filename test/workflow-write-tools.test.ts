import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onPath } from '../src/confinement/sandbox.js';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { runCli } from './helpers/run-cli.js';
import { waitFor } from './helpers/wait-for.js';

// `switchboard workflow run` with agent steps on the API providers that write: the built CLI, the
// Anthropic and OpenAI SDKs against the simulator, the tools' writes on disk, run_command in bubblewrap.

let sim: Simulator;
const temporary: string[] = [];
beforeAll(async () => {
  sim = await startSimulator({ maxLifetimeMs: 120_000 });
});
afterAll(async () => {
  await sim.close();
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

function folder(files: Record<string, string>): string {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-wf-write-')));
  temporary.push(root);
  const cwd = join(root, 'work');
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(cwd, name)), { recursive: true });
    writeFileSync(join(cwd, name), text);
  }
  return cwd;
}

const SECRET = 'heliotrope-planted-in-sub-env';

function env(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ANTHROPIC_API_KEY: 'sk-ant-write-tools-cli',
    ANTHROPIC_BASE_URL: sim.url,
    OPENAI_API_KEY: 'sk-openai-write-tools-cli',
    OPENAI_BASE_URL: sim.openAiBaseUrl,
  };
}

// The designer leaves tools: out (Conductor's meaning: every tool); the builder names its tools.
const FLOW = `workflow:
  name: writes
  entry_point: designer
  runtime:
    provider: claude
    default_model: claude-haiku-4.5
agents:
  - name: designer
    prompt: Write the design document.
    routes:
      - to: builder
  - name: builder
    provider: openai
    model: gpt-4.1-mini
    effects: files
    tools: [read_file, write_file, edit_file, run_command]
    prompt: Build what docs/design.md says.
    routes:
      - to: $end
`;

const usage = { input: 100, output: 20 };

describe.skipIf(process.platform !== 'linux' || !onPath('bwrap'))(
  'agent steps on the API providers that write',
  () => {
    it('anthropic and openai steps write, edit and run commands; the files are on disk after the run', async () => {
      sim.setScenario({
        rules: [
          {
            match: { provider: 'anthropic', turn: 1 },
            reply: {
              tool: {
                name: 'write_file',
                input: { path: 'docs/design.md', content: '# Design\n\nStatus: draft\n' },
              },
              usage,
            },
          },
          {
            match: { provider: 'anthropic', turn: 2 },
            reply: {
              tool: {
                name: 'edit_file',
                input: { path: 'docs/design.md', old_string: 'draft', new_string: 'agreed' },
              },
              usage,
            },
          },
          { match: { provider: 'anthropic', turn: 3 }, reply: { text: 'Design written.', usage } },
          {
            match: { provider: 'openai', turn: 1 },
            reply: {
              tools: [
                { name: 'write_file', input: { path: 'src/app.sh', content: 'echo hello from app\n' } },
                {
                  name: 'run_command',
                  input: { command: 'sh src/app.sh > build.log && grep Status docs/design.md >> build.log' },
                },
              ],
              usage,
            },
          },
          { match: { provider: 'openai', text: 'exit code 0' }, reply: { text: 'Built.', usage } },
        ],
      });
      const cwd = folder({ 'flow.yaml': FLOW });
      const result = await runCli(['workflow', 'run', 'flow.yaml', '--run-id', 'writes', '--json'], {
        cwd,
        env: env(),
      });
      expect(result.status, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ status: 'completed' });
      expect(readFileSync(join(cwd, 'docs', 'design.md'), 'utf8')).toBe('# Design\n\nStatus: agreed\n');
      expect(readFileSync(join(cwd, 'src', 'app.sh'), 'utf8')).toBe('echo hello from app\n');
      expect(readFileSync(join(cwd, 'build.log'), 'utf8')).toBe('hello from app\nStatus: agreed\n');
      expect(readdirSync(join(cwd, 'docs'))).toEqual(['design.md']);
    });

    it('reads nothing of a planted .env through read_file or run_command, and refuses writes outside and to .env', async () => {
      sim.setScenario({
        rules: [
          {
            match: { provider: 'anthropic', turn: 1 },
            reply: {
              tools: [
                { name: 'read_file', input: { path: 'sub/.env' } },
                { name: 'run_command', input: { command: 'cat sub/.env; cat .env; echo listed' } },
                { name: 'write_file', input: { path: '../outside.txt', content: 'escaped' } },
                { name: 'write_file', input: { path: '.env', content: 'OPENAI_API_KEY=mine' } },
                { name: 'edit_file', input: { path: 'sub/.env', old_string: 'TOKEN', new_string: 'X' } },
              ],
              usage,
            },
          },
          { match: { provider: 'anthropic', turn: 2 }, reply: { text: 'Tried.', usage } },
          { match: { provider: 'openai' }, reply: { text: 'Nothing to build.', usage } },
        ],
      });
      const cwd = folder({ 'flow.yaml': FLOW, 'sub/.env': `TOKEN=${SECRET}\n`, '.env': `OTHER=${SECRET}\n` });
      sim.clearLog();
      const result = await runCli(['workflow', 'run', 'flow.yaml', '--run-id', 'hostile', '--json'], {
        cwd,
        env: env(),
      });
      expect(result.status, result.stderr).toBe(0);
      // What went back to the model: each refusal, the command's output without the secret.
      const sent = sim.requests.find((request) => request.provider === 'anthropic' && request.turn === 2);
      expect(sent?.text).toMatch(/sub\/\.env: \.env files hold secrets/);
      expect(sent?.text).toMatch(/exit code 0\n(cat: .*\n)*listed/);
      expect(sent?.text).toMatch(/\.\.\/outside\.txt: outside the working directory/);
      expect(JSON.stringify(sim.requests)).not.toContain(SECRET);
      expect(existsSync(join(cwd, '..', 'outside.txt'))).toBe(false);
      expect(readFileSync(join(cwd, '.env'), 'utf8')).toBe(`OTHER=${SECRET}\n`);
      expect(readFileSync(join(cwd, 'sub', '.env'), 'utf8')).toBe(`TOKEN=${SECRET}\n`);
      const logs = await runCli(['workflow', 'logs', 'hostile', '--json'], { cwd, env: env() });
      expect(logs.stdout).toContain('tool-result');
      expect(logs.stdout + result.stdout + result.stderr).not.toContain(SECRET);
    });

    it('a step killed after its write_file call, before it completes, runs again on resume and leaves the whole final file', async () => {
      // Large enough that a write is many system calls: a torn write would show.
      const first = 'first attempt line\n'.repeat(200_000);
      const final = 'final attempt line\n'.repeat(200_000);
      sim.setScenario({
        rules: [
          {
            match: { provider: 'anthropic', turn: 1 },
            reply: { tool: { name: 'write_file', input: { path: 'docs/big.txt', content: first } }, usage },
          },
          { match: { provider: 'anthropic', turn: 2 }, fault: { kind: 'stall' } },
        ],
      });
      sim.clearLog();
      const cwd = folder({ 'flow.yaml': FLOW.replace('      - to: builder', '      - to: $end') });
      const cli = join(import.meta.dirname, '..', 'dist/cli/main.js');
      const child = spawn(process.execPath, [cli, 'workflow', 'run', 'flow.yaml', '--run-id', 'killed'], {
        cwd,
        env: env(),
        stdio: 'ignore',
      });
      const exited = new Promise((resolve) => child.on('exit', resolve));
      await waitFor(() => sim.requests.some((request) => request.turn === 2), {
        what: 'the write answered and the next turn sent',
        withinMs: 60_000,
      });
      child.kill('SIGKILL');
      await exited;
      // Killed before the step completed: the file is the one the tool wrote, whole.
      expect(readFileSync(join(cwd, 'docs', 'big.txt'), 'utf8')).toBe(first);

      sim.setScenario({
        rules: [
          {
            match: { provider: 'anthropic', turn: 1 },
            reply: { tool: { name: 'write_file', input: { path: 'docs/big.txt', content: final } }, usage },
          },
          { match: { provider: 'anthropic', turn: 2 }, reply: { text: 'Written.', usage } },
        ],
      });
      const resumed = await runCli(['workflow', 'resume', 'killed', '--json'], { cwd, env: env() });
      expect(resumed.status, resumed.stderr).toBe(0);
      expect(JSON.parse(resumed.stdout)).toMatchObject({
        status: 'completed',
        steps: [{ key: 'killed/designer/0', status: 'completed', attempts: 2 }],
      });
      expect(readFileSync(join(cwd, 'docs', 'big.txt'), 'utf8')).toBe(final);
      // No temporary file of either write left beside it.
      expect(readdirSync(join(cwd, 'docs'))).toEqual(['big.txt']);
    });
  },
);

describe.skipIf(process.platform !== 'linux' || !onPath('bwrap'))('network: true on a step', () => {
  it("gives its run_command the machine's network, which a step without it does not get", async () => {
    const server = createServer((_, response) => response.end('reached the server'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const command = `${JSON.stringify(process.execPath)} -e "fetch('http://127.0.0.1:${port}/').then((r) => r.text()).then(console.log, () => console.log('no connection'))" > fetched.txt`;
      sim.setScenario({
        rules: [
          {
            match: { provider: 'anthropic', turn: 1 },
            reply: { tool: { name: 'run_command', input: { command } }, usage },
          },
          { match: { provider: 'anthropic', turn: 2 }, reply: { text: 'Fetched.', usage } },
        ],
      });
      const flow = (network: string) =>
        FLOW.replace('      - to: builder', '      - to: $end').replace(
          '    prompt: Write the design document.\n',
          `    prompt: Write the design document.\n${network}`,
        );
      for (const [network, expected] of [
        ['    network: true\n', 'reached the server\n'],
        ['', 'no connection\n'],
      ] as const) {
        const cwd = folder({ 'flow.yaml': flow(network) });
        const result = await runCli(['workflow', 'run', 'flow.yaml', '--json'], { cwd, env: env() });
        expect(result.status, result.stderr).toBe(0);
        expect(readFileSync(join(cwd, 'fetched.txt'), 'utf8')).toBe(expected);
      }
    } finally {
      server.close();
    }
  });
});

describe("a step's tools: that name a tool nothing offers", () => {
  it('validate and run both say it is left out, where it was dropped without a word', async () => {
    const flow = `workflow:
  name: research
  entry_point: researcher
  runtime:
    provider: openai
    default_model: gpt-4.1-mini
tools:
  - web_search
agents:
  - name: researcher
    tools: [web_search, read_file]
    prompt: Research it.
    routes:
      - to: $end
`;
    const cwd = folder({ 'flow.yaml': flow });
    const notice =
      /step "researcher": web_search names no tool a server of runtime\.mcp_servers offers: left out of its tools/;
    const validated = await runCli(['workflow', 'validate', 'flow.yaml'], { cwd, env: env() });
    expect(validated.status, validated.stdout).toBe(0);
    expect(validated.stdout).toMatch(notice);
    sim.setScenario({ rules: [], fallback: { text: 'Researched.' } });
    const ran = await runCli(['workflow', 'run', 'flow.yaml', '--json'], { cwd, env: env() });
    expect(ran.status, ran.stderr).toBe(0);
    expect(ran.stderr).toMatch(notice);
  });
});
