import { randomBytes } from 'node:crypto';
// Start-up cost of what a shell caller or a routing-only program runs, side by side in one run: wall time
// (spawn to exit) and peak RSS, min / median / max of N runs per row, rows interleaved (each run does every
// row once, in a rotated order) so all see the same machine state. It runs the BUILT dist/, so build first:
//   npm run build && node --experimental-strip-types --no-warnings bench/startup.ts [runs] [--baseline DIR]
// Targets (issue 27; issue 14's in brackets): `switchboard route` with a cached model ≤ 4× `node -e 0`
// in the same run and ≤ 0.10 s (≤ 0.15 s), ≤ 80 MB; importing the library for routing ≤ 60 ms;
// `switchboard call claude:haiku` through a running `serve` ≥ 8× (5×) faster than raw `claude -p` at
// p50. `--baseline DIR`: another built checkout (e.g. a worktree of main) whose `bin/switchboard` runs
// the cached route, the route via its own background server and the call through serve in rows of
// their own, interleaved with these, so a change is measured side by side. The launcher runs with
// /usr/bin first on PATH, as a user with Debian's Node 20 has it. Peak RSS comes from GNU time (`/usr/bin/time -f %M`; `apt-get install time`).
// Everything it writes lives in one temporary folder (children run there, never in the repository),
// removed at the end; the simulator and the server bind 127.0.0.1 only.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as SimModule from '../src/sim/server.js';
import type * as ExecutableModule from '../src/providers/claude-code/executable.js';
import { runsAndBaseline } from './fresh-build.ts';

const root = join(import.meta.dirname, '..');
const dist = join(root, 'dist');
const cliMain = join(dist, 'cli/main.js');
const launcher = join(root, 'bin/switchboard');
const skills = join(root, 'examples/skills');
const gnuTime = '/usr/bin/time';

if (!existsSync(cliMain) || !existsSync(join(dist, 'index.js'))) {
  console.error('bench/startup.ts runs the built dist/: run `npm run build` first');
  process.exit(1);
}
if (newestSource(join(root, 'src')) > statSync(cliMain).mtimeMs) {
  console.error(
    'dist/ is older than src/: run `npm run build` first (this bench runs the built CLI and library)',
  );
  process.exit(1);
}

const { startSimulator } = (await import(
  pathToFileURL(join(dist, 'sim/server.js')).href
)) as typeof SimModule;
const { resolveClaudeExecutable } = (await import(
  pathToFileURL(join(dist, 'providers/claude-code/executable.js')).href
)) as typeof ExecutableModule;

const { runs, baselineRoot } = runsAndBaseline(10);
const base = mkdtempSync(join(tmpdir(), 'switchboard-bench-startup-'));
const workDirectory = join(base, 'work'); // an empty cwd: no switchboard.yaml, no .switchboard/ anywhere real
const warmState = join(base, 'state-warm');
// The baseline's own pre-trained state: its model file may be in another layout.
const baselineState = join(base, 'state-baseline');
const claudeConfig = join(base, 'claude-config');
for (const folder of [workDirectory, warmState, baselineState, claudeConfig]) mkdirSync(folder);
const sim = await startSimulator({
  scenario: { rules: [{ match: {}, reply: { text: 'pong: ', echo: true } }] },
  maxLifetimeMs: 900_000,
});

// A clean environment: the user's own Switchboard settings (a server, a state dir) must not steer the rows.
const environment: NodeJS.ProcessEnv = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => !name.startsWith('SWITCHBOARD_')),
);
Object.assign(environment, {
  // As a user with Debian's Node 20 has it: bin/switchboard must still run the provisioned Node 22.
  PATH: `/usr/bin:${process.env.PATH ?? '/bin'}`,
  SWITCHBOARD_STATE_DIR: warmState,
  ANTHROPIC_BASE_URL: sim.url,
  ANTHROPIC_API_KEY: 'sk-ant-bench',
  CLAUDE_CONFIG_DIR: claudeConfig,
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', // what Switchboard sets for its own calls
  CLAUDE_CODE_MAX_RETRIES: '0',
  // Only the background-serve row may start one: every other row measures what it names.
  SWITCHBOARD_BACKGROUND_SERVE: '0',
});

/** One spawned run: wall from spawn to exit, peak RSS of the process (and what it waited for). */
interface Sample {
  wallMs: number;
  rssMb: number | null;
  stdout: string;
  stderr: string;
  code: number | null;
}

