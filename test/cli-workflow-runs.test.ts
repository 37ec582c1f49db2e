import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/core/errors.js';
import { startSimulator } from '../src/sim/server.js';
import type { WorkflowEventRecord, WorkflowRunResult } from '../src/workflows/api-types.js';
import { runCli, type CliRun } from './helpers/run-cli.js';
import { storeNeutral } from './helpers/passes.js';

// `switchboard workflow` running real workflow files: the built CLI, the engine, a real SQLite ledger
// in a temporary folder, real subprocesses for script steps, and `switchboard sim` for LLM steps.

const cli = join(import.meta.dirname, '..', 'dist/cli/main.js');
const temporary: string[] = [];
afterAll(() => {
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

interface Workspace {
  cwd: string;
  run(args: string[], env?: NodeJS.ProcessEnv): Promise<CliRun>;
  json<T>(args: string[]): Promise<T>;
  file(name: string, text: string): string;
}

function workspace(): Workspace {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-wf-runs-')));
  temporary.push(cwd);
  const run = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> =>
    runCli(args, { cwd, env: { ...process.env, ...env } });
  return {
    cwd,
    run,
    async json<T>(args: string[]): Promise<T> {
      const result = await run([...args, '--json']);
      expect(result.stderr).not.toMatch(/\n\s+at /);
      return JSON.parse(result.stdout) as T;
    },
    file(name, text) {
      mkdirSync(dirname(join(cwd, name)), { recursive: true });
      writeFileSync(join(cwd, name), text);
      return name;
    },
  };
}

/** Inputs → a set step → a script step (typed JSON on stdout) → the workflow's output. */
const HELLO = `workflow:
  name: hello
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
    command: sh
    args: ["-c", "echo ran >> '{{ workflow.dir }}/shout.log'; printf '{\\"loud\\": \\"%s\\"}' \\"$(echo '{{ greet.output }}' | tr a-z A-Z)\\""]
    routes:
      - to: $end
output:
  greeting: "{{ greet.output }}"
  loud: "{{ shout.output.loud }}"
`;

/** A script step (counted in a file), then a gate, then a second gate. */
const GATED = `workflow:
  name: gated
  entry_point: prepare
agents:
  - name: prepare
    type: script
    command: sh
    args: ["-c", "echo ran >> '{{ workflow.dir }}/prepare.log'"]
    routes:
      - to: approve
  - name: approve
    type: human_gate
    prompt: Ship the release?
    options:
      - { label: Ship it, value: ship, route: confirm }
      - { label: Not yet, value: hold, route: $end, prompt_for: why }
  - name: confirm
    type: human_gate
    prompt: Really?
    options:
      - { label: Yes, value: "yes", route: done }
      - { label: No, value: "no", route: $end }
  - name: done
    type: set
    value: "{{ approve.output.selected }}-{{ confirm.output.selected }}"
    routes:
      - to: $end
output:
  decision: "{{ done.output }}"
`;

/** A wait long enough to watch the run while it is running. */
const SLOW = `workflow:
  name: slow
  entry_point: pause
agents:
  - name: pause
    type: wait
    duration: 2s
    routes:
      - to: after
  - name: after
    type: set
    value: done
    routes:
      - to: $end
output:
  result: "{{ after.output }}"
`;

/** Polls until `status --json` of the run satisfies `condition`. */
async function untilStatus(
  space: Workspace,
  runId: string,
  condition: (run: WorkflowRunResult) => boolean,
): Promise<WorkflowRunResult> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const result = await space.run(['workflow', 'status', runId, '--json']);
    if (result.status === 0) {
      const run = JSON.parse(result.stdout) as WorkflowRunResult;
      if (condition(run)) return run;
    }
    if (Date.now() > deadline) throw new Error(`run ${runId} never reached the state: ${result.stdout}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('switchboard workflow run', () => {
  it('--json prints one WorkflowRunResult: completed, with the output of the workflow and every step', async () => {
    const space = workspace();
    space.file('hello.yaml', HELLO);
    const result = await space.run(['workflow', 'run', 'hello.yaml', '-i', 'name=Ada', '--json']);
    expect(result.status, result.stderr).toBe(EXIT_CODES.OK);
    const run = JSON.parse(result.stdout) as WorkflowRunResult;
    expect(run).toMatchObject({
      workflow: 'hello',
      status: 'completed',
      output: { greeting: 'Hello, Ada', loud: 'HELLO, ADA' },
      costUsd: 0,
    });
    expect(typeof run.id).toBe('string');
    expect(run.steps.map((step) => [step.step, step.status, step.attempts])).toEqual([
      ['greet', 'completed', 1],
      ['shout', 'completed', 1],
    ]);
  });

  storeNeutral(
    'without a terminal writes one line per event on stderr, and the summary and output on stdout',
    async () => {
      const space = workspace();
      space.file('hello.yaml', HELLO);
      const result = await space.run(['wf', 'run', 'hello.yaml', '-i', 'name=Bo']);
      expect(result.status, result.stderr).toBe(0);
      const [summary, ...output] = result.stdout.trimEnd().split('\n');
      expect(summary).toMatch(/^(\S+): completed at shout \(2 steps, \$0\.0000\)$/);
      const runId = /^(\S+):/.exec(summary ?? '')?.[1] as string;
      expect(JSON.parse(output.join('\n'))).toEqual({ greeting: 'Hello, Bo', loud: 'HELLO, BO' });
      const lines = result.stderr.trimEnd().split('\n');
      expect(lines.length).toBeGreaterThanOrEqual(4);
      for (const line of lines)
        expect(line).toMatch(new RegExp(`^\\[${runId}\\] \\d+\\.\\ds \\$\\d+\\.\\d{4} \\S+`));
      expect(lines.some((line) => line.includes('greet'))).toBe(true);
      expect(lines.some((line) => line.includes('shout'))).toBe(true);
    },
  );

  storeNeutral(
    'on a terminal shows a live view of the steps and leaves the terminal as it found it',
    async () => {
      const space = workspace();
      space.file('slow.yaml', SLOW);
      // `script` gives the CLI a pseudo-terminal; its transcript is everything the terminal received.
      const transcript = join(space.cwd, 'tty.txt');
      const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(cli)} workflow run slow.yaml`;
      await new Promise<void>((resolve, reject) => {
        execFile('script', ['-qec', command, transcript], { cwd: space.cwd, timeout: 60_000 }, (error) =>
          error === null ? resolve() : reject(error),
        );
      });
      const screen = readFileSync(transcript, 'utf8');
      expect(screen).toMatch(/steps: \d+ done · \d+ running · \d+ pending/);
      expect(screen).toContain('pause');
      expect(screen).toMatch(/completed at after/);
      expect(screen, 'the cursor is never hidden').not.toContain('\x1b[?25l');
      expect(screen, 'line wrapping is never turned off').not.toContain('\x1b[?7l');
    },
  );

  storeNeutral('a missing required input is refused before anything runs, naming the input', async () => {
    const space = workspace();
    space.file('hello.yaml', HELLO);
    const result = await space.run(['workflow', 'run', 'hello.yaml']);
    expect(result.status, result.stderr).toBe(EXIT_CODES.WORKFLOW_INVALID);
    expect(result.stderr.trimEnd()).toMatch(/^switchboard: .*"?name"?.*\(.+\)$/);
    expect(existsSync(join(space.cwd, 'shout.log'))).toBe(false);
    expect(await space.json<WorkflowRunResult[]>(['workflow', 'ls'])).toEqual([]);
  });

  storeNeutral('--dry-run runs nothing', async () => {
    const space = workspace();
    space.file('hello.yaml', HELLO);
    const result = await space.run(['workflow', 'run', 'hello.yaml', '-i', 'name=Ada', '--dry-run']);
    expect(result.status, result.stderr).toBe(0);
    expect(existsSync(join(space.cwd, 'shout.log'))).toBe(false);
  });
});

