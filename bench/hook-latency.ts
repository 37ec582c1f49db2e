// The latency the Claude Code prompt hook adds to a prompt, side by side in one run: the hook command
// exactly as `hooks install` writes it, run through `sh -c` the way Claude Code runs hooks, with its
// hook JSON on stdin; with a running `switchboard serve`, without one (routing in process), and beside a
// no-op baseline (`node -e ''`, the floor of any Node hook). p50/p95 of N runs per row (default 50),
// rows interleaved in a rotated order so all see the same machine state, and the share of runs that
// named a skill (a run past the deadline names none). It runs the BUILT dist/, so build first:
//   npm run build && node --experimental-strip-types --no-warnings bench/hook-latency.ts [runs] [--baseline DIR]
// Target: the hook answered by the background server ≤ ×2 `node -e ''` at p50. `--baseline DIR`:
// another built checkout (e.g. a worktree of main) whose hook, answered by its own background server,
// runs in a row of its own, interleaved with these, so a change is measured side by side.
// Everything it writes lives in one temporary folder, removed at the end; the server binds 127.0.0.1.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as CommandModule from '../src/hooks/command.js';
import type * as PercentileModule from '../src/core/percentile.js';
import { assertFreshBuild, runsAndBaseline } from './fresh-build.ts';

const root = join(import.meta.dirname, '..');
const dist = join(root, 'dist');
assertFreshBuild(join(dist, 'cli/main.js'), 'the hook is the built CLI');
const { hookCommand } = (await import(
  pathToFileURL(join(dist, 'hooks/command.js')).href
)) as typeof CommandModule;
const { percentile } = (await import(
  pathToFileURL(join(dist, 'core/percentile.js')).href
)) as typeof PercentileModule;

const { runs, baselineRoot } = runsAndBaseline(50);
const skills = join(root, 'examples/skills');
const base = mkdtempSync(join(tmpdir(), 'switchboard-bench-hook-'));
const cwd = join(base, 'project'); // Claude Code runs hooks in the project folder
const stateDir = join(base, 'state');
// The baseline's own: its background server must not be this checkout's (same settings otherwise).
const baselineState = join(base, 'state-baseline');
mkdirSync(cwd);
mkdirSync(baselineState);
const environment: NodeJS.ProcessEnv = {
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('SWITCHBOARD_'))),
  // The row without a server named starts the background server of its settings (also under CI).
  SWITCHBOARD_BACKGROUND_SERVE: '1',
};

const prompts = [
  'the build is failing with a null pointer',
  'please add a dark mode toggle to the settings page',
  'the dashboard takes ten seconds to load',
  'write the changelog and cut version 2.3',
  'review my pull request for the parser',
];
const hookInput = (index: number) =>
  JSON.stringify({
    session_id: 'bench',
    cwd,
    hook_event_name: 'UserPromptSubmit',
    // A distinct text each run: no decision-cache hit hides the routing.
    prompt: `${prompts[index % prompts.length]} (run ${index})`,
  });

interface Sample {
  wallMs: number;
  named: boolean;
  code: number | null;
}

/** One run of a shell command as Claude Code runs a hook: `sh -c`, JSON on stdin, wall time to exit. */
function once(command: string, input: string): Promise<Sample> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', command], { cwd, env: environment, stdio: ['pipe', 'pipe', 'ignore'] });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({ wallMs: performance.now() - started, named: stdout.includes('additionalContext'), code }),
    );
    child.stdin.end(input);
  });
}

const server = await startServe();
const command = (options: Partial<CommandModule.HookCommandOptions>) =>
  hookCommand({ skills, stateDir, deadlineMs: 300, minConfidence: 0.5, ...options });
const rows: { label: string; command: string }[] = [
  { label: "no-op baseline: node -e ''", command: `${process.execPath} -e ''` },
  { label: 'hook, serve running (deadline 300 ms)', command: command({ server: server.url }) },
  // No server named: the unmeasured first prompt starts the background server, the measured ones ask it.
  { label: 'hook, background serve, 2nd prompt on (300 ms)', command: command({}) },
  ...(baselineRoot === undefined
    ? []
    : [
        {
          label: '  the same, baseline checkout',
          command: command({ stateDir: baselineState }).replace(
            join(dist, 'cli/launch.js'),
            join(baselineRoot, 'dist/cli/launch.js'),
          ),
        },
      ]),
  { label: 'hook, no serve: in process (deadline 300 ms)', command: command({ noServer: true }) },
  {
    label: '  the same with no deadline to speak of (10 s)',
    command: command({ noServer: true, deadlineMs: 10_000 }),
  },
];