let sampleNumber = 0;
function run(command: string, args: string[], extraEnvironment: NodeJS.ProcessEnv = {}): Promise<Sample> {
  const rssFile = join(base, `rss-${sampleNumber++}`);
  const withTime = existsSync(gnuTime);
  const [file, argv] = withTime ? [gnuTime, ['-f', '%M', '-o', rssFile, command, ...args]] : [command, args];
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv, {
      cwd: workDirectory,
      env: { ...environment, ...extraEnvironment },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const wallMs = performance.now() - started;
      // GNU time prints "Command exited with non-zero status N" before the figure when the command fails.
      const kilobytes = withTime ? Number(readFileSync(rssFile, 'utf8').trim().split('\n').at(-1)) : NaN;
      resolve({ wallMs, rssMb: Number.isFinite(kilobytes) ? kilobytes / 1024 : null, stdout, stderr, code });
    });
  });
}

/** A row of the table: how to run it once (given the run number) and whether the answer was right. */
interface Row {
  label: string;
  once(index: number): Promise<Sample>;
  check(sample: Sample, index: number): string | null;
  /** Figures the child reports about itself (e.g. import time), by name. */
  inner?(sample: Sample): Record<string, number>;
  /**
   * Unmeasured pause after each run: the server's pooled Claude Code clears its session after every
   * call (20–60 ms of CPU), which would otherwise land in the next row's measurement on 2 cores.
   */
  settleMs?: number;
}

const requests = [
  'the build is failing with a null pointer',
  'please add a dark mode toggle to the settings page',
  'the dashboard takes ten seconds to load',
  'write the changelog and cut version 2.3',
  'review my pull request for the parser',
];
const requestText = (index: number) => `${requests[index % requests.length]} (run ${index})`;
const routed = (sample: Sample) =>
  sample.code === 0 || sample.code === 10
    ? sample.stdout.trim().length > 0
      ? null
      : 'no decision printed'
    : `exit ${sample.code}: ${sample.stderr.trim().split('\n')[0]}`;

const libraryScript = (stateDir: string) => `
const started = performance.now();
const { createRouter } = await import(${JSON.stringify(pathToFileURL(join(dist, 'index.js')).href)});
const imported = performance.now();
const router = createRouter({ skills: ${JSON.stringify(skills)}, stateDir: ${JSON.stringify(stateDir)} });
const decision = await router.route(process.argv[1]);
await router.close();
const routedAt = performance.now();
console.log(JSON.stringify({ skill: decision.skill, bootMs: started, importMs: imported - started, totalMs: routedAt - started }));
`;

/** serve's token, fixed for the run: every route but /healthz wants it (loopback included). */
const serverToken = randomBytes(24).toString('hex');
const authorization = `Bearer ${serverToken}`;

const claudeExecutable = resolveClaudeExecutable();
const rows: Row[] = [
  {
    label: 'node -e 0',
    once: () => run(process.execPath, ['-e', '0']),
    check: (sample) => (sample.code === 0 ? null : `exit ${sample.code}`),
  },
  {
    label: 'switchboard --version',
    once: () => run(launcher, ['--version']),
    check: (sample) => (/^\d+\.\d+\.\d+/.test(sample.stdout.trim()) ? null : `printed ${sample.stdout}`),
  },
  {
    label: '  the same without bin/ launcher',
    once: () => run(process.execPath, [cliMain, '--version']),
    check: (sample) => (/^\d+\.\d+\.\d+/.test(sample.stdout.trim()) ? null : `printed ${sample.stdout}`),
  },
  {
    label: 'switchboard route (cold: new state)',
    once: (index) =>
      run(launcher, ['route', '--skills', skills, requestText(index)], {
        SWITCHBOARD_STATE_DIR: mkdtempSync(join(base, 'state-cold-')),
      }),
    check: routed,
  },
  {
    label: 'switchboard route (model cached)',
    once: (index) => run(launcher, ['route', '--skills', skills, requestText(index)]),
    check: routed,
  },
  {
    label: 'library: import + createRouter + route',
    once: (index) =>
      run(process.execPath, ['--input-type=module', '-e', libraryScript(warmState), requestText(index)]),
    check: (sample) =>
      sample.code === 0 && sample.stdout.includes('"skill"') ? null : `exit ${sample.code}`,
    inner: (sample) => JSON.parse(sample.stdout) as Record<string, number>,
  },
  {
    label: 'claude -p (raw, cold)',
    once: (index) =>
      run(claudeExecutable, ['-p', `raw ${index}`, '--output-format', 'json', '--model', 'claude-haiku-4-5']),
    check: (sample, index) => (sample.stdout.includes(`"pong: raw ${index}"`) ? null : 'unexpected answer'),
  },
];

