// Conductor's own example workflows (microsoft/conductor's examples/ folder, which this repository does not
// hold), validated and run as a user runs them: for each file, `switchboard workflow validate FILE` with no
// flags, then `switchboard workflow run FILE --skip-gates --json` through the built CLI in a temporary folder
// of its own (its cwd, with a README.md written for it and its own state folder), every provider pointed at a
// `switchboard sim` of its own whose fallback is `conform: true`: each step's request is answered with a value
// that fits the schema it carries (Claude Code, which plays the copilot, claude-agent-sdk, hermes and aca
// steps, gets its StructuredOutput tool called). One rule reads README.md first when a prompt asks for it, so
// a step told to read a file shows whether the file's content reached the model. Booleans answer true and
// numbers their maximum (else 100), so review loops that route on `approved` or a score end.
// Required inputs get a conforming value, and so does any `workflow.input.NAME` a file reads without
// declaring it (its usage line passes one). A run has a time limit (its process group is killed past it).
// Scripted writes: a step offered write_file (an API provider's step whose tools: is left out, as Conductor's
// design, plan and implement) or Claude Code's Write, whose first turn asks it to write, save or create
// something, writes a file of its own under bench-output/, so "did its work" can be told from "completed".
// Prints one row per example (validation, outcome, steps run, model requests the simulator answered, files
// written in the run's folder, tools called as the run's events record them, wall), the inputs given and the
// steps taken, and the totals.
// Run from the repository root under Node >= 22, after `npm run build`:
//   node --experimental-strip-types --no-warnings bench/conductor-examples.ts [EXAMPLES_DIR] [NAME…]
// EXAMPLES_DIR defaults to $CONDUCTOR_EXAMPLES; without either (or when it is missing) it prints `skipped:`
// and exits 0. Get the folder from a clone: `git -C conductor archive HEAD examples | tar -x -C /tmp/cex`.
// NAME… runs only those examples (file names without .yaml). CONDUCTOR_EXAMPLES_TIMEOUT sets the limit per
// run in seconds (default 120). Binds 127.0.0.1 only; everything it writes is in a temporary folder.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, relative, resolve } from 'node:path';
import type { Scenario } from '../src/sim/scenario.js';
import type { SimLogEntry } from '../src/sim/server.js';
import { assertFreshBuild } from './fresh-build.ts';
import './source-hooks.ts';

const { startSimulator } = await import('../src/sim/server.js');
const { loadWorkflow } = await import('../src/workflows/format/index.js');
const { conformingValue } = await import('../src/sim/conforming-value.js');

const repo = resolve(import.meta.dirname, '..');
const cli = join(repo, 'bin', 'switchboard');
const [argument, ...only] = process.argv.slice(2);
const examples = argument ?? process.env['CONDUCTOR_EXAMPLES'];
const limitSeconds = Number(process.env['CONDUCTOR_EXAMPLES_TIMEOUT'] ?? 120);

if (examples === undefined || !existsSync(examples)) {
  console.log(
    `skipped: no Conductor examples folder (${examples ?? 'give EXAMPLES_DIR or set CONDUCTOR_EXAMPLES'}); ` +
      'extract one with `git -C conductor archive HEAD examples | tar -x -C /tmp/cex`',
  );
  process.exit(0);
}
assertFreshBuild(join(repo, 'dist', 'cli', 'launch.js'), 'the examples run through the built CLI');

/** How many steps of a run the write rules serve, each with a file of its own. */
const SCRIPTED_WRITES = 12;
/** A first turn that asks for something written. */
const ASKS_TO_WRITE = '\\b(write|writes|save|create|draft|implement|produce|generate)\\b';

/** The phrase the README.md written into each run's folder carries, to find in what the model was sent. */
const CODEWORD = 'The scratch folder for this run keeps its notes under the heading Tidewater';

interface Validation {
  valid: boolean;
  problems: number;
  warnings: number;
  first: string;
}

interface Outcome {
  example: string;
  validation: Validation;
  inputs: string[];
  /** completed, failed, parked (waiting at a gate), timed out, or not run (an input it could not give). */
  status: string;
  code: string;
  detail: string;
  steps: number;
  /** The step executions in order, e.g. `planner → researchers[0] → …`. */
  path: string;
  requests: number;
  seconds: number;
  readCheck?: string;
  /** Files created or changed in the run's folder (its state folder left out). */
  filesWritten: number;
  /** `tool-call` events of the run: the tools its agent steps called. */
  toolsCalled: number;
}

