// The workflow engine's cost, side by side in one run, against `switchboard sim` (zero delay, fixed reply):
//   1. per LLM step: a loop of one `type: agent` step (anthropic through the provider map) beside the same
//      number of plain `call()`s with the same ledger and providers, interleaved in blocks;
//   2. a 1,000-step loop and a `for_each` of 500 items in their own processes: wall time, ledger size,
//      peak RSS and heap, beside the same calls made with `call()` alone;
//   3. resume after kill -9: a fresh `node` resumes a run SIGKILLed at a step boundary, through a script
//      importing the package entry (dist/index.js), one importing only dist/workflows/index.js, and the
//      built CLI (`switchboard workflow resume`); process start to the first new step's `step-start`,
//      beside `node -e 0` in the same run.
// Run from the repository root under Node >= 22, after `npm run build` (parts 2 and 3 run the built
// library in child processes, as a user's process would):
//   node --experimental-strip-types --no-warnings bench/workflows.ts [steps per side] [resume rounds]
// Targets (issue 12): ≤ 3 ms added per step, checkpoint included; resume ≤ 1 s to the first new step.
// Binds 127.0.0.1 only; everything it writes lives in a temporary folder removed at the end.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { assertFreshBuild } from './fresh-build.ts';
import './source-hooks.ts';

const { startSimulator } = await import('../src/sim/server.js');
const { call } = await import('../src/invoke/call.js');
const { ProviderRegistry } = await import('../src/providers/registry.js');
const { openLedger } = await import('../src/store/ledger.js');
const { readWorkflowEvents, runWorkflow } = await import('../src/workflows/index.js');
const { percentile } = await import('../src/core/percentile.js');

const stepsPerSide = Math.max(100, Number(process.argv[2] ?? 1000));
const resumeRounds = Math.max(1, Number(process.argv[3] ?? 7));
const block = 100; // LLM steps per workflow run (part 1), and calls per block on the call() side
const model = 'claude-sonnet-4-6';
const maxTokens = 64;
const providerMap = { copilot: 'anthropic' }; // Conductor's default provider → Switchboard's Anthropic provider
const repo = resolve(import.meta.dirname, '..');
const dist = join(repo, 'dist');

assertFreshBuild(join(dist, 'index.js'), 'parts 2 and 3 run the built library');
const sim = await startSimulator({
  scenario: { rules: [{ match: {}, reply: { text: 'pong', usage: { input: 20, output: 2 } } }] },
  maxLifetimeMs: 1_800_000,
});
const root = mkdtempSync(join(tmpdir(), 'switchboard-bench-workflows-'));
const childScript = join(root, 'child.mjs');
writeFileSync(childScript, CHILD_SOURCE());

try {
  const overhead = await perStep();
  const scale = await atScale();
  const resumed = await resumeLatency();
  report(overhead, scale, resumed);
} finally {
  await sim.close();
  rmSync(root, { recursive: true, force: true });
}

// ---------------------------------------------------------------------------------------------------
// Workflow files

/** A loop of one LLM step, `visits` times, then the end (no iteration is spent on the cap). */
function loopFile(name: string, visits: number): string {
  const file = join(root, `${name}.yaml`);
  writeFileSync(
    file,
    `workflow:
  name: ${name}
  entry_point: ask
  runtime: { provider: copilot, default_model: ${model} }
  limits: { max_iterations: 500 }
agents:
  - name: ask
    prompt: "ping {{ context.iteration }}"
    max_visits: ${visits}
    on_cap: $end
    routes: [{ to: ask }]
`,
  );
  return file;
}

/** A set step listing `items` numbers, then one LLM step per item (Conductor's default 10 at a time). */
function forEachFile(items: number): string {
  const file = join(root, 'for-each.yaml');
  const list = JSON.stringify(Array.from({ length: items }, (_, index) => index));
  writeFileSync(
    file,
    `workflow:
  name: bench-for-each
  entry_point: plan
  runtime: { provider: copilot, default_model: ${model} }
  limits: { max_iterations: 500 }
agents:
  - name: plan
    type: set
    values:
      items: '${list}'
    routes: [{ to: each }]
for_each:
  - name: each
    type: for_each
    source: plan.output.items
    as: item
    max_concurrent: 10
    agent:
      name: ask_item
      prompt: "item {{ item }}"
    routes: [{ to: $end }]
`,
  );
  return file;
}

