// Agent runs: what the runner adds around Claude Code, and 8 tasks at once on this machine. Run from
// the repository root under Node >= 22 (no build):
//   node --experimental-strip-types --no-warnings bench/agent-runner.ts [rounds]
// Needs only this repository (the Agent SDK ships the Claude Code binary), git, and 127.0.0.1.
//
// 1. Overhead per task, model time excluded: `switchboard sim` answers at once, so a run's time is the
//    runner's own work (worktree, context files, spawning Claude Code, verify of a trivial command,
//    commit, merge) plus Claude Code's. Beside it, in the same run, the same agent turns straight
//    through `claude -p` in a plain folder: the difference is what the runner adds.
// 2. Eight tasks at once through `runAgentTasks` (parallel 8, one merge queue): every run must finish
//    and merge, the base branch must hold all eight commits, and merges must not overlap in time.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import './source-hooks.ts';
import { createRepository, git } from '../test/helpers/git-repo.ts';

const { startSimulator } = await import('../src/sim/server.js');
const { resolveClaudeExecutable } = await import('../src/providers/claude-code/executable.js');
const { runAgentTask, runAgentTasks, showAgentRun, parseTask } = await import('../src/agents/index.js');
const { summariseLatency } = await import('../src/route/metrics.js');

const rounds = Number(process.argv[2] ?? 5);
const root = mkdtempSync(join(tmpdir(), 'switchboard-bench-agent-'));
const configDir = join(root, 'claude-config');
mkdirSync(configDir);
const ids = Array.from({ length: Math.max(rounds, 8) }, (_, index) => `t${index + 1}`);
// Turn 1 of each task writes its own file (the prompt names the task); later turns end the run.
const sim = await startSimulator({
  maxLifetimeMs: 1_800_000,
  scenario: {
    rules: [
      ...[...ids, 'warm'].map((id) => ({
        match: { text: `Task ${id}:|write ${id}\\.txt` },
        reply: { tool: { name: 'Write', input: { file_path: `${id}.txt`, content: `${id}\n` } } },
      })),
    ],
    fallback: { text: 'done' },
  },
});
const connection = { baseUrl: sim.url, apiKey: 'sk-ant-bench', configDir };

function newRepository(name: string): string {
  return createRepository(join(root, name));
}

const task = (id: string) =>
  parseTask({ id, title: `Add ${id}`, description: `write ${id}.txt`, verify: `test -f ${id}.txt` });

