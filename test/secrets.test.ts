import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scenario } from '../src/sim/scenario.js';
import type { SimLogEntry } from '../src/sim/server.js';
import { claudeProcessIds, waitForNoNewClaudeProcesses } from './helpers/claude.js';
import { createRepository, git } from './helpers/git-repo.js';
import { filesHolding } from './helpers/planted.js';
import { runCli, type CliRun } from './helpers/run-cli.js';

// "No secret in any output", as an auditor checks it: distinct fake keys for every provider, a custom
// token and a `.env` value; a simulator (the real `switchboard sim` command, with its request log) whose
// errors echo the key it was sent and every other planted value; then every output path driven through
// the built CLI (each provider's errors, Claude Code's, an agent that runs `printenv`, its verify
// command, `agent logs`, `stats`, `metrics`, the HTML report), and every file under the temporary root
// and every byte printed searched for each key.

const planted = {
  ANTHROPIC_API_KEY: 'planted-anthropic-key-A1x9',
  OPENAI_API_KEY: 'planted-openai-key-B2x9',
  GEMINI_API_KEY: 'planted-gemini-key-C3x9',
  GOOGLE_API_KEY: 'planted-google-key-D4x9',
  FOO_TOKEN: 'planted-foo-token-E5x9',
};
/** Named like nothing secret: only its place in `.env` makes it one. */
const dotEnvValue = 'postgres://app:planted-dotenv-F6x9@db.internal/app';
const secrets = [...Object.values(planted), dotEnvValue];
const echoed = `refused; this server also echoes ${secrets.join(' ')}`;

const scenario: Scenario = {
  rules: [
    // A call that may run printenv (the only sonnet request with tools): it answers "the key leaked" if the key reached it.
    {
      name: 'call-leaked',
      match: { model: 'sonnet', tools: 'Bash', text: 'ANTHROPIC_API_KEY=' },
      reply: { text: 'the key leaked' },
    },
    {
      name: 'call-printenv',
      match: { model: 'sonnet', tools: 'Bash', turn: 1 },
      reply: { tool: { name: 'Bash', input: { command: 'printenv' } } },
    },
    { name: 'call-done', match: { model: 'sonnet', tools: 'Bash', turn: 2 }, reply: { text: 'call done' } },
    // The agent: print the environment, write the change, finish.
    {
      name: 'agent-printenv',
      match: { tools: 'Bash', turn: 1 },
      reply: { tool: { name: 'Bash', input: { command: 'printenv' } } },
    },
    {
      name: 'agent-write',
      match: { tools: 'Bash', turn: 2 },
      reply: { tool: { name: 'Write', input: { file_path: 'out.txt', content: 'ok\n' } } },
    },
    { name: 'agent-done', match: { tools: 'Bash', turn: 3 }, reply: { text: 'done' } },
    {
      name: 'router-llm',
      match: { provider: 'anthropic', system: 'route requests' },
      fault: { status: 500, message: echoed, echoKey: true },
    },
    {
      name: 'claude-call',
      match: { text: 'claude-call' },
      // A status Claude Code does not retry: its result carries the server's message. (A call ends at the
      // notice of a retry, which carries the status and the wait, not the message.)
      fault: { status: 400, message: echoed, echoKey: true },
    },
    {
      name: 'anthropic',
      match: { provider: 'anthropic' },
      fault: { status: 401, message: echoed, echoKey: true },
    },
    { name: 'openai', match: { provider: 'openai' }, fault: { status: 500, message: echoed, echoKey: true } },
    { name: 'gemini', match: { provider: 'gemini' }, fault: { status: 401, message: echoed, echoKey: true } },
  ],
};

const claudeBefore = claudeProcessIds();
let root: string;
let inputs: string;
let repo: string;
let simLogFile: string;
let sim: ChildProcess | undefined;
let url: string;
let env: NodeJS.ProcessEnv;
const printed: { args: string[]; run: CliRun }[] = [];

async function run(args: string[]): Promise<CliRun> {
  const result = await runCli(args, { cwd: repo, env });
  printed.push({ args, run: result });
  return result;
}

/** `switchboard sim` as a user runs it, with the same environment and `.env` as the commands it serves. */
async function startSimCommand(scenarioFile: string): Promise<string> {
  sim = spawn(
    process.execPath,
    [
      join(import.meta.dirname, '../dist/cli/main.js'),
      'sim',
      '--scenario',
      scenarioFile,
      '--log',
      simLogFile,
      '--json',
      '--max-lifetime',
      '300',
    ],
    { cwd: repo, env, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: sim.stdout as NodeJS.ReadableStream });
  for await (const line of lines) return (JSON.parse(line) as { url: string }).url;
  throw new Error('switchboard sim printed no address');
}

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-secrets-')));
  inputs = join(root, 'inputs');
  mkdirSync(inputs);
  repo = createRepository(join(root, 'repo'));
  writeFileSync(join(repo, '.gitignore'), '.env\nswitchboard.yaml\n');
  git(repo, 'add', '.gitignore');
  git(repo, 'commit', '-qm', 'ignore local settings');
  writeFileSync(join(repo, '.env'), `DATABASE_URL=${dotEnvValue}\n`);
  writeFileSync(join(repo, 'switchboard.yaml'), 'call:\n  retries_per_provider: 0\n');
  const scenarioFile = join(inputs, 'scenario.json');
  writeFileSync(scenarioFile, JSON.stringify(scenario));
  simLogFile = join(root, 'sim.jsonl');
  const configDir = join(root, 'claude-config');
  mkdirSync(configDir);
  env = {
    ...process.env,
    ...planted,
    CLAUDE_CONFIG_DIR: configDir,
    SWITCHBOARD_STATE_DIR: join(root, 'state'),
  };
  url = await startSimCommand(scenarioFile);
  Object.assign(env, {
    ANTHROPIC_BASE_URL: url,
    OPENAI_BASE_URL: `${url}/v1`,
    GEMINI_BASE_URL: url,
  });
});

