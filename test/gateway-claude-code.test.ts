import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { keyFingerprint } from '../src/sim/credentials.js';
import type { Scenario } from '../src/sim/scenario.js';
import { startSimulator, type SimLogEntry, type Simulator } from '../src/sim/server.js';
import { toolSequenceScenario } from './helpers/agent-scenarios.js';
import { claudeProcessIds, waitForNoNewClaudeProcesses } from './helpers/claude.js';
import { startGateway, type Gateway } from './helpers/gateway-server.js';
import { killServers } from './helpers/serve-process.js';

// The real Claude Code binary (`claude -p`) with its base URL on `switchboard serve`'s gateway and the
// server's token as its credential: what the user sees is Claude Code's own output, what the upstream
// (the simulator) sees is the configured Anthropic key, and the ledger has a row for every request.
// A run straight against the simulator is the reference for what Claude Code sends.

const root = join(import.meta.dirname, '..');
const claude = join(root, 'node_modules/@anthropic-ai/claude-agent-sdk-linux-x64/claude');
const CANARY = `sk-ant-api03-gw-cc-canary-${randomBytes(12).toString('hex')}`;
const DIRECT_KEY = `sk-ant-api03-gw-cc-direct-${randomBytes(12).toString('hex')}`;
const RUN_MS = 90_000;
const children = new Set<ChildProcess>();
const directories: string[] = [];
const claudeBefore = claudeProcessIds();
let sim: Simulator;
/** `switchboard serve`; its `cwd` holds its switchboard.yaml and .switchboard state folder. */
let server: Gateway;

beforeAll(async () => {
  sim = await startSimulator({ maxLifetimeMs: 600_000 });
  server = await startGateway({
    name: 'gateway-cc',
    yaml: ['roles:', '  main: anthropic:claude-haiku-4-5,anthropic:claude-sonnet-4-5'],
    env: { ANTHROPIC_API_KEY: CANARY, ANTHROPIC_BASE_URL: sim.url },
    children,
    realPath: true,
  });
});

afterAll(async () => {
  // The server, and any Claude Code run a failed test left behind.
  killServers(children);
  await sim.close();
  expect(await waitForNoNewClaudeProcesses(claudeBefore)).toEqual([]);
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
  await server.close();
});

beforeEach(() => {
  sim.setScenario({});
  sim.clearLog();
});

interface Place {
  /** Claude Code's working folder. */
  work: string;
  home: string;
  config: string;
}

/** A throwaway HOME, CLAUDE_CONFIG_DIR and working folder for one Claude Code run. */
function place(): Place {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-gateway-cc-run-')));
  directories.push(base);
  const folders = { work: join(base, 'work'), home: join(base, 'home'), config: join(base, 'config') };
  for (const folder of Object.values(folders)) mkdirSync(folder);
  return folders;
}

interface ClaudeRun {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real Claude Code binary headless. `via: 'gateway'`: base URL on the gateway, the server's
 * token as `ANTHROPIC_AUTH_TOKEN` and no `ANTHROPIC_API_KEY`; `via: 'direct'`: straight at the
 * simulator with a key of its own. Nonessential traffic is off and Claude Code does not retry, as the
 * Claude Code provider runs it, so every upstream request is one of Claude Code's.
 */
function runClaude(
  args: string[],
  at: Place,
  via: 'gateway' | 'direct' = 'gateway',
  extra: Record<string, string> = {},
): Promise<ClaudeRun> {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    // Nothing of the parent's Anthropic or Claude Code settings (a model, a key, a proxy) leaks in.
    if (/^(ANTHROPIC_|CLAUDE_|SWITCHBOARD_)/.test(name)) continue;
    env[name] = value;
  }
  Object.assign(env, {
    HOME: at.home,
    CLAUDE_CONFIG_DIR: at.config,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    CLAUDE_CODE_MAX_RETRIES: '0',
    ANTHROPIC_BASE_URL: via === 'gateway' ? server.url : sim.url,
    ...(via === 'gateway' ? { ANTHROPIC_AUTH_TOKEN: server.token } : { ANTHROPIC_API_KEY: DIRECT_KEY }),
    ...extra,
  });
  const child = spawn(claude, args, { cwd: at.work, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), RUN_MS);
  return new Promise((resolve) => {
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      children.delete(child);
      resolve({ status, signal, stdout, stderr });
    });
  });
}