// ---------------------------------------------------------------------------------------------------
// Part 1: engine overhead per step, in this process

interface PerStep {
  stepGaps: number[];
  calls: number[];
  runWalls: number[];
  blockWalls: number[];
  toFirstStep: number[];
  afterLastStep: number[];
  statuses: string[];
}

async function perStep(): Promise<PerStep> {
  const stateDir = join(root, 'per-step');
  const ledger = openLedger({ stateDir });
  // One registry and one ledger for both sides, as a long-lived orchestrator keeps them.
  const registry = new ProviderRegistry({ anthropic: { apiKey: 'sk-bench', baseUrl: sim.url, maxTokens } });
  const file = loopFile('bench-per-step', block);
  const result: PerStep = {
    stepGaps: [],
    calls: [],
    runWalls: [],
    blockWalls: [],
    toFirstStep: [],
    afterLastStep: [],
    statuses: [],
  };

  async function workflowBlock(keep: boolean): Promise<void> {
    const ends: number[] = [];
    let firstStart: number | undefined;
    const started = performance.now();
    const run = await runWorkflow({
      file,
      stateDir,
      ledger,
      providers: registry,
      providerMap,
      onEvent: (event) => {
        if (event.type === 'step-start') firstStart ??= performance.now();
        if (event.type === 'step-end') ends.push(performance.now());
      },
    });
    const wall = performance.now() - started;
    if (!keep) return;
    result.statuses.push(run.status === 'completed' ? 'completed' : `${run.status} ${run.error ?? ''}`);
    result.runWalls.push(wall);
    result.toFirstStep.push((firstStart ?? started) - started);
    result.afterLastStep.push(started + wall - (ends.at(-1) ?? started));
    for (let index = 1; index < ends.length; index++) {
      result.stepGaps.push((ends[index] as number) - (ends[index - 1] as number));
    }
  }

  async function callBlock(keep: boolean): Promise<void> {
    const started = performance.now();
    for (let index = 0; index < block; index++) {
      const before = performance.now();
      const answer = await call(
        `anthropic:${model}`,
        { prompt: `ping ${index}` },
        { providers: registry, ledger },
      );
      if (answer.text !== 'pong') throw new Error(`unexpected answer ${answer.text}`);
      if (keep) result.calls.push(performance.now() - before);
    }
    if (keep) result.blockWalls.push(performance.now() - started);
  }

  // Warm-up: JIT, sockets, SQLite pages and the engine's lazy imports, for both sides alike.
  for (let round = 0; round < 2; round++) {
    await workflowBlock(false);
    await callBlock(false);
  }
  for (let done = 0, turn = 0; done < stepsPerSide; done += block, turn++) {
    const order = turn % 2 === 0 ? [workflowBlock, callBlock] : [callBlock, workflowBlock];
    for (const side of order) await side(true);
    sim.clearLog(); // the simulator keeps every request in memory; keep its heap flat
  }
  await registry.close();
  await ledger.close();
  return result;
}

// ---------------------------------------------------------------------------------------------------
// Part 2: a 1,000-step loop and a for_each of 500 items, each in its own process

interface ChildFigures {
  wallMs: number;
  importMs: number;
  rssStartMb: number;
  rssPeakMb: number;
  heapPeakMb: number;
  dbMb: number;
  walMb: number;
  closedMb: number;
  status: string;
  steps: number;
  gaps?: { first: number; last: number };
  resumedAt?: number;
}

interface Scale {
  loop: ChildFigures;
  loopCalls: ChildFigures;
  forEach: ChildFigures;
  forEachCalls: ChildFigures;
}