// `route` with no server named, after its first run started the background server of its settings
// (cli/background-serve.ts): the warm-up run starts it, the measured ones ask it.
const backgroundState = join(base, 'state-background');
// The baseline's own background server: this checkout's must not answer its rows.
const baselineBackgroundState = join(base, 'state-background-baseline');
const backgroundRow = (label: string, command: string, stateDir: string): Row => ({
  label,
  once: async (index) => {
    const sample = await run(command, ['route', '--skills', skills, requestText(index)], {
      SWITCHBOARD_STATE_DIR: stateDir,
      SWITCHBOARD_BACKGROUND_SERVE: '1',
      SWITCHBOARD_DEBUG: '1',
    });
    // The warm-up run started it: the measured runs begin once it listens.
    if (index >= runs) await backgroundListening(stateDir);
    return sample;
  },
  check: (sample, index) =>
    index >= runs || sample.stderr.includes('routed by the background server')
      ? routed(sample)
      : `not answered by the background server: ${sample.stderr.trim().split('\n')[0]}`,
});
rows.push(backgroundRow('switchboard route via background serve', launcher, backgroundState));

const baselineLauncher = baselineRoot === undefined ? undefined : join(baselineRoot, 'bin/switchboard');
if (baselineLauncher !== undefined)
  rows.push(
    backgroundRow(
      'baseline: switchboard route via background serve',
      baselineLauncher,
      baselineBackgroundState,
    ),
  );
if (baselineLauncher !== undefined) {
  rows.push({
    label: 'baseline: switchboard route (model cached)',
    once: (index) =>
      run(baselineLauncher, ['route', '--skills', skills, requestText(index)], {
        SWITCHBOARD_STATE_DIR: baselineState,
      }),
    check: routed,
  });
}
const serve = await startServe();
if (serve.url !== undefined) {
  const url = serve.url;
  const viaServe = (label: string, command: string): Row => ({
    label,
    once: (index) => run(command, ['call', 'claude:haiku', `serve ${index}`, '--server', url]),
    settleMs: 500,
    check: (sample, index) =>
      sample.stderr.includes('did not answer')
        ? 'the server did not answer: it ran in process'
        : sample.code === 0 && sample.stdout.trim() === `pong: serve ${index}`
          ? null
          : `exit ${sample.code}: ${(sample.stdout + sample.stderr).trim().split('\n')[0]}`,
  });
  rows.push(viaServe('switchboard call claude:haiku via serve', launcher));
  if (baselineLauncher !== undefined)
    rows.push(viaServe('baseline: switchboard call claude:haiku via serve', baselineLauncher));
}

// Pre-warm: the shared state dir gets its trained model; every row runs once unmeasured (page cache, JIT
// caches of the binaries), the cold route with its own new state dir as always.
const samples = new Map<Row, Sample[]>(rows.map((row) => [row, []]));
const problems = new Map<Row, string>();
// Ctrl-C still stops the server and removes the temporary folder.
let cleaning: Promise<void> | undefined;
process.once('SIGINT', () => void cleanUp().then(() => process.exit(130)));
try {
  for (const [position, row] of rows.entries()) {
    const warmUpIndex = runs + position; // distinct from the measured runs' texts: no decision-cache hit
    const sample = await row.once(warmUpIndex);
    const problem = row.check(sample, warmUpIndex);
    if (problem !== null) problems.set(row, `warm-up: ${problem}`);
  }
  for (let index = 0; index < runs; index++) {
    const shift = index % rows.length;
    for (const row of [...rows.slice(shift), ...rows.slice(0, shift)]) {
      if (problems.has(row)) continue;
      const sample = await row.once(index);
      const problem = row.check(sample, index);
      if (problem === null) samples.get(row)?.push(sample);
      else problems.set(row, `run ${index}: ${problem}`);
      if (row.settleMs !== undefined) await new Promise((resolve) => setTimeout(resolve, row.settleMs));
    }
  }
} finally {
  await cleanUp();
}

