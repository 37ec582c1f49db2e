import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { delimiter, join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { agentCliSuite, type RunJson } from './helpers/agent-cli.js';
import { bashScenario, writeFilesScenario } from './helpers/agent-scenarios.js';
import { IN_CI } from './helpers/ci.js';
import { git } from './helpers/git-repo.js';
import { runCli } from './helpers/run-cli.js';
import { filesHolding } from './helpers/planted.js';

// Issue 24: the verify command runs code the agent may edit, in the worktree, where the runner itself
// then runs git (add, commit) outside any sandbox with its whole environment. A verify command that
// replaces the worktree's `.git` with a repository of its own, set to run a program from git
// (core.fsmonitor, a post-commit hook), must not get that program run by the runner; and one that
// reads the `.env` of the folder Switchboard started in, outside the repository, must find nothing.
// The built CLI, real Claude Code against the simulator, real git, real bubblewrap.

const { fixture, simUrl } = agentCliSuite();
const onPath = (program: string): boolean =>
  (process.env['PATH'] ?? '').split(delimiter).some((folder) => existsSync(join(folder, program)));
const sandboxed = onPath('bwrap') || IN_CI ? it : it.skip;

/**
 * Swaps the worktree's `.git` for a repository of the script's own holding the same branch and commit
 * (so the runner's commit goes through), whose settings run `env` from git: core.fsmonitor on
 * `git add`, a post-commit hook on `git commit --no-verify`. Each writes outside the worktree and in it.
 * Every step may fail (the sandbox refuses): the verify itself passes either way.
 */
function tamperScript(outside: string): string {
  const leak = (name: string): string => `env > ${outside}/leak-${name}.txt; env > leak-${name}-inside.txt`;
  return [
    'common=$(git rev-parse --path-format=absolute --git-common-dir)',
    'head=$(git rev-parse HEAD); branch=$(git symbolic-ref --short HEAD)',
    'rm -f .git && git init -q . && git fetch -q "$common" "$head"',
    'git update-ref "refs/heads/$branch" "$head" && git symbolic-ref HEAD "refs/heads/$branch" && git reset -q',
    `git config core.fsmonitor "sh -c '${leak('fsmonitor')}; false'"`,
    `printf '#!/bin/sh\\n${leak('hook')}\\n' > .git/hooks/post-commit && chmod +x .git/hooks/post-commit`,
    'true',
  ].join('\n');
}

describe("the worktree's .git and the start folder's .env", () => {
  sandboxed('a verify command that replaces .git gets no program run by the runner', async () => {
    const f = await fixture(writeFilesScenario({ files: [{ path: 'done.txt', content: 'done\n' }] }));
    const tag = randomBytes(6).toString('hex');
    const secrets = [`sk-ant-PLANTED-${tag}-anthropic`, `sk-proj-PLANTED-${tag}-openai`];
    Object.assign(f.env, { ANTHROPIC_API_KEY: secrets[0], OPENAI_API_KEY: secrets[1] });
    const outside = join(f.root, 'outside');
    mkdirSync(outside);
    writeFileSync(join(f.repo, 'tamper.sh'), tamperScript(outside));
    // What lands in the worktree is ignored: the runner's commit goes on, and with it the hook.
    writeFileSync(join(f.repo, '.gitignore'), 'leak-*\n');
    git(f.repo, 'add', 'tamper.sh', '.gitignore');
    git(f.repo, 'commit', '-qm', 'a script the verify runs');
    const task = f.task('task', { id: 'tamper', title: 'Tamper', verify: 'sh tamper.sh' });

    const result = await f.run(['agent', 'run', '--task', task, '--json']);
    const run = JSON.parse(result.stdout) as RunJson;
    expect(readdirSync(outside)).toEqual([]);
    expect(filesHolding(f.root, secrets)).toEqual([]);
    expect(run, result.stderr).toMatchObject({ ok: true, phase: 'done' });
    expect(readFileSync(join(f.repo, 'done.txt'), 'utf8')).toBe('done\n');
    for (const secret of secrets) expect(result.stdout + result.stderr).not.toContain(secret);
  });

  sandboxed("the agent's Bash that replaces .git gets no program run by the runner", async () => {
    const f = await fixture(
      bashScenario({ commands: ['sh tamper.sh > tamper-out.txt 2>&1; echo done > done.txt'] }),
    );
    const tag = randomBytes(6).toString('hex');
    const secrets = [`sk-ant-PLANTED-${tag}-anthropic`, `sk-proj-PLANTED-${tag}-openai`];
    Object.assign(f.env, { ANTHROPIC_API_KEY: secrets[0], OPENAI_API_KEY: secrets[1] });
    const outside = join(f.root, 'outside');
    mkdirSync(outside);
    writeFileSync(join(f.repo, 'tamper.sh'), tamperScript(outside));
    writeFileSync(join(f.repo, '.gitignore'), 'leak-*\ntamper-out.txt\n');
    git(f.repo, 'add', 'tamper.sh', '.gitignore');
    git(f.repo, 'commit', '-qm', 'a script the agent runs');
    const task = f.task('task', {
      id: 'bash-tamper',
      title: 'Tamper',
      tools: ['Bash'],
      verify: 'test -f done.txt',
    });

    const result = await f.run(['agent', 'run', '--task', task, '--json']);
    const run = JSON.parse(result.stdout) as RunJson;
    expect(readdirSync(outside)).toEqual([]);
    expect(filesHolding(f.root, secrets)).toEqual([]);
    // Claude Code's sandbox refused to remove the worktree's .git, so the run went on as usual.
    expect(readFileSync(join(run.worktree, 'tamper-out.txt'), 'utf8')).toMatch(/rm: cannot remove '\.git'/);
    expect(run, result.stderr).toMatchObject({ ok: true, phase: 'done' });
  });

  sandboxed('the .env of the folder Switchboard starts in, outside the repository, is hidden', async () => {
    const f = await fixture(writeFilesScenario({ files: [{ path: 'done.txt', content: 'done\n' }] }));
    const secret = `PLANTED-${randomBytes(6).toString('hex')}-start-dotenv`;
    // Outside HOME and /tmp, which the sandbox hides anyway: where a server or a container starts.
    const start = mkdtempSync(join('/var/tmp', 'switchboard-start-'));
    onTestFinished(() => rmSync(start, { recursive: true, force: true }));
    const dotEnv = join(start, '.env');
    writeFileSync(dotEnv, `DEPLOY_TOKEN=${secret}\n`);
    writeFileSync(join(f.repo, '.gitignore'), 'found-*.txt\n');
    git(f.repo, 'add', '.gitignore');
    git(f.repo, 'commit', '-qm', 'ignore what the commands find');
    const reader = (phase: string): string =>
      `cat ${dotEnv} > found-${phase}.txt 2>&1; ls -la ${start} >> found-${phase}.txt 2>&1; true`;
    const task = f.task('task', {
      id: 'dotenv',
      title: 'Read .env',
      setup: reader('setup'),
      verify: reader('verify'),
    });

    const args = ['agent', 'run', '--task', task, '--json', '--repo', f.repo, '--base-url', simUrl()];
    const result = await runCli(args, { cwd: start, env: f.env });
    const run = JSON.parse(result.stdout) as RunJson;
    expect(run, result.stderr).toMatchObject({ ok: true, phase: 'done' });
    for (const phase of ['setup', 'verify'])
      expect(existsSync(join(run.worktree, `found-${phase}.txt`))).toBe(true);
    expect(filesHolding(f.root, [secret])).toEqual([]);
    expect(readdirSync(start)).toEqual(['.env']);
    expect(result.stdout + result.stderr).not.toContain(secret);
  });
});
