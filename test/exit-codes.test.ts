import { createServer, type Server } from 'node:net';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/core/errors.js';
import type { Scenario } from '../src/sim/scenario.js';
import { LEDGER_FILE_NAME } from '../src/store/ledger.js';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { endlessToolScenario, writeFileScenario } from './helpers/agent-scenarios.js';
import { claudeProcessIds, waitForNoNewClaudeProcesses } from './helpers/claude.js';
import { createRepository } from './helpers/git-repo.js';
import { runCli, type CliRun } from './helpers/run-cli.js';

// Every exit code in EXIT_CODES (src/core/errors.ts), made to happen by the real CLI: the built
// `switchboard`, the official SDKs and the real Claude Code binary against `switchboard sim`, real git
// in temporary repositories, real SQLite files. The cases are keyed by EXIT_CODES itself, so a new code
// without a case here fails this file (and the typecheck).

const root = join(import.meta.dirname, '..');
const skills = join(root, 'test/fixtures/skills');
const temporary: string[] = [];
const claudeBefore = claudeProcessIds();
/** One simulator for the API providers; rules pick the answer by the prompt's words. */
let api: Simulator;

beforeAll(async () => {
  api = await startSimulator({
    maxLifetimeMs: 300_000,
    scenario: {
      rules: [
        { match: { text: 'please rate limit' }, fault: { status: 429, retryAfter: 0 } },
        { match: { text: 'please overload' }, fault: { kind: 'overload' } },
        { match: { text: 'please deny' }, fault: { status: 401 } },
        { match: { text: 'please break' }, fault: { status: 500 } },
        { match: { text: 'please garble' }, fault: { kind: 'malformed' } },
        { match: { text: 'please stall' }, fault: { kind: 'stall' } },
        { match: { text: 'please dawdle' }, reply: { text: 'late', delayMs: 30_000 } },
        { match: { provider: 'gemini' }, reply: { text: 'flash here', model: 'gemini-2.5-flash' } },
        { match: { text: 'please ramble' }, reply: { text: 'no JSON here, only prose' } },
        {
          match: { text: 'please splurge' },
          reply: { text: 'pricey', usage: { input: 900_000, output: 1 } },
        },
      ],
      fallback: { text: 'ok' },
    },
  });
});

afterAll(async () => {
  await api.close();
  expect(await waitForNoNewClaudeProcesses(claudeBefore)).toEqual([]);
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

/** A fresh working folder (its own ledger, so no cooldown carries over) whose config retries nothing. */
function workspace(): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-exit-')));
  temporary.push(directory);
  writeFileSync(join(directory, 'switchboard.yaml'), 'call:\n  retries_per_provider: 0\n');
  return directory;
}

function apiEnv(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ANTHROPIC_API_KEY: 'sk-ant-exit-codes-test',
    ANTHROPIC_BASE_URL: api.url,
    GEMINI_API_KEY: 'gemini-exit-codes-test',
    GEMINI_BASE_URL: api.url,
  };
}

function run(args: string[], cwd = workspace(), env = apiEnv()): Promise<CliRun> {
  return runCli(args, { cwd, env });
}

function callApi(prompt: string, ...flags: string[]): Promise<CliRun> {
  return run(['call', 'anthropic:claude-haiku-4-5', prompt, ...flags]);
}

/**
 * An agent run of the real Claude Code binary against a simulator of its own, in a new repository.
 * `prepare` may change the repository before the run.
 */
async function agentRun(
  scenario: Scenario,
  task: Record<string, unknown>,
  flags: string[] = [],
  prepare: (repo: string) => void = () => {},
): Promise<CliRun> {
  const sim = await startSimulator({ scenario, maxLifetimeMs: 120_000 });
  try {
    const directory = workspace();
    const repo = createRepository(join(directory, 'repo'));
    prepare(repo);
    const configDir = join(directory, 'claude-config');
    mkdirSync(configDir);
    const taskFile = join(directory, 'task.json');
    writeFileSync(taskFile, JSON.stringify({ id: 'exit', title: 'Exit code', ...task }));
    const env = {
      ...process.env,
      ANTHROPIC_API_KEY: 'sk-ant-exit-codes-test',
      CLAUDE_CONFIG_DIR: configDir,
      SWITCHBOARD_STATE_DIR: join(directory, 'state'),
    };
    const args = ['agent', 'run', '--task', taskFile, '--base-url', sim.url, '--retry-delay', '0'];
    return await runCli([...args, '--max-attempts', '1', ...flags], { cwd: repo, env });
  } finally {
    await sim.close();
  }
}

