import type { ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/core/errors.js';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { runCli } from './helpers/run-cli.js';
import { killServers, serve as startServe, type Served } from './helpers/serve-process.js';

// What a caller's input can do to a real `switchboard serve` (the built CLI, raw HTTP, `switchboard sim`
// as the provider) and to the CLI: a regular expression that backtracks for minutes, a "file" that never
// ends or never opens, a secret file named where a task or workflow goes, a step whose tools reach
// outside every repository root.

const planted = `PLANTED-${randomBytes(8).toString('hex')}`;
const children = new Set<ChildProcess>();
const directories: string[] = [];
let sim: Simulator;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  sim = await startSimulator({
    maxLifetimeMs: 300_000,
    scenario: {
      rules: [
        // Thirty characters that `^(a|a)+$` does not match: 2^30 paths for a backtracking engine.
        { match: { text: 'catastrophic' }, reply: { text: `{"word": "${'a'.repeat(30)}!"}` } },
      ],
      fallback: { text: 'pong' },
    },
  });
  env = {
    ...process.env,
    OPENAI_API_KEY: 'sk-openai-hostile-input',
    OPENAI_BASE_URL: sim.openAiBaseUrl,
    ANTHROPIC_API_KEY: 'sk-ant-hostile-input',
    ANTHROPIC_BASE_URL: sim.url,
    SWITCHBOARD_SERVER_TOKEN: '',
  };
});

afterAll(async () => {
  killServers(children);
  await sim.close();
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

function temporaryDirectory(): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-hostile-')));
  directories.push(directory);
  return directory;
}

function serve(args: string[], cwd: string): Promise<Served> {
  return startServe(['--port', '0', '--pool', '0', ...args], { cwd, env, children });
}

async function post(server: Served, path: string, body: unknown): Promise<{ status: number; text: string }> {
  const response = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...server.auth,
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

/** A `/mcp` tools/call; the tool's text (its one-line error with the hint, or its result). */
async function tool(
  server: Served,
  name: string,
  args: Record<string, unknown>,
): Promise<{ isError: boolean; text: string }> {
  const answer = await post(server, '/mcp', {
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name, arguments: args },
  });
  const { result } = JSON.parse(answer.text) as {
    result: { isError?: boolean; content: Array<{ text: string }> };
  };
  return { isError: result.isError === true, text: result.content.map((part) => part.text).join('\n') };
}

/** How long /healthz takes to answer, in milliseconds (it fails the test after 5 s). */
async function healthzMs(server: Served): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(5_000) });
  expect(response.status).toBe(200);
  return performance.now() - started;
}

function fifo(directory: string): string {
  const path = join(directory, 'pipe.yaml');
  execFileSync('mkfifo', [path]);
  return path;
}

describe('a caller regular expression', () => {
  it('a /call schema pattern that backtracks without end answers at once, and healthz stays up meanwhile', async () => {
    const server = await serve([], temporaryDirectory());
    const call = post(server, '/call', {
      spec: 'openai:gpt-4.1-mini',
      prompt: 'catastrophic',
      schema: { type: 'object', properties: { word: { type: 'string', pattern: '^(a|a)+$' } } },
      schemaRetries: 0,
    });
    let done = false;
    void call.finally(() => (done = true));
    const waits: number[] = [];
    while (!done) waits.push(await healthzMs(server));
    const answer = await call;
    expect(JSON.parse(answer.text)).toMatchObject({ error: { code: 'SCHEMA' } });
    expect(Math.max(...waits)).toBeLessThan(2_000);
    expect(await healthzMs(server)).toBeLessThan(2_000);
  });

  it('a backreference in a /call schema is a one-line INVALID_INPUT naming it; nothing is sent', async () => {
    const server = await serve([], temporaryDirectory());
    const asked = sim.requests.length;
    const answer = await post(server, '/call', {
      spec: 'openai:gpt-4.1-mini',
      prompt: 'hi',
      schema: { type: 'string', pattern: '(a)\\1' },
    });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text)).toMatchObject({
      error: {
        code: 'INVALID_INPUT',
        message: expect.stringContaining('the backreference \\1 is not supported'),
      },
    });
    expect(sim.requests.length).toBe(asked);
  });
});

