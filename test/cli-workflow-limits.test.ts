import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Sqlite from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/core/errors.js';
import type { WorkflowRunResult } from '../src/workflows/api-types.js';
import { runCli } from './helpers/run-cli.js';

// A run must not be able to exhaust the machine: a script's output is capped, a template's evaluation
// is bounded, and SIGTERM still ends a run (which stays resumable). The built CLI, a real SQLite ledger.

const cli = join(import.meta.dirname, '..', 'dist/cli/main.js');
const temporary: string[] = [];
afterAll(() => {
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

function folder(files: Record<string, string>): string {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-wf-limits-')));
  temporary.push(cwd);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(cwd, name), text);
  return cwd;
}

const run = (cwd: string, args: string[]) => runCli(args, { cwd, env: { ...process.env } });

/** Two steps: the first's command given, the second leaves a file when it runs. */
const twoSteps = (args: string, extra = '') => `workflow:
  name: limits
  entry_point: first
agents:
  - name: first
    type: script
    command: sh
    args: [${args}]${extra}
    routes:
      - to: second
  - name: second
    type: script
    command: sh
    args: ["-c", "touch second-ran"]
    routes:
      - to: $end
`;

describe('a script step that prints without end', () => {
  it('printing 100 MB is killed at max_output_bytes (1 MiB): OUTPUT_LIMIT, its tail kept, the ledger row small, nothing after it runs', async () => {
    const cwd = folder({ 'flow.yaml': twoSteps('"-c", "yes | head -c 100000000"') });
    const result = await run(cwd, ['workflow', 'run', 'flow.yaml', '--run-id', 'loud']);
    expect(result.status, result.stderr).toBe(EXIT_CODES.OUTPUT_LIMIT);
    expect(result.stderr).toMatch(
      /step "first": the script printed more than 1048576 bytes on stdout \(max_output_bytes\) and was killed .*Raise max_output_bytes on the step/,
    );
    expect(existsSync(join(cwd, 'second-ran'))).toBe(false);
    const ledger = new Sqlite(join(cwd, '.switchboard', 'ledger.db'), { readonly: true });
    const row = ledger
      .prepare(
        "SELECT status, error_code, length(output) AS size, output FROM workflow_steps WHERE key = 'loud/first/0'",
      )
      .get() as { status: string; error_code: string; size: number; output: string };
    ledger.close();
    expect(row).toMatchObject({ status: 'failed', error_code: 'OUTPUT_LIMIT' });
    expect(row.size).toBeLessThan(200 * 1024);
    expect((JSON.parse(row.output) as { stdout: string }).stdout).toMatch(/^(y\n)+$/);
  });

  it('a step raises its own cap with max_output_bytes', async () => {
    const cwd = folder({
      'flow.yaml': twoSteps('"-c", "yes | head -c 2000000"', '\n    max_output_bytes: 3000000'),
    });
    const result = await run(cwd, ['workflow', 'run', 'flow.yaml']);
    expect(result.status, result.stderr).toBe(0);
    expect(existsSync(join(cwd, 'second-ran'))).toBe(true);
  });
});

describe('a template that would run the process out of memory', () => {
  it('{{ range(100000000) | length }} fails WORKFLOW_TEMPLATE naming the bound', async () => {
    const cwd = folder({
      'flow.yaml': `workflow:
  name: big
  entry_point: count
agents:
  - name: count
    type: set
    value: "{{ range(100000000) | length }}"
    routes:
      - to: $end
`,
    });
    const result = await run(cwd, ['workflow', 'run', 'flow.yaml']);
    expect(result.status, result.stderr).toBe(EXIT_CODES.WORKFLOW_TEMPLATE);
    expect(result.stderr).toMatch(/range\(\) of 100000000 items is over the limit of 100000/);
  });
});

describe('SIGTERM', () => {
  it('ends a run in a long script; the run is left failed (not running) and resumes to the end', async () => {
    const cwd = folder({
      'flow.yaml': twoSteps('"-c", "if [ -f once ]; then exit 0; fi; touch once; exec sleep 60"'),
    });
    const child = spawn(process.execPath, [cli, 'workflow', 'run', 'flow.yaml', '--run-id', 'term'], {
      cwd,
      stdio: 'ignore',
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    while (!existsSync(join(cwd, 'once'))) await new Promise((resolve) => setTimeout(resolve, 50));
    child.kill('SIGTERM');
    expect(await exited).toBe(EXIT_CODES.ABORTED);
    const status = JSON.parse(
      (await run(cwd, ['workflow', 'status', 'term', '--json'])).stdout,
    ) as WorkflowRunResult;
    expect(status.status).toBe('failed');
    const resumed = await run(cwd, ['workflow', 'resume', 'term']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(readFileSync(join(cwd, 'second-ran'), 'utf8')).toBe('');
  });
});
