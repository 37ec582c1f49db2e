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
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { runAgentTask } from '../src/agents/runner.js';
import { showAgentRun } from '../src/agents/lifecycle.js';
import { parseTask } from '../src/agents/task.js';
import { limitMcpTools } from '../src/providers/claude-code/mcp-tools.js';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { ProviderRegistry } from '../src/providers/registry.js';
import { runWorkflow } from '../src/workflows/index.js';
import { loadWorkflow } from '../src/workflows/format/index.js';
import { createAgentStepExecutor } from '../src/workflows/steps/agent.js';
import { toolSequenceScenario } from './helpers/agent-scenarios.js';
import { claudeAgainstSimulator } from './helpers/claude.js';
import { createRepository, git } from './helpers/git-repo.js';
import { runCli } from './helpers/run-cli.js';

// MCP servers for agent tasks and workflow agent steps: the real Claude Code binary against `switchboard
// sim`, a tiny stdio MCP server written with the official MCP SDK (three tools: lookup, erase, shout),
// real git. What the model is offered is read from the `tools` of the requests the simulator logged.

const SERVER = join(import.meta.dirname, 'fixtures/mcp/toolbox-server.mjs');
const API_KEY = 'sk-ant-agent-mcp-test-key-0123456789';
/** Reaches the server as TOOLBOX_SECRET through `${TOOLBOX_VALUE}`; a name that is not secret-like on its own. */
const SERVER_SECRET = 'toolbox-credential-0123456789abcdef';
const LOOKUP_ANSWER = `toolbox entry for plugin: heliotrope (secret length ${SERVER_SECRET.length})`;

const temporary: string[] = [];
let sim: Simulator | undefined;