describe('a workflow "file" that never ends', () => {
  it('workflow validate /dev/zero and a FIFO: one line, exit 68 (FILE_REFUSED), at once', async () => {
    const cwd = temporaryDirectory();
    for (const file of ['/dev/zero', fifo(cwd)]) {
      const started = performance.now();
      const result = await runCli(['workflow', 'validate', file], { cwd, env });
      expect(result.status, file).toBe(EXIT_CODES.FILE_REFUSED);
      expect(result.stderr.trim().split('\n'), file).toHaveLength(1);
      expect(result.stderr).toMatch(/is (a device|a named pipe \(FIFO\)), not a regular file/);
      expect(performance.now() - started).toBeLessThan(15_000);
    }
  });

  it('/mcp workflow_run with /dev/zero, a FIFO or a FIFO !file include: an error, healthz fine, SIGTERM ends serve', async () => {
    const cwd = temporaryDirectory();
    const pipe = fifo(cwd);
    writeFileSync(
      join(cwd, 'includes.yaml'),
      'workflow:\n  name: inc\n  entry_point: a\nagents: !file pipe.yaml\n',
    );
    const server = await serve([], cwd);
    for (const file of ['/dev/zero', pipe, join(cwd, 'includes.yaml')]) {
      const answer = await tool(server, 'workflow_run', { file });
      expect(answer, file).toMatchObject({
        isError: true,
        text: expect.stringMatching(/not a regular file/),
      });
      expect(await healthzMs(server)).toBeLessThan(2_000);
    }
    server.child.kill('SIGTERM');
    const exit = await Promise.race([
      server.exited,
      new Promise((resolve) => setTimeout(() => resolve('still running'), 10_000)),
    ]);
    expect(exit).not.toBe('still running');
  });
});

describe('errors about a file never quote it', () => {
  it('a malformed task file or workflow holding a secret line: the error names the file and position only', async () => {
    const root = temporaryDirectory();
    const secretFile = join(root, 'shadow');
    writeFileSync(secretFile, `root:$6$salt$${planted}:19000:0:99999:7:::\nbin: *: ${planted}\n  bad: [\n`);
    const server = await serve(['--allow-commands', '--repo-root', root], root);
    const agent = await tool(server, 'agent_run', { repo: root, task_file: secretFile });
    expect(agent).toMatchObject({
      isError: true,
      text: expect.stringMatching(/task file .*shadow is not valid YAML\/JSON: .* at line 2, column \d+/),
    });
    const workflow = await tool(server, 'workflow_run', { file: secretFile });
    expect(workflow).toMatchObject({
      isError: true,
      text: expect.stringMatching(/shadow:2:\d+: not valid YAML/),
    });
    const cli = await runCli(['agent', 'run', '--task', secretFile], { cwd: root, env });
    expect(cli.status).toBe(EXIT_CODES.TASK_INVALID);
    const schema = join(root, 'schema.json');
    writeFileSync(schema, `{"type": ${planted}}`);
    const call = await runCli(['call', 'openai:gpt-4.1-mini', 'hi', '--schema', schema], { cwd: root, env });
    expect(call.stderr).toMatch(/schema file .*schema\.json is not a JSON object: not valid JSON/);
    for (const text of [agent.text, workflow.text, cli.stderr, call.stderr, server.stdout(), server.stderr()])
      expect(text).not.toContain(planted);
  });
});

describe('/mcp and the one file policy', () => {
  it('workflow_run and agent_run refuse a file the deny list keeps from every tool, before reading it', async () => {
    const root = temporaryDirectory();
    const canary = `PLANTED-CALLER-FILE-${Math.random().toString(36).slice(2)}`;
    mkdirSync(join(root, 'keys'));
    for (const name of ['.env', 'keys/id_rsa', '.ENV.local'])
      writeFileSync(join(root, name), `workflow:\n  name: ${canary}\n`);
    const server = await serve(['--allow-commands', '--repo-root', root], root);
    const answers = [
      await tool(server, 'workflow_run', { file: join(root, '.env') }),
      await tool(server, 'workflow_run', { file: join(root, '.ENV.local') }),
      await tool(server, 'agent_run', { repo: root, task_file: join(root, 'keys/id_rsa') }),
    ];
    for (const answer of answers) {
      expect(answer).toMatchObject({
        isError: true,
        text: expect.stringMatching(/hold secrets; no tool reads or writes them/),
      });
      expect(answer.text).not.toContain(canary);
    }
    expect(server.stdout() + server.stderr()).not.toContain(canary);
  });
});

