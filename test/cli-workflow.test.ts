import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/core/errors.js';
import { runCli, type CliRun } from './helpers/run-cli.js';

// `switchboard workflow` (alias `wf`) as a user types it: the built CLI. This file holds what the
// command does before it reaches the engine: usage errors, help, config; runs are in
// cli-workflow-runs.test.ts.

const temporary: string[] = [];
afterAll(() => {
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

function workspace(): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-wf-cli-')));
  temporary.push(directory);
  return directory;
}

function run(args: string[], cwd = workspace()): Promise<CliRun> {
  return runCli(args, { cwd, env: { ...process.env } });
}

/** A usage error: exit 2, one line on stderr naming the problem and the fix, nothing on stdout. */
function expectUsageError(result: CliRun, what: RegExp): void {
  expect(result.status, result.stderr).toBe(EXIT_CODES.INVALID_INPUT);
  expect(result.stdout).toBe('');
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines, result.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^switchboard: .+\(.+\)$/);
  expect(lines[0]).toMatch(what);
  expect(result.stderr, 'no stack trace').not.toMatch(/\n\s+at /);
}

describe('switchboard workflow: usage', () => {
  it('run without FILE names the missing argument and the help to read', async () => {
    const result = await run(['workflow', 'run']);
    expectUsageError(result, /missing required argument 'file'.*switchboard workflow run --help/);
  });

  it('-i without "=" says how to write an input', async () => {
    const result = await run(['workflow', 'run', 'flow.yaml', '-i', 'foo']);
    expectUsageError(result, /'foo' is invalid.*expected name=value, e\.g\. -i issue=42/);
  });

  it('-i with an empty name, or the same name twice, is refused the same way', async () => {
    expectUsageError(await run(['wf', 'run', 'flow.yaml', '-i', '=1']), /expected name=value/);
    expectUsageError(
      await run(['wf', 'run', 'flow.yaml', '-i', 'issue=1', '--input', 'issue=2']),
      /"issue" is given twice/,
    );
  });

  it('--provider-map without "=" says how to map a provider', async () => {
    const result = await run(['workflow', 'run', 'flow.yaml', '--provider-map', 'copilot']);
    expectUsageError(result, /expected name=spec, e\.g\. --provider-map copilot=claude:sonnet/);
  });

  it('gate without --choose or --answer names both', async () => {
    const result = await run(['workflow', 'gate', 'some-run']);
    expectUsageError(
      result,
      /nothing to answer with \(a human_gate takes --choose VALUE; a questions step takes --answer ID=TEXT/,
    );
  });

  it('resume refuses a limit that is not a positive number', async () => {
    expectUsageError(await run(['workflow', 'resume', 'r', '--max-iterations', '0']), /whole number/);
    expectUsageError(await run(['workflow', 'resume', 'r', '--budget', 'lots']), /positive number/);
  });

  it('an unknown subcommand is a usage error of `workflow`', async () => {
    const result = await run(['workflow', 'launch', 'flow.yaml']);
    expectUsageError(result, /unknown command 'launch'/);
  });

  it('workflows.provider_map in switchboard.yaml must be a mapping of names to specs', async () => {
    const cwd = workspace();
    writeFileSync(join(cwd, 'switchboard.yaml'), 'workflows:\n  provider_map: [copilot]\n');
    const result = await run(['workflow', 'status', 'some-run'], cwd);
    expect(result.status, result.stderr).toBe(EXIT_CODES.CONFIG_INVALID);
    expect(result.stderr.trimEnd()).toMatch(
      /^switchboard: .*switchboard\.yaml at "workflows\.provider_map".+\(.+\)$/,
    );
  });
});

describe('switchboard workflow validate', () => {
  const VALID = `workflow:
  name: greet
  entry_point: greet
  input:
    name: { type: string }
agents:
  - name: greet
    type: set
    value: "Hello, {{ workflow.input.name }}"
    routes:
      - to: shout
  - name: shout
    type: script
    command: echo
    args: ["{{ greet.output }}"]
    routes:
      - to: $end
`;

  function withFile(text: string): string {
    const cwd = workspace();
    writeFileSync(join(cwd, 'flow.yaml'), text);
    return cwd;
  }

  it('a valid file: exit 0 and a summary', async () => {
    const result = await run(['workflow', 'validate', 'flow.yaml'], withFile(VALID));
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toBe('flow.yaml: valid (2 steps, 0 groups; starts at greet)\n');
    expect(result.stderr).toBe('');
  });

  it('lists the problems with their step and field, warnings too, and exits WORKFLOW_INVALID', async () => {
    // greet reads a step that runs after it; orphan is reached by no route; hooks are not supported.
    const broken = `${VALID.replace(
      'Hello, {{ workflow.input.name }}',
      'Hello, {{ shout.output.stdout }}',
    ).replace(
      '  entry_point: greet\n',
      '  entry_point: greet\n  hooks:\n    on_start: "{{ workflow.name }}"\n',
    )}  - name: orphan\n    type: set\n    value: x\n`;
    const result = await run(['wf', 'validate', 'flow.yaml'], withFile(broken));
    expect(result.status, result.stderr).toBe(EXIT_CODES.WORKFLOW_INVALID);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('flow.yaml: 1 problem, 2 warnings');
    expect(lines).toContain(
      'error    greet: field "value": value reads "shout", which cannot have run before "greet"',
    );
    expect(lines).toContainEqual(expect.stringMatching(/^warning {2}workflow: hooks is not supported/));
    expect(lines).toContain('warning  orphan: no route leads to "orphan"; it never runs');
    expect(result.stderr).toBe(
      'switchboard: flow.yaml is not a valid workflow: 1 problem (fix it as listed, then validate again)\n',
    );
  });

  it('a problem that stops the loader names the file, line, step and field', async () => {
    const result = await run(
      ['workflow', 'validate', 'flow.yaml'],
      withFile(VALID.replace('- to: shout', '- to: nowhere')),
    );
    expect(result.status).toBe(EXIT_CODES.WORKFLOW_INVALID);
    expect(result.stdout).toMatch(
      /^flow\.yaml: 1 problem, 0 warnings\nerror {4}\S*flow\.yaml:\d+:\d+: agents\[0\] "greet": field "routes\[0\]\.to": "nowhere" is not a step, a group or \$end \(.+\)\n$/,
    );
  });

  it('--json prints {file, valid, problems, warnings}', async () => {
    const result = await run(
      ['workflow', 'validate', 'flow.yaml', '--json'],
      withFile(VALID.replace('- to: shout', '- to: nowhere')),
    );
    expect(result.status).toBe(EXIT_CODES.WORKFLOW_INVALID);
    const report = JSON.parse(result.stdout) as {
      file: string;
      valid: boolean;
      problems: unknown[];
      warnings: unknown[];
    };
    expect(report).toMatchObject({ file: 'flow.yaml', valid: false });
    expect(report.problems).toEqual([
      expect.objectContaining({ field: 'routes[0].to', message: expect.stringContaining('"nowhere"') }),
    ]);
  });

  it('malformed YAML is one problem naming the line and column', async () => {
    const result = await run(
      ['workflow', 'validate', 'flow.yaml'],
      withFile('workflow:\n  name: [unclosed\n'),
    );
    expect(result.status).toBe(EXIT_CODES.WORKFLOW_INVALID);
    expect(result.stdout).toMatch(
      /^flow\.yaml: 1 problem, 0 warnings\nerror {4}.*flow\.yaml:\d+:\d+: not valid YAML/,
    );
  });

  it('a missing file says so', async () => {
    const result = await run(['workflow', 'validate', 'absent.yaml']);
    expect(result.status).toBe(EXIT_CODES.WORKFLOW_INVALID);
    expect(result.stdout).toMatch(/no such workflow file \(check the path\)/);
  });

  it('a provider nothing maps is a problem; --provider-map or workflows.provider_map fixes it', async () => {
    const file = `workflow:
  name: ask
  entry_point: ask
  runtime:
    provider: acme
agents:
  - name: ask
    model: claude-haiku-4.5
    prompt: Hello
    routes:
      - to: $end
`;
    const cwd = withFile(file);
    const unmapped = await run(['workflow', 'validate', 'flow.yaml'], cwd);
    expect(unmapped.status).toBe(EXIT_CODES.WORKFLOW_INVALID);
    expect(unmapped.stdout).toMatch(/^error {4}ask: field "provider": .*acme.*--provider-map/m);
    const mapped = await run(['workflow', 'validate', 'flow.yaml', '--provider-map', 'acme=anthropic'], cwd);
    expect(mapped.status, mapped.stdout).toBe(0);
    writeFileSync(join(cwd, 'switchboard.yaml'), 'workflows:\n  provider_map:\n    acme: claude:haiku\n');
    const configured = await run(['workflow', 'validate', 'flow.yaml'], cwd);
    expect(configured.status, configured.stdout).toBe(0);
  });

  it("Conductor's default provider, copilot, is valid with no flags: a warning names Claude Code and the way to choose another", async () => {
    const cwd = withFile(`workflow:
  name: ask
  entry_point: ask
agents:
  - name: ask
    model: gpt-5.2
    prompt: Hello
    routes:
      - to: $end
`);
    const result = await run(['workflow', 'validate', 'flow.yaml'], cwd);
    expect(result.status, result.stdout).toBe(0);
    expect(result.stdout).toMatch(
      /^warning +provider copilot runs on Claude Code: gpt-5\.2 → claude:sonnet .*--provider-map copilot=SPEC/m,
    );
    const mapped = await run(['workflow', 'validate', 'flow.yaml', '--provider-map', 'copilot=openai'], cwd);
    expect(mapped.status, mapped.stdout).toBe(0);
    expect(mapped.stdout).not.toMatch(/Claude Code/);
  });

  it('validator: on an LLM step is valid with no warning; on a human_gate or an effects: git step it is refused', async () => {
    const reviewer = `workflow:
  name: review
  entry_point: reviewer
  runtime:
    provider: claude
agents:
  - name: reviewer
    model: claude-haiku-4.5
    prompt: Review the change for null dereferences.
    output:
      findings: { type: array, items: { type: string } }
    validator:
      model: claude-sonnet-4.5
      criteria: |
        Each finding names the line it is about.
      max_retries: 1
    routes:
      - to: $end
`;
    const valid = await run(['workflow', 'validate', 'flow.yaml'], withFile(reviewer));
    expect(valid.status, valid.stdout).toBe(0);
    expect(valid.stdout).toBe('flow.yaml: valid (1 step, 0 groups; starts at reviewer)\n');

    const refused: Array<[string, string]> = [
      [
        '  - name: approve\n    type: human_gate\n    prompt: Ship it?\n    options: [{ label: Yes, value: y, route: $end }]\n    validator: { criteria: be right }\n',
        'human_gate steps cannot have "validator"',
      ],
      [
        '  - name: implement\n    effects: git\n    prompt: Fix the bug.\n    validator: { criteria: the tests pass }\n',
        'effects: git steps cannot have "validator"',
      ],
    ];
    for (const [step, message] of refused) {
      const file = `workflow:\n  name: t\n  entry_point: ${/name: (\w+)/.exec(step)?.[1]}\nagents:\n${step}`;
      const result = await run(['workflow', 'validate', 'flow.yaml', '--json'], withFile(file));
      expect(result.status, result.stdout).toBe(EXIT_CODES.WORKFLOW_INVALID);
      const report = JSON.parse(result.stdout) as { problems: { field: string; message: string }[] };
      expect(report.problems).toEqual([
        expect.objectContaining({ field: 'validator', message: expect.stringContaining(message) }),
      ]);
    }
  });
});

describe('switchboard workflow: help', () => {
  const subcommands: Record<string, string[]> = {
    run: [
      '-i, --input <name=value>',
      '--provider <spec>',
      '--provider-map <name=spec>',
      '--dry-run',
      '--skip-gates',
      '--allow-mcp',
      '--run-id <id>',
      '--json',
    ],
    resume: ['--migrate', '--max-iterations <n>', '--timeout <seconds>', '--budget <usd>', '--json'],
    status: ['--json'],
    ls: ['--limit <n>', '--json'],
    gate: ['--choose <value>', '--text <text>', '--by <name>', '--no-continue', '--json'],
    guide: ['--step <name>', '--by <name>', '--json'],
    cancel: ['--json'],
    validate: ['--provider <spec>', '--provider-map <name=spec>', '--json'],
    logs: ['--follow', '--json'],
  };

  it('workflow --help lists every subcommand, and wf is its alias', async () => {
    const [long, short] = await Promise.all([run(['workflow', '--help']), run(['wf', '--help'])]);
    expect(long.status).toBe(0);
    expect(short.stdout).toBe(long.stdout);
    for (const name of Object.keys(subcommands))
      expect(long.stdout).toMatch(new RegExp(`^  ${name}\\b`, 'm'));
  });

  it.each(Object.entries(subcommands))('workflow %s --help shows its flags', async (name, flags) => {
    const result = await run(['workflow', name, '--help']);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^Usage: switchboard workflow ${name} `, 'm'));
    for (const flag of flags) expect(result.stdout).toContain(flag);
  });
});