async function atScale(): Promise<Scale> {
  const loop = loopFile('bench-loop-1000', 1000);
  const forEach = forEachFile(500);
  const figures = async (name: string, config: Record<string, unknown>) => {
    const child = await runChild({ stateDir: join(root, name), ...config });
    if (child.code !== 0 || child.json === undefined) {
      throw new Error(`${name} child failed (${child.code ?? child.signal}): ${child.stderr.slice(0, 2000)}`);
    }
    return child.json as unknown as ChildFigures;
  };
  // The plain-call() sides first, so the loop's figures are not helped by a warmer page cache.
  const loopCalls = await figures('loop-calls', { mode: 'calls', count: 1000, inFlight: 1 });
  const loopFigures = await figures('loop', { mode: 'run', file: loop, maxIterations: 1000 });
  const forEachCalls = await figures('for-each-calls', { mode: 'calls', count: 500, inFlight: 10 });
  const forEachFigures = await figures('for-each', { mode: 'run', file: forEach });
  return { loop: loopFigures, loopCalls, forEach: forEachFigures, forEachCalls };
}

// ---------------------------------------------------------------------------------------------------
// Part 3: resume latency after kill -9

interface Resumed {
  nodeStart: number[];
  /** Per entry (module or CLI): spawn → the process's time origin, → imported, → first new step-start, → its step-end. */
  variants: Record<string, { origin: number[]; imported: number[]; stepStart: number[]; stepEnd: number[] }>;
  killed: number;
}

async function resumeLatency(): Promise<Resumed> {
  const file = loopFile('bench-resume', 8);
  const stateDir = join(root, 'resume');
  const names = ['dist/index.js', 'dist/workflows/index.js', 'switchboard workflow resume'];
  const resumed: Resumed = { nodeStart: [], variants: {}, killed: 0 };
  for (const name of names) resumed.variants[name] = { origin: [], imported: [], stepStart: [], stepEnd: [] };
  const env = { ANTHROPIC_BASE_URL: sim.url, ANTHROPIC_API_KEY: 'sk-bench' };
  for (let round = -1; round < resumeRounds; round++) {
    const order = round % 2 === 1 ? [...names].reverse() : names;
    for (const name of order) {
      // A run SIGKILLed right after its fifth step's completion was recorded.
      const runId = `wf-resume-${round + 1}-${name.replace(/\W/g, '')}`;
      const killedChild = await runChild(
        { mode: 'run', file, stateDir, runId, lib: join(dist, 'index.js') },
        { ...env, SWITCHBOARD_TEST_KILL_AT: 'step-complete:/ask/4' },
      );
      if (killedChild.signal !== 'SIGKILL') {
        throw new Error(
          `the run to kill ended on its own (${killedChild.code}): ${killedChild.stderr.slice(0, 2000)}`,
        );
      }
      resumed.killed++;
      const spawnedAt = performance.timeOrigin + performance.now();
      const times = await resumeOnce(name, runId, stateDir, env);
      const node = await timeNode();
      if (round < 0) continue; // warm-up: the page cache holds node, the SDKs and the ledger alike
      const variant = resumed.variants[name] as Resumed['variants'][string];
      if (times.origin !== undefined) variant.origin.push(times.origin - spawnedAt);
      if (times.imported !== undefined) variant.imported.push(times.imported - spawnedAt);
      variant.stepStart.push(times.stepStart - spawnedAt);
      variant.stepEnd.push(times.stepEnd - spawnedAt);
      resumed.nodeStart.push(node);
    }
  }
  return resumed;
}

interface ResumeTimes {
  origin?: number;
  imported?: number;
  stepStart: number;
  stepEnd: number;
}

/**
 * One resume in a fresh process: a script importing the library entry `name` (times from its own
 * clock), or the CLI (times from the run's event log, millisecond stamps). The first step it starts
 * must be the one the killed process had not finished.
 */