/** The same two agent turns through `claude -p` in a plain folder: spawn, Write, answer, exit. */
function direct(id: string): Promise<number> {
  const cwd = join(root, `direct-${id}`);
  mkdirSync(cwd);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(
      resolveClaudeExecutable(),
      ['-p', `Task ${id}: write ${id}.txt`, '--output-format', 'json', '--allowedTools', 'Write'],
      {
        cwd,
        env: {
          ...process.env,
          ANTHROPIC_BASE_URL: sim.url,
          ANTHROPIC_API_KEY: 'sk-ant-bench',
          CLAUDE_CONFIG_DIR: configDir,
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
          CLAUDE_CODE_MAX_RETRIES: '0',
        },
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    );
    child.on('exit', () => {
      try {
        if (readFileSync(join(cwd, `${id}.txt`), 'utf8') !== `${id}\n`) throw new Error('no file written');
        resolve(performance.now() - started);
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
  });
}

/** Milliseconds from each phase's start to the next one's, from the run's recorded events. */
async function phaseTimes(id: string, stateDir: string, endedAt: number): Promise<Record<string, number>> {
  const events = (await showAgentRun(id, { stateDir })).events.filter((event) => event.kind === 'phase');
  const times: Record<string, number> = {};
  events.forEach((event, index) => {
    const next = events[index + 1];
    times[event.phase] = (next === undefined ? endedAt : Date.parse(next.at)) - Date.parse(event.at);
  });
  return times;
}

try {
  // 1. One task at a time.
  const repo = newRepository('sequential');
  const stateDir = join(root, 'state-sequential');
  const runs: number[] = [];
  const directs: number[] = [];
  const phases: Record<string, number[]> = {};
  // One of each first, so neither side pays for a cold disk cache in the figures.
  await direct('warm');
  for (let index = 0; index < rounds; index++) {
    const id = ids[index] as string;
    directs.push(await direct(id));
    const started = performance.now();
    const result = await runAgentTask({ task: task(id), repo, stateDir, connection, retryDelayMs: 0 });
    runs.push(performance.now() - started);
    if (!result.ok) throw new Error(`run ${id} failed: ${result.errorCode} ${result.error}`);
    for (const [phase, ms] of Object.entries(await phaseTimes(result.id, stateDir, Date.now()))) {
      (phases[phase] ??= []).push(ms);
    }
  }
  const run = summariseLatency(runs);
  const raw = summariseLatency(directs);
  console.log(`one task at a time, ${rounds} rounds (ms):`);
  console.log(`  runAgentTask, whole run   p50 ${run.p50.toFixed(0)}  max ${run.max.toFixed(0)}`);
  console.log(`  claude -p, same turns     p50 ${raw.p50.toFixed(0)}  max ${raw.max.toFixed(0)}`);
  console.log(
    `  runner overhead (run − claude -p) p50 ${(run.p50 - raw.p50).toFixed(0)} ms; ratio ×${(run.p50 / raw.p50).toFixed(2)}`,
  );
  console.log(
    `  by phase (p50 ms): ${Object.entries(phases)
      .map(([phase, values]) => `${phase} ${summariseLatency(values).p50.toFixed(0)}`)
      .join(', ')}`,
  );
  const merges = git(repo, 'log', '--merges', '--format=%s', 'main').split('\n').filter(Boolean);
  console.log(`  merge commits on main: ${merges.length} of ${rounds}`);

  // 2. Eight at once.
  const many = newRepository('parallel');
  const manyState = join(root, 'state-parallel');
  const eight = ids.slice(0, 8);
  const started = performance.now();
  const outcomes = await runAgentTasks({
    tasks: eight.map(task),
    parallel: 8,
    repo: many,
    stateDir: manyState,
    connection,
    retryDelayMs: 0,
  });
  const wall = performance.now() - started;
  const ok = outcomes.filter((outcome) => outcome.result?.ok === true);
  const landed = eight.filter((id) => {
    try {
      return git(many, 'show', `main:${id}.txt`) === id;
    } catch {
      return false;
    }
  });
  // Each run's merge phase: from its 'merge' event to its next phase event; overlaps would mean the
  // queue let two merges into main at once.
  const windows: (readonly [number, number])[] = [];
  for (const outcome of ok) {
    const events = (await showAgentRun(outcome.result?.id as string, { stateDir: manyState })).events.filter(
      (event) => event.kind === 'phase',
    );
    const start = events.findIndex((event) => event.phase === 'merge');
    windows.push([Date.parse(events[start]?.at ?? ''), Date.parse(events[start + 1]?.at ?? '')] as const);
  }
  windows.sort((a, b) => a[0] - b[0]);
  const overlaps = windows.filter((window, index) => index > 0 && window[0] < (windows[index - 1]?.[1] ?? 0));
  console.log(`\n8 tasks at once (parallel 8, ${navigatorCores()} cores):`);
  console.log(
    `  finished ok ${ok.length}/8, files on main ${landed.length}/8, merge commits ${git(many, 'log', '--merges', '--format=%h', 'main').split('\n').filter(Boolean).length}, overlapping merges ${overlaps.length}`,
  );
  console.log(
    `  wall ${(wall / 1000).toFixed(1)} s (${(wall / 8 / 1000).toFixed(2)} s per task); one task alone p50 ${(run.p50 / 1000).toFixed(2)} s`,
  );
  const failed = outcomes.filter((outcome) => outcome.result?.ok !== true);
  for (const outcome of failed) {
    console.log(
      `  FAILED ${outcome.taskId}: ${outcome.result?.errorCode ?? ''} ${outcome.result?.error ?? String(outcome.error)}`,
    );
  }
} finally {
  await sim.close();
  rmSync(root, { recursive: true, force: true });
}

function navigatorCores(): number {
  return (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency ?? 0;
}