describe('gates', () => {
  it('a parked run exits WORKFLOW_WAITING with the command that answers it; gate continues it; finished steps never run again', async () => {
    const space = workspace();
    space.file('gated.yaml', GATED);
    const parked = await space.run(['workflow', 'run', 'gated.yaml', '--run-id', 'rel-1']);
    expect(parked.status, parked.stderr).toBe(EXIT_CODES.WORKFLOW_WAITING);
    expect(parked.stderr.trimEnd().split('\n').at(-1)).toBe(
      'switchboard: run rel-1 is waiting at gate "approve" (answer it: switchboard workflow gate rel-1 approve --choose ship)',
    );
    expect(parked.stdout).toContain('answer    switchboard workflow gate rel-1 approve --choose ship');

    const status = await space.run(['workflow', 'status', 'rel-1']);
    expect(status.status).toBe(0);
    expect(status.stdout).toMatch(/^run {7}rel-1 \(waiting\)$/m);
    expect(status.stdout).toMatch(/^step {6}approve$/m);
    expect(status.stdout).toMatch(/^STEP\s+TYPE\s+STATUS\s+ATTEMPTS\s+DURATION\s+COST/m);
    expect(status.stdout).toMatch(/^prepare\S*\s+script\s+completed\s+1\s+\d+\.\ds\s+\$0\.0000/m);
    expect(status.stdout).toMatch(/^gate {6}approve: Ship the release\?$/m);
    expect(status.stdout).toMatch(/^ {2}ship\s+Ship it$/m);
    expect(status.stdout).toMatch(/^ {2}hold\s+Not yet \(asks for why: --text "…"\)$/m);

    // The second gate is answered before the run reaches it: the answer is kept.
    const early = await space.run([
      'workflow',
      'gate',
      'rel-1',
      'confirm',
      '--choose',
      'yes',
      '--no-continue',
    ]);
    expect(early.status, early.stderr).toBe(0);
    const view = await space.json<WorkflowRunResult>(['workflow', 'status', 'rel-1']);
    expect(view.status).toBe('waiting');

    const answered = await space.run([
      'workflow',
      'gate',
      'rel-1',
      '--choose',
      'ship',
      '--by',
      'tester',
      '--json',
    ]);
    expect(answered.status, answered.stderr).toBe(0);
    const done = JSON.parse(answered.stdout) as WorkflowRunResult;
    expect(done).toMatchObject({ id: 'rel-1', status: 'completed', output: { decision: 'ship-yes' } });
    expect(readFileSync(join(space.cwd, 'prepare.log'), 'utf8')).toBe('ran\n');
  });

  storeNeutral('--skip-gates takes the first option of every gate', async () => {
    const space = workspace();
    space.file('gated.yaml', GATED);
    const run = await space.json<WorkflowRunResult>(['workflow', 'run', 'gated.yaml', '--skip-gates']);
    expect(run).toMatchObject({ status: 'completed', output: { decision: 'ship-yes' } });
  });
});