describe('/mcp workflow_run: steps that read files', () => {
  /** A one-step workflow on the simulator's OpenAI: its model asks to read `canary` (relative to the step's folder). */
  function workflow(directory: string, fields: string): string {
    const file = join(directory, 'peek.yaml');
    writeFileSync(
      file,
      `workflow:\n  name: peek\n  entry_point: look\n  runtime:\n    provider: openai\n    default_model: gpt-4.1-mini\nagents:\n  - name: look\n    prompt: peek at canary\n${fields}    routes:\n      - to: $end\n`,
    );
    return file;
  }

  /** A model that asks to read `path`, then repeats what came back; plain answers otherwise. */
  function peekScenario(path: string): void {
    sim.setScenario({
      rules: [
        {
          match: { provider: 'openai', turn: 1, tools: 'read_file' },
          reply: { tool: { name: 'read_file', input: { path } } },
        },
        { match: { provider: 'openai', text: 'CANARY' }, reply: { echo: true } },
      ],
      fallback: { text: 'read nothing' },
    });
  }

  it('tools: left out is every file tool: refused over HTTP in a working_dir outside every --repo-root, with or without --allow-commands', async () => {
    const outside = temporaryDirectory();
    const root = temporaryDirectory();
    writeFileSync(join(outside, 'canary.txt'), `CANARY ${planted}\n`);
    const file = workflow(root, `    working_dir: /\n`);
    peekScenario(join(outside, 'canary.txt').slice(1));
    const asked = sim.requests.length;
    for (const flags of [[], ['--repo-root', root], ['--allow-commands', '--repo-root', root]]) {
      const server = await serve(flags, root);
      const answer = await tool(server, 'workflow_run', { file });
      expect(answer, flags.join(' ')).toMatchObject({
        isError: true,
        text: expect.stringMatching(
          /step "look" reads files \(its tools: left out: every file tool\) in its working directory \(\/\) is outside the folders this server works in/,
        ),
      });
      expect(answer.text).toContain('tools: []');
      expect(answer.text).not.toContain(planted);
    }
    expect(sim.requests.length).toBe(asked);
  });

  it('a working_dir under a --repo-root runs with its read tools; tools: left out (write_file, run_command) needs --allow-commands too; tools: [] runs anywhere, reading nothing', async () => {
    const root = temporaryDirectory();
    writeFileSync(join(root, 'canary.txt'), 'CANARY inside the root\n');
    peekScenario('canary.txt');
    const server = await serve(['--repo-root', root], root);
    const writes = await tool(server, 'workflow_run', { file: workflow(root, `    working_dir: .\n`) });
    expect(writes).toMatchObject({
      isError: true,
      text: expect.stringMatching(
        /step "look" gives the model tools that write files or run commands \(tools: left out gives a step on an API provider write_file, edit_file and run_command; .*which this server does not allow over HTTP/,
      ),
    });
    const inside = await tool(server, 'workflow_run', {
      file: workflow(root, `    working_dir: .\n    tools: [read_file, list_files]\n`),
    });
    expect(inside.isError).toBe(false);
    expect(inside.text).toContain('completed');
    expect(inside.text).toContain('CANARY inside the root');
    const outside = temporaryDirectory();
    const none = await tool(server, 'workflow_run', {
      file: workflow(outside, `    working_dir: /\n    tools: []\n`),
    });
    expect(none.isError).toBe(false);
    expect(none.text).toContain('completed');
    const allowing = await serve(['--allow-commands', '--repo-root', root], root);
    const all = await tool(allowing, 'workflow_run', { file: workflow(root, `    working_dir: .\n`) });
    expect(all.isError, all.text).toBe(false);
    expect(all.text).toContain('CANARY inside the root');
  });
});
