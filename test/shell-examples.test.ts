import type { ChildProcess } from 'node:child_process';
import { execFile } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { killServers, serve, type Served } from './helpers/serve-process.js';

// The runnable copies of docs/shell.md's examples, run as a user would: `switchboard` on PATH (the
// repo's bin/ launcher over the built dist), a real `switchboard serve` with a warm Claude Code process,
// `switchboard sim` as the API.

const root = join(import.meta.dirname, '..');
const skills = join(import.meta.dirname, 'fixtures/skills');
const children = new Set<ChildProcess>();
let sim: Simulator;
let server: Served;
let cwd: string;
let env: NodeJS.ProcessEnv;

function hasPython(): boolean {
  try {
    execFileSync('python3', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  sim = await startSimulator({
    maxLifetimeMs: 300_000,
    scenario: {
      rules: [
        { match: { model: 'refused' }, fault: { status: 401 } },
        { match: {}, reply: { text: 'On it: can you share the stack trace?' } },
      ],
    },
  });
  cwd = mkdtempSync(join(tmpdir(), 'switchboard-shell-'));
  env = {
    ...process.env,
    PATH: `${join(root, 'bin')}${delimiter}${process.env['PATH'] ?? ''}`,
    ANTHROPIC_API_KEY: 'sk-ant-shell-example-key',
    ANTHROPIC_BASE_URL: sim.url,
    CLAUDE_CONFIG_DIR: mkdtempSync(join(tmpdir(), 'switchboard-claude-config-')),
    SWITCHBOARD_ROUTE_SKILLS: skills,
    SWITCHBOARD_SERVER: '',
    SWITCHBOARD_SPEC: 'claude:haiku',
  };
  server = await serve(['--port', '0', '--pool', '1'], { cwd, env, children });
});

afterAll(async () => {
  killServers(children);
  await sim.close();
  rmSync(cwd, { recursive: true, force: true });
});

function run(
  command: string,
  args: string[],
  extra: NodeJS.ProcessEnv = {},
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd, env: { ...env, ...extra }, encoding: 'utf8', timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({
          status: error === null ? 0 : typeof error.code === 'number' ? error.code : null,
          stdout,
          stderr,
        }),
    );
  });
}

describe('examples/shell', () => {
  it('triage.sh routes, calls through SWITCHBOARD_SERVER, and branches on the exit codes', async () => {
    const script = join(root, 'examples/shell/triage.sh');
    const served = await run('bash', [script, 'the app crashes whenever I save'], {
      SWITCHBOARD_SERVER: server.url,
    });
    expect(served).toMatchObject({ status: 0, stdout: 'fix-bug\tOn it: can you share the stack trace?\n' });
    expect(served.stderr).not.toMatch(/did not answer/);
    const abstained = await run('bash', [script, 'order a large pepperoni pizza'], {
      SWITCHBOARD_SERVER: server.url,
    });
    expect(abstained).toMatchObject({ status: 10, stdout: '' });
    expect(abstained.stderr).toMatch(/no skill fits/);
    const refused = await run('bash', [script, 'the app crashes whenever I save'], {
      SWITCHBOARD_SERVER: server.url,
      SWITCHBOARD_SPEC: 'anthropic:refused-model',
    });
    expect(refused).toMatchObject({ status: 77, stdout: '' });
    expect(refused.stderr).toMatch(/the provider refused the credentials/);
  });

  it.skipIf(!hasPython())('triage.py does the same from Python with --server (needs python3)', async () => {
    const script = join(root, 'examples/shell/triage.py');
    const served = await run('python3', [script, '--server', server.url, 'the app crashes whenever I save']);
    expect(served).toMatchObject({
      status: 0,
      stdout: 'fix-bug\tOn it: can you share the stack trace?\tclaude:haiku\n',
    });
    const abstained = await run('python3', [script, '--server', server.url, 'order a large pepperoni pizza']);
    expect(abstained).toMatchObject({ status: 10, stdout: '' });
  });
});