describe('status, ls, logs, cancel, resume', () => {
  it('logs prints the event log in order; --json one object per line; --follow ends with the run', async () => {
    const space = workspace();
    space.file('slow.yaml', SLOW);
    const running = space.run(['workflow', 'run', 'slow.yaml', '--run-id', 'slow-1']);
    await untilStatus(space, 'slow-1', (run) => run.steps.some((step) => step.step === 'pause'));
    const followed = await space.run(['workflow', 'logs', 'slow-1', '--follow', '--json']);
    expect((await running).status).toBe(0);
    expect(followed.status, followed.stderr).toBe(0);
    const events = followed.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as WorkflowEventRecord);
    expect(events.every((event) => event.runId === 'slow-1')).toBe(true);
    const seqs = events.map((event) => event.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(events.some((event) => event.step === 'after')).toBe(true);

    const text = await space.run(['workflow', 'logs', 'slow-1']);
    expect(text.stdout.trimEnd().split('\n')).toHaveLength(events.length);
    expect(text.stdout).toMatch(/^\S+\s+\d+ \S+\s+slow-1\/pause/m);
  });

  it('ls lists runs newest first', async () => {
    const space = workspace();
    space.file('hello.yaml', HELLO);
    await space.run(['workflow', 'run', 'hello.yaml', '-i', 'name=A', '--run-id', 'first']);
    await space.run(['workflow', 'run', 'hello.yaml', '-i', 'name=B', '--run-id', 'second']);
    const runs = await space.json<WorkflowRunResult[]>(['workflow', 'ls']);
    expect(runs.map((run) => [run.id, run.status])).toEqual([
      ['second', 'completed'],
      ['first', 'completed'],
    ]);
    const text = await space.run(['workflow', 'ls', '--limit', '1']);
    expect(text.stdout).toMatch(/^second\s+completed\s+\$0\.0000\s+hello/);
    expect(text.stdout.trimEnd().split('\n')).toHaveLength(1);
  });

  it('a run ended by max_iterations resumes with a higher limit, without running finished steps again', async () => {
    const space = workspace();
    space.file(
      'loop.yaml',
      `workflow:
  name: loop
  entry_point: tick
  limits: { max_iterations: 2 }
agents:
  - name: tick
    type: script
    command: sh
    args: ["-c", "echo tick >> '{{ workflow.dir }}/ticks.log'"]
    routes:
      - to: $end
        when: "{{ context.iteration >= 4 }}"
      - to: tick
`,
    );
    const limited = await space.run(['workflow', 'run', 'loop.yaml', '--run-id', 'loop-1']);
    expect(limited.status, limited.stderr).toBe(EXIT_CODES.WORKFLOW_LIMIT);
    expect(limited.stderr.trimEnd().split('\n').at(-1)).toMatch(
      /^switchboard: .+\(raise the limit: switchboard workflow resume loop-1 --max-iterations N/,
    );
    const ticksBefore = readFileSync(join(space.cwd, 'ticks.log'), 'utf8').split('\n').length - 1;
    expect(ticksBefore).toBe(2);
    const resumed = await space.json<WorkflowRunResult>([
      'workflow',
      'resume',
      'loop-1',
      '--max-iterations',
      '10',
    ]);
    expect(resumed.status).toBe('completed');
    const ticks = readFileSync(join(space.cwd, 'ticks.log'), 'utf8').split('\n').length - 1;
    expect(ticks).toBe(resumed.steps.length);
  });

  it('a run a terminate step ended as failed stays ended: resume reports the same end and exit code', async () => {
    const space = workspace();
    // `finish` is on the route not taken, so the workflow's `output:` cannot render: a resume that went
    // on to the run's end would fail WORKFLOW_TEMPLATE (a file whose output rendered would "complete").
    space.file(
      'stop.yaml',
      `workflow:
  name: stop
  entry_point: check
agents:
  - name: check
    type: set
    value: "empty"
    routes:
      - to: refuse
        when: "{{ check.output == 'empty' }}"
      - to: finish
  - name: refuse
    type: terminate
    status: failed
    reason: "nothing to ship ({{ check.output }})"
  - name: finish
    type: set
    value: shipped
output:
  result: "{{ finish.output }}"
`,
    );
    const first = await space.run(['workflow', 'run', 'stop.yaml', '--run-id', 'stop-1']);
    expect(first.status, first.stderr).toBe(EXIT_CODES.WORKFLOW_FAILED);
    const line = first.stderr.trimEnd().split('\n').at(-1);
    expect(line).toBe(
      'switchboard: step "refuse" terminated the run: nothing to ship (empty) (the workflow\'s terminate step "refuse" ended it: resuming reports the same end; start a new run to go again)',
    );
    for (const attempt of [1, 2]) {
      const resumed = await space.run(['workflow', 'resume', 'stop-1']);
      expect(resumed.status, `resume ${attempt}: ${resumed.stderr}`).toBe(EXIT_CODES.WORKFLOW_FAILED);
      expect(resumed.stderr.trimEnd().split('\n').at(-1)).toBe(line);
    }
    const status = await space.json<WorkflowRunResult>(['workflow', 'status', 'stop-1']);
    expect(status).toMatchObject({
      status: 'failed',
      errorCode: 'WORKFLOW_FAILED',
      error: 'step "refuse" terminated the run: nothing to ship (empty)',
      terminatedBy: 'refuse',
    });
    const logs = await space.run(['workflow', 'logs', 'stop-1', '--json']);
    const types = logs.stdout
      .trimEnd()
      .split('\n')
      .map((text) => (JSON.parse(text) as WorkflowEventRecord).type);
    expect(types.filter((type) => type === 'run-end')).toHaveLength(1);
    expect(types).not.toContain('run-resume');
  });

  it('cancel stops a running run; status shows it cancelled', async () => {
    const space = workspace();
    space.file('slow.yaml', SLOW.replace('2s', '60s'));
    const running = space.run(['workflow', 'run', 'slow.yaml', '--run-id', 'slow-2']);
    await untilStatus(space, 'slow-2', (run) => run.steps.some((step) => step.step === 'pause'));
    const cancel = await space.run(['workflow', 'cancel', 'slow-2']);
    expect(cancel.status, cancel.stderr).toBe(0);
    expect(cancel.stdout).toBe('slow-2 cancelled\n');
    expect((await running).status).toBe(EXIT_CODES.WORKFLOW_CANCELLED);
    expect((await space.json<WorkflowRunResult>(['workflow', 'status', 'slow-2'])).status).toBe('cancelled');
  });

  it('status of an unknown run is RUN_NOT_FOUND', async () => {
    const space = workspace();
    const result = await space.run(['workflow', 'status', 'no-such-run']);
    expect(result.status).toBe(EXIT_CODES.RUN_NOT_FOUND);
    expect(result.stderr.trimEnd()).toMatch(/^switchboard: .*no-such-run.*\(.+\)$/);
  });
});

describe('a step on a route not taken', () => {
  // `b` runs only when `pick` says "take"; here it says "skip", so `c` runs without `b` having run.
  const MAYBE = (value: string) => `workflow:
  name: maybe
  entry_point: pick
agents:
  - name: pick
    type: set
    value: skip
    routes:
      - to: b
        when: "{{ pick.output == 'take' }}"
      - to: c
  - name: b
    type: set
    values:
      z: made
    routes: [{ to: c }]
  - name: c
    type: set
    value: "${value}"
    routes: [{ to: $end }]
output:
  result: "{{ c.output }}"
`;

  it('validate and run agree: | default guards it, and a bare reference is a warning naming the step and the fix', async () => {
    const space = workspace();
    space.file('guarded.yaml', MAYBE("{{ b.output.z | default('none') }}"));
    const valid = await space.run(['workflow', 'validate', 'guarded.yaml']);
    expect(valid.status, valid.stdout).toBe(0);
    expect(valid.stdout).toBe('guarded.yaml: valid (3 steps, 0 groups; starts at pick)\n');
    const ran = await space.run(['workflow', 'run', 'guarded.yaml', '--json']);
    expect(ran.status, ran.stderr).toBe(EXIT_CODES.OK);
    expect((JSON.parse(ran.stdout) as WorkflowRunResult).output).toEqual({ result: 'none' });

    space.file('bare.yaml', MAYBE('{{ b.output.z }}'));
    const warned = await space.run(['workflow', 'validate', 'bare.yaml']);
    expect(warned.status, warned.stdout).toBe(0);
    expect(warned.stdout.split('\n')).toContain(
      `warning  c: field "value": value reads "b", which may not have run before "c" (a route can skip it): guard it with | default(…) or {% if b is defined %}`,
    );
    const failed = await space.run(['workflow', 'run', 'bare.yaml']);
    expect(failed.status, failed.stderr).toBe(EXIT_CODES.WORKFLOW_TEMPLATE);
    expect(failed.stderr).toContain('"b" is undefined');
  });
});

describe('templates that load other files', () => {
  it("reads {% include %} and {% extends %} relative to the workflow's folder as it loads, in !file text too", async () => {
    const space = workspace();
    space.file('parts/header.md', 'Shared header for {{ workflow.input.who }}');
    space.file('greeting.txt', 'Hello. {% include "parts/header.md" %}.\n');
    space.file(
      'base.md',
      '[{% block title %}Base title{% endblock %}] {% block body %}base body{% endblock %}',
    );
    space.file(
      'page.txt',
      '{% extends "base.md" %}{% block body %}child body, then {{ super() }}{% endblock %}',
    );
    // A grandchild overrides what its parent made of the base; tags in comments and strings stay text.
    space.file('grand.txt', '{% extends "page.txt" %}{% block body %}grand({{ super() }}){% endblock %}');
    space.file('quiet.txt', '{# {% include "missing.md" %} #}{{ "{% include \'x\' %}" }} ok');
    space.file(
      'partial.yaml',
      `workflow:
  name: partial
  entry_point: greet
  input:
    who: { type: string, default: Ada }
agents:
  - name: greet
    type: set
    value: !file greeting.txt
    routes: [{ to: page }]
  - name: page
    type: set
    value: !file page.txt
    routes: [{ to: grand }]
  - name: grand
    type: set
    value: !file grand.txt
    routes: [{ to: quiet }]
  - name: quiet
    type: set
    value: !file quiet.txt
output:
  greeting: "{{ greet.output }}"
  page: "{{ page.output }}"
  grand: "{{ grand.output }}"
  quiet: "{{ quiet.output }}"
`,
    );
    const report = await space.run(['workflow', 'validate', 'partial.yaml']);
    expect(report.status, report.stdout).toBe(0);
    const ran = await space.run(['workflow', 'run', 'partial.yaml', '--json']);
    expect(ran.status, ran.stderr).toBe(0);
    expect((JSON.parse(ran.stdout) as { output: Record<string, string> }).output).toEqual({
      greeting: 'Hello. Shared header for Ada.',
      page: '[Base title] child body, then base body',
      grand: '[Base title] grand(child body, then base body)',
      quiet: "{% include 'x' %} ok",
    });
  });

  it('refuses, in one validate line naming the step and field, a file outside the folder, a secret, a loop and an expression', async () => {
    const space = workspace();
    space.file('.env', 'API_KEY=sk-ant-include-canary-0123456789abcdef\n');
    space.file('self.md', 'again {% include "self.md" %}');
    const flow = (value: string) => `workflow:
  name: bad
  entry_point: greet
agents:
  - name: greet
    type: set
    value: '${value}'
`;
    const cases: Array<[string, RegExp]> = [
      ['{% include "../outside.md" %}', /outside the working directory/],
      ['{% include ".env" %}', /\.env: .* hold secrets; no tool reads or writes them/],
      ['{% include "self.md" %}', /includes itself \(self\.md -> self\.md\)/],
      ['{% include name %}', /names its file with an expression \(name\)/],
      ['{% import "m.md" as m %}', /\{% import %\} is not supported/],
    ];
    // Ten files, each including the next ten times: read once each, refused at the size bound at once.
    for (let level = 0; level < 9; level++) {
      space.file(`l${level}.md`, `{% include "l${level + 1}.md" %}`.repeat(10) + 'x'.repeat(100));
    }
    space.file('l9.md', 'leaf');
    cases.push(['{% include "l0.md" %}', /over 2 MiB once its files are in/]);
    space.file('big.md', `{% block b %}${'y'.repeat(100_000)}{% endblock %}`);
    space.file(
      'supers.md',
      `{% extends "big.md" %}{% block b %}${'{{ super() }}'.repeat(400)}{% endblock %}`,
    );
    cases.push(['{% include "supers.md" %}', /over 2 MiB once its files are in/]);
    for (const [value, expected] of cases) {
      space.file('bad.yaml', flow(value));
      const report = await space.run(['workflow', 'validate', 'bad.yaml']);
      expect(report.status, value).toBe(EXIT_CODES.WORKFLOW_INVALID);
      const output = report.stdout + report.stderr;
      expect(output, value).toMatch(expected);
      expect(output, value).toMatch(/greet/);
      expect(output).not.toContain('sk-ant-include-canary');
    }
  });
});

describe('providers', () => {
  storeNeutral('workflows.provider_map maps a Conductor provider; --provider-map wins over it', async () => {
    const sim = await startSimulator({
      maxLifetimeMs: 120_000,
      scenario: {
        rules: [
          {
            match: { provider: 'gemini' },
            reply: { text: '{"answer": "from gemini"}', model: 'gemini-2.5-flash' },
          },
        ],
        fallback: { text: '{"answer": "from anthropic"}' },
      },
    });
    try {
      const space = workspace();
      writeFileSync(
        join(space.cwd, 'switchboard.yaml'),
        'workflows:\n  provider_map:\n    copilot: anthropic:claude-haiku-4-5\n',
      );
      space.file(
        'ask.yaml',
        `workflow:
  name: ask
  entry_point: ask
  runtime:
    provider: copilot
agents:
  - name: ask
    prompt: Say where you are.
    output:
      answer: { type: string }
    routes:
      - to: $end
output:
  answer: "{{ ask.output.answer }}"
`,
      );
      const env = {
        ANTHROPIC_API_KEY: 'sk-ant-workflow-test',
        ANTHROPIC_BASE_URL: sim.url,
        GEMINI_API_KEY: 'gemini-workflow-test',
        GEMINI_BASE_URL: sim.url,
      };
      const fromConfig = await space.run(['workflow', 'run', 'ask.yaml', '--json'], env);
      expect(fromConfig.status, fromConfig.stderr).toBe(0);
      expect((JSON.parse(fromConfig.stdout) as WorkflowRunResult).output).toEqual({
        answer: 'from anthropic',
      });
      const fromFlag = await space.run(
        ['workflow', 'run', 'ask.yaml', '--provider-map', 'copilot=gemini:2.5-flash', '--json'],
        env,
      );
      expect(fromFlag.status, fromFlag.stderr).toBe(0);
      expect((JSON.parse(fromFlag.stdout) as WorkflowRunResult).output).toEqual({ answer: 'from gemini' });
      // A step's model may name a role of switchboard.yaml; the role's chain is what runs.
      writeFileSync(
        join(space.cwd, 'switchboard.yaml'),
        'roles:\n  reviewer: gemini:2.5-flash\nworkflows:\n  provider_map:\n    copilot: anthropic:claude-haiku-4-5\n',
      );
      space.file(
        'role.yaml',
        readFileSync(join(space.cwd, 'ask.yaml'), 'utf8').replace(
          '    prompt:',
          '    model: reviewer\n    prompt:',
        ),
      );
      const fromRole = await space.run(['workflow', 'run', 'role.yaml', '--json'], env);
      expect(fromRole.status, fromRole.stderr).toBe(0);
      expect((JSON.parse(fromRole.stdout) as WorkflowRunResult).output).toEqual({ answer: 'from gemini' });
    } finally {
      await sim.close();
    }
  });

  storeNeutral(
    'a Conductor file with the default provider (copilot) runs on Claude Code with no flags, and says so in one line',
    async () => {
      const sim = await startSimulator({
        maxLifetimeMs: 120_000,
        scenario: { rules: [], fallback: { text: 'from Claude Code' } },
      });
      try {
        const space = workspace();
        space.file(
          'ask.yaml',
          `workflow:
  name: ask
  entry_point: ask
agents:
  - name: ask
    model: claude-haiku-4.5
    prompt: Say where you are.
    routes:
      - to: $end
output:
  answer: "{{ ask.output.result }}"
`,
        );
        const result = await space.run(['workflow', 'run', 'ask.yaml', '--json'], {
          ANTHROPIC_API_KEY: 'sk-ant-workflow-copilot',
          ANTHROPIC_BASE_URL: sim.url,
        });
        expect(result.status, result.stderr).toBe(0);
        expect((JSON.parse(result.stdout) as WorkflowRunResult).output).toEqual({
          answer: 'from Claude Code',
        });
        const notices = result.stderr.split('\n').filter((line) => line.includes('provider copilot'));
        expect(notices).toEqual([
          expect.stringMatching(
            /provider copilot runs on Claude Code: claude-haiku-4\.5 → claude:claude-haiku-4-5; choose another with --provider-map copilot=SPEC or workflows\.provider_map/,
          ),
        ]);
        // The request came from the Claude Code binary, with the step's model in Anthropic's spelling.
        const answered = sim.requests.filter((entry) => entry.outcome === 'reply');
        expect(answered.length).toBeGreaterThan(0);
        for (const entry of answered) {
          expect(entry.headers['user-agent']).toMatch(/claude-cli/);
          expect(entry.model).toBe('claude-haiku-4-5');
        }
      } finally {
        await sim.close();
      }
    },
  );

  storeNeutral(
    'a provider mapped nowhere is WORKFLOW_INVALID, naming the step, the provider and the fix',
    async () => {
      const space = workspace();
      space.file(
        'ask.yaml',
        `workflow:
  name: ask
  entry_point: ask
  runtime:
    provider: acme
agents:
  - name: ask
    prompt: Hello
    routes:
      - to: $end
`,
      );
      const result = await space.run(['workflow', 'run', 'ask.yaml']);
      expect(result.status, result.stderr).toBe(EXIT_CODES.WORKFLOW_INVALID);
      expect(result.stderr.trimEnd().split('\n').at(-1)).toMatch(
        /^switchboard: .*ask.*acme.*\(.*--provider-map.*\)$/,
      );
    },
  );
});
