import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// What a program pays for at start-up: the packages it resolves, recorded by a resolve hook in a real
// Node process running the built library or CLI. Start-up times are measured in bench/startup.ts.

const root = join(import.meta.dirname, '..');
const hook = join(import.meta.dirname, 'fixtures/lazy/record-resolved.mjs');

/** Tracing's packages, imported only when an OTLP endpoint is set. */
const OPENTELEMETRY = [
  '@opentelemetry/api',
  '@opentelemetry/sdk-trace',
  '@opentelemetry/resources',
  '@opentelemetry/exporter-trace-otlp-http',
];

/** Heavy packages no routing program needs. */
const HEAVY = [
  '@anthropic-ai/sdk',
  '@anthropic-ai/claude-agent-sdk',
  'openai',
  '@google/genai',
  'execa',
  'zod',
  'ajv',
  'prom-client',
  'pg-boss',
  'cli-progress',
  ...OPENTELEMETRY,
];

/** Every module URL a node process resolved while running `args`. */
function modulesLoaded(args: string[], cwd = root, environment: NodeJS.ProcessEnv = process.env): string[] {
  const record = join(mkdtempSync(join(tmpdir(), 'switchboard-lazy-')), 'resolved.txt');
  writeFileSync(record, '');
  execFileSync(process.execPath, ['--import', hook, ...args], {
    cwd,
    env: { ...environment, SWITCHBOARD_TEST_RESOLVED: record },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return readFileSync(record, 'utf8')
    .split('\n')
    .filter((url) => url !== '');
}

/** The npm packages a node process resolved while running `args`. */
function packagesLoaded(
  args: string[],
  cwd = root,
  environment: NodeJS.ProcessEnv = process.env,
): Set<string> {
  const packages = new Set<string>();
  for (const url of modulesLoaded(args, cwd, environment)) {
    const match = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    if (match !== null) packages.add(match[1] as string);
  }
  return packages;
}

describe('start-up loads only what is used', () => {
  it('importing the library and routing with it loads no provider SDK and no heavy package', () => {
    const program = `
      const { createRouter } = await import(${JSON.stringify(join(root, 'dist/index.js'))});
      const router = createRouter({ skills: ${JSON.stringify(join(root, 'examples/skills'))} });
      const decision = await router.route('the login page crashes when I submit the form');
      if (typeof decision.skill !== 'string') throw new Error('no decision');
      router.close();`;
    const loaded = packagesLoaded(['--input-type=module', '-e', program]);
    expect(HEAVY.filter((name) => loaded.has(name))).toEqual([]);
  });

  it('a call loads no OpenTelemetry package unless an OTLP endpoint is set', () => {
    // A call to a port nothing listens on: it fails, after going through the call and attempt paths.
    const program = `
      process.env.OPENAI_API_KEY = 'sk-lazy-test-0123456789abcdef';
      const { call } = await import(${JSON.stringify(join(root, 'dist/index.js'))});
      await call('openai@http://127.0.0.1:9/v1:gpt-4.1-mini', { prompt: 'hi' }, {
        ledger: false,
        retry: { maxAttempts: 1 },
      }).catch(() => undefined);`;
    const env = { ...process.env };
    delete env['OTEL_EXPORTER_OTLP_ENDPOINT'];
    delete env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'];
    const loaded = packagesLoaded(['--input-type=module', '-e', program], root, env);
    expect(OPENTELEMETRY.filter((name) => loaded.has(name))).toEqual([]);
    // The same call with an endpoint (nothing listens there either) loads them: the check above can fail.
    const traced = packagesLoaded(['--input-type=module', '-e', program], root, {
      ...env,
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
    });
    expect(OPENTELEMETRY.filter((name) => traced.has(name))).toEqual(OPENTELEMETRY);
  });

  it('creating a Claude Code provider, with or without a warm pool, loads no Agent SDK until a call', () => {
    for (const options of ['{}', "{ pool: { size: 2, model: 'claude-haiku-4-5' } }"]) {
      const program = `
        const { createClaudeCodeProvider } = await import(${JSON.stringify(join(root, 'dist/index.js'))});
        createClaudeCodeProvider(${options});`;
      expect(packagesLoaded(['--input-type=module', '-e', program])).not.toContain(
        '@anthropic-ai/claude-agent-sdk',
      );
    }
  });

  it('`switchboard route` loads neither the other commands’ packages nor YAML once the skills are cached', () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'switchboard-lazy-state-'));
    const args = [
      join(root, 'dist/cli/main.js'),
      '--state-dir',
      stateDir,
      'route',
      '--skills',
      'examples/skills',
    ];
    // The first run parses the skill files (YAML) and trains the model; the second finds both cached.
    expect(packagesLoaded([...args, 'deploy the new version to production'])).toContain('yaml');
    const loaded = packagesLoaded([...args, 'the tests fail on main since yesterday']);
    expect([...HEAVY, 'yaml'].filter((name) => loaded.has(name))).toEqual([]);
  });

  // `call --server` and `route --server` must start fast: their command modules load no provider SDK,
  // router or ledger until they run in process.
  it.each(['call.js', 'route.js', 'server-client.js'])(
    'dist/cli/%s loads no provider, router or ledger',
    (file) => {
      const program = `await import(${JSON.stringify(join(root, 'dist/cli', file))});`;
      const loaded = modulesLoaded(['--input-type=module', '-e', program]);
      expect(loaded.some((url) => url.endsWith(`/dist/cli/${file}`))).toBe(true);
      const heavy =
        /@anthropic-ai|node_modules\/openai|@google\/genai|prom-client|better-sqlite3|dist\/(route|providers|invoke|store)\//;
      expect(loaded.filter((url) => heavy.test(url))).toEqual([]);
    },
  );

  it('`switchboard --version` loads no command at all', () => {
    const loaded = packagesLoaded([join(root, 'dist/cli/main.js'), '--version']);
    expect([...loaded]).toEqual(['commander']);
  });
});
