import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/core/errors.js';
import type { WorkflowRunResult } from '../src/workflows/api-types.js';
import { runCli, type CliRun } from './helpers/run-cli.js';

// Bad input to `switchboard workflow run`, as users make it: each is one line on stderr naming the file,
// the step and the field, with a distinct exit code and no stack trace; a run that already recorded
// steps keeps them, and resumes once the file is fixed.

const temporary: string[] = [];
afterAll(() => {
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

function folder(): string {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-wf-bad-')));
  temporary.push(cwd);
  return cwd;
}

async function run(cwd: string, text: string, args: string[] = []): Promise<CliRun> {
  writeFileSync(join(cwd, 'flow.yaml'), text);
  return runCli(['workflow', 'run', 'flow.yaml', ...args], { cwd, env: process.env });
}

/** The one line the CLI printed on stderr (no stack, no second line). */
function oneLine(result: CliRun): string {
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines, result.stderr).toHaveLength(1);
  expect(result.stderr).not.toMatch(/\n\s+at /);
  return lines[0] as string;
}

const START = `workflow:
  name: bad
  entry_point: first
agents:
  - name: first
    type: set
    value: ok
    routes:
      - to: second
`;

describe('workflow run: bad input', () => {
  it('malformed YAML names the file, line and column', async () => {
    const result = await run(folder(), `${START}  - name: second\n    type: set\n    value: [unclosed\n`);
    expect(result.status).toBe(EXIT_CODES.WORKFLOW_INVALID);
    expect(oneLine(result)).toMatch(/^switchboard: .*flow\.yaml:\d+:\d+: .*\(.+\)$/);
  });

  it('an unknown step type names the step and the field', async () => {
    const result = await run(folder(), `${START}  - name: second\n    type: teleport\n`);
    expect(result.status).toBe(EXIT_CODES.WORKFLOW_INVALID);
    expect(oneLine(result)).toMatch(
      /flow\.yaml:\d+:\d+: agents\[1\] "second": field "type": "teleport" is not valid; must be one of: agent, /,
    );
  });

  it('a route to nowhere names the step, the field and the target', async () => {
    const result = await run(
      folder(),
      `${START}  - name: second\n    type: set\n    value: x\n    routes:\n      - to: third\n`,
    );
    expect(result.status).toBe(EXIT_CODES.WORKFLOW_INVALID);
    expect(oneLine(result)).toMatch(/flow\.yaml.*agents\[1\] "second".*field "routes\[0\]\.to".*"third"/);
  });

  it('a missing input names it and how to pass it', async () => {
    const result = await run(
      folder(),
      `${START.replace('  entry_point: first\n', '  entry_point: first\n  input:\n    issue: { type: number }\n')}  - name: second\n    type: set\n    value: x\n`,
    );
    expect(result.status).toBe(EXIT_CODES.WORKFLOW_INVALID);
    expect(oneLine(result)).toMatch(/input "issue" is required.*-i issue=/);
  });

  it('a template error at run time names file, step and field; the steps before it stay recorded and the fixed file resumes', async () => {
    const cwd = folder();
    const broken = `workflow:
  name: bad
  entry_point: first
agents:
  - name: first
    type: script
    command: sh
    args: ["-c", "echo ran >> ticks.log; echo '{\\"n\\": 2}'"]
    routes:
      - to: second
  - name: second
    type: set
    value: "{{ frist.output.n + 1 }}"
    routes:
      - to: $end
output:
  n: "{{ second.output }}"
`;
    const failed = await run(cwd, broken, ['--run-id', 'typo']);
    expect(failed.status).toBe(EXIT_CODES.WORKFLOW_TEMPLATE);
    expect(failed.stderr).toMatch(/flow\.yaml: step "second" field "value": "frist" is undefined/);
    expect(failed.stderr).not.toMatch(/\n\s+at /);
    const status = JSON.parse(
      (await runCli(['workflow', 'status', 'typo', '--json'], { cwd, env: process.env })).stdout,
    ) as WorkflowRunResult;
    expect(status.steps.map((step) => [step.step, step.status])).toEqual([
      ['first', 'completed'],
      ['second', 'failed'],
    ]);
    writeFileSync(join(cwd, 'flow.yaml'), broken.replace('frist', 'first'));
    const resumed = await runCli(['workflow', 'resume', 'typo', '--migrate', '--json'], {
      cwd,
      env: process.env,
    });
    expect(resumed.status, resumed.stderr).toBe(0);
    expect((JSON.parse(resumed.stdout) as WorkflowRunResult).output).toEqual({ n: 3 });
    expect(readFileSync(join(cwd, 'ticks.log'), 'utf8')).toBe('ran\n');
  });
});