function cleanUp(): Promise<void> {
  cleaning ??= (async () => {
    await serve.stop();
    stopBackgroundServers(backgroundState);
    stopBackgroundServers(baselineBackgroundState);
    await sim.close();
    rmSync(base, { recursive: true, force: true });
  })();
  return cleaning;
}

// Report.
const median = (values: number[]) => {
  const ordered = [...values].sort((a, b) => a - b);
  const middle = Math.floor(ordered.length / 2);
  return ordered.length % 2 === 1
    ? (ordered[middle] ?? NaN)
    : ((ordered[middle - 1] ?? NaN) + (ordered[middle] ?? NaN)) / 2;
};
const spread = (values: number[], digits: number) =>
  values.length === 0
    ? 'n/a'
    : `${Math.min(...values).toFixed(digits)} / ${median(values).toFixed(digits)} / ${Math.max(...values).toFixed(digits)}`;
const walls = (row: Row) => (samples.get(row) ?? []).map((sample) => sample.wallMs);
const rss = (row: Row) =>
  (samples.get(row) ?? []).flatMap((sample) => (sample.rssMb === null ? [] : [sample.rssMb]));
const width = Math.max(...rows.map((row) => row.label.length), 40);

console.log(
  `start-up of the built dist/ (npm run build), ` +
    `Node ${process.version}, ${runs} runs per row, interleaved; wall = spawn to exit` +
    (existsSync(gnuTime) ? ' (through /usr/bin/time, about 1 ms of its own)' : ''),
);
const nodeRow = rows[0] as Row;
const ratioToNode = (row: Row) => median(walls(row)) / median(walls(nodeRow));
console.log(
  `${'row'.padEnd(width)}  ${'wall ms min / median / max'.padEnd(28)}  ${'× node -e 0'.padEnd(12)}  peak RSS MB min / median / max`,
);
for (const row of rows) {
  const problem = problems.get(row);
  if (problem !== undefined) {
    console.log(`${row.label.padEnd(width)}  FAILED: ${problem}`);
    continue;
  }
  const ratio = `×${ratioToNode(row).toFixed(2)}`;
  console.log(
    `${row.label.padEnd(width)}  ${spread(walls(row), 0).padEnd(28)}  ${ratio.padEnd(12)}  ${spread(rss(row), 0)}`,
  );
  if (row.inner !== undefined) {
    const inner = (samples.get(row) ?? []).map((sample) => row.inner?.(sample) ?? {});
    const figure = (name: string) =>
      spread(
        inner.map((entry) => entry[name] ?? NaN),
        1,
      );
    console.log(
      `${''.padEnd(width)}  in the child: Node boot ${figure('bootMs')} ms, import ${figure('importMs')} ms, ` +
        `import + createRouter + route ${figure('totalMs')} ms`,
    );
  }
}
if (serve.url === undefined)
  console.log(`${'switchboard call claude:haiku via serve'.padEnd(width)}  skipped: ${serve.skipped}`);
if (!existsSync(gnuTime)) console.log(`peak RSS: skipped: ${gnuTime} not found (apt-get install time)`);

