import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Scenario } from '../src/sim/scenario.js';
import { slowScenario, writeFilesScenario } from './helpers/agent-scenarios.js';
import { agentCliSuite, cli, verifyGate, waitUntil, type RunJson } from './helpers/agent-cli.js';
import { waitForNoNewClaudeProcesses } from './helpers/claude.js';
import { storeNeutral, storeNeutralBlock } from './helpers/passes.js';
import { git } from './helpers/git-repo.js';
import { IN_CI } from './helpers/ci.js';

// `switchboard agent` as a user runs it: the built CLI, real git in temporary repositories, the real
// Claude Code binary against `switchboard sim` on loopback, executing the tool calls the scenario scripts.
// Resume, cancel, clean, run-all and what outlives a killed runner; test/cli-agent.test.ts has `agent run`.

const { children, claudeBefore, fixture, simLog, simUrl } = agentCliSuite();

describe('switchboard agent lifecycle', () => {
  it('resumes a run whose runner was killed with SIGKILL mid-run, with nothing lost', async () => {
    const f = await fixture({
      rules: [
        {
          name: 'resume',
          match: { text: 'interrupted' },
          times: 1,
          reply: { tool: { name: 'Write', input: { file_path: 'part2.txt', content: 'two\n' } } },
        },
        {
          name: 'first',
          match: { turn: 1 },
          times: 1,
          reply: { tool: { name: 'Write', input: { file_path: 'part1.txt', content: 'one\n' } } },
        },
        { name: 'slow', match: { turn: 2 }, times: 1, reply: { text: 'late', delayMs: 60_000 } },
      ],
      fallback: { text: 'done' },
    });
    const task = f.task('task', {
      id: 'crash',
      title: 'Survive',
      verify: 'test -f part1.txt && test -f part2.txt',
    });
    const runner = spawn(process.execPath, [cli, 'agent', 'run', '--task', task, '--base-url', simUrl()], {
      cwd: f.repo,
      env: f.env,
      stdio: 'ignore',
    });
    children.push(runner.pid ?? 0);
    await waitUntil(() => simLog().some((entry) => entry.rule === 'slow'));
    const [before] = await f.json<{ id: string; phase: string; live: boolean }[]>(['agent', 'ls']);
    expect(before).toMatchObject({ phase: 'agent', live: true });
    runner.kill('SIGKILL');
    await new Promise((resolve) => runner.once('exit', resolve));
    const [crashed] = await f.json<{ id: string; resumable: boolean; worktree: string }[]>(['agent', 'ls']);
    expect(crashed?.resumable).toBe(true);
    expect(existsSync(join(crashed?.worktree ?? '', 'part1.txt'))).toBe(true);

    const resumed = await f.run(['agent', 'resume', crashed?.id ?? '', '--json']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ ok: true, phase: 'done' });
    expect(readFileSync(join(f.repo, 'part1.txt'), 'utf8')).toBe('one\n');
    expect(readFileSync(join(f.repo, 'part2.txt'), 'utf8')).toBe('two\n');
    const events = await f.run(['agent', 'logs', crashed?.id ?? '']);
    expect(events.stdout).toMatch(/resume/);
  });

  it('SIGTERM to `agent run` stops it cleanly: the run is cancelled, exit 130, no Claude Code left', async () => {
    const f = await fixture(slowScenario({ delayMs: 60_000 }));
    const task = f.task('task', { id: 'terminated', title: 'Take your time' });
    const runner = spawn(process.execPath, [cli, 'agent', 'run', '--task', task, '--base-url', simUrl()], {
      cwd: f.repo,
      env: f.env,
      stdio: 'ignore',
    });
    children.push(runner.pid ?? 0);
    await waitUntil(() => simLog().length > 0);
    const exited = new Promise<number | null>((resolve) => runner.once('exit', (code) => resolve(code)));
    runner.kill('SIGTERM');
    expect(await exited).toBe(130);
    const [stopped] = await f.json<{ id: string; status: string }[]>(['agent', 'ls']);
    expect(stopped).toMatchObject({ status: 'cancelled' });
  });

  it('cancel leaves no process behind; clean removes merged work and leaves live work alone', async () => {
    const f = await fixture({
      rules: [
        {
          match: { text: 'Task quick:' },
          reply: { tool: { name: 'Write', input: { file_path: 'quick.txt', content: 'q\n' } } },
        },
        { match: { text: 'Task slow:' }, reply: { text: 'late', delayMs: 60_000 } },
      ],
      fallback: { text: 'done' },
    });
    const quick = await f.run([
      'agent',
      'run',
      '--task',
      f.task('quick', { id: 'quick', title: 'Quick' }),
      '--json',
    ]);
    expect(quick.status, quick.stderr).toBe(0);
    const quickRun = JSON.parse(quick.stdout) as RunJson;

    const runner = spawn(
      process.execPath,
      [cli, 'agent', 'run', '--task', f.task('slow', { id: 'slow', title: 'Slow' }), '--base-url', simUrl()],
      { cwd: f.repo, env: f.env, stdio: 'ignore' },
    );
    children.push(runner.pid ?? 0);
    const runnerExit = new Promise<number | null>((resolve) => runner.once('exit', (code) => resolve(code)));
    await waitUntil(() => simLog().some((entry) => entry.text?.includes('Task slow:') === true));
    const live = (
      await f.json<{ id: string; taskId: string; childPid?: number; worktree: string }[]>(['agent', 'ls'])
    ).find((run) => run.taskId === 'slow');
    expect(live?.childPid).toBeGreaterThan(0);

    const cleaned = await f.json<{ removed: { id: string }[]; kept: { id: string; reason: string }[] }>([
      'agent',
      'clean',
    ]);
    expect(cleaned.removed.map((entry) => entry.id)).toEqual([quickRun.id]);
    expect(cleaned.kept).toEqual([{ id: live?.id, reason: 'running' }]);
    expect(existsSync(live?.worktree ?? '')).toBe(true);
    expect(existsSync(quickRun.worktree)).toBe(false);

    const cancel = await f.run(['agent', 'cancel', live?.id ?? '']);
    expect(cancel).toMatchObject({ status: 0, stdout: `${live?.id} cancelled\n` });
    expect(await runnerExit).toBe(130);
    expect(await waitForNoNewClaudeProcesses(claudeBefore)).toEqual([]);
    // The agent's whole process group is gone (zombies are reaped within moments).
    await waitUntil(() => !groupAlive(live?.childPid ?? 0), 5_000).catch(() => undefined);
    expect(
      groupAlive(live?.childPid ?? 0),
      execFileSync('ps', ['-eo', 'pid,pgid,stat,args'], { encoding: 'utf8' })
        .split('\n')
        .filter((line) => line.includes(String(live?.childPid)))
        .join('\n'),
    ).toBe(false);
    const shown = await f.json<{ status: string; phase: string }>(['agent', 'show', live?.id ?? '']);
    expect(shown).toMatchObject({ status: 'cancelled', phase: 'failed' });
    const abandoned = await f.json<{ removed: { id: string }[] }>([
      'agent',
      'clean',
      '--abandon',
      live?.id ?? '',
    ]);
    expect(abandoned.removed.map((entry) => entry.id)).toEqual([live?.id]);
    expect(git(f.repo, 'worktree', 'list').split('\n')).toHaveLength(1);
  });

  it('run-all runs several tasks in parallel and lands every merge', async () => {
    const ids = ['alpha', 'beta', 'gamma', 'delta'];
    const f = await fixture({
      rules: ids.map((id) => ({
        match: { text: `Task ${id}:` },
        reply: { tool: { name: 'Write', input: { file_path: `${id}.txt`, content: `${id}\n` } } },
      })),
      fallback: { text: 'done' },
    });
    const files = ids.map((id) => f.task(id, { id, title: `Add ${id}`, verify: `test -f ${id}.txt` }));
    const started = Date.now();
    const result = await f.run(['agent', 'run-all', ...files, '--parallel', '3', '--json']);
    const wall = Date.now() - started;
    expect(result.status, result.stderr).toBe(0);
    const runs = JSON.parse(result.stdout) as RunJson[];
    expect(runs.map((run) => run.ok)).toEqual([true, true, true, true]);
    for (const id of ids) expect(readFileSync(join(f.repo, `${id}.txt`), 'utf8')).toBe(`${id}\n`);
    const subjects = git(f.repo, 'log', '--format=%s', 'main');
    for (const id of ids) expect(subjects).toContain(`feat(${id}): Add ${id}`);
    expect(result.stderr).toMatch(/\[alpha-[0-9a-f]+\] merge/);
    console.log(`run-all of 4 tasks, --parallel 3: ${wall} ms wall`);
  });
});