const files = readdirSync(examples)
  .filter((name) => name.endsWith('.yaml') || name.endsWith('.yml'))
  .filter((name) => only.length === 0 || only.includes(name.replace(/\.ya?ml$/, '')))
  .sort();
const root = mkdtempSync(join(tmpdir(), 'switchboard-conductor-examples-'));
const started = performance.now();
const outcomes: Outcome[] = [];
try {
  for (const name of files) {
    const outcome = await runExample(resolve(examples, name));
    outcomes.push(outcome);
    console.error(
      `${outcome.example}: ${outcome.status}${outcome.detail === '' ? '' : ` (${outcome.detail})`}`,
    );
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
report(outcomes, (performance.now() - started) / 1000);

// ---------------------------------------------------------------------------------------------------

async function runExample(file: string): Promise<Outcome> {
  const example = basename(file).replace(/\.ya?ml$/, '');
  const cwd = join(root, example);
  mkdirSync(join(cwd, 'state'), { recursive: true });
  writeFileSync(join(cwd, 'README.md'), `# Scratch\n\n${CODEWORD}.\n`);
  const environment = runEnvironment(cwd);
  const validation = await validate(file, cwd, environment);
  const given = inputsFor(file);
  const base = { example, validation, inputs: given.map(([key]) => key) };
  const sim = await startSimulator({ scenario: scenarioFor(cwd), maxLifetimeMs: (limitSeconds + 60) * 1000 });
  const before = snapshot(cwd);
  try {
    const begun = performance.now();
    const run = await runCli(
      [
        'workflow',
        'run',
        file,
        '--skip-gates',
        '--json',
        '--run-id',
        'bench',
        ...given.flatMap(([key, value]) => ['-i', `${key}=${value}`]),
      ],
      cwd,
      { ...environment, ...providerEnvironment(sim.url) },
      limitSeconds * 1000,
    );
    const seconds = (performance.now() - begun) / 1000;
    const requests = sim.requests.filter((entry) => entry.outcome === 'reply');
    const result = parseResult(run.stdout);
    const readCheck = checkRead(requests);
    const filesWritten = changedFiles(before, snapshot(cwd));
    const toolsCalled = await toolCalls(cwd, { ...environment, ...providerEnvironment(sim.url) });
    const common = {
      ...base,
      seconds,
      requests: requests.length,
      filesWritten,
      toolsCalled,
      ...(readCheck === undefined ? {} : { readCheck }),
    };
    if (run.timedOut) {
      return {
        ...common,
        status: 'timed out',
        code: '',
        detail: `killed after ${limitSeconds} s`,
        steps: result?.steps?.length ?? 0,
        path: pathOf(result),
      };
    }
    if (result === undefined) {
      return {
        ...common,
        status: 'failed',
        code: `exit ${run.code}`,
        detail: lastLine(run.stderr),
        steps: 0,
        path: '',
      };
    }
    const status = result.status === 'waiting' ? 'parked' : (result.status ?? 'failed');
    // A run's result carries `errorCode` and `error` (a line); an error before the run, `{error: {code, message}}`.
    const error =
      typeof result.error === 'object' ? result.error : { code: result.errorCode, message: result.error };
    return {
      ...common,
      status,
      code: status === 'completed' ? '' : (error.code ?? `exit ${run.code}`),
      detail: status === 'completed' ? '' : oneLine(error.message ?? lastLine(run.stderr)),
      steps: result.steps?.length ?? 0,
      path: pathOf(result),
    };
  } finally {
    await sim.close();
  }
}

/** The user's environment, minus any real credential, with a state folder of the run's own. */
function runEnvironment(cwd: string): NodeJS.ProcessEnv {
  const environment: NodeJS.ProcessEnv = { ...process.env, SWITCHBOARD_STATE_DIR: join(cwd, 'state') };
  for (const name of Object.keys(environment)) {
    if (/API_KEY|AUTH_TOKEN|OAUTH|_TOKEN$|BASE_URL$/.test(name)) delete environment[name];
  }
  return environment;
}

function providerEnvironment(url: string): NodeJS.ProcessEnv {
  return {
    ANTHROPIC_BASE_URL: url,
    ANTHROPIC_API_KEY: 'sk-ant-conductor-examples',
    OPENAI_BASE_URL: `${url}/v1`,
    OPENAI_API_KEY: 'sk-conductor-examples',
    GEMINI_BASE_URL: url,
    GEMINI_API_KEY: 'gemini-conductor-examples',
  };
}

/**
 * Read README.md when a prompt asks for it (once per step: turn 1); write a file when a first turn asks
 * for something written and the step may write (`write_file` on the API providers, `Write` on Claude
 * Code), a new file each time; then conform to every schema.
 */
function scenarioFor(cwd: string): Scenario {
  const writes = Array.from({ length: SCRIPTED_WRITES }, (_, index) => index + 1).flatMap((n) => [
    {
      name: `write ${n}`,
      times: 1,
      match: { tools: '^write_file$', turn: 1, text: ASKS_TO_WRITE },
      reply: {
        tool: {
          name: 'write_file',
          input: { path: `bench-output/step-${n}.md`, content: `# Step ${n}\n\nWritten.\n` },
        },
      },
    },
    {
      name: `Write ${n}`,
      times: 1,
      match: { tools: '^Write$', turn: 1, text: ASKS_TO_WRITE },
      reply: {
        tool: {
          name: 'Write',
          input: {
            file_path: join(cwd, 'bench-output', `claude-${n}.md`),
            content: `# Step ${n}\n\nWritten.\n`,
          },
        },
      },
    },
  ]);
  return {
    rules: [
      {
        name: 'read the file the prompt names',
        match: { tools: '^Read$', turn: 1, text: 'read (the file )?README\\.md' },
        reply: { tool: { name: 'Read', input: { file_path: join(cwd, 'README.md') } } },
      },
      {
        name: 'read the file the prompt names',
        match: { tools: '^read_file$', turn: 1, text: 'read (the file )?README\\.md' },
        reply: { tool: { name: 'read_file', input: { path: 'README.md' } } },
      },
      ...writes,
    ],
    fallback: { conform: true, text: 'Done.' },
  };
}

/** Each file under `folder` (its state folder and Switchboard's left out) and a hash of its content. */
function snapshot(folder: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (current: string): void => {
    for (const entry of readdirSync(current, { withFileTypes: true })) {
      const path = join(current, entry.name);
      const name = relative(folder, path);
      if (name === 'state' || entry.name === '.switchboard' || entry.name === 'node_modules') continue;
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) files.set(name, createHash('sha1').update(readFileSync(path)).digest('hex'));
    }
  };
  walk(folder);
  return files;
}

function changedFiles(before: Map<string, string>, after: Map<string, string>): number {
  return [...after].filter(([name, hash]) => before.get(name) !== hash).length;
}

/** The run's `tool-call` events, as `workflow logs` reads them from its ledger. */
async function toolCalls(cwd: string, env: NodeJS.ProcessEnv): Promise<number> {
  const logs = await runCli(['workflow', 'logs', 'bench', '--json'], cwd, env, 60_000);
  return logs.stdout
    .split('\n')
    .filter((line) => (parseJson(line) as { type?: string } | undefined)?.type === 'tool-call').length;
}

/** For a run where the read rule fired: were Read, Glob and Grep offered, and did the file reach the model? */
function checkRead(requests: SimLogEntry[]): string | undefined {
  const reads = requests.filter((entry) => entry.rule === 'read the file the prompt names');
  if (reads.length === 0) return undefined;
  const offered = reads.every(
    (entry) =>
      ['Read', 'Glob', 'Grep'].every((tool) => entry.tools.includes(tool)) ||
      ['read_file', 'list_files', 'search_files'].every((tool) => entry.tools.includes(tool)),
  );
  const reached = requests.some((entry) => JSON.stringify(entry.body).includes(CODEWORD));
  return `${reads.length} step(s) asked to read README.md: Read/Glob/Grep (or read_file/list_files/search_files) offered ${offered ? 'yes' : 'NO'}, its content reached the simulator ${reached ? 'yes' : 'NO'}`;
}

async function validate(file: string, cwd: string, environment: NodeJS.ProcessEnv): Promise<Validation> {
  const run = await runCli(['workflow', 'validate', file, '--json'], cwd, environment, 60_000);
  const report = parseJson(run.stdout) as
    { valid?: boolean; problems?: { message: string }[]; warnings?: unknown[] } | undefined;
  return {
    valid: run.code === 0 && report?.valid === true,
    problems: report?.problems?.length ?? 0,
    warnings: report?.warnings?.length ?? 0,
    first: report?.problems?.[0]?.message ?? (run.code === 0 ? '' : lastLine(run.stderr)),
  };
}

/**
 * `-i` values: each required input without a default, typed as declared, and each `workflow.input.NAME`
 * the file reads without declaring (Conductor's examples pass those on their usage line).
 */
function inputsFor(file: string): [string, string][] {
  const given: [string, string][] = [];
  let declared: Record<string, { type: string; required: boolean; default?: unknown }> = {};
  try {
    declared = loadWorkflow(file).input;
  } catch {
    // validate has reported it; run reports it again
  }
  for (const [name, input] of Object.entries(declared)) {
    if (!input.required || input.default !== undefined) continue;
    const value = conformingValue({ type: input.type }, name);
    given.push([name, typeof value === 'string' ? value : JSON.stringify(value)]);
  }
  const text = readFileSync(file, 'utf8');
  for (const match of text.matchAll(/workflow\.input\.([A-Za-z_]\w*)/g)) {
    const name = match[1] as string;
    if (declared[name] === undefined && !given.some(([key]) => key === name))
      given.push([name, `sample ${name}`]);
  }
  return given;
}

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/** The built CLI in a process group of its own, ended whole (TERM, then KILL) past the limit. */
function runCli(args: string[], cwd: string, env: NodeJS.ProcessEnv, limitMs: number): Promise<CliRun> {
  return new Promise((done) => {
    const child = spawn(cli, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const signal = (name: NodeJS.Signals): void => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, name);
      } catch {
        // the group is gone
      }
    };
    let kill: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      timedOut = true;
      signal('SIGTERM');
      kill = setTimeout(() => signal('SIGKILL'), 5_000);
    }, limitMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (kill !== undefined) clearTimeout(kill);
      // Whatever the CLI left in its group (it should leave nothing) goes with it.
      signal('SIGKILL');
      done({ code, stdout, stderr, timedOut });
    });
  });
}