beforeEach(() => {
  process.env['TOOLBOX_VALUE'] = SERVER_SECRET;
});
afterEach(async () => {
  delete process.env['TOOLBOX_VALUE'];
  await sim?.close();
  sim = undefined;
});
afterAll(() => {
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

function folder(prefix: string): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  temporary.push(directory);
  return directory;
}

/** The toolbox server as a project `.mcp.json` (committed) and a user-level server would declare it. */
function foreignServers(repo: string, configDir: string): void {
  const server = { type: 'stdio', command: process.execPath, args: [SERVER] };
  writeFileSync(join(repo, '.mcp.json'), JSON.stringify({ mcpServers: { project: server } }));
  git(repo, 'add', '.mcp.json');
  git(repo, 'commit', '-q', '-m', 'project MCP server');
  writeFileSync(join(configDir, '.claude.json'), JSON.stringify({ mcpServers: { user: server } }));
  writeFileSync(
    join(configDir, 'settings.json'),
    JSON.stringify({ enableAllProjectMcpServers: true, mcpServers: { settings: server } }),
  );
}

/** Turn 1: the allowed MCP tool; turn 2: a Write (a run needs a change); turn 3: done. */
function lookupScenario() {
  return toolSequenceScenario({
    calls: [
      { name: 'mcp__toolbox__lookup', input: { word: 'plugin' } },
      { name: 'Write', input: { file_path: 'answer.txt', content: 'heliotrope\n' } },
    ],
    finalText: 'looked it up',
  });
}

function mcpToolsOffered(simulator: Simulator): string[][] {
  return simulator.requests.map((request) => request.tools.filter((tool) => tool.startsWith('mcp__')));
}

/** Every file under `directory`, read as text. */
function allText(directory: string): string {
  if (!existsSync(directory)) return '';
  return readdirSync(directory, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => readFileSync(join(entry.parentPath, entry.name), 'latin1'))
    .join('\n');
}

describe('an agent task with an MCP server', () => {
  it('offers the model only the allowed tool, runs it, and loads no project or user server; the credential stays out of records', async () => {
    const root = folder('switchboard-agent-mcp-');
    const repo = createRepository(join(root, 'repo'));
    const stateDir = join(root, 'state');
    const configDir = join(root, 'claude-config');
    mkdirSync(configDir);
    foreignServers(repo, configDir);
    const toolLog = join(root, 'tool-calls.log');
    const parentLog = join(root, 'parents.log');
    sim = await startSimulator({ scenario: lookupScenario(), maxLifetimeMs: 120_000 });

    const task = parseTask({
      id: 'mcp-task',
      title: 'Look a word up',
      tools: ['Write'],
      merge: 'branch',
      mcp_servers: {
        toolbox: {
          command: process.execPath,
          args: [SERVER],
          env: { TOOLBOX_LOG: toolLog, TOOLBOX_PARENT_LOG: parentLog, TOOLBOX_SECRET: '${TOOLBOX_VALUE}' },
          tools: ['lookup'],
        },
        broken: { command: join(root, 'no-such-mcp-server'), tools: ['lookup'] },
      },
      limits: { max_attempts: 1 },
    });
    const result = await runAgentTask({
      task,
      repo,
      stateDir,
      connection: { baseUrl: sim.url, apiKey: API_KEY, configDir },
    });

    expect(result).toMatchObject({ ok: true, status: 'succeeded' });
    // A server whose tools cannot be listed is left out, and the transcript says why.
    expect(allText(stateDir)).toMatch(
      /"type":"switchboard","subtype":"mcp_server_removed","server":"broken","reason":"its tools could not be listed: /,
    );
    // Every request offered the one allowed MCP tool, beside the task's built-in tool: not erase or
    // shout, and nothing of the project's `.mcp.json` or the user's servers.
    expect(sim.requests.length).toBeGreaterThanOrEqual(3);
    expect(mcpToolsOffered(sim)).toEqual(sim.requests.map(() => ['mcp__toolbox__lookup']));
    expect(sim.requests[0]?.tools).toEqual(expect.arrayContaining(['Write', 'mcp__toolbox__lookup']));
    // The tool really ran (listing the tools calls none), with the credential, and its answer reached the model.
    expect(readFileSync(toolLog, 'utf8')).toBe('lookup\n');
    expect(sim.requests.find((request) => request.turn === 2)?.text).toContain(LOOKUP_ANSWER);

    // Claude Code got the servers over stdin, not on its command line, where `ps` shows them to anyone.
    const parents = readFileSync(parentLog, 'latin1');
    expect(parents).toMatch(/claude/);
    expect(parents).not.toContain(SERVER_SECRET);
    // The recorded task keeps the reference; no record, transcript or event holds the value.
    const shown = await showAgentRun(result.id, { stateDir });
    expect(shown.task.mcpServers?.['toolbox']?.env['TOOLBOX_SECRET']).toBe('${TOOLBOX_VALUE}');
    expect(JSON.stringify(shown)).not.toContain(SERVER_SECRET);
    expect(allText(stateDir)).not.toContain(SERVER_SECRET);
    expect(allText(configDir)).not.toContain(SERVER_SECRET);
  });

  it('fails the run with TASK_INVALID naming the variable when a referenced one is not set', async () => {
    const root = folder('switchboard-agent-mcp-unset-');
    const repo = createRepository(join(root, 'repo'));
    delete process.env['TOOLBOX_VALUE'];
    const task = parseTask({
      id: 'mcp-unset',
      title: 'Look a word up',
      mcp_servers: {
        toolbox: { command: process.execPath, args: [SERVER], env: { TOOLBOX_SECRET: '${TOOLBOX_VALUE}' } },
      },
    });
    const result = await runAgentTask({ task, repo, stateDir: join(root, 'state') });
    expect(result).toMatchObject({ ok: false, status: 'failed', errorCode: 'TASK_INVALID' });
    expect(result.error).toMatch(
      /mcp_servers\.toolbox\.env\.TOOLBOX_SECRET: environment variable TOOLBOX_VALUE is not set/,
    );
  });
});

/**
 * The toolbox's three tools over Streamable HTTP (stateless), answering only requests that carry
 * `Authorization: Bearer <SERVER_SECRET>`; it counts the requests it served and refused.
 */
async function startHttpToolbox(): Promise<{
  url: string;
  served: number;
  refused: number;
  close(): Promise<void>;
}> {
  const counts = { served: 0, refused: 0 };
  const server: Server = createServer((request, response) => {
    if (request.headers.authorization !== `Bearer ${SERVER_SECRET}`) {
      counts.refused++;
      response.writeHead(403).end();
      return;
    }
    counts.served++;
    const mcp = new McpServer({ name: 'toolbox-http', version: '1.0.0' });
    const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });
    mcp.registerTool('lookup', { inputSchema: { word: z.string() } }, ({ word }) =>
      text(`toolbox entry for ${word}: heliotrope over http`),
    );
    mcp.registerTool('erase', { inputSchema: {} }, () => text('erased'));
    mcp.registerTool('shout', { inputSchema: { text: z.string() } }, ({ text: value }) =>
      text(value.toUpperCase()),
    );
    const transport = new StreamableHTTPServerTransport({}); // no session ids: stateless;
    response.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    void mcp.connect(transport).then(() => transport.handleRequest(request, response));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    get served() {
      return counts.served;
    },
    get refused() {
      return counts.refused;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('an agent task with an http MCP server', () => {
  it('sends the header from ${VAR}, offers only the allowed tool, and keeps the token out of records', async () => {
    const root = folder('switchboard-agent-mcp-http-');
    const repo = createRepository(join(root, 'repo'));
    const stateDir = join(root, 'state');
    const configDir = join(root, 'claude-config');
    mkdirSync(configDir);
    const toolbox = await startHttpToolbox();
    sim = await startSimulator({ scenario: lookupScenario(), maxLifetimeMs: 120_000 });
    try {
      const task = parseTask({
        id: 'mcp-http',
        title: 'Look a word up',
        tools: ['Write'],
        merge: 'branch',
        mcp_servers: {
          toolbox: {
            type: 'http',
            url: toolbox.url,
            headers: { Authorization: 'Bearer ${TOOLBOX_VALUE}' },
            tools: ['lookup'],
          },
        },
        limits: { max_attempts: 1 },
      });
      const result = await runAgentTask({
        task,
        repo,
        stateDir,
        connection: { baseUrl: sim.url, apiKey: API_KEY, configDir },
      });
      expect(result).toMatchObject({ ok: true, status: 'succeeded' });
      expect(mcpToolsOffered(sim)).toEqual(sim.requests.map(() => ['mcp__toolbox__lookup']));
      expect(sim.requests.find((request) => request.turn === 2)?.text).toContain(
        'toolbox entry for plugin: heliotrope over http',
      );
      expect(toolbox.refused).toBe(0);
      expect(toolbox.served).toBeGreaterThan(0);
      expect(allText(stateDir)).not.toContain(SERVER_SECRET);
      expect(allText(configDir)).not.toContain(SERVER_SECRET);
    } finally {
      await toolbox.close();
    }
  });
});

describe('limitMcpTools', () => {
  it('hides the tools not allowed, leaves out a server with none allowed or that cannot be listed, and keeps env off the command line', async () => {
    const stdio = { type: 'stdio' as const, command: process.execPath, args: [SERVER] };
    const options = {
      cwd: folder('switchboard-mcp-limit-'),
      env: { PATH: process.env['PATH'] ?? '' },
      mcpServers: {
        toolbox: stdio,
        everything: stdio,
        unused: stdio,
        broken: { type: 'stdio' as const, command: join(tmpdir(), 'no-such-mcp-server') },
      },
    };
    const limits = await limitMcpTools(options, [
      'Read',
      'mcp__toolbox__lookup',
      'mcp__everything',
      'mcp__broken__lookup',
    ]);
    expect(limits.hidden).toEqual(['mcp__toolbox__erase', 'mcp__toolbox__shout']);
    expect(limits.removed).toEqual([
      { server: 'unused', reason: 'none of its tools is allowed' },
      { server: 'broken', reason: expect.stringMatching(/^its tools could not be listed: /) },
    ]);
    expect(Object.keys(options.mcpServers)).toEqual(['toolbox', 'everything']);
    expect(options).toMatchObject({
      disallowedTools: ['mcp__toolbox__erase', 'mcp__toolbox__shout'],
      mcpServersDelivery: 'initialize',
    });
  });
});

/** `message (hint)`, the line the CLI prints, of what `parse` throws, and its code. */
function errorLine(parse: () => unknown): string {
  try {
    parse();
  } catch (error) {
    const { code, message, hint } = error as { code?: string; message: string; hint?: string };
    return `${code ?? ''}: ${message} (${hint ?? ''})`;
  }
  throw new Error('expected an error');
}

describe('a Claude Code call with an MCP server that cannot be listed', () => {
  it('leaves the server out and says so in the result warnings', async () => {
    const harness = await claudeAgainstSimulator({ rules: [], fallback: { text: 'answered' } });
    try {
      const result = await harness.provider.call({
        prompt: 'hello',
        model: 'claude-haiku-4-5',
        mcpServers: { broken: { type: 'stdio', command: join(tmpdir(), 'no-such-mcp-server') } },
        allowedTools: ['mcp__broken__lookup'],
      });
      expect(result.text).toBe('answered');
      expect(result.warnings).toEqual([
        expect.stringMatching(/^MCP server "broken" left out: its tools could not be listed: /),
      ]);
      expect(harness.sim.requests.flatMap((request) => request.tools)).toEqual([]);
    } finally {
      await harness.close();
    }
  });
});

describe('mcp_servers: one validated shape', () => {
  const task =
    (server: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    () =>
      parseTask({ id: 't', title: 'x', mcp_servers: { toolbox: server }, ...extra }, 'task file t.yaml');

  it.each([
    [
      { args: ['x'] },
      /field "mcp_servers\.toolbox\.command": the stdio MCP server "toolbox" needs "command"/,
    ],
    [{ type: 'http' }, /field "mcp_servers\.toolbox\.url": the http MCP server "toolbox" needs "url"/],
    [{ type: 'http', url: 'ftp://x' }, /not an http:\/\/ or https:\/\/ address/],
    [{ type: 'http', url: 'http://127.0.0.1:1/mcp', command: 'x' }, /"command" is for type: stdio/],
    [{ command: 'x', url: 'http://127.0.0.1:1/mcp' }, /"url" is for type: http or sse/],
    [{ command: 'x', tools: [] }, /lists no tools \(list the tools the agent may use, or leave tools: out/],
    [
      { command: 'x', tools: ['mcp__toolbox__lookup'] },
      /field "mcp_servers\.toolbox\.tools\.0": .*write lookup/,
    ],
    [{ command: 'x', transport: 'stdio' }, /Unrecognized key/],
    [
      { command: 'x', env: { API_TOKEN: 'abcdef0123456789' } },
      /field "mcp_servers\.toolbox\.env\.API_TOKEN": .*credential API_TOKEN written in the task.*write \$\{API_TOKEN\}/,
    ],
    [
      { type: 'http', url: 'http://127.0.0.1:1/mcp', headers: { Authorization: 'Bearer abcdef0123456789' } },
      /credential Authorization written in the task.*write Bearer \$\{TOKEN\}/,
    ],
  ])('rejects %j with one line naming the field and the fix', (server, message) => {
    const line = errorLine(task(server));
    expect(line).toMatch(/^TASK_INVALID: task file t\.yaml field "mcp_servers\.toolbox/);
    expect(line).toMatch(message);
  });

  it('takes credentials as ${VAR} references, and rejects a server name Claude Code cannot use or MCP tools in tools', () => {
    const parsed = task({
      type: 'http',
      url: 'http://127.0.0.1:1/mcp',
      headers: { Authorization: 'Bearer ${TOOLBOX_VALUE}', 'X-Team': 'docs' },
    })();
    expect(parsed.mcpServers?.['toolbox']).toEqual({
      type: 'http',
      url: 'http://127.0.0.1:1/mcp',
      args: [],
      env: {},
      headers: { Authorization: 'Bearer ${TOOLBOX_VALUE}', 'X-Team': 'docs' },
      tools: ['*'],
    });
    expect(() => parseTask({ id: 't', title: 'x', mcp_servers: { tool__box: { command: 'x' } } })).toThrow(
      /may hold only letters, digits, "-" and "_" \(not "__"\)/,
    );
    expect(task({ command: 'x' }, { tools: ['Read', 'mcp__toolbox__lookup'] })).toThrow(
      /field "tools\.1": list an MCP server's tools under mcp_servers\.<server>\.tools/,
    );
  });

  it('`agent run --task` with a bad entry: one line naming the field and the fix, exit 43, nothing run', async () => {
    const root = folder('switchboard-agent-mcp-cli-');
    const repo = createRepository(join(root, 'repo'));
    const taskFile = join(root, 'task.yaml');
    writeFileSync(
      taskFile,
      'id: t\ntitle: x\nmcp_servers:\n  github:\n    command: npx\n    env: { GITHUB_TOKEN: ghp_0123456789abcdefghij }\n',
    );
    const run = await runCli(['agent', 'run', '--task', taskFile, '--state-dir', join(root, 'state')], {
      cwd: repo,
      env: { ...process.env, SWITCHBOARD_DEBUG: '' },
    });
    expect(run.status).toBe(43);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(
      /field "mcp_servers\.github\.env\.GITHUB_TOKEN": .*credential GITHUB_TOKEN written in the task/,
    );
    expect(run.stderr).toMatch(/write \$\{GITHUB_TOKEN\}/);
    expect(run.stderr).not.toContain('ghp_0123456789abcdefghij');
    expect(existsSync(join(root, 'state'))).toBe(false);
  });

  it('gives a workflow file the same checks (WORKFLOW_INVALID)', () => {
    const dir = folder('switchboard-workflow-mcp-');
    const file = join(dir, 'flow.yaml');
    const write = (server: string) =>
      writeFileSync(
        file,
        `workflow:\n  name: flow\n  entry_point: a\n  runtime:\n    mcp_servers:\n      toolbox: ${server}\nagents:\n  - name: a\n    type: set\n    value: x\n`,
      );
    write('{ type: http, url: "http://127.0.0.1:1/mcp", command: node }');
    expect(() => loadWorkflow(file)).toThrow(
      expect.objectContaining({
        code: 'WORKFLOW_INVALID',
        message: expect.stringMatching(/"command" is for type: stdio/),
      }),
    );
    write('{ command: node, tools: [] }');
    expect(() => loadWorkflow(file)).toThrow(/runtime\.mcp_servers\.toolbox\.tools.*lists no tools/);
    writeFileSync(
      file,
      `workflow:\n  name: flow\n  entry_point: a\n  runtime:\n    mcp_servers:\n      toolbox: { command: node }\nagents:\n  - name: a\n    type: agent\n    prompt: x\n    tools: [Read, mcp__toolbox__lookup]\n    effects: git\n    mcp: [toolbox]\n`,
    );
    expect(() => loadWorkflow(file)).toThrow(/tools\[1\].*"mcp__toolbox__lookup" is an MCP tool/);
  });
});

describe('a workflow agent step with an MCP server', () => {
  it('offers only the allowed tool, runs it, and loads no project or user server', async () => {
    const root = folder('switchboard-workflow-mcp-run-');
    const repo = createRepository(join(root, 'repo'));
    const configDir = join(root, 'claude-config');
    mkdirSync(configDir);
    foreignServers(repo, configDir);
    const toolLog = join(root, 'tool-calls.log');
    sim = await startSimulator({ scenario: lookupScenario(), maxLifetimeMs: 120_000 });
    const file = join(root, 'lookup.yaml');
    writeFileSync(
      file,
      `workflow:
  name: lookup
  entry_point: implement
  runtime:
    mcp_servers:
      toolbox:
        command: ${JSON.stringify(process.execPath)}
        args: [${JSON.stringify(SERVER)}]
        env: { TOOLBOX_LOG: ${JSON.stringify(toolLog)}, TOOLBOX_SECRET: '\${TOOLBOX_VALUE}' }
        tools: [lookup]
agents:
  - name: implement
    type: agent
    provider: claude-agent-sdk
    model: claude-haiku-4-5
    prompt: Look up plugin and write the answer to answer.txt
    tools: [Write]
    mcp: [toolbox]
    effects: git
    repo: ${JSON.stringify(repo)}
    limits:
      max_attempts: 1
    routes:
      - to: $end
`,
    );
    const result = await runWorkflow({
      file,
      stateDir: join(root, 'state'),
      _internal: {
        executors: {
          agent: createAgentStepExecutor({ connection: { baseUrl: sim.url, apiKey: API_KEY, configDir } }),
        },
      },
    });

    expect(result).toMatchObject({ status: 'completed' });
    expect(mcpToolsOffered(sim)).toEqual(sim.requests.map(() => ['mcp__toolbox__lookup']));
    expect(readFileSync(toolLog, 'utf8')).toBe('lookup\n');
    expect(sim.requests.find((request) => request.turn === 2)?.text).toContain(LOOKUP_ANSWER);
    expect(allText(join(root, 'state'))).not.toContain(SERVER_SECRET);
  });

  it('an LLM step (no effects: git) on Claude Code is offered only the allowed tool too', async () => {
    const root = folder('switchboard-workflow-mcp-llm-');
    const configDir = join(root, 'claude-config');
    mkdirSync(configDir);
    const toolLog = join(root, 'tool-calls.log');
    sim = await startSimulator({
      scenario: toolSequenceScenario({
        calls: [{ name: 'mcp__toolbox__lookup', input: { word: 'plugin' } }],
        finalText: 'heliotrope it is',
      }),
      maxLifetimeMs: 120_000,
    });
    const file = join(root, 'ask.yaml');
    writeFileSync(
      file,
      `workflow:
  name: ask
  entry_point: ask
  runtime:
    mcp_servers:
      toolbox:
        command: ${JSON.stringify(process.execPath)}
        args: [${JSON.stringify(SERVER)}]
        env: { TOOLBOX_LOG: ${JSON.stringify(toolLog)}, TOOLBOX_SECRET: '\${TOOLBOX_VALUE}' }
        tools: [lookup]
agents:
  - name: ask
    type: agent
    provider: claude-agent-sdk
    model: claude-haiku-4-5
    prompt: Look up plugin
    mcp: true
    routes:
      - to: $end
`,
    );
    const providers = new ProviderRegistry({ claude: { apiKey: API_KEY, baseUrl: sim.url, configDir } });
    try {
      const result = await runWorkflow({ file, stateDir: join(root, 'state'), providers });
      expect(result).toMatchObject({ status: 'completed' });
    } finally {
      await providers.close();
    }
    expect(mcpToolsOffered(sim)).toEqual(sim.requests.map(() => ['mcp__toolbox__lookup']));
    expect(readFileSync(toolLog, 'utf8')).toBe('lookup\n');
    expect(sim.requests.find((request) => request.turn === 2)?.text).toContain(LOOKUP_ANSWER);
  });
});
