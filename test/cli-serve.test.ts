import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { openLedger } from '../src/store/ledger.js';
import { parsePrometheus, sampleValue, samplesOf, type Sample } from './helpers/prometheus-text.js';
import { runCli } from './helpers/run-cli.js';
import { killServers, serve as startServe, type Served } from './helpers/serve-process.js';
import { waitFor } from './helpers/wait-for.js';

// `switchboard serve` and `switchboard metrics` as a user runs them: the built CLI listening on
// loopback, real HTTP, real SQLite ledgers, the LLM tier answered by `switchboard sim`.

const skills = join(import.meta.dirname, 'fixtures/skills');
const children = new Set<ChildProcess>();
const directories: string[] = [];
let sim: Simulator;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  const answer = (skill: string, confidence: number) => ({
    tool: { name: 'emit_output', input: { skill, confidence, reasoning: `looks like ${skill}` } },
    usage: { input: 300, output: 20 },
  });
  sim = await startSimulator({
    maxLifetimeMs: 300_000,
    scenario: {
      rules: [
        { match: { provider: 'anthropic', text: 'kaput' }, reply: answer('fix-bug', 0.9) },
        { match: { provider: 'anthropic', text: 'wobbly' }, reply: answer('fix-bug', 0.2) },
        {
          match: { provider: 'anthropic', text: 'sluggish' },
          reply: { ...answer('fix-bug', 0.9), delayMs: 800 },
        },
      ],
    },
  });
  env = { ...process.env, ANTHROPIC_API_KEY: 'sk-ant-serve-secret-0001', ANTHROPIC_BASE_URL: sim.url };
});

// Every server is killed, even when a test failed before stopping it.
afterAll(async () => {
  killServers(children);
  await sim.close();
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

function temporaryDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'switchboard-serve-'));
  directories.push(directory);
  return directory;
}

/** Each running server's `Authorization` header, by URL: every route but /healthz wants the token. */
const auth = new Map<string, { authorization: string }>();

async function serve(args: string[], cwd: string): Promise<Served> {
  // These servers only route: no warm Claude Code processes.
  const server = await startServe(['--pool', '0', ...args], { cwd, env, children });
  auth.set(server.url, server.auth);
  return server;
}

