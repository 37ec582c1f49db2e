import { execFile, execFileSync, spawn } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { Scenario } from '../src/sim/scenario.js';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { claudeProcessIds, waitForNoNewClaudeProcesses } from './helpers/claude.js';
import { startFakeGitHub, type FakeGitHub, type FakeGitHubOptions } from './helpers/fake-github.js';
import { createRepository, git } from './helpers/git-repo.js';
import { runCli, type CliRun } from './helpers/run-cli.js';
import { waitFor } from './helpers/wait-for.js';

// `switchboard agent run --issue OWNER/REPO#N` as a user runs it: the built CLI, Octokit against a fake
// GitHub REST server on loopback, real git with a bare repository as the remote, and the real Claude Code
// binary against `switchboard sim`, running the tool calls the scenario scripts.

const cli = join(import.meta.dirname, '..', 'dist/cli/main.js');
const TOKEN = 'ghp_switchboardFakeToken0123456789abcdef';
const claudeBefore = claudeProcessIds();
const temporary: string[] = [];
const closers: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});
afterAll(async () => {
  expect(await waitForNoNewClaudeProcesses(claudeBefore)).toEqual([]);
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

const ISSUE = {
  number: 7,
  title: 'Add a feature file',
  body: 'Please add feature.txt.\n\n- [ ] feature.txt exists\n- [x] it says hello\n\n```\n- [ ] not a criterion\n```\n',
  labels: ['enhancement', 'good first issue'],
};

/** The agent prints its environment (the result goes back to the simulator), writes the change, ends. */
const PRINTENV_AND_WRITE: Scenario = {
  rules: [
    {
      name: 'printenv',
      match: { turn: 1 },
      reply: { tool: { name: 'Bash', input: { command: 'printenv' } } },
    },
    {
      name: 'write',
      match: { turn: 2 },
      reply: { tool: { name: 'Write', input: { file_path: 'feature.txt', content: 'hello\n' } } },
    },
  ],
  fallback: { text: 'done' },
};

interface Fixture {
  root: string;
  bare: string;
  checkout: string;
  github: FakeGitHub;
  sim: Simulator;
  env: NodeJS.ProcessEnv;
  run(args: string[], options?: { cwd?: string; env?: NodeJS.ProcessEnv }): Promise<CliRun>;
}

async function fixture(scenario: Scenario, github: Partial<FakeGitHubOptions> = {}): Promise<Fixture> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-github-')));
  temporary.push(root);
  const bare = join(root, 'remote.git');
  execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
  const seed = createRepository(join(root, 'seed'));
  git(seed, 'push', '-q', bare, 'main');
  const checkout = join(root, 'checkout');
  execFileSync('git', ['clone', '-q', bare, checkout]);
  git(checkout, 'config', 'user.email', 'test@example.com');
  git(checkout, 'config', 'user.name', 'Test');
  const fake = await startFakeGitHub({
    owner: 'acme',
    repo: 'widgets',
    issues: [ISSUE],
    token: TOKEN,
    ...github,
  });
  closers.push(() => fake.close());
  const sim = await startSimulator({ scenario, maxLifetimeMs: 120_000 });
  closers.push(() => sim.close());
  const configDir = join(root, 'claude-config');
  mkdirSync(configDir);
  const env = {
    ...process.env,
    ANTHROPIC_API_KEY: 'sk-ant-github-test',
    CLAUDE_CONFIG_DIR: configDir,
    SWITCHBOARD_STATE_DIR: join(root, 'state'),
    GITHUB_TOKEN: TOKEN,
    GITHUB_API_URL: fake.url,
  };
  return {
    root,
    bare,
    checkout,
    github: fake,
    sim,
    env,
    run: (args, options = {}) => runCli(args, { cwd: options.cwd ?? checkout, env: options.env ?? env }),
  };
}

/** The flags every run here takes: the simulator, no retry wait, Bash allowed (to print the environment). */
function runFlags(f: Fixture): string[] {
  return ['--base-url', f.sim.url, '--retry-delay', '0', '--tools', 'Read,Write,Edit,Bash'];
}

/** Every file under `directory` (the state folder, a repository), for searching for the token. */
function filesUnder(directory: string): string[] {
  const files: string[] = [];
  for (const name of readdirSync(directory)) {
    const path = join(directory, name);
    if (statSync(path).isDirectory()) files.push(...filesUnder(path));
    else files.push(path);
  }
  return files;
}

/** Fails naming the file when any file under `directories` holds the token. */
function expectTokenNowhere(directories: string[], printed: string[]): void {
  for (const directory of directories)
    for (const file of filesUnder(directory)) expect(readFileSync(file).includes(TOKEN), file).toBe(false);
  for (const text of printed) expect(text).not.toContain(TOKEN);
}

interface RunJson {
  id: string;
  ok: boolean;
  status: string;
  phase: string;
  errorCode?: string;
  costUsd: number;
  branch: string;
  baseBranch: string;
  mergedCommit?: string;
  pullRequest?: { number: number; url: string };
}

describe('switchboard agent run --issue', () => {
  it('builds the task from the issue, pushes the branch, opens one pull request and comments on the issue', async () => {
    const f = await fixture(PRINTENV_AND_WRITE);
    const result = await f.run([
      'agent',
      'run',
      '--issue',
      'acme/widgets#7',
      ...runFlags(f),
      '--verify',
      'test -f feature.txt && test -z "${GITHUB_TOKEN:-}" && test -z "${GH_TOKEN:-}"',
      '--json',
    ]);
    expect(result.status, result.stderr).toBe(0);
    const run = JSON.parse(result.stdout) as RunJson;
    expect(run).toMatchObject({ ok: true, phase: 'done', id: expect.stringMatching(/^issue-7-/) as unknown });
    expect(run.mergedCommit).toBeUndefined();

    // The task came from the issue: title, body, labels, the checklist (not the fenced example) as acceptance.
    const shown = JSON.parse((await f.run(['agent', 'show', run.id, '--json'])).stdout) as {
      task: { id: string; title: string; description: string; acceptance: string[]; issue: string };
    };
    expect(shown.task).toMatchObject({
      id: 'issue-7',
      title: 'Add a feature file',
      acceptance: ['feature.txt exists', 'it says hello'],
      issue: 'acme/widgets#7',
    });
    expect(shown.task.description).toContain('Please add feature.txt.');
    expect(shown.task.description).toContain('Labels: enhancement, good first issue');
    // The agent's prompt carried the acceptance items.
    expect(JSON.stringify(f.sim.requests[0]?.body)).toContain('it says hello');

    // The branch is on the remote with the change; the remote's main did not move.
    const pushed = git(f.bare, 'rev-parse', `refs/heads/${run.branch}`);
    expect(git(f.bare, 'show', `${pushed}:feature.txt`)).toBe('hello');
    expect(git(f.bare, 'rev-parse', 'main')).toBe(git(f.checkout, 'rev-parse', 'origin/main'));

    // One pull request, head = the run's branch, base = main; one comment with outcome, cost and link.
    expect(f.github.pulls).toHaveLength(1);
    const [pull] = f.github.pulls;
    expect(pull).toMatchObject({
      head: run.branch,
      base: 'main',
      title: 'Add a feature file',
      state: 'open',
    });
    expect(pull?.body).toContain('Closes #7.');
    expect(run.pullRequest).toEqual({ number: pull?.number, url: pull?.html_url });
    expect(f.github.comments).toHaveLength(1);
    const comment = f.github.comments[0]?.body ?? '';
    expect(comment).toContain('succeeded');
    expect(comment).toContain(pull?.html_url);
    expect(comment).toContain(`$${run.costUsd.toFixed(4)}`);
    expect(run.costUsd).toBeGreaterThan(0);
    // Every GitHub request carried the token, in the header.
    expect(f.github.requests.every((request) => request.authorization === `token ${TOKEN}`)).toBe(true);

    // The agent printed its environment (the result went back to the API): no token in it.
    const bodies = f.sim.requests.map((request) => JSON.stringify(request.body));
    expect(bodies.some((body) => body.includes('PATH='))).toBe(true);
    expect(bodies.some((body) => body.includes(TOKEN))).toBe(false);
    expectTokenNowhere([f.root], [result.stdout, result.stderr]);
  });

  it('one pull request and one comment after a kill -9 between opening them and recording the end, then resume', async () => {
    // "GitHub" records the comment and never answers: the runner is killed while it waits.
    let stalled = false;
    const f = await fixture(PRINTENV_AND_WRITE, {
      stall: (request) => {
        if (stalled || request.method !== 'POST' || !request.path.endsWith('/comments')) return false;
        stalled = true;
        return true;
      },
    });
    // A run on the remote itself (--repo with the bare repository's path): the clone under the state folder pushes.
    const runner = spawn(
      process.execPath,
      [cli, 'agent', 'run', '--issue', 'acme/widgets#7', '--repo', f.bare, ...runFlags(f)],
      { cwd: f.root, env: f.env, stdio: 'ignore' },
    );
    await waitFor(() => stalled, { withinMs: 60_000, what: 'the comment request' });
    runner.kill('SIGKILL');
    await new Promise((resolve) => runner.once('exit', resolve));
    expect(f.github.pulls).toHaveLength(1);
    expect(f.github.comments).toHaveLength(1);

    const [crashed] = JSON.parse((await f.run(['agent', 'ls', '--json'], { cwd: f.root })).stdout) as {
      id: string;
      phase: string;
      resumable: boolean;
    }[];
    expect(crashed).toMatchObject({ phase: 'merge', resumable: true });
    const agentRequests = f.sim.requests.length;
    const resumed = await f.run(['agent', 'resume', crashed?.id ?? '', '--base-url', f.sim.url, '--json'], {
      cwd: f.root,
    });
    expect(resumed.status, resumed.stderr).toBe(0);
    const run = JSON.parse(resumed.stdout) as RunJson;
    expect(run).toMatchObject({ ok: true, phase: 'done' });
    expect(run.pullRequest?.number).toBe(f.github.pulls[0]?.number);
    // Looked up, not opened again: still one of each, and the agent did not run a second time.
    expect(f.github.pulls).toHaveLength(1);
    expect(f.github.comments).toHaveLength(1);
    expect(
      f.github.requests.filter((request) => request.method === 'POST' && request.path.endsWith('/pulls')),
    ).toHaveLength(1);
    expect(f.sim.requests).toHaveLength(agentRequests);
    expect(git(f.bare, 'show', `${run.branch}:feature.txt`)).toBe('hello');
    expectTokenNowhere([f.root], [resumed.stdout, resumed.stderr]);
  }, 150_000);

  it('a run whose verify fails comments the failure on the issue, once, and opens no pull request', async () => {
    const f = await fixture(PRINTENV_AND_WRITE);
    const result = await f.run([
      'agent',
      'run',
      '--issue',
      'acme/widgets#7',
      ...runFlags(f),
      '--verify',
      'echo "the feature is wrong"; false',
      '--max-attempts',
      '1',
    ]);
    expect(result.status, result.stderr).toBe(41);
    expect(f.github.pulls).toHaveLength(0);
    expect(f.github.comments).toHaveLength(1);
    expect(f.github.comments[0]?.body).toMatch(/VERIFY_FAILED/);
    expect(f.github.comments[0]?.body).toMatch(
      /failed \(run `issue-7-[0-9a-f]+`, 1 attempt, \$\d+\.\d{4}\); no pull request/,
    );
    // Nothing was pushed.
    expect(git(f.bare, 'for-each-ref', '--format=%(refname)', 'refs/heads/')).toBe('refs/heads/main');
  });

  it('a bad token, a missing issue and no token are one-line errors before anything runs', async () => {
    const f = await fixture(PRINTENV_AND_WRITE);
    const wrongToken = await f.run(['agent', 'run', '--issue', 'acme/widgets#7', ...runFlags(f)], {
      env: { ...f.env, GITHUB_TOKEN: 'ghp_notTheRightToken000000000000' },
    });
    expect(wrongToken.status).toBe(60);
    expect(wrongToken.stderr).toMatch(
      /^switchboard: GitHub refused access to issue acme\/widgets#7 \(HTTP 401.*GITHUB_TOKEN/m,
    );
    const { GITHUB_TOKEN: _token, ...withoutToken } = f.env;
    const noToken = await f.run(['agent', 'run', '--issue', 'acme/widgets#7', ...runFlags(f)], {
      env: withoutToken,
    });
    expect(noToken.status).toBe(60);
    expect(noToken.stderr).toContain('GITHUB_TOKEN is not set');
    const missing = await f.run(['agent', 'run', '--issue', 'acme/widgets#99', ...runFlags(f)]);
    expect(missing.status).toBe(61);
    expect(missing.stderr).toMatch(/GitHub has no issue acme\/widgets#99/);
    const malformed = await f.run(['agent', 'run', '--issue', 'widgets#7', ...runFlags(f)]);
    expect(malformed.status).toBe(2);
    for (const run of [wrongToken, noToken, missing, malformed]) expect(run.stderr).not.toMatch(/\n\s+at /);
    // Nothing was recorded, nothing reached the API.
    expect(f.sim.requests).toHaveLength(0);
    expect(JSON.parse((await f.run(['agent', 'ls', '--json'])).stdout)).toEqual([]);
  });
});

describe('workflow agent step with effects: git, issue: and merge: pr', () => {
  /** A workflow whose git step works on the issue given as an input and delivers a pull request. */
  function workflowFile(f: Fixture, verify: string): string {
    const file = join(f.root, 'issue.yaml');
    writeFileSync(
      file,
      `workflow:
  name: issue-to-pr
  entry_point: implement
agents:
  - name: implement
    type: agent
    provider: claude-agent-sdk
    model: claude-haiku-4-5
    prompt: Do what the issue asks.
    tools: [Read, Write, Bash]
    effects: git
    repo: ${JSON.stringify(f.checkout)}
    issue: '{{ workflow.input.issue }}'
    merge: pr
    verify: ${JSON.stringify(verify)}
    limits:
      max_attempts: 1
    routes:
      - to: $end
output:
  pull_request: '{{ implement.output.pull_request.url }}'
  branch: '{{ implement.output.branch }}'
`,
    );
    return file;
  }

  function workflowEnv(f: Fixture): NodeJS.ProcessEnv {
    return { ...f.env, ANTHROPIC_BASE_URL: f.sim.url };
  }

  it('pushes the step branch, opens one pull request and comments; killed with -9 before the step ends and resumed, it adds none', async () => {
    let stalled = false;
    const f = await fixture(PRINTENV_AND_WRITE, {
      stall: (request) => {
        if (stalled || request.method !== 'POST' || !request.path.endsWith('/comments')) return false;
        stalled = true;
        return true;
      },
    });
    // (`$GITHUB_TOKEN` without braces: a workflow file's `${VAR}` is the environment's value, by design.)
    const file = workflowFile(f, 'test -f feature.txt && test -z "$GITHUB_TOKEN" && test -z "$GH_TOKEN"');
    const runner = spawn(
      process.execPath,
      [cli, 'workflow', 'run', file, '-i', 'issue=acme/widgets#7', '--run-id', 'wf-issue'],
      { cwd: f.checkout, env: workflowEnv(f), stdio: 'ignore' },
    );
    await waitFor(() => stalled, { withinMs: 60_000, what: 'the comment request' });
    runner.kill('SIGKILL');
    await new Promise((resolve) => runner.once('exit', resolve));
    expect(f.github.pulls).toHaveLength(1);
    expect(f.github.comments).toHaveLength(1);
    const agentRequests = f.sim.requests.length;

    const result = await f.run(['workflow', 'resume', 'wf-issue', '--json'], { env: workflowEnv(f) });
    expect(result.status, result.stderr).toBe(0);
    const run = JSON.parse(result.stdout) as {
      status: string;
      output: { pull_request: string; branch: string };
    };
    // The commit was adopted (the agent did not run again); the pull request and comment were found.
    expect(f.sim.requests).toHaveLength(agentRequests);
    expect(run.status).toBe('completed');
    expect(f.github.pulls).toHaveLength(1);
    expect(f.github.pulls[0]).toMatchObject({
      head: 'wf/wf-issue/implement-0',
      base: 'main',
      title: ISSUE.title,
    });
    expect(run.output).toEqual({
      pull_request: f.github.pulls[0]?.html_url,
      branch: 'wf/wf-issue/implement-0',
    });
    expect(git(f.bare, 'show', 'wf/wf-issue/implement-0:feature.txt')).toBe('hello');
    expect(f.github.comments).toHaveLength(1);
    expect(f.github.comments[0]?.body).toContain(f.github.pulls[0]?.html_url);
    // The issue's text and checklist reached the agent with the step's prompt.
    const prompt = JSON.stringify(f.sim.requests[0]?.body);
    expect(prompt).toContain('Do what the issue asks.');
    expect(prompt).toContain('it says hello');
    const bodies = f.sim.requests.map((request) => JSON.stringify(request.body));
    expect(bodies.some((body) => body.includes('PATH='))).toBe(true);
    expect(bodies.some((body) => body.includes(TOKEN))).toBe(false);
    expectTokenNowhere([f.root], [result.stdout, result.stderr]);
  }, 150_000);

  it('a step whose verify fails comments the failure once and opens no pull request', async () => {
    const f = await fixture(PRINTENV_AND_WRITE);
    const file = workflowFile(f, 'false');
    const result = await f.run(['workflow', 'run', file, '-i', 'issue=acme/widgets#7', '--json'], {
      env: workflowEnv(f),
    });
    // The step's own code.
    expect(result.status, result.stderr).toBe(41);
    expect(f.github.pulls).toHaveLength(0);
    expect(f.github.comments).toHaveLength(1);
    expect(f.github.comments[0]?.body).toMatch(/VERIFY_FAILED/);
  });
});

describe('merge pr to an https GitHub remote', () => {
  it('authenticates the push with the token in a header from git’s environment, never in the URL or a file', async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-github-https-')));
    temporary.push(root);
    // A certificate for 127.0.0.1 that git (GIT_SSL_CAINFO) and Node (NODE_EXTRA_CA_CERTS) trust.
    const key = join(root, 'key.pem');
    const cert = join(root, 'cert.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    const gitRoot = join(root, 'git');
    const bare = join(gitRoot, 'acme', 'widgets.git');
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
    git(createRepository(join(root, 'seed')), 'push', '-q', bare, 'main');
    const github = await startFakeGitHub({
      owner: 'acme',
      repo: 'widgets',
      issues: [ISSUE],
      token: TOKEN,
      tls: { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') },
      apiPrefix: '/api/v3',
      gitRoot,
    });
    closers.push(() => github.close());
    const sim = await startSimulator({ scenario: PRINTENV_AND_WRITE, maxLifetimeMs: 120_000 });
    closers.push(() => sim.close());
    // A checkout whose origin is the https remote on the GitHub Enterprise host (the API's host).
    const checkout = join(root, 'checkout');
    execFileSync('git', ['clone', '-q', bare, checkout]);
    const remoteUrl = `${new URL(github.url).origin}/acme/widgets.git`;
    git(checkout, 'remote', 'set-url', 'origin', remoteUrl);
    const configDir = join(root, 'claude-config');
    mkdirSync(configDir);
    const env = {
      ...process.env,
      ANTHROPIC_API_KEY: 'sk-ant-github-test',
      CLAUDE_CONFIG_DIR: configDir,
      SWITCHBOARD_STATE_DIR: join(root, 'state'),
      GITHUB_TOKEN: TOKEN,
      GITHUB_API_URL: github.url,
      NODE_EXTRA_CA_CERTS: cert,
      GIT_SSL_CAINFO: cert,
    };
    // Without the token git cannot even list the remote: the fake refuses unauthenticated git requests.
    // (Asynchronously: the fake server answers from this process.)
    await expect(
      promisify(execFile)('git', ['ls-remote', 'origin'], { cwd: checkout, env, timeout: 30_000 }),
    ).rejects.toThrow();

    const before = github.requests.length;
    const result = await runCli(
      ['agent', 'run', '--issue', 'acme/widgets#7', '--base-url', sim.url, '--retry-delay', '0', '--json'],
      { cwd: checkout, env },
    );
    expect(result.status, result.stderr).toBe(0);
    const run = JSON.parse(result.stdout) as RunJson;
    expect(git(bare, 'show', `${run.branch}:feature.txt`)).toBe('hello');
    expect(github.pulls).toHaveLength(1);
    const gitRequests = github.requests
      .slice(before)
      .filter((request) => request.path.startsWith('/acme/widgets.git/'));
    expect(gitRequests.some((request) => request.path.endsWith('/git-receive-pack'))).toBe(true);
    const basic = `basic ${Buffer.from(`x-access-token:${TOKEN}`).toString('base64')}`;
    for (const request of gitRequests) {
      expect(request.authorization?.toLowerCase()).toBe(basic.toLowerCase());
      expect(`${request.path}?${JSON.stringify(request.query)}`).not.toContain(TOKEN);
    }
    // The remote URL is as the user wrote it; no file under the folder holds the token or its header.
    expect(git(checkout, 'remote', 'get-url', 'origin')).toBe(remoteUrl);
    const header = basic.slice('basic '.length);
    for (const file of filesUnder(root)) {
      const bytes = readFileSync(file);
      expect(bytes.includes(TOKEN) || bytes.includes(header), file).toBe(false);
    }
    expect(result.stdout + result.stderr).not.toContain(TOKEN);
  });
});