/** A process listening on a loopback port, so `serve` finds it taken. */
async function busyPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { port: address.port, server };
}

/** A workflow file (Conductor format) written into a fresh workspace; returns the workspace. */
function workflowFile(yaml: string, name = 'flow.yaml'): string {
  const cwd = workspace();
  writeFileSync(join(cwd, name), yaml);
  return cwd;
}

/** A run parked at a human gate. */
const GATED = `workflow:
  name: gated
  entry_point: approve
agents:
  - name: approve
    type: human_gate
    prompt: Ship it?
    options:
      - { label: Ship, value: ship, route: $end }
      - { label: Stop, value: stop, route: $end }
`;

/** A run that sits in a wait step long enough for another process to act on it. */
const SLOW = `workflow:
  name: slow
  entry_point: pause
agents:
  - name: pause
    type: wait
    duration: 60s
    routes:
      - to: $end
`;

/** Polls \`workflow status --json\` until the run is in its wait step (another process advances it). */
async function untilRunning(runId: string, cwd: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const status = await run(['workflow', 'status', runId, '--json'], cwd);
    if (status.status === 0) {
      const view = JSON.parse(status.stdout) as { status: string; steps: { step: string; status: string }[] };
      if (
        view.status === 'running' &&
        view.steps.some((step) => step.step === 'pause' && step.status === 'running')
      )
        return;
    }
    if (Date.now() > deadline)
      throw new Error(`run ${runId} never reached its wait step: ${status.stdout}${status.stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A case runs the CLI into the code, or names the CLI test elsewhere that already asserts it. */
type Case = (() => Promise<CliRun>) | { coveredBy: { file: string; test: string } };

const cases: Record<keyof typeof EXIT_CODES, Case> = {
  OK: () => run(['route', '--skills', skills, 'the app crashes whenever I save']),
  INTERNAL: () => {
    // A folder where the learned examples file belongs is nothing Switchboard expects: it reports
    // it as a bug, with the hint to report it and no stack trace.
    const cwd = workspace();
    mkdirSync(join(cwd, '.switchboard/learned.jsonl'), { recursive: true });
    return run(['route', '--skills', skills, 'the app crashes'], cwd);
  },
  INVALID_INPUT: () => run(['route', '--skills', skills, '   ']),
  CONFIG_INVALID: () => {
    const cwd = workspace();
    writeFileSync(join(cwd, 'switchboard.yaml'), 'route: [unclosed\n');
    return run(['route', '--skills', skills, 'x'], cwd);
  },
  SKILLS_INVALID: () => run(['route', '--skills', '/no/such/skills', 'hi']),
  DATASET_INVALID: () => run(['eval', '--skills', skills, '--dataset', 'missing.jsonl']),
  STORE_ERROR: () => {
    const cwd = workspace();
    writeFileSync(join(cwd, 'not-a-folder'), '');
    return run(['--state-dir', 'not-a-folder', 'route', '--skills', skills, 'the app crashes'], cwd);
  },
  PORT_IN_USE: async () => {
    const { port, server } = await busyPort();
    try {
      return await run(['serve', '--skills', skills, '--port', String(port)]);
    } finally {
      server.close();
    }
  },
  DATABASE_UNREACHABLE: {
    coveredBy: {
      file: 'test/cli-database.test.ts',
      test: 'exits 8 when the database in SWITCHBOARD_DATABASE_URL does not answer',
    },
  },
  DATABASE_AUTH: { coveredBy: { file: 'test/cli-database.test.ts', test: 'exits 9 for a wrong password' } },
  DATABASE_FOREIGN: {
    coveredBy: {
      file: 'test/cli-database.test.ts',
      test: 'exits 11 for a database another application uses, and leaves it as it was',
    },
  },
  ABSTAINED: () => run(['route', '--skills', skills, 'order a large pepperoni pizza for dinner']),
  RATE_LIMITED: () => callApi('please rate limit'),
  OVERLOADED: () => callApi('please overload'),
  AUTH: () => callApi('please deny'),
  TIMEOUT: () => callApi('please dawdle', '--timeout', '1'),
  IDLE_TIMEOUT: () => {
    // Claude Code's silence: the request's headers never come.
    const cwd = workspace();
    mkdirSync(join(cwd, 'claude-config'));
    const env = { ...apiEnv(), CLAUDE_CONFIG_DIR: join(cwd, 'claude-config') };
    const args = ['call', 'claude:haiku', 'please stall', '--base-url', api.url, '--idle-timeout', '1'];
    return run(args, cwd, env);
  },
  PARSE: () => callApi('please garble'),
  SCHEMA: () => {
    const cwd = workspace();
    writeFileSync(
      join(cwd, 'schema.json'),
      JSON.stringify({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
    );
    const args = ['call', 'anthropic:claude-haiku-4-5', 'please ramble', '--schema', 'schema.json'];
    return run([...args, '--schema-retries', '0'], cwd);
  },
  BUDGET_EXCEEDED: async () => {
    // The first call spends past the daily cap; the second is refused before it spends anything.
    const cwd = workspace();
    const budget = 'budgets:\n  rules:\n    - { provider: anthropic, daily_usd: 0.5 }\n';
    writeFileSync(join(cwd, 'switchboard.yaml'), `call:\n  retries_per_provider: 0\n${budget}`);
    const spent = await run(['call', 'anthropic:claude-haiku-4-5', 'please splurge'], cwd);
    expect(spent.status, spent.stderr).toBe(0);
    return run(['call', 'anthropic:claude-haiku-4-5', 'hello'], cwd);
  },
  PROVIDER_UNAVAILABLE: () => run(['call', 'claude:haiku', 'hi', '--claude-path', '/no/such/claude']),
  PROVIDER_ERROR: () => callApi('please break'),
  MODEL_DOWNGRADED: () => run(['call', 'gemini:2.5-pro', 'hello']),
  MAX_TURNS: () => agentRun(endlessToolScenario(), {}, ['--max-turns', '1']),
  AGENT_FAILED: () => agentRun({ rules: [], fallback: { text: 'nothing to change' } }, {}),
  VERIFY_FAILED: () =>
    agentRun(writeFileScenario({ path: 'feature.txt', content: 'x\n' }), { verify: 'test -f absent.txt' }),
  MERGE_CONFLICT: {
    coveredBy: {
      file: 'test/cli-agent.test.ts',
      test: 'stops on a conflict with a change made on the base meanwhile: base unmoved, git output kept',
    },
  },
  TASK_INVALID: () => {
    const cwd = workspace();
    writeFileSync(join(cwd, 'task.yaml'), 'id: [unclosed\n');
    return run(['agent', 'run', '--task', 'task.yaml'], cwd);
  },
  NOT_A_GIT_REPO: () => run(['agent', 'run', '--id', 'x', '--title', 'X']),
  UNKNOWN_BASE: () => {
    const repo = createRepository(join(workspace(), 'repo'));
    return run(['agent', 'run', '--id', 'x', '--title', 'X', '--base', 'nope'], repo);
  },
  DIRTY_CHECKOUT: () =>
    agentRun(
      writeFileScenario({ path: 'feature.txt', content: 'x\n' }),
      { verify: 'test -f feature.txt' },
      [],
      (repo) => writeFileSync(join(repo, 'README.md'), 'edited by hand, not committed\n'),
    ),
  RUN_NOT_FOUND: () => run(['agent', 'show', 'no-such-run']),
  SETUP_FAILED: () => agentRun({ rules: [], fallback: { text: 'unused' } }, { setup: 'exit 3' }),
  REMOTE_UNREACHABLE: () =>
    run(['agent', 'run', '--id', 'x', '--title', 'X', '--repo', `file://${workspace()}/no-such-remote.git`]),
  // The workflow cases: files with no LLM step, so only the engine, the ledger and the CLI are involved.
  WORKFLOW_INVALID: () => {
    // A step type Conductor does not have: refused before anything runs, naming the step and field.
    const cwd = workflowFile(
      'workflow:\n  name: broken\n  entry_point: first\nagents:\n  - name: first\n    type: teleport\n    routes:\n      - to: $end\n',
    );
    return run(['workflow', 'run', 'flow.yaml'], cwd);
  },
  WORKFLOW_TEMPLATE: () => {
    // Calling a method a string does not have fails only when the template is rendered.
    const cwd = workflowFile(
      'workflow:\n  name: bad-template\n  entry_point: first\n  input:\n    name: { type: string, default: ada }\nagents:\n  - name: first\n    type: set\n    value: "{{ workflow.input.name.nosuch() }}"\n    routes:\n      - to: $end\n',
    );
    return run(['workflow', 'run', 'flow.yaml'], cwd);
  },
  WORKFLOW_WAITING: () => run(['workflow', 'run', 'flow.yaml'], workflowFile(GATED)),
  WORKFLOW_FAILED: () => {
    const cwd = workflowFile(
      'workflow:\n  name: refuse\n  entry_point: stop\nagents:\n  - name: stop\n    type: terminate\n    status: failed\n    reason: the input is not safe to process\n',
    );
    return run(['workflow', 'run', 'flow.yaml'], cwd);
  },
  WORKFLOW_LOCKED: async () => {
    // A second process may not advance a run the first one is advancing.
    const cwd = workflowFile(SLOW);
    const first = run(['workflow', 'run', 'flow.yaml', '--run-id', 'slow-locked'], cwd);
    try {
      await untilRunning('slow-locked', cwd);
      return await run(['workflow', 'resume', 'slow-locked'], cwd);
    } finally {
      await run(['workflow', 'cancel', 'slow-locked'], cwd);
      await first;
    }
  },
  WORKFLOW_CHANGED: async () => {
    const cwd = workflowFile(GATED);
    const parked = await run(['workflow', 'run', 'flow.yaml', '--run-id', 'changed'], cwd);
    expect(parked.status, parked.stderr).toBe(EXIT_CODES.WORKFLOW_WAITING);
    writeFileSync(join(cwd, 'flow.yaml'), `${GATED}# edited after the run started\n`);
    return run(['workflow', 'resume', 'changed'], cwd);
  },
  WORKFLOW_LIMIT: () => {
    // A loop capped by max_visits with no on_cap: the run ends at the cap, resumable with more.
    const cwd = workflowFile(
      'workflow:\n  name: loop\n  entry_point: again\nagents:\n  - name: again\n    type: set\n    value: tick\n    max_visits: 2\n    routes:\n      - to: again\n',
    );
    return run(['workflow', 'run', 'flow.yaml'], cwd);
  },
  WORKFLOW_CANCELLED: async () => {
    // The run's own process ends with the code once another process cancels the run.
    const cwd = workflowFile(SLOW);
    const first = run(['workflow', 'run', 'flow.yaml', '--run-id', 'slow-cancelled'], cwd);
    await untilRunning('slow-cancelled', cwd);
    const cancelled = await run(['workflow', 'cancel', 'slow-cancelled'], cwd);
    expect(cancelled.status, cancelled.stderr).toBe(0);
    return first;
  },
  WORKFLOW_LOST: async () => {
    // Another owner takes the run over while this process waits (its token replaced in the real ledger
    // file, as a takeover does): the step's completion write is fenced, nothing is recorded, exit 58.
    const cwd = workflowFile(SLOW.replace('60s', '3s'));
    const first = run(['workflow', 'run', 'flow.yaml', '--run-id', 'slow-lost'], cwd);
    await untilRunning('slow-lost', cwd);
    const { default: Database } = await import('better-sqlite3');
    const ledger = new Database(join(cwd, '.switchboard', LEDGER_FILE_NAME));
    try {
      ledger
        .prepare("UPDATE workflow_runs SET owner_token = 'another-process' WHERE id = ?")
        .run('slow-lost');
    } finally {
      ledger.close();
    }
    return first;
  },
  GATE_TAKEN: async () => {
    // The first answer recorded wins; a later one, even after the run ended, is refused.
    const cwd = workflowFile(GATED);
    const parked = await run(['workflow', 'run', 'flow.yaml', '--run-id', 'taken'], cwd);
    expect(parked.status, parked.stderr).toBe(EXIT_CODES.WORKFLOW_WAITING);
    const first = await run(['workflow', 'gate', 'taken', '--choose', 'ship'], cwd);
    expect(first.status, first.stderr).toBe(EXIT_CODES.OK);
    return run(['workflow', 'gate', 'taken', 'approve', '--choose', 'stop'], cwd);
  },
  SETTINGS_INVALID: () => {
    // A Claude Code settings file that is not JSON: `hooks install` refuses it and leaves it as it was.
    const cwd = workspace();
    mkdirSync(join(cwd, '.claude'));
    writeFileSync(join(cwd, '.claude/settings.json'), '{"hooks": {');
    return run(['hooks', 'install', '--skills', skills], cwd);
  },
  GITHUB_AUTH: {
    coveredBy: {
      file: 'test/github-agent.test.ts',
      test: 'a bad token, a missing issue and no token are one-line errors before anything runs',
    },
  },
  GITHUB_NOT_FOUND: {
    coveredBy: {
      file: 'test/github-agent.test.ts',
      test: 'a bad token, a missing issue and no token are one-line errors before anything runs',
    },
  },
  FORBIDDEN: {
    coveredBy: {
      file: 'test/serve-trust.test.ts',
      test: 'a caller naming the server by a name it does not answer to exits 64 (FORBIDDEN)',
    },
  },
  ENDPOINT_NOT_ALLOWED: {
    coveredBy: {
      file: 'test/endpoint-keys.test.ts',
      test: 'POST /call, call --server and MCP over HTTP refuse a base URL the config does not allow: 403, exit 65',
    },
  },
  SECRET_IN_CHANGE: {
    coveredBy: {
      file: 'test/agent-trust.test.ts',
      test: 'a change that writes a known secret into a file stops with exit 63 naming the file; nothing is committed',
    },
  },
  OUTPUT_LIMIT: () => {
    // A script printing past its max_output_bytes is killed; the run fails naming the cap.
    const cwd = workflowFile(
      'workflow:\n  name: loud\n  entry_point: talk\nagents:\n  - name: talk\n    type: script\n    command: sh\n    args: ["-c", "yes | head -c 5000"]\n    max_output_bytes: 1000\n    routes:\n      - to: $end\n',
    );
    return run(['workflow', 'run', 'flow.yaml'], cwd);
  },
  SERVER_AUTH: {
    coveredBy: {
      file: 'test/serve-token.test.ts',
      test: 'call and route --server find the token file themselves; a wrong token is one line and exit 67',
    },
  },
  FILE_REFUSED: () => run(['workflow', 'validate', '/dev/zero']),
  KEY_EXISTS: async () => {
    // The first key of a name wins; a second one is refused and nothing is created.
    const cwd = workspace();
    const first = await run(['keys', 'create', '--name', 'ci'], cwd);
    expect(first.status, first.stderr).toBe(EXIT_CODES.OK);
    return run(['keys', 'create', '--name', 'ci'], cwd);
  },
  KEY_NOT_FOUND: () => run(['keys', 'revoke', 'no-such-key']),
  RUN_ENDED: async () => {
    // Guidance for a run no model turn will take again is refused, not kept.
    const cwd = workflowFile(GATED);
    const parked = await run(['workflow', 'run', 'flow.yaml', '--run-id', 'ended'], cwd);
    expect(parked.status, parked.stderr).toBe(EXIT_CODES.WORKFLOW_WAITING);
    const cancelled = await run(['workflow', 'cancel', 'ended'], cwd);
    expect(cancelled.status, cancelled.stderr).toBe(EXIT_CODES.OK);
    return run(['workflow', 'guide', 'ended', 'look at the tests first'], cwd);
  },
  // A full or read-only file system needs a mount of its own (root, a mount namespace): asserted there.
  LEDGER_UNWRITABLE: {
    coveredBy: {
      file: 'test/cli-ledger-unwritable.test.ts',
      test: 'call: a disk already full refuses the call before it is sent: one line, exit 75',
    },
  },
  ABORTED: {
    coveredBy: {
      file: 'test/cli-agent-lifecycle.test.ts',
      test: 'cancel leaves no process behind; clean removes merged work and leaves live work alone',
    },
  },
};

describe('every exit code in EXIT_CODES', () => {
  for (const [name, code] of Object.entries(EXIT_CODES)) {
    it(`${code} ${name}`, async () => {
      const testCase = (cases as Partial<Record<string, Case>>)[name];
      if (testCase === undefined) {
        throw new Error(
          `no CLI test makes switchboard exit ${code} (${name}): add one to test/exit-codes.test.ts`,
        );
      }
      if (typeof testCase !== 'function') {
        // The named test exists and asserts this code.
        const source = readFileSync(join(root, testCase.coveredBy.file), 'utf8');
        // A test is declared with `it(` or, when the PostgreSQL project leaves it out, `storeNeutral(`.
        const declared = (title: string): number =>
          new RegExp(`\\b(it|storeNeutral)\\(\\s*'${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}'`).exec(
            source,
          )?.index ?? -1;
        const start = declared(testCase.coveredBy.test);
        expect(start, `${testCase.coveredBy.file} has no test "${testCase.coveredBy.test}"`).toBeGreaterThan(
          0,
        );
        const next = /\n {2}(it|storeNeutral)\(/g;
        next.lastIndex = start + 1;
        const body = source.slice(start, next.exec(source)?.index ?? source.length);
        expect(body).toMatch(new RegExp(`toBe\\(${code}\\)`));
        return;
      }
      const result = await testCase();
      expect(result.status, result.stderr).toBe(code);
      expect(result.stderr, 'no stack trace').not.toMatch(/\n\s+at /);
      if (code !== EXIT_CODES.OK && code !== EXIT_CODES.ABSTAINED) {
        // The last line on stderr says what went wrong and what to do.
        expect(result.stderr.trimEnd().split('\n').at(-1)).toMatch(/^switchboard: .+\(.+\)$/);
      }
    });
  }
});