async function resumeOnce(
  name: string,
  runId: string,
  stateDir: string,
  env: Record<string, string>,
): Promise<ResumeTimes> {
  const next = `${runId}/ask/5`;
  if (name.startsWith('switchboard')) {
    const args = [
      '--state-dir',
      stateDir,
      'workflow',
      'resume',
      runId,
      '--provider-map',
      'copilot=anthropic',
    ];
    const child = await spawnNode([join(dist, 'cli/main.js'), ...args, '--json'], env);
    const events = await readWorkflowEvents(runId, { stateDir });
    const resumedAt = events.findIndex((event) => event.type === 'run-resume');
    const after = events.slice(resumedAt);
    const start = after.find((event) => event.type === 'step-start');
    const end = after.find((event) => event.type === 'step-end');
    if (child.code !== 0 || resumedAt < 0 || start?.key !== next || end === undefined) {
      throw new Error(`CLI resume failed (${child.code ?? child.signal}): ${child.stderr.slice(0, 2000)}`);
    }
    return { stepStart: Date.parse(start.at), stepEnd: Date.parse(end.at) };
  }
  const lib = join(dist, name.replace(/^dist\//, ''));
  const child = await runChild({ mode: 'resume', stateDir, runId, lib }, env);
  const json = child.json as
    | {
        origin: number;
        imported: number;
        stepStart?: number;
        stepEnd?: number;
        firstKey?: string;
        status: string;
      }
    | undefined;
  if (
    child.code !== 0 ||
    json?.stepStart === undefined ||
    json.stepEnd === undefined ||
    json.status !== 'completed' ||
    json.firstKey !== next
  ) {
    throw new Error(
      `resume failed (${child.code ?? child.signal}): ${child.stdout} ${child.stderr.slice(0, 2000)}`,
    );
  }
  return { origin: json.origin, imported: json.imported, stepStart: json.stepStart, stepEnd: json.stepEnd };
}

async function timeNode(): Promise<number> {
  const started = performance.now();
  const child = await spawnNode(['-e', '0'], {});
  if (child.code !== 0) throw new Error(`node -e 0 exited with ${child.code}`);
  return performance.now() - started;
}

// ---------------------------------------------------------------------------------------------------
// Children

interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  json?: Record<string, unknown>;
}

function runChild(config: Record<string, unknown>, env: Record<string, string> = {}): Promise<ChildResult> {
  const full = {
    lib: join(dist, 'index.js'),
    simUrl: sim.url,
    model,
    maxTokens,
    providerMap,
    ...config,
  };
  return spawnNode([childScript, JSON.stringify(full)], env);
}

function spawnNode(args: string[], env: Record<string, string>): Promise<ChildResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const result: ChildResult = { code, signal, stdout, stderr };
      const line = stdout.trim().split('\n').at(-1);
      if (line?.startsWith('{')) result.json = JSON.parse(line) as Record<string, unknown>;
      resolvePromise(result);
    });
  });
}

/**
 * The child: imports the built library (timed), then runs a workflow (resuming it once with raised
 * max_iterations when the file's cap of 500 stops it), resumes a killed run, or makes plain `call()`s;
 * samples RSS and heap as it goes; prints one JSON line of figures.
 */
