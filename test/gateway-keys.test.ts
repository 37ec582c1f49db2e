import type { ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { runCli } from './helpers/run-cli.js';
import { startGateway, type Gateway } from './helpers/gateway-server.js';
import { killServers } from './helpers/serve-process.js';

// Virtual keys at the gateway, as a user makes them: `switchboard keys create` beside a running
// `switchboard serve` (the server is not restarted), then the official SDKs with the printed key.
// One team's key cannot spend another's budget, a key sees and uses only its models, its rpm holds,
// and a revoked key stops working while the server runs.

const children = new Set<ChildProcess>();
let sim: Simulator;
let server: Gateway;

beforeAll(async () => {
  sim = await startSimulator({ maxLifetimeMs: 300_000, scenario: { fallback: { text: 'keyed answer' } } });
  server = await startGateway({
    name: 'gateway-keys',
    yaml: [
      'roles:',
      '  sonnet: anthropic:claude-sonnet-4-5',
      'budgets:',
      '  rules:',
      '    - tag: team=payments',
      '      daily_usd: 0',
    ],
    args: ['--ui'],
    env: {
      ANTHROPIC_API_KEY: 'sk-ant-api03-gateway-keys-upstream-1212',
      ANTHROPIC_BASE_URL: sim.url,
      OPENAI_API_KEY: 'sk-openai-gateway-keys-3434',
      OPENAI_BASE_URL: sim.openAiBaseUrl,
      SWITCHBOARD_DATABASE_URL: '',
      SWITCHBOARD_KEY_SECRET: '',
    },
    children,
  });
});

afterAll(async () => {
  killServers(children);
  await sim.close();
  await server.close();
});

beforeEach(() => sim.clearLog());

async function createKey(...args: string[]): Promise<string> {
  const run = await runCli(['keys', 'create', ...args], { cwd: server.cwd, env: server.env });
  expect(run.stderr).not.toMatch(/sbk_[A-Za-z0-9_-]{20}/);
  expect(run.status).toBe(0);
  return run.stdout.trim();
}

const ask = (key: string, model = 'claude-haiku-4-5') =>
  new Anthropic({ apiKey: key, baseURL: server.url, maxRetries: 0 }).messages.create({
    model,
    max_tokens: 20,
    messages: [{ role: 'user', content: 'hi' }],
  });

function tagsOf(callId: string | null): Record<string, string> {
  const [row] = server.ledger<{ tags: string }>('SELECT tags FROM call_attempts WHERE call_id = ?', callId);
  return JSON.parse(row?.tags ?? '{}') as Record<string, string>;
}

describe('gateway with virtual keys', () => {
  it('a key made while the server runs works at once; its tags go on every attempt; stats show it by name', async () => {
    const key = await createKey('--name', 'web-ci', '--tag', 'team=web');
    expect(key).toMatch(/^sbk_[A-Za-z0-9_-]{43}$/);
    const { data, response } = await new Anthropic({
      apiKey: key,
      baseURL: server.url,
      maxRetries: 0,
    }).messages
      .create({ model: 'claude-haiku-4-5', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(data.content).toEqual([{ type: 'text', text: 'keyed answer' }]);
    expect(tagsOf(response.headers.get('x-switchboard-call-id'))).toMatchObject({
      team: 'web',
      'switchboard.key': expect.stringMatching(/^key_/),
      'switchboard.key_name': 'web-ci',
    });
    const stats = await runCli(['stats'], { cwd: server.cwd, env: server.env });
    expect(stats.stdout).toMatch(/web-ci\s+1\s+100\.0%/);
    // Neither the key nor the upstream key is anywhere in the state folder or the simulator's log.
    const state = join(server.cwd, '.switchboard');
    for (const name of readdirSync(state).filter((file) => file !== 'key-secret')) {
      expect(readFileSync(join(state, name)).includes(Buffer.from(key))).toBe(false);
    }
    expect(JSON.stringify(sim.requests)).not.toContain(key);
  });

  it('the dashboard lists the key’s calls, found by its tag', async () => {
    const code = /dashboard at http:\/\/[^ ]+\/ui\/\?code=([\w-]+)/.exec(server.stdout())?.[1];
    expect(code).toBeDefined();
    const exchange = await fetch(`${server.url}/ui/?code=${code}`, { redirect: 'manual' });
    const cookie = (exchange.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    const listed = await fetch(
      `${server.url}/ui/api/runs?kind=call&tag=${encodeURIComponent('switchboard.key_name=web-ci')}`,
      {
        headers: { cookie },
      },
    );
    expect(listed.status).toBe(200);
    const runs = (await listed.json()) as
      { runs?: { name: string; tags?: Record<string, string> }[] } | { name: string }[];
    const rows = Array.isArray(runs) ? runs : (runs.runs ?? []);
    expect(rows.map((run) => run.name)).toEqual(['anthropic:claude-haiku-4-5']);
  });

  it('one team’s key cannot spend another team’s budget: the payments cap of $0 stops only payments keys', async () => {
    const web = await createKey('--name', 'web-2', '--tag', 'team=web');
    const payments = await createKey('--name', 'payments', '--tag', 'team=payments');
    await expect(ask(web)).resolves.toMatchObject({ type: 'message' });
    const refused = await ask(payments).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(sim.requests).toHaveLength(1);
  });

  it('a key’s own --daily-usd 0 refuses before anything is sent', async () => {
    const capped = await createKey('--name', 'capped', '--daily-usd', '0');
    await expect(ask(capped)).rejects.toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(sim.requests).toHaveLength(0);
  });

  it('a key scoped to models uses and lists only those', async () => {
    const scoped = await createKey('--name', 'haiku-only', '--models', 'haiku');
    await expect(ask(scoped, 'claude-haiku-4-5')).resolves.toMatchObject({ type: 'message' });
    await expect(ask(scoped, 'sonnet')).rejects.toBeInstanceOf(Anthropic.PermissionDeniedError);
    const listed = await new OpenAI({
      apiKey: scoped,
      baseURL: `${server.url}/v1`,
      maxRetries: 0,
    }).models.list();
    const ids = listed.data.map((model) => model.id);
    expect(ids).toContain('haiku');
    expect(ids).not.toContain('sonnet');
    expect(ids).not.toContain('opus');
  });

  it('--rpm holds: the request over it is a 429 with retry-after, before anything is sent', async () => {
    const limited = await createKey('--name', 'slow-lane', '--rpm', '2');
    await ask(limited);
    await ask(limited);
    const error = await ask(limited).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    expect(
      Number((error as InstanceType<typeof Anthropic.RateLimitError>).headers?.get('retry-after')),
    ).toBeGreaterThan(0);
    expect(sim.requests).toHaveLength(2);
  });

  it('a revoked key stops working while the server runs', async () => {
    const key = await createKey('--name', 'short-lived');
    await expect(ask(key)).resolves.toMatchObject({ type: 'message' });
    const revoked = await runCli(['keys', 'revoke', 'short-lived'], { cwd: server.cwd, env: server.env });
    expect(revoked.status).toBe(0);
    // Within the directory's refresh (2 s); polled, not slept.
    let refused: unknown;
    const deadline = Date.now() + 15_000;
    while (refused === undefined && Date.now() < deadline) {
      refused = await ask(key).then(
        () => undefined,
        (error: unknown) => error,
      );
      if (refused === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(refused).toBeInstanceOf(Anthropic.AuthenticationError);
  });
});
