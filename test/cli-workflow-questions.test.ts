import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/core/errors.js';
import type { WorkflowRunResult } from '../src/workflows/api-types.js';
import { runCli } from './helpers/run-cli.js';

// `type: questions` through the built CLI: the run parks showing the questions and the command that
// answers them; `workflow gate --answer ID=TEXT` answers them all at once and continues the run.

const temporary: string[] = [];
afterAll(() => {
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

const FILE = `
workflow:
  name: ask
  entry_point: ask
agents:
  - name: ask
    type: questions
    prompt: Before I start
    questions:
      - text: Who reviews it?
        choices: [ana, ben]
        allow_free_text: false
        required: true
      - id: deadline
        text: By when?
        default: next week
    routes: [{ to: $end }]
output:
  transcript: '{{ ask.output.transcript }}'
`;

describe('switchboard workflow gate --answer', () => {
  it('parks showing the questions, answers them all at once, and refuses a gate answer without one', async () => {
    const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-wf-questions-')));
    temporary.push(cwd);
    writeFileSync(join(cwd, 'ask.yaml'), FILE);
    const run = (args: string[]) => runCli(args, { cwd, env: process.env });

    const parked = await run(['workflow', 'run', 'ask.yaml']);
    expect(parked.status, parked.stderr).toBe(EXIT_CODES.WORKFLOW_WAITING);
    const runId = /run (\S+) is waiting/.exec(parked.stderr)?.[1] ?? '';
    expect(parked.stderr).toContain(
      `answer it: switchboard workflow gate ${runId} ask --answer q1="…" --answer deadline="…"`,
    );
    const status = await run(['workflow', 'status', runId]);
    expect(status.stdout).toMatch(/q1 +Who reviews it\? \(required; choices: ana \| ben\)/);
    expect(status.stdout).toMatch(/deadline +By when\? \(default: next week\)/);

    const neither = await run(['workflow', 'gate', runId]);
    expect(neither.status).toBe(2);
    expect(neither.stderr).toMatch(/^switchboard: nothing to answer with \(.*--answer ID=TEXT/);
    const both = await run(['workflow', 'gate', runId, '--choose', 'skip_all', '--answer', 'q1=ana']);
    expect(both.stderr).toMatch(/--choose and --answer do not go together/);
    const wrong = await run([
      'workflow',
      'gate',
      runId,
      '--answer',
      'q1=carl',
      '--answer',
      'deadline=Friday',
    ]);
    expect(wrong.status).toBe(2);
    expect(wrong.stderr).toMatch(/switchboard: question "q1" of "ask" takes one of its choices: ana, ben/);

    const answered = await run(['workflow', 'gate', runId, '--answer', 'q1=ben', '--json']);
    expect(answered.status, answered.stderr).toBe(0);
    const result = JSON.parse(answered.stdout) as WorkflowRunResult;
    expect(result).toMatchObject({
      status: 'completed',
      output: { transcript: 'Q1. Who reviews it?\nA: ben\n\nQ2. By when?\nA: next week' },
    });
    const again = await run(['workflow', 'gate', runId, 'ask', '--answer', 'q1=ana']);
    expect(again.status).toBe(EXIT_CODES.GATE_TAKEN);
  });
});
