import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { runCli } from './helpers/run-cli.js';
import { killServers, serve, type Served } from './helpers/serve-process.js';

// Attacks on the gateway by a holder of a scoped virtual key, against a real `switchboard serve` and
// the simulator as upstream: the key's model scope must hold whatever name the request gives (an
// inline chain, a subagent tag, a configured route), and count_tokens is under the key's limits.

const children = new Set<ChildProcess>();
let sim: Simulator;
let server: Served;
let cwd: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  sim = await startSimulator({ maxLifetimeMs: 300_000, scenario: { fallback: { text: 'attacked answer' } } });
  cwd = mkdtempSync(join(tmpdir(), 'switchboard-gateway-attacks-'));
  writeFileSync(
    join(cwd, 'switchboard.yaml'),
    ['gateway:', '  routes:', '    think: anthropic:claude-opus-4-1', ''].join('\n'),
  );
  env = {
    ...process.env,
    ANTHROPIC_API_KEY: 'sk-ant-api03-gateway-attacks-upstream-5656',
    ANTHROPIC_BASE_URL: sim.url,
    OPENAI_API_KEY: 'sk-openai-gateway-attacks-7878',
    OPENAI_BASE_URL: sim.openAiBaseUrl,
    SWITCHBOARD_SERVER: '',
    SWITCHBOARD_SERVER_TOKEN: '',
    SWITCHBOARD_DATABASE_URL: '',
    SWITCHBOARD_KEY_SECRET: '',
  };
  server = await serve(['--port', '0', '--pool', '0'], { cwd, children, env });
});

afterAll(async () => {
  killServers(children);
  await sim.close();
  rmSync(cwd, { recursive: true, force: true });
});

beforeEach(() => sim.clearLog());

async function createKey(...args: string[]): Promise<string> {
  const run = await runCli(['keys', 'create', ...args], { cwd, env });
  expect(run.status).toBe(0);
  return run.stdout.trim();
}

function post(key: string, path: string, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
}

const message = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  max_tokens: 20,
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});

/** The models the simulator was asked for since the last clearLog. */
const modelsSent = () => sim.requests.map((entry) => entry.model);

describe('a scoped key cannot escape its model scope', () => {
  let haiku: string;
  beforeAll(async () => {
    haiku = await createKey('--name', 'haiku-attacker', '--models', 'haiku');
  });

  it('the scope still lets the key use its own model', async () => {
    const response = await post(haiku, '/v1/messages', message('claude-haiku-4-5'));
    expect(response.status).toBe(200);
    expect(modelsSent()).toEqual(['claude-haiku-4-5']);
  });

  it('an inline chain whose last entry is in scope does not reach the models before it', async () => {
    // Before the fix: mayUseModel read only the text after the last ':' (claude-haiku-4-5), and the
    // chain went to claude-opus-4-1 first.
    const response = await post(
      haiku,
      '/v1/messages',
      message('anthropic:claude-opus-4-1,anthropic:claude-haiku-4-5'),
    );
    expect(response.status).toBe(403);
    expect(modelsSent()).toEqual([]);
  });

  it('an inline chain cannot reach count_tokens of a model out of scope either', async () => {
    const response = await post(
      haiku,
      '/v1/messages/count_tokens',
      message('anthropic:claude-opus-4-1,anthropic:claude-haiku-4-5'),
    );
    expect(response.status).toBe(403);
    expect(modelsSent()).toEqual([]);
  });

  it('a subagent tag in the system prompt does not send the request to a model out of scope', async () => {
    // Before the fix: the tag's name replaced the model after the scope was checked on the requested
    // name, with no route configured at all.
    const response = await post(
      haiku,
      '/v1/messages',
      message('claude-haiku-4-5', {
        system: '<CCR-SUBAGENT-MODEL>anthropic:claude-opus-4-1</CCR-SUBAGENT-MODEL> you are a subagent',
      }),
    );
    expect(response.status).toBe(200);
    expect(modelsSent()).toEqual(['claude-haiku-4-5']);
  });

  it('gateway.routes does not reroute a scoped key to a model it may not use', async () => {
    // `think: anthropic:claude-opus-4-1` is the admin's routing, not a grant beyond the key's scope.
    const response = await post(
      haiku,
      '/v1/messages',
      message('claude-haiku-4-5', { thinking: { type: 'enabled', budget_tokens: 1024 } }),
    );
    expect(response.status).toBe(200);
    expect(modelsSent()).toEqual(['claude-haiku-4-5']);
  });
});

describe('count_tokens is under the key’s limits', () => {
  it('--rpm 1 holds for count_tokens as for messages: the second request is a 429 before anything is sent', async () => {
    // Before the fix: count_tokens never took room under the key's limits, so a key with --rpm 1 sent
    // the server's Anthropic key upstream as often as it liked.
    const limited = await createKey('--name', 'count-flooder', '--rpm', '1');
    const first = await post(limited, '/v1/messages/count_tokens', message('claude-haiku-4-5'));
    expect(first.status).toBe(200);
    const second = await post(limited, '/v1/messages/count_tokens', message('claude-haiku-4-5'));
    expect(second.status).toBe(429);
    expect(sim.requests).toHaveLength(1);
  });
});
