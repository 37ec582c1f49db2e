import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { request, type OutgoingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/core/errors.js';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { createRepository, git } from './helpers/git-repo.js';
import { runCli } from './helpers/run-cli.js';
import { killServers, serve as startServe, type Served } from './helpers/serve-process.js';

// What a web page, a token holder and an MCP client over HTTP can make the real `switchboard serve`
// do: raw HTTP requests (hostile Host, foreign Origin, text/plain bodies) against the built CLI, a real
// git repository for agent_run, real workflow files with script steps.

const skills = join(import.meta.dirname, 'fixtures/skills');
const planted = `sk-ant-PLANTED-${randomBytes(8).toString('hex')}`;
const token = `trust-token-${randomBytes(12).toString('hex')}`;
const children = new Set<ChildProcess>();
const directories: string[] = [];
const answers: string[] = [];
let sim: Simulator;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  sim = await startSimulator({ maxLifetimeMs: 300_000, scenario: { fallback: { text: 'pong' } } });
  env = {
    ...process.env,
    ANTHROPIC_API_KEY: planted,
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
  const directory = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-trust-')));
  directories.push(directory);
  return directory;
}

function serve(args: string[], cwd: string, extra: NodeJS.ProcessEnv = {}): Promise<Served> {
  return startServe(['--port', '0', '--pool', '0', ...args], { cwd, env: { ...env, ...extra }, children });
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/**
 * One raw HTTP request to 127.0.0.1:`port`, with exactly the headers given (a `host` among them
 * replaces the real one, as a rebinding page's browser would send it).
 */
function send(
  port: string,
  {
    method = 'GET',
    path,
    headers = {},
    body,
  }: { method?: string; path: string; headers?: OutgoingHttpHeaders; body?: string },
  address = '127.0.0.1',
): Promise<Answer> {
  // `host: undefined` sends no Host header at all.
  const { host, ...rest } = headers;
  const given = host === undefined ? rest : { ...rest, host };
  return new Promise((resolve, reject) => {
    const outgoing = request(
      { host: address, port, method, path, headers: given, agent: false, setHost: !('host' in headers) },
      (incoming) => {
        let text = '';
        incoming.setEncoding('utf8');
        incoming.on('data', (chunk: string) => (text += chunk));
        incoming.on('end', () => {
          answers.push(text);
          resolve({ status: incoming.statusCode ?? 0, headers: incoming.headers, text });
        });
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

/** Bytes written as they are to the server's socket; the whole answer as text. */
function rawRequest(port: string, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.end(bytes));
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
}

function errorOf(answer: Answer): Record<string, unknown> {
  return (JSON.parse(answer.text) as { error: Record<string, unknown> }).error;
}

/** A JSON-RPC tools/call as a browser or an SDK would POST it to /mcp. */
function toolCall(name: string, args: Record<string, unknown>): string {
  return JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });
}

const mcpHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** The text of a tools/call answer (a tool error's one line and hint, or the result as JSON). */
function toolText(answer: Answer): { isError: boolean; text: string } {
  const { result } = JSON.parse(answer.text) as {
    result: { isError?: boolean; content: Array<{ text: string }> };
  };
  return { isError: result.isError === true, text: result.content.map((part) => part.text).join('\n') };
}

function portOf(server: Served): string {
  return new URL(server.url).port;
}

/** Every file under `directory`, recursively (git's own objects left out: they are compressed). */
function filesUnder(directory: string): string[] {
  return readdirSync(directory, { recursive: true, encoding: 'utf8' })
    .map((entry) => join(directory, entry))
    .filter((path) => !path.includes(`${join('.git', 'objects')}`) && statSync(path).isFile());
}

function expectNoPlantedSecret(server: Served, directory: string): void {
  expect(server.stdout() + server.stderr()).not.toContain(planted);
  for (const answer of answers) expect(answer).not.toContain(planted);
  for (const file of filesUnder(directory))
    expect(readFileSync(file).toString('latin1'), file).not.toContain(planted);
}

describe('serve: a web page cannot drive it', () => {
  let cwd: string;
  let server: Served;
  let port: string;

  beforeAll(async () => {
    cwd = temporaryDirectory();
    server = await serve(['--skills', skills, '--metrics'], cwd);
    port = portOf(server);
  });

  it('refuses a Host that does not name the server (DNS rebinding) on every route, /mcp included', async () => {
    const rebound = { host: `evil.example:${port}` };
    for (const path of ['/healthz', '/metrics', '/nowhere'])
      expect((await send(port, { path, headers: rebound })).status, path).toBe(403);
    for (const path of ['/route', '/call']) {
      const answer = await send(port, {
        method: 'POST',
        path,
        headers: { ...rebound, 'content-type': 'application/json' },
        body: JSON.stringify({ text: 'the app crashes', spec: 'anthropic:claude-haiku-4-5', prompt: 'hi' }),
      });
      expect(answer.status, path).toBe(403);
    }
    const asked = sim.requests.length;
    const mcp = await send(port, {
      method: 'POST',
      path: '/mcp',
      headers: { ...rebound, ...mcpHeaders },
      body: toolCall('call', { spec: 'anthropic:claude-haiku-4-5', prompt: 'hi' }),
    });
    expect(mcp.status).toBe(403);
    expect(errorOf(mcp)).toMatchObject({
      code: 'FORBIDDEN',
      message: `this server does not answer to the name "evil.example:${port}"`,
    });
    expect(errorOf(mcp)['hint']).toMatch(/http:\/\/127\.0\.0\.1:PORT/);
    expect(sim.requests.length).toBe(asked);
    // HTTP/1.1 without Host is refused by Node itself (400); HTTP/1.0 may leave it out, and is refused here.
    expect((await send(port, { path: '/healthz', headers: { host: undefined } })).status).toBe(400);
    const noHost = await rawRequest(port, 'GET /healthz HTTP/1.0\r\n\r\n');
    expect(noHost).toMatch(/^HTTP\/1\.1 403 /);
    expect(noHost).toContain('"message":"the request has no Host header"');

    // The names of loopback are answered, whatever the port (an SSH tunnel changes it).
    for (const host of [
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      'LOCALHOST:9000',
      '[::1]:8787',
      '127.0.0.1',
    ])
      expect((await send(port, { path: '/healthz', headers: { host } })).status, host).toBe(200);
  });

  it('refuses a cross-site request: a foreign Origin gets 403 and a text/plain POST 415, and neither reaches a provider', async () => {
    const asked = sim.requests.length;
    const call = JSON.stringify({ spec: 'anthropic:claude-haiku-4-5', prompt: 'hi' });
    // The "simple request" a page's form or fetch makes without a preflight.
    const simple = await send(port, {
      method: 'POST',
      path: '/call',
      headers: { origin: 'http://evil.example', 'content-type': 'text/plain' },
      body: call,
    });
    expect(simple.status).toBe(403);
    expect(errorOf(simple)).toMatchObject({
      code: 'FORBIDDEN',
      message: 'requests from web pages of "http://evil.example" are not allowed',
    });
    expect(simple.headers['access-control-allow-origin']).toBeUndefined();
    for (const origin of ['null', 'http://evil.example', `http://localhost:${Number(port) + 1}`]) {
      const answer = await send(port, { path: '/healthz', headers: { origin } });
      expect(answer.status, origin).toBe(403);
    }
    const mcp = await send(port, {
      method: 'POST',
      path: '/mcp',
      headers: { ...mcpHeaders, origin: 'https://evil.example' },
      body: toolCall('route', { text: 'the app crashes' }),
    });
    expect(mcp.status).toBe(403);

    for (const [path, body] of [
      ['/call', call],
      ['/route', JSON.stringify({ text: 'the app crashes whenever I save' })],
      ['/mcp', toolCall('route', { text: 'the app crashes' })],
    ] as const) {
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', undefined]) {
        const answer = await send(port, {
          method: 'POST',
          path,
          headers: type === undefined ? {} : { 'content-type': type },
          body,
        });
        expect(answer.status, `${path} ${type}`).toBe(415);
        expect(errorOf(answer)).toMatchObject({ code: 'INVALID_INPUT' });
        expect(errorOf(answer)['hint']).toBe('send the header "Content-Type: application/json"');
      }
    }
    expect(sim.requests.length).toBe(asked);

    // The same requests as a program sends them (no Origin, JSON) are served; the server's own origin too.
    const served = await send(port, {
      method: 'POST',
      path: '/call',
      headers: { 'content-type': 'application/json; charset=utf-8', ...server.auth },
      body: call,
    });
    expect(served.status).toBe(200);
    expect(JSON.parse(served.text)).toMatchObject({ text: 'pong' });
    const own = await send(port, {
      method: 'POST',
      path: '/route',
      headers: { 'content-type': 'application/json', origin: `http://127.0.0.1:${port}`, ...server.auth },
      body: JSON.stringify({ text: 'the app crashes whenever I save' }),
    });
    expect(own.status).toBe(200);
    expectNoPlantedSecret(server, cwd);
  });

  it('a caller naming the server by a name it does not answer to exits 64 (FORBIDDEN)', async () => {
    const wide = await serve(['--host', '0.0.0.0'], cwd, { SWITCHBOARD_SERVER_TOKEN: token });
    // 127.0.0.2 reaches the server on loopback, but is not a name it answers to. The client finds no
    // token (another HOME, another state folder): it must be told the name is wrong, not only 401.
    const elsewhere = temporaryDirectory();
    const result = await runCli(
      ['call', '--server', `http://127.0.0.2:${portOf(wide)}`, 'anthropic:claude-haiku-4-5', 'hi'],
      { cwd, env: { ...env, HOME: elsewhere, SWITCHBOARD_STATE_DIR: join(elsewhere, 'state') } },
    );
    expect(result.status).toBe(64);
    expect(result.stderr.trimEnd()).toMatch(
      /^switchboard: this server does not answer to the name "127\.0\.0\.2:\d+" \(call it as http:\/\/127\.0\.0\.1:PORT .*\)$/,
    );
    // With the token (which a web page cannot send) any name will do.
    const withToken = await runCli(
      ['call', '--server', `http://127.0.0.2:${portOf(wide)}`, 'anthropic:claude-haiku-4-5', 'hi'],
      {
        cwd,
        env: { ...env, SWITCHBOARD_SERVER_TOKEN: token },
      },
    );
    expect(withToken).toMatchObject({ status: 0, stdout: 'pong\n' });
    wide.child.kill('SIGTERM');
    await wide.exited;
  });
});

describe('serve --allow-origin', () => {
  it("lets the named site's pages call it (CORS preflight included) and no other", async () => {
    const cwd = temporaryDirectory();
    const server = await serve(['--skills', skills, '--allow-origin', 'https://app.example:8443/'], cwd);
    const port = portOf(server);
    const preflight = await send(port, {
      method: 'OPTIONS',
      path: '/route',
      headers: {
        origin: 'https://app.example:8443',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('https://app.example:8443');
    expect(preflight.headers['access-control-allow-headers']).toMatch(/content-type/);
    const routed = await send(port, {
      method: 'POST',
      path: '/route',
      headers: { origin: 'https://app.example:8443', 'content-type': 'application/json', ...server.auth },
      body: JSON.stringify({ text: 'the app crashes whenever I save' }),
    });
    expect(routed.status).toBe(200);
    expect(routed.headers['access-control-allow-origin']).toBe('https://app.example:8443');
    expect(JSON.parse(routed.text)).toMatchObject({ skill: 'fix-bug' });
    const other = await send(port, { path: '/healthz', headers: { origin: 'https://app.example' } });
    expect(other.status).toBe(403);

    const bad = await runCli(['serve', '--port', '0', '--allow-origin', 'app.example'], { cwd, env });
    expect(bad.status).toBe(EXIT_CODES.INVALID_INPUT);
    expect(bad.stderr.trimEnd()).toBe(
      'switchboard: allowed origin "app.example" is not an http(s) origin (give scheme, host and port only, e.g. --allow-origin https://app.example:8443)',
    );
  });
});

describe('serve: /mcp tools that run commands', () => {
  const attack = (repo: string) => ({
    task: { id: 'pwn', title: 'nothing to see', setup: 'id > pwned.txt', verify: 'id > pwned.txt' },
    repo,
    wait_seconds: 5,
  });

  /** A workflow whose script step writes `marker`. */
  function scriptWorkflow(directory: string, marker: string): string {
    const file = join(directory, 'flow.yaml');
    mkdirSync(directory, { recursive: true });
    writeFileSync(
      file,
      `workflow:\n  name: writes\n  entry_point: write\nagents:\n  - name: write\n    type: script\n    command: sh\n    args: ["-c", "id > ${marker}"]\n    routes:\n      - to: $end\n`,
    );
    return file;
  }

  it('are off by default: agent_run with a setup command and a script workflow are refused and nothing runs', async () => {
    const cwd = temporaryDirectory();
    const repo = createRepository(join(cwd, 'repo'));
    const server = await serve(['--skills', skills], cwd);
    const port = portOf(server);
    const post = (body: string) =>
      send(port, { method: 'POST', path: '/mcp', headers: { ...mcpHeaders, ...server.auth }, body });

    for (const target of [repo, cwd, '/']) {
      const refused = toolText(await post(toolCall('agent_run', attack(target))));
      expect(refused.isError).toBe(true);
      expect(refused.text).toBe(
        'FORBIDDEN (exit 64): agent_run runs an agent and commands, which this server does not allow over HTTP\n' +
          'hint: start serve with --allow-commands --repo-root DIR (or serve.allow_commands and serve.repo_roots in switchboard.yaml), or use `switchboard mcp` on stdio',
      );
    }
    const marker = join(cwd, 'script-ran.txt');
    const flow = toolText(await post(toolCall('workflow_run', { file: scriptWorkflow(cwd, marker) })));
    expect(flow.isError).toBe(true);
    expect(flow.text).toMatch(
      /^FORBIDDEN \(exit 64\): workflow writes: step "write" runs a command, which this server does not allow over HTTP\n/,
    );

    // A command in a sub-workflow is found when the run reaches it: the run fails there, nothing runs.
    const child = scriptWorkflow(join(cwd, 'child-flow'), marker);
    writeFileSync(
      join(cwd, 'parent.yaml'),
      `workflow:\n  name: parent\n  entry_point: sub\nagents:\n  - name: sub\n    type: workflow\n    workflow: ${child}\n    routes:\n      - to: $end\n`,
    );
    const parent = toolText(await post(toolCall('workflow_run', { file: 'parent.yaml' })));
    expect(JSON.parse(parent.text)).toMatchObject({ state: 'failed', errorCode: 'FORBIDDEN' });

    // A run the user started parks at a gate before a script step: answering it over HTTP may not
    // make the server run the script.
    writeFileSync(
      join(cwd, 'gated.yaml'),
      `workflow:\n  name: gated\n  entry_point: ask\nagents:\n  - name: ask\n    type: human_gate\n    prompt: Go?\n    options:\n      - { label: Go, value: go, route: write }\n  - name: write\n    type: script\n    command: sh\n    args: ["-c", "id > ${marker}"]\n    routes:\n      - to: $end\n`,
    );
    const parked = await runCli(['workflow', 'run', 'gated.yaml', '--run-id', 'gated-1'], { cwd, env });
    expect(parked.status, parked.stderr).toBe(EXIT_CODES.WORKFLOW_WAITING);
    const gate = toolText(await post(toolCall('workflow_gate', { run_id: 'gated-1', choose: 'go' })));
    expect(gate.text).toMatch(/^FORBIDDEN \(exit 64\): workflow gated: step "write" runs a command/);
    // Only recording the answer is acting too: the process parked there, or a later resume, would go on.
    const recordOnly = toolText(
      await post(toolCall('workflow_gate', { run_id: 'gated-1', choose: 'go', continue: false })),
    );
    expect(recordOnly.text).toMatch(/^FORBIDDEN \(exit 64\)/);
    const still = await runCli(['workflow', 'status', 'gated-1', '--json'], { cwd, env });
    expect(JSON.parse(still.stdout)).toMatchObject({ status: 'waiting' });
    const logs = await runCli(['workflow', 'logs', 'gated-1', '--json'], { cwd, env });
    expect(logs.status, logs.stderr).toBe(0);
    expect(logs.stdout).toContain('gate');
    expect(logs.stdout).not.toContain('gate-answer');

    // A workflow that runs no command is still served.
    writeFileSync(
      join(cwd, 'hello.yaml'),
      'workflow:\n  name: hello\n  entry_point: say\nagents:\n  - name: say\n    type: set\n    value: hi\n    routes:\n      - to: $end\n',
    );
    const hello = toolText(await post(toolCall('workflow_run', { file: 'hello.yaml' })));
    expect(hello.isError, hello.text).toBe(false);
    expect(JSON.parse(hello.text)).toMatchObject({ state: 'completed' });

    expect(filesUnder(cwd).filter((path) => /pwned|script-ran/.test(path))).toEqual([]);
    expect(existsSync(marker)).toBe(false);
    expectNoPlantedSecret(server, cwd);
  });

  it('with --allow-commands, run only for repositories and workflow files under a --repo-root', async () => {
    const cwd = temporaryDirectory();
    const root = join(cwd, 'root');
    mkdirSync(root);
    const outside = join(cwd, 'outside');
    const repo = createRepository(join(outside, 'repo'));
    const noRoot = await runCli(['serve', '--port', '0', '--allow-commands'], { cwd, env });
    expect(noRoot.status).toBe(EXIT_CODES.INVALID_INPUT);
    expect(noRoot.stderr).toMatch(/--allow-commands needs at least one --repo-root/);

    const server = await serve(['--allow-commands', '--repo-root', root], cwd);
    const port = portOf(server);
    const post = (body: string) =>
      send(port, { method: 'POST', path: '/mcp', headers: { ...mcpHeaders, ...server.auth }, body });

    const elsewhere = toolText(await post(toolCall('agent_run', attack(repo))));
    expect(elsewhere.text).toMatch(
      new RegExp(
        `^FORBIDDEN \\(exit 64\\): the repository \\(${repo}\\) is outside the folders this server works in\\n`,
      ),
    );
    // A link under the root to a repository elsewhere is elsewhere.
    symlinkSync(repo, join(root, 'link'));
    expect(toolText(await post(toolCall('agent_run', attack(join(root, 'link'))))).text).toMatch(
      /^FORBIDDEN .* is outside/,
    );
    expect(toolText(await post(toolCall('agent_run', attack(`${root}/../outside/repo`)))).text).toMatch(
      /^FORBIDDEN .* is outside/,
    );
    const remote = toolText(await post(toolCall('agent_run', attack('https://example.com/x.git'))));
    expect(remote.text).toMatch(
      /^FORBIDDEN \(exit 64\): agent_run over HTTP works only in local repositories/,
    );
    expect(filesUnder(cwd).filter((path) => path.includes('pwned'))).toEqual([]);

    const outsideMarker = join(cwd, 'outside-ran.txt');
    const outsideFlow = toolText(
      await post(toolCall('workflow_run', { file: scriptWorkflow(join(outside, 'flows'), outsideMarker) })),
    );
    expect(outsideFlow.text).toMatch(
      /^FORBIDDEN \(exit 64\): workflow file .* is outside the folders this server works in/,
    );
    expect(existsSync(outsideMarker)).toBe(false);

    const insideMarker = join(cwd, 'inside-ran.txt');
    const insideFlow = toolText(
      await post(toolCall('workflow_run', { file: scriptWorkflow(root, insideMarker) })),
    );
    expect(insideFlow.isError, insideFlow.text).toBe(false);
    expect(JSON.parse(insideFlow.text)).toMatchObject({ state: 'completed' });
    expect(readFileSync(insideMarker, 'utf8')).toMatch(/^uid=/);
  });

  it('with --allow-commands, refuse a folder under a root whose git repository is elsewhere', async () => {
    const cwd = temporaryDirectory();
    const root = join(cwd, 'root');
    const outside = createRepository(join(cwd, 'outside'));
    mkdirSync(join(outside, 'sub'));
    // A folder under the root whose .git is a link to the outside repository's: git works there.
    const linked = join(root, 'linked');
    mkdirSync(linked, { recursive: true });
    symlinkSync(join(outside, '.git'), join(linked, '.git'));
    // A link under the root to a subfolder of the outside repository.
    symlinkSync(join(outside, 'sub'), join(root, 'sub-link'));
    // A root that is itself a folder of a bigger repository.
    const big = createRepository(join(cwd, 'big'));
    const sandbox = join(big, 'sandbox');
    mkdirSync(join(sandbox, 'project'), { recursive: true });
    const ok = createRepository(join(root, 'ok'));

    const server = await serve(['--allow-commands', '--repo-root', root, '--repo-root', sandbox], cwd);
    const port = portOf(server);
    const post = (body: string) =>
      send(port, { method: 'POST', path: '/mcp', headers: { ...mcpHeaders, ...server.auth }, body });
    const marker = join(cwd, 'setup-ran.txt');
    const task = (repo: string) => ({
      task: { id: 'escape', title: 'nothing to see', setup: `echo ran >> ${marker}; exit 3` },
      repo,
      wait_seconds: 30,
    });

    const viaGitLink = toolText(await post(toolCall('agent_run', task(linked))));
    expect(viaGitLink.isError).toBe(true);
    expect(viaGitLink.text).toBe(
      `FORBIDDEN (exit 64): ${linked} is in a repository whose git folder (${join(outside, '.git')}) is outside the folders this server works in\n` +
        `hint: git works on the repository that holds ${linked}: use one whose folder and .git are both under ${root}, ${sandbox} (\`git init\` a folder of its own), or start serve with a --repo-root that holds that repository`,
    );
    const viaLink = toolText(await post(toolCall('agent_run', task(join(root, 'sub-link')))));
    expect(viaLink.text).toMatch(/^FORBIDDEN \(exit 64\): the repository \(.*\/outside\/sub\) is outside/);
    for (const repo of [sandbox, join(sandbox, 'project')]) {
      const enclosed = toolText(await post(toolCall('agent_run', task(repo))));
      expect(enclosed.text, repo).toMatch(
        new RegExp(
          `^FORBIDDEN \\(exit 64\\): ${repo} is in a repository whose git folder \\(${big}/\\.git\\) is outside`,
        ),
      );
    }

    // A workflow under the root whose git agent step is pointed (by its input) at such a folder.
    const flow = join(root, 'agent-flow.yaml');
    writeFileSync(
      flow,
      'workflow:\n  name: agentflow\n  entry_point: implement\n  input:\n    repo: { type: string }\nagents:\n' +
        `  - name: implement\n    type: agent\n    effects: git\n    repo: '{{ workflow.input.repo }}'\n    prompt: Add a file\n    setup: echo ran >> ${marker}; exit 3\n    routes:\n      - to: $end\n`,
    );
    for (const repo of [linked, join(sandbox, 'project')]) {
      const run = toolText(await post(toolCall('workflow_run', { file: flow, inputs: { repo } })));
      expect(JSON.parse(run.text), repo).toMatchObject({ state: 'failed', errorCode: 'FORBIDDEN' });
    }
    expect(existsSync(marker)).toBe(false);
    expect(git(outside, 'worktree', 'list').split('\n')).toHaveLength(1);
    expect(git(outside, 'branch', '--format=%(refname:short)')).toBe('main');
    expect(git(big, 'branch', '--format=%(refname:short)')).toBe('main');

    // A repository of its own under the root is served: its setup runs, and fails with its own exit
    // status, 3 (it cannot write the marker outside the worktree where the sandbox confines it).
    const served = toolText(await post(toolCall('agent_run', task(ok))));
    expect(served.isError, served.text).toBe(false);
    expect(JSON.parse(served.text)).toMatchObject({ state: 'failed', errorCode: 'SETUP_FAILED' });
    expect(served.text).toContain('exit status 3');
    expectNoPlantedSecret(server, cwd);
  });
});

describe('serve: the bearer token', () => {
  it('a caller on this machine needs the exact token; one of the same length is refused (--require-token is accepted, with no effect)', async () => {
    const cwd = temporaryDirectory();
    const server = await serve(['--require-token', '--skills', skills], cwd, {
      SWITCHBOARD_SERVER_TOKEN: token,
    });
    expect(server.token).toBe(token);
    const port = portOf(server);
    // Same length, last character changed: only a real comparison of the bytes refuses it.
    const last = token.at(-1) === 'a' ? 'b' : 'a';
    const sameLength = `${token.slice(0, -1)}${last}`;
    expect(sameLength).toHaveLength(token.length);
    const cases: Array<[string | undefined, number]> = [
      [undefined, 401],
      [`Bearer ${sameLength}`, 401],
      [`Bearer ${token.slice(0, -1)}`, 401],
      [`Bearer ${token}x`, 401],
      [`Basic ${token}`, 401],
      [`Bearer ${token}`, 200],
      [`bearer   ${token}`, 200],
    ];
    for (const [authorization, status] of cases) {
      const answer = await send(port, {
        method: 'POST',
        path: '/route',
        headers: {
          'content-type': 'application/json',
          ...(authorization === undefined ? {} : { authorization }),
        },
        body: JSON.stringify({ text: 'the app crashes whenever I save' }),
      });
      expect(answer.status, String(authorization)).toBe(status);
      if (status === 401) {
        expect(answer.headers['www-authenticate']).toBe('Bearer');
        expect(errorOf(answer)).toMatchObject({ code: 'SERVER_AUTH' });
      }
    }
    const route = ['route', '--server', server.url, '--skills', skills, 'the app crashes whenever I save'];
    const wrong = await runCli(route, { cwd, env: { ...env, SWITCHBOARD_SERVER_TOKEN: sameLength } });
    expect(wrong.status).toBe(EXIT_CODES.SERVER_AUTH);
    const right = await runCli([...route, '--json'], {
      cwd,
      env: { ...env, SWITCHBOARD_SERVER_TOKEN: token },
    });
    expect(right.status, right.stderr).toBe(0);
    expect(JSON.parse(right.stdout)).toMatchObject({ skill: 'fix-bug' });
    expect(server.stdout() + server.stderr()).not.toContain(token);
  });
});