describe('switchboard agent failures that are not the agent', () => {
  storeNeutral(
    'reports an API failure as AUTH / RATE_LIMITED / PROVIDER_UNAVAILABLE with its exit code, and does not retry it',
    async () => {
      const f = await fixture({
        rules: [
          {
            name: 'auth',
            match: { text: 'Task auth:' },
            fault: { status: 401, message: 'invalid x-api-key' },
          },
          {
            name: 'limited',
            match: { text: 'Task limited:' },
            fault: {
              status: 429,
              retryAfter: 60,
              message: `Claude AI usage limit reached|${Math.floor(Date.now() / 1000) + 3600}`,
            },
          },
          { name: 'drop', match: { text: 'Task drop:' }, fault: { kind: 'drop-before' } },
        ],
      });
      const cases = [
        ['auth', 'AUTH', 22],
        ['limited', 'RATE_LIMITED', 20],
        ['drop', 'PROVIDER_UNAVAILABLE', 28],
      ] as const;
      for (const [id, code, exit] of cases) {
        const task = f.task(id, { id, title: `Fail ${id}`, limits: { max_attempts: 3 } });
        const result = await f.run(['agent', 'run', '--task', task, '--retry-delay', '0.05', '--json']);
        expect(result.status, `${id}: ${result.stderr}`).toBe(exit);
        const run = JSON.parse(result.stdout) as RunJson;
        expect(run).toMatchObject({ status: 'failed', errorCode: code, attempts: 1 });
        // The runner did not try again. Claude Code sends one request, except on a 401: it then asks its
        // apiKeyHelper for the key again and resends, twice, in case the key was rotated.
        expect(simLog().filter((entry) => entry.rule === id)).toHaveLength(id === 'auth' ? 3 : 1);
        const show = await f.run(['agent', 'show', run.id]);
        expect(show.stdout).toMatch(new RegExp(`^error {5}${code}: the API failed, not the agent`, 'm'));
        expect(show.stdout).not.toContain('agent_error');
        expect(show.stdout).not.toContain('sk-ant-agent-cli-test');
      }
    },
  );

  it('refuses a dirty checkout before the agent runs; one dirtied meanwhile is merged by resume once clean', async () => {
    const f = await fixture(writeFilesScenario({ files: [{ path: 'landed.txt', content: 'landed\n' }] }));
    writeFileSync(join(f.repo, 'README.md'), 'work in progress\n');
    const early = await f.run([
      'agent',
      'run',
      '--task',
      f.task('early', { id: 'early', title: 'Too early' }),
    ]);
    expect(early.status).toBe(46);
    expect(early.stderr.trim().split('\n')).toHaveLength(1);
    expect(early.stderr).toMatch(/uncommitted changes \(README\.md\).*commit or stash them/);
    expect(simLog()).toEqual([]);
    expect(await f.json<unknown[]>(['agent', 'ls'])).toEqual([]);
    git(f.repo, 'checkout', '--', 'README.md');

    // While the run verifies, the user edits the checkout.
    const gate = verifyGate(f, 'test -f landed.txt');
    const task = f.task('late', { id: 'late', title: 'Land later', verify: gate.command });
    const running = f.run(['agent', 'run', '--task', task, '--json']);
    const worktree = await gate.waiting();
    writeFileSync(join(f.repo, 'README.md'), 'work in progress\n');
    await gate.release(worktree);
    const stopped = await running;
    expect(stopped.status, stopped.stderr).toBe(46);
    const run = JSON.parse(stopped.stdout) as RunJson;
    expect(run).toMatchObject({ status: 'conflict', errorCode: 'DIRTY_CHECKOUT', attempts: 1 });
    expect(git(f.repo, 'show', `${run.branch}:landed.txt`)).toBe('landed');
    expect(existsSync(join(f.repo, 'landed.txt'))).toBe(false);
    const requests = simLog().length;
    expect(requests).toBeGreaterThan(0);

    const refused = await f.run(['agent', 'resume', run.id]);
    expect(refused.status).toBe(46);
    expect(refused.stderr).toContain(`switchboard agent resume ${run.id}`);

    git(f.repo, 'checkout', '--', 'README.md');
    const resumed = await f.run(['agent', 'resume', run.id, '--json']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ ok: true, phase: 'done', attempts: 1 });
    expect(readFileSync(join(f.repo, 'landed.txt'), 'utf8')).toBe('landed\n');
    expect(simLog()).toHaveLength(requests);
  });
});

