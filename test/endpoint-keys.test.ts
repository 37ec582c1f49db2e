import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/core/errors.js';
import { call } from '../src/invoke/call.js';
import { ProviderRegistry } from '../src/providers/registry.js';
import { keyFingerprint } from '../src/sim/credentials.js';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { connectStdio, sessionOf, textOf, type McpSession } from './helpers/mcp-client.js';
import { runCli, type CliRun } from './helpers/run-cli.js';
import { killServers, serve } from './helpers/serve-process.js';

// A key is bound to its provider's configured endpoint. A capturing listener (a real HTTP server on
// loopback that logs every header, query string and body it receives and answers like an
// OpenAI-compatible server) stands for "anywhere"; `switchboard sim` is the configured endpoint of every
// provider. Distinct fake keys are planted in the environment; whatever path a spec naming the listener
// takes (the CLI, the library, serve's POST /call, `call --server`, the MCP `call` tool, a workflow
// step), the listener never sees one, while the simulator still gets its key.

const tag = randomBytes(6).toString('hex');
const planted = {
  OPENAI_API_KEY: `sk-PLANTED-openai-${tag}`,
  ANTHROPIC_API_KEY: `sk-ant-PLANTED-anthropic-${tag}`,
  GEMINI_API_KEY: `AIza-PLANTED-gemini-${tag}`,
  TIED_OPENAI_KEY: `sk-PLANTED-tied-${tag}`,
};
const secrets = Object.values(planted);

interface Captured {
  method: string;
  url: string;
  headers: string;
  body: string;
}

/** A loopback server that records everything and answers a chat completion. */
async function capturingListener(): Promise<{ url: string; seen: Captured[]; server: Server }> {
  const seen: Captured[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      seen.push({
        method: request.method ?? '',
        url: request.url ?? '',
        headers: JSON.stringify(request.rawHeaders),
        body: Buffer.concat(chunks).toString('utf8'),
      });
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          id: 'chatcmpl-listener',
          object: 'chat.completion',
          created: 0,
          model: 'gpt-4.1-mini',
          choices: [{ index: 0, message: { role: 'assistant', content: 'heard' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, seen, server };
}

const children = new Set<ChildProcess>();
const directories: string[] = [];
let sim: Simulator;
let anywhere: Awaited<ReturnType<typeof capturingListener>>;
let tied: Awaited<ReturnType<typeof capturingListener>>;
let env: NodeJS.ProcessEnv;
const outputs: string[] = [];

function temporaryDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'switchboard-endpoint-keys-'));
  directories.push(directory);
  return directory;
}

/** A working directory whose switchboard.yaml ties TIED_OPENAI_KEY to the second listener. */
function project(): string {
  const cwd = temporaryDirectory();
  writeFileSync(
    join(cwd, 'switchboard.yaml'),
    `providers:\n  openai:\n    endpoints:\n      - url: ${tied.url}/v1/\n        api_key_env: TIED_OPENAI_KEY\n`,
  );
  return cwd;
}

async function run(args: string[], cwd: string, extra: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  const result = await runCli(args, { cwd, env: { ...env, ...extra } });
  outputs.push(result.stdout, result.stderr);
  return result;
}

/** Every key the simulator received, as the fingerprints its log keeps. */
function simKeys(): Set<string | null> {
  return new Set(sim.requests.map((entry) => entry.key));
}

beforeAll(async () => {
  sim = await startSimulator({
    maxLifetimeMs: 300_000,
    scenario: { rules: [{ match: {}, reply: { text: 'sim' } }] },
  });
  anywhere = await capturingListener();
  tied = await capturingListener();
  env = {
    ...process.env,
    ...planted,
    OPENAI_BASE_URL: sim.openAiBaseUrl,
    ANTHROPIC_BASE_URL: sim.url,
    GEMINI_BASE_URL: sim.url,
    GEMINI_API_KEYS: '',
    CLAUDE_CONFIG_DIR: temporaryDirectory(),
    SWITCHBOARD_SERVER: '',
    SWITCHBOARD_SERVER_TOKEN: '',
  };
});