const samples = new Map(rows.map((row) => [row, [] as Sample[]]));
try {
  // Unmeasured: the model is trained once into the state folder (as `hooks install` does), caches warm.
  for (const row of rows)
    await once(row.command.replace('--deadline 300', '--deadline 10000'), hookInput(runs));
  await backgroundListening(stateDir);
  if (baselineRoot !== undefined) await backgroundListening(baselineState);
  for (let index = 0; index < runs; index++) {
    const shift = index % rows.length;
    for (const row of [...rows.slice(shift), ...rows.slice(0, shift)])
      samples.get(row)?.push(await once(row.command, hookInput(index)));
  }
} finally {
  server.child.kill('SIGTERM');
  await new Promise((resolve) => server.child.once('exit', resolve));
  stopBackgroundServers(stateDir);
  stopBackgroundServers(baselineState);
  rmSync(base, { recursive: true, force: true });
}

const baseline = summary(samples.get(rows[0] as (typeof rows)[number]) ?? []);
console.log(`hook latency, ${runs} runs per row, skills: examples/skills (${new Date().toISOString()})`);
if (baselineRoot !== undefined) console.log(`baseline: ${baselineRoot}`);
console.log(
  `${'row'.padEnd(48)} ${'p50 ms'.padStart(8)} ${'p95 ms'.padStart(8)} ${'+p50'.padStart(7)} ${'×node'.padStart(7)} ${'named'.padStart(7)} ${'exit≠0'.padStart(7)}`,
);
for (const row of rows) {
  const list = samples.get(row) ?? [];
  const { p50, p95 } = summary(list);
  const named =
    row === rows[0]
      ? '-'
      : `${Math.round((100 * list.filter((sample) => sample.named).length) / list.length)}%`;
  const failed = list.filter((sample) => sample.code !== 0).length;
  console.log(
    `${row.label.padEnd(48)} ${p50.toFixed(0).padStart(8)} ${p95.toFixed(0).padStart(8)} ${(row === rows[0] ? '' : `+${(p50 - baseline.p50).toFixed(0)}`).padStart(7)} ${(row === rows[0] ? '' : `×${(p50 / baseline.p50).toFixed(2)}`).padStart(7)} ${named.padStart(7)} ${String(failed).padStart(7)}`,
  );
}
const background = summary(samples.get(rows[2] as (typeof rows)[number]) ?? []);
const ratio = background.p50 / baseline.p50;
console.log(
  `hook via background serve: p50 ${background.p50.toFixed(0)} ms, ×${ratio.toFixed(2)} node -e '' (target ≤ 2) ${ratio <= 2 ? 'PASS' : 'FAIL'}`,
);

function summary(list: readonly Sample[]): { p50: number; p95: number } {
  const sorted = list.map((sample) => sample.wallMs).sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95) };
}

/** The background server's token file: a record with `settings` (the hand-started server has none). */
function backgroundRecords(stateDir: string): { pid: number }[] {
  return readdirSync(stateDir)
    .filter((name) => /^serve-\d+\.token$/.test(name))
    .map(
      (name) => JSON.parse(readFileSync(join(stateDir, name), 'utf8')) as { pid: number; settings?: string },
    )
    .filter((record) => record.settings !== undefined);
}

async function backgroundListening(stateDir: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (backgroundRecords(stateDir).length === 0 && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 50));
}

function stopBackgroundServers(stateDir: string): void {
  for (const { pid } of backgroundRecords(stateDir)) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // gone already
    }
  }
}

async function startServe(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    [
      join(dist, 'cli/main.js'),
      '--state-dir',
      stateDir,
      'serve',
      '--pool',
      '0',
      '--port',
      '0',
      '--skills',
      skills,
    ],
    { cwd, env: environment, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const found = /listening on (http:\/\/\S+)/.exec(output)?.[1];
      if (found !== undefined) resolve(found);
    });
    child.once('exit', (code) => reject(new Error(`serve exited ${code}`)));
  });
  return { url, child };
}