const verdict = (met: boolean) => (met ? 'met' : 'NOT MET');
const byLabel = (prefix: string) => rows.find((row) => row.label.startsWith(prefix) && !problems.has(row));
for (const prefix of [
  'switchboard route via background serve',
  'baseline: switchboard route via background serve',
]) {
  const viaBackground = byLabel(prefix);
  if (viaBackground === undefined || problems.has(nodeRow)) continue;
  const ratio = ratioToNode(viaBackground);
  console.log(
    `${prefix.replace('switchboard ', '')}: median ${(median(walls(viaBackground)) / 1000).toFixed(3)} s; ` +
      `×${ratio.toFixed(2)} node -e 0 (target ≤ 2) ${verdict(ratio <= 2)}`,
  );
}
for (const prefix of ['switchboard route (model cached)', 'baseline: switchboard route (model cached)']) {
  const cached = byLabel(prefix);
  if (cached === undefined || problems.has(nodeRow)) continue;
  const wall = median(walls(cached)) / 1000;
  const ratio = ratioToNode(cached);
  const memory = median(rss(cached));
  console.log(
    `${prefix.replace('switchboard ', '')}: median ${wall.toFixed(3)} s (target ≤ 0.10 s) ${verdict(wall <= 0.1)}; ` +
      `×${ratio.toFixed(2)} node -e 0 (target ≤ 4) ${verdict(ratio <= 4)}; ` +
      `median peak RSS ${Number.isNaN(memory) ? 'n/a' : `${memory.toFixed(0)} MB`} (target ≤ 80 MB) ${verdict(memory <= 80)}`,
  );
}
const library = byLabel('library');
if (library !== undefined) {
  const importMs = median(
    (samples.get(library) ?? []).map((sample) => library.inner?.(sample)['importMs'] ?? NaN),
  );
  console.log(
    `library import for routing: median ${importMs.toFixed(1)} ms (target ≤ 60 ms) ${verdict(importMs <= 60)}`,
  );
}
const raw = byLabel('claude -p');
for (const prefix of [
  'switchboard call claude:haiku via serve',
  'baseline: switchboard call claude:haiku via serve',
]) {
  const viaServe = byLabel(prefix);
  if (raw !== undefined && viaServe !== undefined) {
    const times = median(walls(raw)) / median(walls(viaServe));
    console.log(
      `${prefix.replace('switchboard call claude:haiku ', 'call ')} vs raw claude -p: ×${times.toFixed(1)} faster at the median (target ≥ 8) ${verdict(times >= 8)}`,
    );
  } else if (!prefix.startsWith('baseline') || baselineRoot !== undefined) {
    console.log(`${prefix} vs raw claude -p (target ≥ 8×): skipped: ${serve.skipped ?? 'a row failed'}`);
  }
}

/**
 * Starts `switchboard serve` (the built one) on a free port against the simulator, and probes POST /call.
 * Gives its URL, or why the row is skipped (today's serve answers only /route).
 */
async function startServe(): Promise<{ url?: string; skipped?: string; stop(): Promise<void> }> {
  const help = await run(process.execPath, [cliMain, 'call', '--help']);
  if (!help.stdout.includes('--server')) {
    return { skipped: '`switchboard call` has no --server option yet', stop: async () => {} };
  }
  const child = spawn(process.execPath, [cliMain, 'serve', '--port', '0', '--skills', skills], {
    cwd: workDirectory,
    env: {
      ...environment,
      SWITCHBOARD_STATE_DIR: mkdtempSync(join(base, 'state-serve-')),
      SWITCHBOARD_SERVER_TOKEN: serverToken,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  let output = '';
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const url = await new Promise<string | undefined>((resolve) => {
    const timer = setTimeout(() => resolve(undefined), 30_000);
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once('exit', () => resolve(undefined));
  });
  if (url === undefined) {
    await stop();
    return { skipped: `serve did not start: ${output.trim().split('\n')[0] ?? ''}`, stop: async () => {} };
  }
  const probe = await fetch(`${url}/call`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization },
    body: JSON.stringify({ spec: 'claude:haiku', prompt: 'probe' }),
  }).catch((error: unknown) => error as Error);
  const answer = probe instanceof Error ? probe.message : `${probe.status} ${await probe.text()}`;
  if (probe instanceof Error || probe.status !== 200 || !answer.includes('pong: probe')) {
    await stop();
    const reason =
      !(probe instanceof Error) && probe.status === 404 ? 'serve has no POST /call yet (404)' : answer;
    return { skipped: reason.slice(0, 200), stop: async () => {} };
  }
  return { url, stop };
}

/** Waits (up to 60 s) until a background server's token file is in `stateDir` and its lock is gone. */
async function backgroundListening(stateDir: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  const up = () =>
    existsSync(stateDir) &&
    readdirSync(stateDir).some((name) => /^serve-\d+\.token$/.test(name)) &&
    !existsSync(join(stateDir, 'serve-background.lock'));
  while (!up() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
}

/** Stops the background servers of `stateDir` by the pids in their token files. */
function stopBackgroundServers(stateDir: string): void {
  if (!existsSync(stateDir)) return;
  for (const name of readdirSync(stateDir)) {
    if (!/^serve-\d+\.token$/.test(name)) continue;
    try {
      const { pid } = JSON.parse(readFileSync(join(stateDir, name), 'utf8')) as { pid: number };
      process.kill(pid, 'SIGTERM');
    } catch {
      // gone already
    }
  }
}

/** The newest modification time of a source file (tests aside) under a folder, to tell a stale build. */
function newestSource(folder: string): number {
  let newest = 0;
  for (const entry of readdirSync(folder, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) {
      newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
    }
  }
  return newest;
}