async function post(url: string, body: string): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${url}/route`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...auth.get(url) },
    body,
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

/** The route counters, as sorted `name{labels} value` lines, for comparing two expositions. */
function routeCounts(samples: readonly Sample[]): string[] {
  return samples
    .filter((sample) =>
      /^switchboard_route_(decisions_total|abstains_total|fallbacks_total|llm_calls_total|duration_seconds_count)$/.test(
        sample.name,
      ),
    )
    .map((sample) => `${sample.name}${JSON.stringify(sample.labels)} ${sample.value}`)
    .sort();
}

describe('switchboard serve --metrics', () => {
  it('routes over HTTP, counts every decision in /metrics, and stops cleanly on SIGTERM', async () => {
    const cwd = temporaryDirectory();
    const server = await serve(
      [
        '--metrics',
        '--port',
        '0',
        '--skills',
        skills,
        '--mode',
        'hybrid',
        '--provider',
        'anthropic:claude-haiku-4-5',
      ],
      cwd,
    );
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'ok', mode: 'hybrid' });

    const requests = [
      'the app crashes whenever I save',
      'add a dark mode setting',
      'there is a stack trace in the log',
      'the gizmo went kaput',
      'the gizmo is wobbly',
      'the app crashes whenever I save',
    ];
    const decisions: Record<string, unknown>[] = [];
    for (const text of requests) {
      const routed = await post(server.url, JSON.stringify({ text, tags: { caller: 'serve-test' } }));
      expect(routed.status).toBe(200);
      decisions.push(routed.json);
    }
    expect(decisions.map((decision) => [decision['method'], decision['skill']])).toEqual([
      ['local', 'fix-bug'],
      ['local', 'add-feature'],
      ['rules', 'fix-bug'],
      ['llm', 'fix-bug'],
      ['fallback', 'none'],
      ['cache', 'fix-bug'],
    ]);

    // Bad bodies: 400 and a one-line JSON error naming the problem.
    for (const [body, message] of [
      ['not json', /not valid JSON/],
      ['[1, 2]', /JSON object/],
      ['{"text": 42}', /"text" to be a string/],
      ['{"text": "hi", "tags": {"n": 1}}', /"tags" to be an object of strings/],
      ['{"text": "   "}', /request is empty/],
    ] as const) {
      const response = await fetch(`${server.url}/route`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...server.auth },
        body,
      });
      expect(response.status).toBe(400);
      const text = await response.text();
      expect(text.trim().split('\n')).toHaveLength(1);
      expect(JSON.parse(text)).toMatchObject({
        error: { code: 'INVALID_INPUT', message: expect.stringMatching(message) },
      });
    }
    expect((await fetch(`${server.url}/route`, { headers: server.auth })).status).toBe(405);
    expect((await fetch(`${server.url}/nowhere`, { headers: server.auth })).status).toBe(404);

    const scraped = await fetch(`${server.url}/metrics`, { headers: server.auth });
    expect(scraped.status).toBe(200);
    expect(scraped.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const samples = parsePrometheus(await scraped.text());
    const count = (method: string, skill: string) =>
      sampleValue(samples, 'switchboard_route_decisions_total', { method, skill });
    expect(count('local', 'fix-bug')).toBe(1);
    expect(count('local', 'add-feature')).toBe(1);
    expect(count('rules', 'fix-bug')).toBe(1);
    expect(count('llm', 'fix-bug')).toBe(1);
    expect(count('fallback', 'none')).toBe(1);
    expect(count('cache', 'fix-bug')).toBe(1);
    expect(sampleValue(samples, 'switchboard_route_abstains_total')).toBe(1);
    expect(sampleValue(samples, 'switchboard_route_fallbacks_total', { reason: 'unsure' })).toBe(1);
    expect(sampleValue(samples, 'switchboard_route_abstain_ratio')).toBeCloseTo(1 / 6);
    expect(sampleValue(samples, 'switchboard_route_fallback_ratio')).toBeCloseTo(1 / 6);
    expect(sampleValue(samples, 'switchboard_route_llm_calls_total')).toBe(2);
    const spent = decisions.reduce((total, decision) => total + (decision['costUsd'] as number), 0);
    expect(spent).toBeGreaterThan(0);
    expect(sampleValue(samples, 'switchboard_route_llm_cost_usd_total')).toBeCloseTo(spent, 10);
    const durations = samplesOf(samples, 'switchboard_route_duration_seconds_count');
    expect(durations.reduce((total, sample) => total + sample.value, 0)).toBe(6);
    expect(sampleValue(samples, 'switchboard_route_errors_total', { code: 'INVALID_INPUT' })).toBe(5);
    // Labels hold methods, skills and codes only: never the request text or an id.
    const labelValues = samples.flatMap((sample) => Object.values(sample.labels)).join(' ');
    expect(labelValues).not.toMatch(/gizmo|crashes|sk-ant|[0-9a-f]{8}-[0-9a-f]{4}/);

    server.child.kill('SIGTERM');
    expect(await server.exited).toEqual({ code: 0, signal: null });
    expect(server.stderr()).toBe('');
    const ledger = openLedger({ stateDir: join(cwd, '.switchboard') });
    const stored = await ledger.listRouteDecisions();
    await ledger.close();
    expect(stored).toHaveLength(6);
    expect(new Set(stored.map((decision) => decision.id))).toEqual(
      new Set(decisions.map((decision) => decision['id'])),
    );
    expect(stored.every((decision) => decision.tags['caller'] === 'serve-test')).toBe(true);

    // The file export rebuilds the same route counts from the ledger the server wrote.
    const out = join(cwd, 'switchboard.prom');
    writeFileSync(out, 'stale\n');
    const exported = await runCli(['metrics', '--out', out], { cwd, env });
    expect(exported).toMatchObject({ status: 0, stderr: '' });
    expect(exported.stdout).toBe('');
    const fromFile = parsePrometheus(readFileSync(out, 'utf8'));
    expect(routeCounts(fromFile)).toEqual(routeCounts(samples));
    expect(sampleValue(fromFile, 'switchboard_route_llm_cost_usd_total')).toBeCloseTo(spent, 10);
    expect(readdirSync(cwd).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });
});

describe('switchboard serve', () => {
  it('lets a request in flight finish on SIGTERM, records it, then exits 0', async () => {
    const cwd = temporaryDirectory();
    const hybrid = ['--mode', 'hybrid', '--provider', 'anthropic:claude-haiku-4-5'];
    const server = await serve(['--port', '0', '--skills', skills, ...hybrid], cwd);
    const started = Date.now();
    const asked = sim.requests.length;
    const pending = post(server.url, JSON.stringify({ text: 'the gizmo is sluggish' }));
    // SIGTERM once the LLM request is in flight (the simulator holds its answer for 800 ms).
    await waitFor(
      () => sim.requests.slice(asked).some((entry) => entry.text?.includes('sluggish') === true),
      {
        what: 'the LLM request to reach the simulator',
      },
    );
    server.child.kill('SIGTERM');
    const routed = await pending;
    expect(routed).toMatchObject({ status: 200, json: { method: 'llm', skill: 'fix-bug' } });
    expect(await server.exited).toEqual({ code: 0, signal: null });
    expect(Date.now() - started).toBeLessThan(3_000);
    const ledger = openLedger({ stateDir: join(cwd, '.switchboard') });
    expect(await ledger.getRouteDecision(routed.json['id'] as string)).toMatchObject({ method: 'llm' });
    await ledger.close();
  });

  it('has no /metrics without --metrics, and a busy port fails with exit 7 naming the port', async () => {
    const cwd = temporaryDirectory();
    const first = await serve(['--port', '0', '--skills', skills], cwd);
    const metrics = await fetch(`${first.url}/metrics`, { headers: first.auth });
    expect(metrics.status).toBe(404);
    expect(await metrics.json()).toMatchObject({ error: { hint: expect.stringMatching(/--metrics/) } });

    const port = new URL(first.url).port;
    const busy = await serve(['--port', port, '--skills', skills], cwd).then(
      () => ({ code: 0, stderr: 'it started' }),
      (error: { code: number | null; stderr: string }) => error,
    );
    expect(busy.code).toBe(7);
    const lines = busy.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(`^switchboard: port ${port} on 127\\.0\\.0\\.1 is already in use.*--port`),
    );

    first.child.kill('SIGINT');
    expect(await first.exited).toEqual({ code: 0, signal: null });
  });
});

describe('switchboard metrics', () => {
  it('prints the ledger as Prometheus text, and fails in one line when the file cannot be written', async () => {
    const cwd = temporaryDirectory();
    for (const text of ['the app crashes whenever I save', 'order a large pepperoni pizza']) {
      await runCli(['route', '--skills', skills, text], { cwd, env });
    }
    const printed = await runCli(['metrics', '--since', '1h'], { cwd, env });
    expect(printed.status).toBe(0);
    const samples = parsePrometheus(printed.stdout);
    expect(
      sampleValue(samples, 'switchboard_route_decisions_total', { method: 'local', skill: 'fix-bug' }),
    ).toBe(1);
    expect(sampleValue(samples, 'switchboard_route_abstains_total')).toBe(1);
    expect(sampleValue(samples, 'switchboard_route_abstain_ratio')).toBe(0.5);

    const missing = join(cwd, 'no/such/folder/switchboard.prom');
    const failed = await runCli(['metrics', '--out', missing], { cwd, env });
    expect(failed.status).toBe(2);
    expect(failed.stderr.trim().split('\n')).toHaveLength(1);
    expect(failed.stderr).toMatch(/cannot write metrics to .*switchboard\.prom \(ENOENT\)/);
    expect(existsSync(join(cwd, 'no'))).toBe(false);
    expect((await runCli(['metrics', '--since', 'yesterday'], { cwd, env })).status).toBe(2);
  });
});