storeNeutralBlock('switchboard agent: nothing outlives the runner', () => {
  it('kills the verify command when the runner is killed with SIGKILL', async () => {
    const f = await fixture(writeFilesScenario({ files: [{ path: 'done.txt', content: 'done\n' }] }));
    // The command runs in the sandbox's own process namespace, so its `$$` means nothing out here: it
    // is found by its working folder, the run's worktree.
    const gate = verifyGate(f, 'exec sleep 300');
    const task = f.task('task', { id: 'long-verify', title: 'Long verify', verify: gate.command });
    const runner = spawn(process.execPath, [cli, 'agent', 'run', '--task', task, '--base-url', simUrl()], {
      cwd: f.repo,
      env: f.env,
      stdio: 'ignore',
    });
    children.push(runner.pid ?? 0);
    const worktree = await gate.waiting();
    await gate.release(worktree);
    await waitUntil(() => processesIn(worktree).some((pid) => commandOf(pid) === 'sleep 300'));
    const verifyPids = processesIn(worktree);
    children.push(...verifyPids);
    runner.kill('SIGKILL');
    await new Promise((resolve) => runner.once('exit', resolve));
    await waitUntil(() => !verifyPids.some(processRunning), 10_000).catch(() => undefined);
    expect(
      verifyPids.filter(processRunning).map(commandOf),
      'the verify command outlived its runner',
    ).toEqual([]);
  });
});