function CHILD_SOURCE(): string {
  return `
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
const now = () => performance.timeOrigin + performance.now();
const config = JSON.parse(process.argv[2]);
const origin = performance.timeOrigin;
const started = performance.now();
const lib = await import(config.lib);
const imported = now();
const importMs = performance.now() - started;
let rssPeak = 0, heapPeak = 0;
const sample = () => {
  const usage = process.memoryUsage();
  rssPeak = Math.max(rssPeak, usage.rss);
  heapPeak = Math.max(heapPeak, usage.heapUsed);
};
sample();
const rssStart = process.memoryUsage().rss;
const sampler = setInterval(sample, 10);
const mb = (bytes) => bytes / 1048576;
const size = (path) => (existsSync(path) ? statSync(path).size : 0);
const ledgerFile = join(config.stateDir, 'ledger.db');
let sizes = { db: 0, wal: 0 };
const measureFiles = () => (sizes = { db: size(ledgerFile), wal: size(ledgerFile + '-wal') });

if (config.mode === 'resume') {
  let stepStart, stepEnd, firstKey;
  const result = await lib.resumeWorkflow({
    runId: config.runId,
    stateDir: config.stateDir,
    providerMap: config.providerMap,
    onEvent: (event) => {
      if (event.type === 'step-start' && stepStart === undefined) [stepStart, firstKey] = [now(), event.key];
      if (event.type === 'step-end') stepEnd ??= now();
    },
  });
  console.log(JSON.stringify({ origin, imported, stepStart, stepEnd, firstKey, status: result.status }));
  process.exit(0);
}

const providers = new lib.ProviderRegistry({ anthropic: { apiKey: 'sk-bench', baseUrl: config.simUrl, maxTokens: config.maxTokens } });
const begun = performance.now();
let status = 'completed', steps = 0, gaps, resumedAt;
if (config.mode === 'calls') {
  const ledger = lib.openLedger({ stateDir: config.stateDir });
  let next = 0;
  const worker = async () => {
    while (next < config.count) {
      const index = next++;
      const result = await lib.call('anthropic:' + config.model, { prompt: 'ping ' + index }, { providers, ledger });
      if (result.text !== 'pong') status = 'unexpected answer ' + result.text;
      steps++;
      if (steps % 50 === 0) sample();
    }
  };
  await Promise.all(Array.from({ length: config.inFlight }, worker));
  measureFiles();
  await ledger.close();
} else {
  const ends = [];
  const options = {
    stateDir: config.stateDir,
    providers,
    providerMap: config.providerMap,
    onEvent: (event) => {
      if (event.type === 'step-end') { ends.push(performance.now()); steps++; if (steps % 50 === 0) sample(); }
      if (event.type === 'run-end') measureFiles();
    },
  };
  let result = await lib.runWorkflow({ ...options, file: config.file, ...(config.runId ? { runId: config.runId } : {}) });
  if (result.errorCode === 'WORKFLOW_LIMIT' && config.maxIterations !== undefined) {
    // The file format caps max_iterations at 500; a user raises it on resume (--max-iterations), as here.
    resumedAt = steps;
    result = await lib.resumeWorkflow({ ...options, runId: result.id, limits: { maxIterations: config.maxIterations } });
  }
  status = result.status === 'completed' ? 'completed' : result.status + ' ' + (result.error ?? '');
  const gap = (from, to) => {
    const list = [];
    for (let index = Math.max(1, from); index < Math.min(to, ends.length); index++) list.push(ends[index] - ends[index - 1]);
    list.sort((a, b) => a - b);
    return list[Math.floor(list.length / 2)] ?? 0;
  };
  if (ends.length >= 200) gaps = { first: gap(1, 101), last: gap(ends.length - 100, ends.length) };
}
const wallMs = performance.now() - begun;
await providers.close();
clearInterval(sampler);
sample();
const rssPeakMb = Math.max(mb(rssPeak), process.resourceUsage().maxRSS / 1024);
console.log(JSON.stringify({
  wallMs, importMs, rssStartMb: mb(rssStart), rssPeakMb, heapPeakMb: mb(heapPeak),
  dbMb: mb(sizes.db), walMb: mb(sizes.wal), closedMb: mb(size(ledgerFile) + size(ledgerFile + '-wal')),
  status, steps, gaps, resumedAt,
}));
`;
}

// ---------------------------------------------------------------------------------------------------
// Preflight and report