interface ResultMessage {
  type: 'result';
  subtype: string;
  is_error: boolean;
  result: string;
  total_cost_usd: number;
  num_turns: number;
  api_error_status: unknown;
  usage: { input_tokens: number; output_tokens: number };
}

function resultOf(run: ClaudeRun): ResultMessage {
  expect(run.status, `claude exited ${run.status} ${run.signal}: ${run.stderr}\n${run.stdout}`).toBe(0);
  return JSON.parse(run.stdout) as ResultMessage;
}

/** The lines of a `stream-json` run. */
function eventsOf(run: ClaudeRun): Array<Record<string, unknown>> {
  expect(run.status, `claude exited ${run.status} ${run.signal}: ${run.stderr}\n${run.stdout}`).toBe(0);
  return run.stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

interface AttemptRow {
  call_id: string;
  attempt: number;
  created_at: number;
  spec: string;
  model_requested: string;
  success: number;
  error_code: string | null;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number | null;
  tags: string;
}

/** The ledger's attempts since `since` (epoch ms), oldest first. */
function attemptsSince(since: number): AttemptRow[] {
  return server.ledger<AttemptRow>(
    'SELECT * FROM call_attempts WHERE created_at >= ? ORDER BY created_at, call_id, attempt',
    since,
  );
}

/** The model requests (POST /v1/messages, with or without `?beta=true`) in a simulator log. */
function messageRequests(log: readonly SimLogEntry[]): SimLogEntry[] {
  return log.filter((entry) => entry.method === 'POST' && /^\/v1\/messages(\?|$)/.test(entry.path));
}

/** The text of every tool_result block in a logged request's messages. */
function toolResults(entry: SimLogEntry): string[] {
  const messages = (entry.body as { messages?: Array<{ content: unknown }> }).messages ?? [];
  return messages
    .flatMap((message) => (Array.isArray(message.content) ? message.content : []))
    .filter((block: { type?: string }) => block.type === 'tool_result')
    .map((block: { content?: unknown }) => JSON.stringify(block.content));
}

describe('Claude Code through the gateway', () => {
  it('a plain answer: Claude Code shows the upstream’s text and usage; the upstream saw the configured key only', async () => {
    const text = `the gateway answered ${randomBytes(4).toString('hex')}`;
    const usage = { input: 1_234 + Math.floor(Math.random() * 1_000), output: 9 };
    const scenario: Scenario = { fallback: { text, usage } };

    // The reference: the same prompt straight at the simulator.
    sim.setScenario(scenario);
    const direct = resultOf(
      await runClaude(['-p', 'say hello', '--output-format', 'json'], place(), 'direct'),
    );
    expect(direct.result).toBe(text);
    const directLog = [...sim.requests];
    sim.clearLog();

    sim.setScenario(scenario);
    const since = Date.now();
    const at = place();
    const result = resultOf(await runClaude(['-p', 'say hello', '--output-format', 'json'], at));
    expect(result).toMatchObject({ type: 'result', subtype: 'success', is_error: false, result: text });
    expect(result.usage).toMatchObject({ input_tokens: usage.input, output_tokens: usage.output });
    expect(result.total_cost_usd).toBeGreaterThan(0);
    expect(result.total_cost_usd).toBe(direct.total_cost_usd);

    const log = sim.requests;
    // Claude Code sent through the gateway what it sends straight to the API, to the same paths.
    expect(log.map((entry) => `${entry.method} ${entry.path}`)).toEqual(
      directLog.map((entry) => `${entry.method} ${entry.path}`),
    );
    const messages = messageRequests(log);
    expect(messages.length).toBeGreaterThan(0);
    expect(messages.map((entry) => entry.path)).toContain('/v1/messages?beta=true');
    for (const [index, entry] of messages.entries()) {
      // Claude Code's betas (claude-code-…, interleaved thinking, …) reached the upstream as it sent them.
      expect(entry.headers['anthropic-beta']).toBeDefined();
      expect(entry.headers['anthropic-beta']).toBe(
        messageRequests(directLog)[index]?.headers['anthropic-beta'],
      );
      expect(entry.headers['anthropic-version']).toBe('2023-06-01');
    }
    // Every upstream request carried the configured key, never the client's token.
    expect(new Set(log.map((entry) => entry.key))).toEqual(new Set([keyFingerprint(CANARY)]));
    const seen = JSON.stringify(log);
    expect(seen).not.toContain(server.token);
    expect(seen).not.toContain(CANARY);

    // One successful attempt per upstream request, with the tokens the upstream reported.
    const rows = attemptsSince(since);
    expect(rows).toHaveLength(messages.length);
    for (const row of rows) {
      expect(row).toMatchObject({
        success: 1,
        error_code: null,
        input_tokens: usage.input,
        output_tokens: usage.output,
      });
      expect(JSON.parse(row.tags)).toMatchObject({ 'switchboard.gateway': 'anthropic' });
    }
    expect(new Set(rows.map((row) => row.call_id)).size).toBe(rows.length);
    const ledger = readFileSync(join(server.cwd, '.switchboard', 'ledger.db'));
    expect(ledger.includes(Buffer.from(CANARY))).toBe(false);
    expect(ledger.includes(Buffer.from(server.token))).toBe(false);
  });

  it('a session that runs tools: Bash writes a file, Read’s content reaches the model, every turn through the gateway', async () => {
    const at = place();
    const planted = `planted-${randomBytes(8).toString('hex')}`;
    writeFileSync(join(at.work, 'notes.txt'), `${planted}\n`);
    const finalText = `all done ${randomBytes(4).toString('hex')}`;
    sim.setScenario(
      toolSequenceScenario({
        calls: [
          {
            name: 'Bash',
            input: { command: 'echo gateway-bash-ok > out.txt', description: 'write out.txt' },
          },
          { name: 'Read', input: { file_path: join(at.work, 'notes.txt') } },
        ],
        finalText,
      }),
    );
    const since = Date.now();
    const result = resultOf(
      await runClaude(
        [
          '-p',
          'write out.txt, then read notes.txt',
          '--allowedTools',
          'Bash,Read',
          '--output-format',
          'json',
        ],
        at,
      ),
    );
    expect(result).toMatchObject({ subtype: 'success', is_error: false, result: finalText });
    expect(result.num_turns).toBe(3);
    // Claude Code really ran the command in its working folder.
    expect(existsSync(join(at.work, 'out.txt'))).toBe(true);
    expect(readFileSync(join(at.work, 'out.txt'), 'utf8')).toBe('gateway-bash-ok\n');

    const messages = messageRequests(sim.requests);
    expect(messages.map((entry) => entry.rule)).toEqual(['call-1-Bash', 'call-2-Read', 'final']);
    // The file Claude Code read went back to the model in the next request, as a tool_result.
    const afterRead = messages.find((entry) => entry.rule === 'final');
    expect(afterRead === undefined ? [] : toolResults(afterRead)).toEqual(
      expect.arrayContaining([expect.stringContaining(planted)]),
    );
    expect(toolResults(messages[0] as SimLogEntry)).toEqual([]);
    for (const entry of sim.requests) expect(entry.key).toBe(keyFingerprint(CANARY));
    // Every model request went through the gateway: one ledger row each, each its own call.
    const rows = attemptsSince(since);
    expect(rows).toHaveLength(messages.length);
    expect(rows.every((row) => row.success === 1)).toBe(true);
    expect(new Set(rows.map((row) => row.call_id)).size).toBe(messages.length);
  });

  it('a tool that prints the server’s token: the token never reaches the upstream', async () => {
    const at = place();
    writeFileSync(join(at.work, 'token.txt'), `the token is ${server.token} here\n`);
    sim.setScenario(
      toolSequenceScenario({
        calls: [
          {
            name: 'Bash',
            input: { command: 'printenv ANTHROPIC_AUTH_TOKEN; cat token.txt', description: 'print' },
          },
        ],
        finalText: 'printed',
      }),
    );
    const result = resultOf(
      await runClaude(['-p', 'print it', '--allowedTools', 'Bash', '--output-format', 'json'], at),
    );
    expect(result.result).toBe('printed');
    const messages = messageRequests(sim.requests);
    expect(messages.map((entry) => entry.rule)).toEqual(['call-1-Bash', 'final']);
    const results = toolResults(messages[1] as SimLogEntry).join('\n');
    expect(results).toContain('the token is');
    expect(JSON.stringify(sim.requests)).not.toContain(server.token);
  });

  it('an answer cut off mid-stream: Claude Code reports an API error, as it does straight at the API', async () => {
    sim.setScenario({ rules: [{ match: {}, fault: { kind: 'drop-during' } }] });
    const direct = await runClaude(['-p', 'say hello', '--output-format', 'json'], place(), 'direct');
    expect(direct.status).not.toBe(0);
    const directLog = sim.requests.map((entry) => [entry.method, entry.path, entry.stream, entry.outcome]);
    sim.clearLog();

    const since = Date.now();
    const run = await runClaude(['-p', 'say hello', '--output-format', 'json'], place());
    expect(run.status, run.stderr).toBe(direct.status);
    const result = JSON.parse(run.stdout) as ResultMessage;
    // An error the user sees as one, never the half answer as a success.
    expect(result.is_error).toBe(true);
    expect(result.result).toMatch(/API Error/);
    expect(result.result).not.toContain('cut off in the middle');
    // Claude Code tried what it tries without the gateway (its stream, then a request without one).
    expect(sim.requests.map((entry) => [entry.method, entry.path, entry.stream, entry.outcome])).toEqual(
      directLog,
    );
    const rows = attemptsSince(since);
    expect(rows).toHaveLength(directLog.length);
    expect(rows.every((row) => row.success === 0 && row.error_code !== null)).toBe(true);
  });

  it('message_start’s input tokens reach Claude Code: the assistant and result messages show them', async () => {
    const usage = { input: 4_000 + Math.floor(Math.random() * 5_000), output: 17 };
    const text = `streamed ${randomBytes(4).toString('hex')}`;
    sim.setScenario({ fallback: { text, usage } });
    const events = eventsOf(
      await runClaude(['-p', 'say hello', '--output-format', 'stream-json', '--verbose'], place()),
    );
    const assistant = events.filter((event) => event['type'] === 'assistant');
    expect(assistant.length).toBeGreaterThan(0);
    for (const event of assistant) {
      const message = event['message'] as { usage: { input_tokens: number } };
      expect(message.usage.input_tokens).toBe(usage.input);
    }
    const result = events.find((event) => event['type'] === 'result') as ResultMessage | undefined;
    expect(result).toMatchObject({ is_error: false, result: text });
    expect(result?.usage).toMatchObject({ input_tokens: usage.input, output_tokens: usage.output });
    // The upstream streamed (the gateway's SSE relay carried it), and no other request went out.
    const messages = messageRequests(sim.requests);
    expect(messages.length).toBeGreaterThan(0);
    expect(messages.every((entry) => entry.stream)).toBe(true);
  });

  it('a fallback Claude Code does not notice: the role’s first model overloaded, the second answers', async () => {
    const text = `sonnet answered ${randomBytes(4).toString('hex')}`;
    sim.setScenario({
      rules: [
        { match: { model: 'haiku' }, fault: { kind: 'overload' } },
        { match: { model: 'sonnet' }, reply: { text, usage: { input: 321, output: 5 } } },
      ],
    });
    const since = Date.now();
    const result = resultOf(
      await runClaude(['-p', 'say hello', '--model', 'main', '--output-format', 'json'], place()),
    );
    expect(result).toMatchObject({
      subtype: 'success',
      is_error: false,
      result: text,
      api_error_status: null,
    });
    expect(result.usage).toMatchObject({ input_tokens: 321, output_tokens: 5 });
    const messages = messageRequests(sim.requests);
    expect(messages.map((entry) => [entry.model, entry.outcome])).toEqual([
      ['claude-haiku-4-5', 'fault:overload'],
      ['claude-sonnet-4-5', 'reply'],
    ]);
    const rows = attemptsSince(since);
    expect(rows.map((row) => [row.attempt, row.spec, row.success, row.error_code])).toEqual([
      [1, 'anthropic:claude-haiku-4-5', 0, 'OVERLOADED'],
      [2, 'anthropic:claude-sonnet-4-5', 1, null],
    ]);
    expect(new Set(rows.map((row) => row.call_id)).size).toBe(1);
    expect(JSON.parse(rows[1]?.tags ?? '{}')).toMatchObject({ 'switchboard.model': 'main' });
  });
});

describe('the gateway’s other Anthropic routes', () => {
  const headers = () => ({
    'content-type': 'application/json',
    'anthropic-version': '2023-06-01',
    'x-api-key': server.token,
  });

  it('GET /v1/models in the Anthropic shape, roles included; answered by the gateway itself', async () => {
    const response = await fetch(`${server.url}/v1/models`, { headers: headers() });
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      data: Array<{ type: string; id: string; display_name: string; created_at: string }>;
      has_more: boolean;
      first_id: string | null;
      last_id: string | null;
    };
    expect(body.has_more).toBe(false);
    // The role, and the Claude models it names (a client may ask for those by name too).
    expect(body.data.map((model) => model.id)).toEqual(
      expect.arrayContaining(['main', 'claude-haiku-4-5', 'claude-sonnet-4-5']),
    );
    for (const model of body.data) {
      expect(model).toMatchObject({
        type: 'model',
        id: expect.any(String),
        display_name: expect.any(String),
      });
      expect(Number.isNaN(Date.parse(model.created_at))).toBe(false);
    }
    expect(body.first_id).toBe(body.data[0]?.id);
    expect(body.last_id).toBe(body.data.at(-1)?.id);
    expect(sim.requests).toHaveLength(0);
  });

  it('POST /v1/messages/count_tokens goes upstream with the configured key, as the SDK’s beta client sends it too', async () => {
    const message = { role: 'user', content: 'count the words of this sentence, please' };
    const direct = (await fetch(`${sim.url}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': DIRECT_KEY },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', messages: [message] }),
    }).then((response) => response.json())) as { input_tokens: number };
    sim.clearLog();
    // Plain; a role; and as Claude Code's SDK counts (`?beta=true` with the token-counting beta).
    const asked = [
      { model: 'claude-sonnet-4-5', search: '', beta: undefined },
      { model: 'main', search: '', beta: undefined },
      { model: 'claude-sonnet-4-5', search: '?beta=true', beta: 'token-counting-2024-11-01' },
    ];
    for (const { model, search, beta } of asked) {
      const response = await fetch(`${server.url}/v1/messages/count_tokens${search}`, {
        method: 'POST',
        headers: { ...headers(), ...(beta === undefined ? {} : { 'anthropic-beta': beta }) },
        body: JSON.stringify({ model, messages: [message] }),
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('x-switchboard-estimate')).toBeNull();
      expect(await response.json()).toEqual({ input_tokens: direct.input_tokens });
    }
    expect(
      sim.requests.map((entry) => [
        entry.path,
        entry.outcome,
        entry.model,
        entry.key,
        entry.headers['anthropic-beta'] ?? null,
      ]),
    ).toEqual([
      ['/v1/messages/count_tokens', 'count_tokens', 'claude-sonnet-4-5', keyFingerprint(CANARY), null],
      ['/v1/messages/count_tokens', 'count_tokens', 'claude-haiku-4-5', keyFingerprint(CANARY), null],
      [
        '/v1/messages/count_tokens?beta=true',
        'count_tokens',
        'claude-sonnet-4-5',
        keyFingerprint(CANARY),
        'token-counting-2024-11-01',
      ],
    ]);
    expect(JSON.stringify(sim.requests)).not.toContain(server.token);
  });

  it('Claude Code’s gateway model discovery asks /v1/models and keeps the Claude models the roles name', async () => {
    const discovery = { CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY: '1' };
    sim.setScenario({ fallback: { text: 'ok' } });
    // What Claude Code asks for, seen straight at the simulator.
    resultOf(await runClaude(['-p', 'say hello', '--output-format', 'json'], place(), 'direct', discovery));
    const listed = sim.requests.filter((entry) => entry.method === 'GET');
    expect(listed.map((entry) => entry.path)).toEqual(['/v1/models?limit=1000']);
    expect(listed[0]?.headers['anthropic-version']).toBe('2023-06-01');
    sim.clearLog();

    const at = place();
    const result = resultOf(
      await runClaude(['-p', 'say hello', '--output-format', 'json'], at, 'gateway', discovery),
    );
    expect(result.result).toBe('ok');
    // The gateway answered the listing itself; only the model request went upstream.
    expect(sim.requests.filter((entry) => entry.method === 'GET')).toEqual([]);
    expect(messageRequests(sim.requests).length).toBeGreaterThan(0);
    // Claude Code kept the models it can offer in its model picker.
    const cache = JSON.parse(readFileSync(join(at.config, 'cache', 'gateway-models.json'), 'utf8')) as {
      baseUrl: string;
      models: Array<{ id: string }>;
    };
    expect(cache.baseUrl).toBe(server.url);
    expect(cache.models.map((model) => model.id)).toEqual(
      expect.arrayContaining(['claude-haiku-4-5', 'claude-sonnet-4-5']),
    );
  });
});
