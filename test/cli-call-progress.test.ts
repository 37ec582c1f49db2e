import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';

// A call held up by a rate limit shows, on a terminal, what it waits for and how long.

const cli = join(import.meta.dirname, '../dist/cli/main.js');
let sim: Simulator;

beforeAll(async () => {
  sim = await startSimulator({
    maxLifetimeMs: 120_000,
    scenario: {
      rules: [
        { match: { provider: 'anthropic' }, times: 1, fault: { status: 429, retryAfter: 2 } },
        { match: { provider: 'anthropic' }, reply: { text: 'after the wait' } },
      ],
    },
  });
});
afterAll(async () => {
  await sim.close();
});

function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** Runs the CLI under a pseudo-terminal without blocking, so the simulator in this process can answer. */
function inTerminal(args: string[]): Promise<{ status: number | null; output: string }> {
  const cwd = mkdtempSync(join(tmpdir(), 'switchboard-call-progress-'));
  // A terminal wide enough for the whole bar line: a narrower one shows it cut at its right edge.
  const command = `stty cols 200; ${[process.execPath, cli, ...args].map(shellQuote).join(' ')}`;
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qfec', command, '/dev/null'], {
      cwd,
      env: { ...process.env, ANTHROPIC_API_KEY: 'sk-ant-progress-test', ANTHROPIC_BASE_URL: sim.url },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.once('error', reject);
    child.once('close', (status) => resolve({ status, output }));
  });
}

const hasScript = spawnSync('sh', ['-c', 'command -v script'], { stdio: 'ignore' }).status === 0;

describe('switchboard call waiting on a retry', () => {
  it.skipIf(!hasScript)('counts the wait down on a terminal, naming the provider and the error', async () => {
    const result = await inTerminal(['call', 'anthropic:claude-haiku-4-5', 'hello', '--no-ledger']);
    expect(result.status, result.output).toBe(0);
    expect(result.output).toMatch(
      /anthropic:claude-haiku-4-5: RATE_LIMITED, retry 1 in \[[^\]]*\] [0-2]\/2 /,
    );
    expect(result.output).toContain('after the wait');
  });
});