storeNeutralBlock('switchboard agent: no key left behind', () => {
  it('deletes the apiKeyHelper key file when the runner is killed with SIGKILL', async () => {
    const f = await fixture({
      rules: [{ name: 'slow', match: { turn: 1 }, reply: { text: 'late', delayMs: 60_000 } }],
      fallback: { text: 'done' },
    });
    const task = f.task('task', { id: 'key-file', title: 'Wait on the API' });
    // The runner's own temporary folder, where its key file lives while Claude Code runs.
    const temporaryFolder = join(f.root, 'tmp');
    mkdirSync(temporaryFolder);
    const keyFolders = (): string[] =>
      readdirSync(temporaryFolder).filter((name) => name.startsWith('switchboard-key-'));
    const runner = spawn(process.execPath, [cli, 'agent', 'run', '--task', task, '--base-url', simUrl()], {
      cwd: f.repo,
      env: { ...f.env, TMPDIR: temporaryFolder },
      stdio: 'ignore',
    });
    children.push(runner.pid ?? 0);
    await waitUntil(() => simLog().some((entry) => entry.rule === 'slow'));
    expect(keyFolders()).toHaveLength(1);
    // The runner's parent watch is what removes the key once the runner is gone: the test waits for it
    // to finish its work (its own end), however long a loaded machine makes that, then looks.
    const watchers = childrenOf(runner.pid ?? 0).filter((pid) =>
      commandOf(pid).includes('switchboard-parent-watch'),
    );
    expect(watchers).toHaveLength(1);
    runner.kill('SIGKILL');
    await new Promise((resolve) => runner.once('exit', resolve));
    await waitUntil(() => !watchers.some(processRunning), 50_000).catch(() => undefined);
    expect(watchers.filter(processRunning), 'the parent watch outlived its runner').toEqual([]);
    expect(keyFolders(), 'the API key stayed on disk after its runner died').toEqual([]);
  });
});