afterAll(async () => {
  killServers(children);
  await sim.close();
  anywhere.server.close();
  tied.server.close();
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

/** Every file under `directory` (ledgers, logs, config), read as text. */
function filesUnder(directory: string): string[] {
  return readdirSync(directory, { recursive: true, encoding: 'utf8' })
    .map((name) => join(directory, name))
    .filter((path) => statSync(path).isFile())
    .map((path) => readFileSync(path).toString('latin1'));
}

function expectNoPlantedKey(texts: readonly string[]): void {
  for (const text of texts) for (const secret of secrets) expect(text).not.toContain(secret);
}

describe('a key goes only to the endpoint it is bound to', () => {
  it('the CLI calls an inline URL without any key, and still sends the key to the configured endpoint', async () => {
    const cwd = project();
    const before = anywhere.seen.length;
    const inline = await run(['call', `openai@${anywhere.url}/v1:gpt-4.1-mini`, 'hello'], cwd);
    expect(inline).toMatchObject({ status: 0, stdout: 'heard\n' });
    expect(anywhere.seen.length).toBe(before + 1);
    expect(anywhere.seen.at(-1)?.headers).toContain('Bearer switchboard-no-key');

    // The same server spelled differently (upper-case scheme and host, default port, trailing slash)
    // is the configured endpoint and gets the key; the listener is never it.
    const configured = sim.openAiBaseUrl.replace('http://127.0.0.1', 'HTTP://127.0.0.1');
    const home = await run(['call', `openai@${configured}/:gpt-4.1-mini`, 'hello'], cwd);
    expect(home).toMatchObject({ status: 0, stdout: 'sim\n' });
    const plain = await run(['call', 'openai:gpt-4.1-mini', 'hello'], cwd);
    expect(plain).toMatchObject({ status: 0, stdout: 'sim\n' });
    expect(simKeys()).toContain(keyFingerprint(planted.OPENAI_API_KEY));
  });

  it('a key tied to an endpoint in switchboard.yaml goes there, and no other key does', async () => {
    const cwd = project();
    // Another spelling of the tied URL than the config's.
    const result = await run(['call', `openai@${tied.url}/v1:gpt-4.1-mini`, 'hello'], cwd);
    expect(result).toMatchObject({ status: 0, stdout: 'heard\n' });
    expect(tied.seen.at(-1)?.headers).toContain(`Bearer ${planted.TIED_OPENAI_KEY}`);
    for (const request of tied.seen) {
      expect(request.headers).not.toContain(planted.OPENAI_API_KEY);
      expect(request.headers).not.toContain(planted.ANTHROPIC_API_KEY);
    }
  });

  it('providers that take their base URL only from configuration refuse an inline one', async () => {
    const cwd = project();
    const before = anywhere.seen.length;
    for (const spec of [
      `anthropic@${anywhere.url}:claude-haiku-4-5`,
      `gemini@${anywhere.url}:2.5-flash`,
      `claude@${anywhere.url}:haiku`,
    ]) {
      const result = await run(['call', spec, 'hello'], cwd);
      expect(result.status, result.stderr).toBe(EXIT_CODES.INVALID_INPUT);
      expect(result.stderr).toMatch(/takes no base URL in the spec/);
    }
    expect(anywhere.seen.length).toBe(before);
  });

  it('the library: call() sends no key to an inline URL', async () => {
    const providers = new ProviderRegistry({
      openai: { apiKey: planted.OPENAI_API_KEY, baseUrl: sim.openAiBaseUrl },
    });
    try {
      const before = anywhere.seen.length;
      const result = await call(`openai@${anywhere.url}/v1:gpt-4.1-mini`, { prompt: 'hi' }, { providers });
      expect(result.text).toBe('heard');
      expect(anywhere.seen.length).toBe(before + 1);
      expect(anywhere.seen.at(-1)?.headers).not.toContain(planted.OPENAI_API_KEY);
      const home = await call('openai:gpt-4.1-mini', { prompt: 'hi' }, { providers });
      expect(home.text).toBe('sim');
    } finally {
      await providers.close();
    }
  });

  it('a workflow step naming an inline URL calls it without a key', async () => {
    const cwd = project();
    writeFileSync(
      join(cwd, 'flow.yaml'),
      'workflow:\n  name: ask\n  entry_point: ask\nagents:\n  - name: ask\n    prompt: Hello\n    routes:\n      - to: $end\n',
    );
    const before = anywhere.seen.length;
    const result = await run(
      ['workflow', 'run', 'flow.yaml', '--provider', `openai@${anywhere.url}/v1:gpt-4.1-mini`],
      cwd,
    );
    expect(result.status, result.stderr).toBe(0);
    expect(anywhere.seen.length).toBe(before + 1);
  });
});

/** The MCP `call` tool answers an inline URL with a tool error, and still calls the configured endpoint. */
async function expectMcpRefusal(session: McpSession): Promise<void> {
  const before = anywhere.seen.length;
  const refused = await session.call('call', {
    spec: `openai@${anywhere.url}/v1:gpt-4.1-mini`,
    prompt: 'hello',
  });
  outputs.push(JSON.stringify(refused));
  expect(refused.isError).toBe(true);
  expect(textOf(refused)).toMatch(/not an endpoint this server calls/);
  expect(anywhere.seen.length).toBe(before);
  const allowed = await session.call('call', { spec: 'openai:gpt-4.1-mini', prompt: 'hello' });
  expect(allowed.isError ?? false, textOf(allowed)).toBe(false);
}

describe('a server calls only the endpoints its config allows', () => {
  it('POST /call, call --server and MCP over HTTP refuse a base URL the config does not allow: 403, exit 65', async () => {
    const cwd = project();
    const server = await serve(['--port', '0', '--pool', '0'], { cwd, env, children });
    const before = anywhere.seen.length;
    const post = async (spec: string) => {
      const response = await fetch(`${server.url}/call`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', host: new URL(server.url).host, ...server.auth },
        body: JSON.stringify({ spec, prompt: 'hello' }),
      });
      const text = await response.text();
      outputs.push(text);
      return { status: response.status, text };
    };
    const port = new URL(anywhere.url).port;
    const simHost = new URL(sim.url).host;
    for (const spec of [
      `openai@${anywhere.url}/v1:gpt-4.1-mini`,
      // A refused entry anywhere in a chain refuses the call before its first attempt.
      `openai:gpt-4.1-mini,openai@${anywhere.url}/v1:gpt-4.1-mini`,
      // The configured host as a user name, or as the start of another host name, is not it.
      `openai@http://${simHost}@127.0.0.1:${port}/v1:gpt-4.1-mini`,
      `openai@http://127.0.0.1.nip.io:${port}/v1:gpt-4.1-mini`,
    ]) {
      const refused = await post(spec);
      expect(refused.status, refused.text).toBe(403);
      expect(JSON.parse(refused.text)).toMatchObject({ error: { code: 'ENDPOINT_NOT_ALLOWED' } });
    }
    // The configured endpoint in another spelling, and the URL the config ties a key to, are allowed.
    expect((await post(`openai@${sim.openAiBaseUrl}/:gpt-4.1-mini`)).status).toBe(200);
    expect((await post(`openai@${tied.url}/v1:gpt-4.1-mini`)).status).toBe(200);

    const forwarded = await run(
      ['call', '--server', server.url, `openai@${anywhere.url}/v1:gpt-4.1-mini`, 'hello'],
      cwd,
    );
    // ENDPOINT_NOT_ALLOWED
    expect(forwarded.status, forwarded.stderr).toBe(65);
    expect(forwarded.stderr).toMatch(/is not an endpoint this server calls/);

    // The MCP call tool over the server's HTTP endpoint.
    const client = new Client({ name: 'endpoint-keys-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', server.url), {
        requestInit: { headers: server.auth },
      }),
    );
    try {
      await expectMcpRefusal(sessionOf(client));
    } finally {
      await client.close();
    }
    expect(anywhere.seen.length).toBe(before);
  });

  it('the MCP call tool over stdio refuses an inline URL the config does not name', async () => {
    const cwd = project();
    const session = await connectStdio([], { cwd, env });
    try {
      await expectMcpRefusal(session);
    } finally {
      await session.close();
    }
  });

  it('no planted key reached the listener, any output, or any file the commands wrote', () => {
    expect(anywhere.seen.length).toBeGreaterThan(0);
    expectNoPlantedKey(anywhere.seen.flatMap((request) => [request.url, request.headers, request.body]));
    expectNoPlantedKey(outputs);
    for (const directory of directories) expectNoPlantedKey(filesUnder(directory));
    // switchboard.yaml names only the variable, never a key: the files hold none at all.
  });
});