function report(overhead: PerStep, scale: Scale, resumed: Resumed): void {
  const p = (values: number[], q: number) =>
    percentile(
      [...values].sort((a, b) => a - b),
      q,
    );
  const ms = (value: number, digits = 2) => `${value.toFixed(digits)} ms`;
  const mb = (value: number) => `${value.toFixed(1)} MB`;
  const signed = (value: number) => `${value < 0 ? '-' : '+'}${ms(Math.abs(value))}`;
  const verdict = (met: boolean) => (met ? 'met' : 'NOT MET');
  const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);

  console.log(`Workflow engine against switchboard sim (zero delay), Node ${process.version}`);
  const failed = overhead.statuses.filter((status) => status !== 'completed');
  if (failed.length > 0) console.log(`  WARNING: ${failed.length} runs did not complete: ${failed[0]}`);

  // 1
  const stepP50 = p(overhead.stepGaps, 50);
  const callP50 = p(overhead.calls, 50);
  const perStepMean = sum(overhead.runWalls) / (overhead.runWalls.length * block);
  const callMean = sum(overhead.blockWalls) / (overhead.blockWalls.length * block);
  console.log(
    `1. per LLM step: ${overhead.runWalls.length} runs of a ${block}-visit loop vs ${overhead.calls.length} call()s in blocks of ${block}, alternating`,
  );
  console.log(
    `  workflow step (step-end to step-end): p50 ${ms(stepP50)}, p95 ${ms(p(overhead.stepGaps, 95))}, p99 ${ms(p(overhead.stepGaps, 99))}`,
  );
  console.log(
    `  call() in a loop:                    p50 ${ms(callP50)}, p95 ${ms(p(overhead.calls, 95))}, p99 ${ms(p(overhead.calls, 99))}`,
  );
  console.log(
    `  added per step: p50 ${signed(stepP50 - callP50)} (×${(stepP50 / callP50).toFixed(2)}); ` +
      `mean with each run's start and end spread over its ${block} steps ${signed(perStepMean - callMean)} ` +
      `(${ms(perStepMean)} vs ${ms(callMean)}, ×${(perStepMean / callMean).toFixed(2)})`,
  );
  console.log(
    `  per run: runWorkflow() → first step-start p50 ${ms(p(overhead.toFirstStep, 50))}, last step-end → return p50 ${ms(p(overhead.afterLastStep, 50))}`,
  );
  console.log(`  target ≤ 3 ms added per step (p50): ${verdict(stepP50 - callP50 <= 3)}`);

  // 2
  const row = (label: string, figures: ChildFigures, beside?: ChildFigures) =>
    `  ${label} ${figures.steps} steps, wall ${ms(figures.wallMs, 0)}` +
    (beside === undefined ? '' : ` (×${(figures.wallMs / beside.wallMs).toFixed(2)})`) +
    `; ledger ${mb(figures.dbMb)} + WAL ${mb(figures.walMb)} at the end, ${mb(figures.closedMb)} once closed; ` +
    `RSS ${mb(figures.rssStartMb)} after import → peak ${mb(figures.rssPeakMb)}, heap peak ${mb(figures.heapPeakMb)}` +
    (figures.status === 'completed' ? '' : ` [${figures.status}]`);
  console.log('2. at scale, each in its own process (library imported from dist/ before the clock starts):');
  console.log(row('1,000-step loop:        ', scale.loop, scale.loopCalls));
  console.log(row('1,000 call()s in a loop:', scale.loopCalls));
  if (scale.loop.gaps !== undefined) {
    console.log(
      `  loop step p50: steps 1–100 ${ms(scale.loop.gaps.first)}, steps 901–1000 ${ms(scale.loop.gaps.last)}` +
        `; stopped by max_iterations 500 at step ${scale.loop.resumedAt ?? '?'} and resumed with max_iterations 1000 in the same process`,
    );
  }
  console.log(row('for_each of 500 (10 at a time):', scale.forEach, scale.forEachCalls));
  console.log(row('500 call()s, 10 in flight:     ', scale.forEachCalls));

  // 3
  const node = p(resumed.nodeStart, 50);
  console.log(
    `3. resume after kill -9 (${resumed.killed} runs killed at step-complete of visit 5 of 8; p50 of ${resumed.nodeStart.length / Object.keys(resumed.variants).length} per entry):`,
  );
  console.log(`  node -e 0, spawn to exit: p50 ${ms(node, 0)}`);
  for (const [name, variant] of Object.entries(resumed.variants)) {
    const start = p(variant.stepStart, 50);
    const label = name.startsWith('switchboard')
      ? `${name} (built CLI; times from the event log)`
      : `resumeWorkflow from ${name}`;
    const phases =
      variant.imported.length === 0
        ? ''
        : `process start p50 ${ms(p(variant.origin, 50), 0)}, imported ${ms(p(variant.imported, 50), 0)}, `;
    console.log(
      `  ${label}: ${phases}first new step-start ${ms(start, 0)} (max ${ms(Math.max(...variant.stepStart), 0)}), ` +
        `its step-end ${ms(p(variant.stepEnd, 50), 0)}; target ≤ 1 s to step-start: ${verdict(start <= 1000)}`,
    );
  }
}