storeNeutralBlock('switchboard agent run-all progress', () => {
  // south answers at once, north after 3 s: south is done well before the table stops.
  const delays: Record<string, number> = { north: 3_000, south: 200 };
  const ids = Object.keys(delays);
  const scenario = (): Scenario => ({
    rules: ids.map((id) => ({
      match: { text: `Task ${id}:` },
      reply: {
        tool: { name: 'Write', input: { file_path: `${id}.txt`, content: `${id}\n` } },
        delayMs: delays[id] ?? 0,
      },
    })),
    fallback: { text: 'done' },
  });
  const runId = '(north|south)-[0-9a-f]{6}';
  const phase = '(queued|worktree|agent|verify|merge|done|failed|conflict)';
  const summaryLine = new RegExp(
    `^${runId}: done — merged into main at [0-9a-f]{12} \\(1 attempt, \\$\\d+\\.\\d{4}, (\\d+\\.\\d)s\\)$`,
  );

  it('on a terminal shows a live table of phase, elapsed time and cost per run', async ({ skip }) => {
    if (!hasScript()) {
      // `.ci/run` installs `script`: under CI its absence is a broken image, not a reason to skip.
      const missing =
        '`script` (util-linux; Debian bsdutils) is not installed: no pseudo-terminal to run the CLI in';
      if (IN_CI) throw new Error(`${missing}; install it (.ci/run does)`);
      skip(missing);
    }
    const f = await fixture(scenario());
    const files = ids.map((id) => f.task(id, { id, title: `Add ${id}`, verify: `test -f ${id}.txt` }));
    const command = [process.execPath, cli, 'agent', 'run-all', ...files, '--base-url', simUrl()]
      .map(shellQuote)
      .join(' ');
    const result = await runInTerminal(command, { cwd: f.repo, env: f.env });
    expect(result.status, result.output).toBe(0);

    // Every redraw moves the cursor up over the previous table and clears each line it rewrites.
    const row = new RegExp(`^${runId} +${phase} +(\\d+\\.\\d)s \\$(\\d+\\.\\d{4})  (.*)$`);
    const parse = (text: string): RegExpExecArray[] =>
      text
        .split(/\r?\n/)
        .filter((line) => line.includes(CLEAR_LINE))
        .map((line) => row.exec(line.slice(line.lastIndexOf(CLEAR_LINE) + CLEAR_LINE.length)))
        .filter((match) => match !== null);
    const rows = parse(result.output);
    expect(rows.length, result.output).toBeGreaterThan(4);
    for (const id of ids) {
      const own = rows.filter((match) => match[1] === id);
      expect(new Set(own.map((match) => match[2]))).toContain('agent');
      const seconds = own.map((match) => Number(match[3]));
      expect(seconds.at(-1)).toBeGreaterThan(seconds[0] ?? 0);
      expect(seconds).toEqual([...seconds].sort((a, b) => a - b));
    }
    const lastRedraw = result.output.lastIndexOf(`${ESCAPE}[2A`);
    expect(lastRedraw, result.output).toBeGreaterThan(0);
    const final = parse(result.output.slice(lastRedraw));
    expect(final.map((match) => [match[1], match[2]]).sort()).toEqual([
      ['north', 'done'],
      ['south', 'done'],
    ]);
    for (const match of final) {
      expect(Number(match[4])).toBeGreaterThan(0);
      expect(match[5]).toMatch(/^merged into main at [0-9a-f]{12}$/);
    }

    // Then one summary per run; a finished run's clock stopped when it ended.
    const summaries = result.output
      .split(/\r?\n/)
      .map((line) => summaryLine.exec(line))
      .filter((match) => match !== null);
    expect(summaries.map((match) => match[1])).toEqual(ids);
    for (const summary of summaries) {
      const shown = final.find((match) => match[1] === summary[1]);
      expect(Math.abs(Number(shown?.[3]) - Number(summary[2])), result.output).toBeLessThanOrEqual(0.2);
    }
  });

  it('without a terminal prints log lines, not the table', async () => {
    const f = await fixture(scenario());
    const files = ids.map((id) => f.task(id, { id, title: `Add ${id}`, verify: `test -f ${id}.txt` }));
    const result = await f.run(['agent', 'run-all', ...files]);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stderr).not.toContain(ESCAPE);
    const lines = result.stderr.trimEnd().split('\n');
    const logLine = new RegExp(`^\\[${runId}\\] ${phase} \\d+\\.\\ds \\$\\d+\\.\\d{4}: .+$`);
    for (const line of lines) expect(line).toMatch(logLine);
    for (const id of ids) {
      const own = lines.filter((line) => line.startsWith(`[${id}-`));
      expect(own.some((line) => line.includes('] agent '))).toBe(true);
      expect(own.at(-1)).toMatch(/\] done .*: merged into main at /);
    }
    const summaries = result.stdout.trimEnd().split('\n');
    expect(summaries.map((line) => summaryLine.exec(line)?.[1])).toEqual(ids);
  });
});
const ESCAPE = '\u001b';
const CLEAR_LINE = `${ESCAPE}[2K`;

function hasScript(): boolean {
  return spawnSync('sh', ['-c', 'command -v script'], { stdio: 'ignore' }).status === 0;
}

/** Quotes a word for `sh -c`. */
function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** Runs a shell command under a pseudo-terminal (util-linux `script`): stdout and stderr in one `output`. */
function runInTerminal(
  command: string,
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<{ status: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qfec', command, '/dev/null'], {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child.pid ?? 0);
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('error', reject);
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, output });
    });
  });
}

/** The processes whose parent is `parent`. */
function childrenOf(parent: number): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        return (
          Number(
            readFileSync(`/proc/${pid}/stat`, 'utf8')
              .replace(/^.*\) /s, '')
              .split(' ')[1],
          ) === parent
        );
      } catch {
        return false;
      }
    });
}

/** The processes working in `folder` (their current directory), as seen from outside any sandbox. */
function processesIn(folder: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        return readlinkSync(`/proc/${pid}/cwd`) === folder;
      } catch {
        return false;
      }
    });
}

/** A process's command line, words joined by spaces ('' once it is gone). */
function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
  } catch {
    return '';
  }
}

/** Whether `pid` runs (a zombie waiting to be reaped runs nothing and does not count). */
function processRunning(pid: number): boolean {
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /s, '')
      .charAt(0);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}
