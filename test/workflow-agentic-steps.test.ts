import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/core/errors.js';
import type { Scenario } from '../src/sim/scenario.js';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import type { WorkflowRunResult } from '../src/workflows/api-types.js';
import { claudeProcessIds, waitForNoNewClaudeProcesses } from './helpers/claude.js';
import { runCli, type CliRun } from './helpers/run-cli.js';

// Issue 25: an LLM step on Claude Code is an agent, as in Conductor. `tools:` omitted gives it Claude
// Code's read-only tools in its working directory, `[]` none, a list those; a tool that writes needs
// `effects: files` (or `effects: git`). The built CLI runs the real Claude Code binary against the
// simulator, which plays the model: it asks for a tool, then answers with what the tool returned.

const claudeBefore = claudeProcessIds();
const temporary: string[] = [];
let sim: Simulator | undefined;

afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

afterAll(async () => {
  expect(await waitForNoNewClaudeProcesses(claudeBefore)).toEqual([]);
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

/** A folder holding the workflow file and its working directory `project`, with NOTES.md in it. */
function space(steps: string): { root: string; codeword: string } {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-agentic-')));
  temporary.push(root);
  const codeword = `codeword-${randomBytes(4).toString('hex')}`;
  mkdirSync(join(root, 'project'));
  writeFileSync(join(root, 'project', 'NOTES.md'), `The ${codeword} opens the door.\n`);
  writeFileSync(
    join(root, 'flow.yaml'),
    `workflow:
  name: reader
  entry_point: reader
  runtime:
    provider: claude-agent-sdk
    working_dir: project
agents:
${steps}
output:
  answer: "{{ reader.output.result }}"
`,
  );
  return { root, codeword };
}

/** The model reads NOTES.md, then answers with the tool's result (the simulator's `echo`). */
const READS_NOTES: Scenario = {
  rules: [
    { name: 'read', match: { turn: 1 }, reply: { tool: { name: 'Read', input: { file_path: 'NOTES.md' } } } },
    { name: 'answer', match: { turn: 2 }, reply: { text: 'From the notes: ', echo: true } },
  ],
  fallback: { text: 'I have no tools.' },
};

async function run(root: string, scenario: Scenario, args: string[] = []): Promise<CliRun> {
  sim = await startSimulator({ scenario, maxLifetimeMs: 120_000 });
  return runCli(['workflow', 'run', join(root, 'flow.yaml'), '--json', ...args], {
    cwd: root,
    env: { ...process.env, ANTHROPIC_API_KEY: 'sk-ant-agentic-steps', ANTHROPIC_BASE_URL: sim.url },
  });
}

const STEP = `  - name: reader
    model: claude-haiku-4.5
    prompt: Read NOTES.md and tell me the codeword.
`;

describe('LLM steps on Claude Code get tools as in Conductor', () => {
  it('tools omitted: the step reads the file it was asked about, and its answer carries the content', async () => {
    const { root, codeword } = space(`${STEP}    routes:\n      - to: $end\n`);
    const result = await run(root, READS_NOTES);
    expect(result.status, result.stderr).toBe(0);
    const answer = (JSON.parse(result.stdout) as WorkflowRunResult).output?.['answer'];
    expect(answer).toContain('From the notes:');
    expect(answer).toContain(`The ${codeword} opens the door.`);
    // Offered: the whole set Conductor gives such a step, those the file tools stand for, and no others.
    const offered = sim?.requests[0]?.tools ?? [];
    expect(offered).toEqual(expect.arrayContaining(['Read', 'Glob', 'Grep', 'Write', 'Edit', 'Bash']));
    for (const tool of ['NotebookEdit', 'WebFetch', 'WebSearch']) expect(offered).not.toContain(tool);

    // The step's work is in its events, in order: a turn, the call with its arguments, the result, a turn.
    const runId = (JSON.parse(result.stdout) as WorkflowRunResult).id;
    const logs = await runCli(['workflow', 'logs', runId, '--json'], { cwd: root, env: process.env });
    expect(logs.status, logs.stderr).toBe(0);
    const events = logs.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; step?: string; data?: Record<string, unknown> })
      .filter((event) => ['model-turn', 'tool-call', 'tool-result'].includes(event.type));
    expect(events.map((event) => event.type)).toEqual([
      'model-turn',
      'tool-call',
      'tool-result',
      'model-turn',
    ]);
    expect(events.every((event) => event.step === 'reader')).toBe(true);
    expect(events[0]?.data).toMatchObject({
      inputTokens: expect.any(Number),
      outputTokens: expect.any(Number),
    });
    expect(events[1]?.data).toMatchObject({ tool: 'Read', input: expect.stringContaining('NOTES.md') });
    expect(events[2]?.data).toMatchObject({ tool: 'Read', error: false, durationMs: expect.any(Number) });
    expect(String(events[2]?.data?.['result'])).toContain(codeword);
    expect(events[1]?.data?.['id']).toBe(events[2]?.data?.['id']);
  });

  it("with an output: schema, the step reads the file its prompt names and answers in the schema (Conductor's repo Q&A shape)", async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-agentic-')));
    temporary.push(root);
    const motto = `motto-${randomBytes(4).toString('hex')}`;
    writeFileSync(join(root, 'GUIDE.md'), `# Guide\n\nOur motto is ${motto}.\n`);
    writeFileSync(
      join(root, 'flow.yaml'),
      `workflow:
  name: guide-qa
  entry_point: guide_reader
  runtime:
    provider: claude-agent-sdk
    default_model: claude-sonnet-4-5
  input:
    question: { type: string, required: true }
agents:
  - name: guide_reader
    prompt: |
      Read the file GUIDE.md in your current working directory, then answer the question
      from what it says, quoting it.
      Question: {{ workflow.input.question }}
    output:
      answer: { type: string }
      quote: { type: string }
    routes:
      - to: $end
output:
  answer: "{{ guide_reader.output.answer }}"
  quote: "{{ guide_reader.output.quote }}"
`,
    );
    sim = await startSimulator({
      scenario: {
        rules: [
          {
            name: 'read',
            match: { turn: 1, text: 'Read the file GUIDE\\.md' },
            reply: { tool: { name: 'Read', input: { file_path: join(root, 'GUIDE.md') } } },
          },
        ],
        // Then the answer, as the StructuredOutput tool with a value that fits the step's schema.
        fallback: { conform: true },
      },
      maxLifetimeMs: 120_000,
    });
    const result = await runCli(
      ['workflow', 'run', 'flow.yaml', '-i', 'question=What is the motto?', '--json'],
      {
        cwd: root,
        env: { ...process.env, ANTHROPIC_API_KEY: 'sk-ant-agentic-steps', ANTHROPIC_BASE_URL: sim.url },
      },
    );
    expect(result.status, result.stderr).toBe(0);
    const run = JSON.parse(result.stdout) as WorkflowRunResult;
    expect(run.status).toBe('completed');
    expect(run.output).toEqual({ answer: 'sample answer', quote: 'sample quote' });
    const requests = sim.requests.filter((entry) => entry.outcome === 'reply');
    expect(requests[0]?.rule).toBe('read');
    expect(requests[0]?.tools).toEqual(expect.arrayContaining(['Read', 'Glob', 'Grep', 'StructuredOutput']));
    // The file's content reached the model in the Read tool's result.
    expect(requests[1]?.text).toContain(motto);
  });

  it('tools: [] offers no tool at all', async () => {
    const { root } = space(`${STEP}    tools: []\n    routes:\n      - to: $end\n`);
    const result = await run(root, READS_NOTES);
    // The model asked for Read anyway; Claude Code had no such tool to run, so nothing was read.
    const offered = sim?.requests[0]?.tools ?? [];
    expect(offered.filter((tool) => /^(Read|Glob|Grep|Bash|Write|Edit)$/.test(tool))).toEqual([]);
    expect(result.stdout).not.toContain('opens the door');
  });

  it('a tool that writes needs effects: files or effects: git; a misspelt tool is named with the closest one', async () => {
    const { root } = space(`${STEP}    tools: [Read, Write]\n    routes:\n      - to: $end\n`);
    const refused = await runCli(['workflow', 'validate', 'flow.yaml'], { cwd: root, env: process.env });
    expect(refused.status).toBe(EXIT_CODES.WORKFLOW_INVALID);
    expect(refused.stdout).toMatch(/"Write" writes files.*effects: files.*effects: git/);
    writeFileSync(
      join(root, 'flow.yaml'),
      `workflow:\n  name: reader\n  entry_point: reader\n  runtime:\n    provider: claude-agent-sdk\nagents:\n${STEP}    tools: [Reed]\n    routes:\n      - to: $end\n`,
    );
    const misspelt = await runCli(['workflow', 'validate', 'flow.yaml'], { cwd: root, env: process.env });
    expect(misspelt.status).toBe(EXIT_CODES.WORKFLOW_INVALID);
    expect(misspelt.stdout).toMatch(
      /"Reed" is not a Claude Code tool, a file tool .*\(did you mean Read\?\)/,
    );
  });
});