interface RunResult {
  status?: string;
  errorCode?: string;
  error?: string | { code?: string; message?: string };
  steps?: { step?: string; status?: string }[];
}

function pathOf(result: RunResult | undefined): string {
  return (result?.steps ?? [])
    .map((step) => `${step.step ?? '?'}${step.status === 'completed' ? '' : ` (${step.status ?? '?'})`}`)
    .join(' → ');
}

function parseResult(stdout: string): RunResult | undefined {
  const value = parseJson(stdout);
  return typeof value === 'object' && value !== null ? (value as RunResult) : undefined;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function lastLine(text: string): string {
  return oneLine(text.trim().split('\n').filter(Boolean).at(-1) ?? '');
}

function oneLine(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 160 ? `${line.slice(0, 157)}…` : line;
}

function report(rows: Outcome[], wallSeconds: number): void {
  const table = [
    ['example', 'validate', 'outcome', 'steps', 'requests', 'files', 'tools', 's', 'detail'],
    ...rows.map((row) => [
      row.example,
      row.validation.valid
        ? `ok (${row.validation.warnings} warn.)`
        : `INVALID: ${oneLine(row.validation.first)}`,
      row.status,
      String(row.steps),
      String(row.requests),
      String(row.filesWritten),
      String(row.toolsCalled),
      row.seconds.toFixed(1),
      [row.code, row.detail].filter(Boolean).join(': '),
    ]),
  ];
  const widths = table[0]!.map((_, column) => Math.max(...table.map((line) => (line[column] ?? '').length)));
  for (const line of table) {
    console.log(
      line
        .map((cell, column) => (column === line.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
        .join('  '),
    );
  }
  console.log();
  for (const row of rows) {
    if (row.readCheck !== undefined) console.log(`read check  ${row.example}: ${row.readCheck}`);
    if (row.inputs.length > 0) console.log(`inputs      ${row.example}: ${row.inputs.join(', ')}`);
    if (row.path !== '') console.log(`steps       ${row.example}: ${row.path}`);
  }
  const count = (status: string): number => rows.filter((row) => row.status === status).length;
  const valid = rows.filter((row) => row.validation.valid).length;
  console.log();
  console.log(`validated with no flags: ${valid}/${rows.length}`);
  console.log(
    `ran to completion with the simulator answering: ${count('completed')}/${rows.length}; failed ${count('failed')}, ` +
      `parked ${count('parked')}, timed out ${count('timed out')}`,
  );
  const worked = rows.filter(
    (row) => row.status === 'completed' && (row.filesWritten > 0 || row.toolsCalled > 0),
  );
  console.log(
    `completed and did work (wrote a file or called a tool): ${worked.length}/${rows.length}; ` +
      `wrote files: ${rows.filter((row) => row.filesWritten > 0).length}, called tools: ${rows.filter((row) => row.toolsCalled > 0).length}`,
  );
  console.log(
    `model requests answered: ${rows.reduce((sum, row) => sum + row.requests, 0)}; wall ${wallSeconds.toFixed(0)} s`,
  );
}