afterAll(async () => {
  if (sim !== undefined && sim.exitCode === null) {
    const exited = new Promise((resolve) => sim?.once('exit', resolve));
    sim.kill('SIGTERM');
    await exited;
  }
  expect(await waitForNoNewClaudeProcesses(claudeBefore)).toEqual([]);
});

/** Every file under `directory`, except the test's own inputs, with the planted secrets each one holds. */
function filesHoldingSecrets(directory: string): string[] {
  return filesHolding(directory, secrets, [inputs, join(repo, '.env')]);
}

const anthropicFingerprint = `sha256:${createHash('sha256').update(planted.ANTHROPIC_API_KEY).digest('hex').slice(0, 12)}`;

function simLog(rulePrefix: string): SimLogEntry[] {
  return readFileSync(simLogFile, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as SimLogEntry)
    .filter((entry) => entry.rule?.startsWith(rulePrefix));
}

function printedSecrets(): string[] {
  return printed.flatMap(({ args, run: result }) =>
    secrets
      .filter((secret) => result.stdout.includes(secret) || result.stderr.includes(secret))
      .map((secret) => `switchboard ${args.join(' ')}: ${secret}`),
  );
}

describe('no secret in any output', () => {
  it("keeps every planted key out of every provider's errors, the ledger, stats, metrics and reports", async () => {
    for (const spec of ['anthropic:claude-haiku-4-5', 'openai:gpt-4.1-mini', 'gemini:2.5-flash']) {
      for (const json of [false, true]) {
        const result = await run(['call', spec, 'api-call', ...(json ? ['--json'] : [])]);
        expect(result.status, result.stderr).not.toBe(0);
        // The server's echo reached the message, cleaned.
        expect(result.stderr + result.stdout).toContain('[redacted]');
      }
    }
    const claude = await run(['call', 'claude:haiku', 'claude-call', '--base-url', url, '--json']);
    expect(claude.status, claude.stderr).not.toBe(0);
    expect(claude.stderr).toContain('[redacted]');

    const report = join(root, 'reports', 'report.html');
    const evaluation = await run([
      'eval',
      '--skills',
      join(import.meta.dirname, 'fixtures/skills'),
      '--dataset',
      join(import.meta.dirname, 'fixtures/dev.jsonl'),
      '--modes',
      'local,llm-only',
      '--provider',
      'anthropic:claude-haiku-4-5',
      '--html',
      report,
      '--json',
    ]);
    expect(evaluation.status, evaluation.stderr).toBe(0);
    expect(readFileSync(report, 'utf8')).toContain('[redacted]');

    expect((await run(['stats'])).status).toBe(0);
    expect((await run(['stats', '--json'])).status).toBe(0);
    expect((await run(['metrics'])).status).toBe(0);

    expect(printedSecrets()).toEqual([]);
    expect(filesHoldingSecrets(tmpdir())).toEqual([]);
  });

  it('keeps them out of an agent that runs printenv, its verify command, its transcript and logs', async () => {
    const task = join(inputs, 'task.json');
    writeFileSync(
      task,
      JSON.stringify({
        id: 'printenv',
        title: 'Print the environment',
        tools: ['Bash(printenv:*)', 'Write'],
        verify: 'printenv && test -f out.txt',
      }),
    );
    const result = await run(['agent', 'run', '--task', task, '--base-url', url, '--json']);
    expect(result.status, result.stderr).toBe(0);
    const { id } = JSON.parse(result.stdout) as { id: string };
    const transcript = await run(['agent', 'logs', id, '--transcript']);
    // printenv ran, and Claude Code's key was not in the environment it printed (it stays with the key forwarder)…
    expect(transcript.stdout).toContain('SWITCHBOARD_STATE_DIR=');
    expect(transcript.stdout).not.toContain('ANTHROPIC_API_KEY=');
    expect(transcript.stdout).not.toContain('DATABASE_URL=');
    // …yet every request Claude Code made carried it.
    const requests = simLog('agent-');
    expect(requests.map((entry) => entry.rule)).toEqual(['agent-printenv', 'agent-write', 'agent-done']);
    for (const entry of requests) expect(entry.key).toBe(anthropicFingerprint);

    await run(['agent', 'logs', id]);
    await run(['agent', 'show', id, '--json']);
    await run(['agent', 'ls', '--json']);
    expect(printedSecrets()).toEqual([]);
    expect(filesHoldingSecrets(tmpdir())).toEqual([]);
  });

  it('keeps the key out of the environment of a call that may run tools, while its requests carry it', async () => {
    const result = await run([
      'call',
      'claude:sonnet',
      'print the environment',
      '--allowed-tools',
      'Bash(printenv:*)',
      '--base-url',
      url,
      '--json',
    ]);
    expect(result.status, result.stderr).toBe(0);
    expect((JSON.parse(result.stdout) as { text: string }).text).toBe('call done');
    const requests = simLog('call-');
    expect(requests.map((entry) => entry.rule)).toEqual(['call-printenv', 'call-done']);
    for (const entry of requests) expect(entry.key).toBe(anthropicFingerprint);
    expect(printedSecrets()).toEqual([]);
    expect(filesHoldingSecrets(tmpdir())).toEqual([]);
  });
});
