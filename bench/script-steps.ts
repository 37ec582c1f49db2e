// What a workflow `script` step costs beyond starting its process, side by side in one run:
//   1. per step: a loop of one `type: script` step running /bin/true (N visits per run, one ledger)
//      beside the same number of `child_process.spawn('/bin/true')` awaited one after another, in
//      alternating blocks: wall and CPU per step (this process, the children it reaped, and its live
//      children such as a watcher), the ms added, and a verdict against the target (≤ +3 ms);
//   2. reading a workflow file (YAML, `${VAR}`, zod, build): its first load, then the same content
//      again (cached when the process keeps a cache), and new content each time;
//   3. an idle watched child: processes started below this one while a script step sleeps for 5 s
//      (a parent watch that polls starts a `sleep` a second).
// Run from the repository root under Node >= 22 (straight from the sources, no build):
//   node --experimental-strip-types --no-warnings bench/script-steps.ts [steps per side]
// Everything it writes lives in a temporary folder removed at the end.
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import './source-hooks.ts';

const { openLedger } = await import('../src/store/ledger.js');
const { runWorkflow } = await import('../src/workflows/index.js');
const { loadWorkflow } = await import('../src/workflows/format/index.js');
const { percentile } = await import('../src/core/percentile.js');

const stepsPerSide = Math.max(100, Number(process.argv[2] ?? 500));
const block = 100; // script steps per workflow run, and spawns per block on the other side
const targetAddedMs = 3;
const repo = resolve(import.meta.dirname, '..');
const root = mkdtempSync(join(tmpdir(), 'switchboard-bench-script-'));
const stateDir = join(root, 'state');
const ticksPerSecond = 100; // USER_HZ on Linux

try {
  console.log(
    `load average before: ${loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')}`,
  );
  const perStep = await perStepCost();
  const parse = parseCost();
  const idle = await idleProcesses();
  report(perStep, parse, idle);
  console.log(
    `load average after: ${loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')}`,
  );
} finally {
  rmSync(root, { recursive: true, force: true });
}

// ---------------------------------------------------------------------------------------------------
// CPU of this process, the children it reaped, and the children still running (Linux /proc)

function statFields(pid: number | 'self'): string[] | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // The command name may hold spaces; fields after it are space-separated.
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** Live children of this process (pid → utime + stime in ticks). */
function liveChildren(): Map<number, number> {
  const found = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(Number(entry));
    // Fields from index 0: state, ppid, …; utime is the 14th field overall (index 11 here).
    if (fields === undefined || Number(fields[1]) !== process.pid) continue;
    found.set(Number(entry), Number(fields[11]) + Number(fields[12]));
  }
  return found;
}

interface CpuMark {
  ticks: number;
  children: Map<number, number>;
}

function cpuMark(): CpuMark {
  const fields = statFields('self') ?? [];
  const own = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
  return { ticks: own, children: liveChildren() };
}

/** CPU ms between two marks: own and reaped children's ticks, plus what live children spent. */
function cpuMs(start: CpuMark, end: CpuMark): number {
  let ticks = end.ticks - start.ticks;
  for (const [pid, spent] of end.children) ticks += spent - (start.children.get(pid) ?? 0);
  return (ticks * 1000) / ticksPerSecond;
}

// ---------------------------------------------------------------------------------------------------
// Part 1: a script step beside Node's own spawn

interface Side {
  wallMs: number;
  cpuMs: number;
  steps: number;
  gaps: number[];
}

async function perStepCost(): Promise<{ script: Side; spawned: Side; statuses: string[] }> {
  const ledger = openLedger({ stateDir });
  const file = join(root, 'ticks.yaml');
  writeFileSync(
    file,
    `workflow:
  name: bench-script-steps
  entry_point: tick
  limits: { max_iterations: 500 }
agents:
  - name: tick
    type: script
    command: /bin/true
    max_visits: ${block}
    on_cap: $end
    routes: [{ to: tick }]
`,
  );
  const script: Side = { wallMs: 0, cpuMs: 0, steps: 0, gaps: [] };
  const spawned: Side = { wallMs: 0, cpuMs: 0, steps: 0, gaps: [] };
  const statuses: string[] = [];

  async function scriptBlock(keep: boolean): Promise<void> {
    const ends: number[] = [];
    const cpu = cpuMark();
    const started = performance.now();
    const run = await runWorkflow({
      file,
      stateDir,
      ledger,
      onEvent: (event) => {
        if (event.type === 'step-end') ends.push(performance.now());
      },
    });
    const wall = performance.now() - started;
    const spent = cpuMs(cpu, cpuMark());
    if (!keep) return;
    statuses.push(run.status === 'completed' ? 'completed' : `${run.status} ${run.error ?? ''}`);
    script.wallMs += wall;
    script.cpuMs += spent;
    script.steps += ends.length;
    for (let index = 1; index < ends.length; index++) {
      script.gaps.push((ends[index] as number) - (ends[index - 1] as number));
    }
  }

  async function spawnBlock(keep: boolean): Promise<void> {
    const cpu = cpuMark();
    const started = performance.now();
    let previous = started;
    for (let index = 0; index < block; index++) {
      await new Promise<void>((done, fail) => {
        const child = spawn('/bin/true', [], { stdio: ['ignore', 'pipe', 'pipe'] });
        child.once('error', fail);
        child.once('close', () => done());
      });
      const now = performance.now();
      if (keep) spawned.gaps.push(now - previous);
      previous = now;
    }
    const wall = performance.now() - started;
    const spent = cpuMs(cpu, cpuMark());
    if (!keep) return;
    spawned.wallMs += wall;
    spawned.cpuMs += spent;
    spawned.steps += block;
  }

  // Warm-up: JIT, SQLite pages, the engine's lazy imports and a watcher started on first need.
  await scriptBlock(false);
  await spawnBlock(false);
  for (let done = 0, turn = 0; done < stepsPerSide; done += block, turn++) {
    const order = turn % 2 === 0 ? [scriptBlock, spawnBlock] : [spawnBlock, scriptBlock];
    for (const side of order) await side(true);
  }
  await ledger.close();
  return { script, spawned, statuses };
}

// ---------------------------------------------------------------------------------------------------
// Part 2: reading a workflow file

interface ParseCost {
  file: string;
  firstMs: number;
  sameMs: number[];
  changedMs: number[];
}

function parseCost(): ParseCost {
  const source = join(repo, 'examples/workflows/issue-to-merge.yaml');
  // The format's modules warmed on another file first, so "first" is this content's own cost.
  loadWorkflow(join(repo, 'examples/workflows/draft-review.yaml'));
  const copy = join(root, 'issue-to-merge.yaml');
  copyFileSync(source, copy);
  const timed = (path: string): number => {
    const started = performance.now();
    loadWorkflow(path);
    return performance.now() - started;
  };
  const firstMs = timed(copy);
  const sameMs = Array.from({ length: 30 }, () => timed(copy));
  const text = readFileSync(source, 'utf8');
  const changedMs = Array.from({ length: 30 }, (_, index) => {
    const changed = join(root, `issue-to-merge-${index}.yaml`);
    writeFileSync(changed, `${text}\n# variant ${index}\n`);
    return timed(changed);
  });
  return { file: 'examples/workflows/issue-to-merge.yaml', firstMs, sameMs, changedMs };
}

// ---------------------------------------------------------------------------------------------------
// Part 3: processes started below this one while a watched child idles

/** This process's descendants (pid → command name). */
function descendants(): Map<number, string> {
  const parents = new Map<number, number>();
  const names = new Map<number, string>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const text = readFileSync(`/proc/${entry}/stat`, 'latin1');
      const name = text.slice(text.indexOf('(') + 1, text.lastIndexOf(')'));
      const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
      parents.set(Number(entry), Number(fields[1]));
      names.set(Number(entry), name);
    } catch {
      // Gone while we looked.
    }
  }
  const found = new Map<number, string>();
  for (const [pid] of parents) {
    let cursor: number | undefined = pid;
    for (let depth = 0; cursor !== undefined && cursor > 1 && depth < 50; depth++) {
      cursor = parents.get(cursor);
      if (cursor === process.pid) {
        found.set(pid, names.get(pid) ?? '?');
        break;
      }
    }
  }
  return found;
}

async function idleProcesses(): Promise<{ started: Map<number, string>; seconds: number }> {
  const file = join(root, 'idle.yaml');
  writeFileSync(
    file,
    `workflow:
  name: bench-idle
  entry_point: wait
agents:
  - name: wait
    type: script
    command: sleep
    args: ["6"]
    routes: [{ to: $end }]
`,
  );
  const ledger = openLedger({ stateDir });
  const running = runWorkflow({ file, stateDir, ledger });
  await new Promise((resolve) => setTimeout(resolve, 500));
  const before = descendants();
  const started = new Map<number, string>();
  const seconds = 5;
  const deadline = performance.now() + seconds * 1000;
  while (performance.now() < deadline) {
    for (const [pid, name] of descendants()) if (!before.has(pid)) started.set(pid, name);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await running;
  await ledger.close();
  return { started, seconds };
}

// ---------------------------------------------------------------------------------------------------
// Report

function report(
  perStep: Awaited<ReturnType<typeof perStepCost>>,
  parse: ParseCost,
  idle: Awaited<ReturnType<typeof idleProcesses>>,
): void {
  const { script, spawned, statuses } = perStep;
  const wall = (side: Side) => side.wallMs / side.steps;
  const cpu = (side: Side) => side.cpuMs / side.steps;
  const p50 = (values: number[]) =>
    percentile(
      [...values].sort((a, b) => a - b),
      50,
    );
  const ms = (value: number) => `${value.toFixed(2)} ms`;
  const bad = statuses.filter((status) => status !== 'completed');
  console.log(
    `\n1. ${script.steps} script steps (/bin/true) beside ${spawned.steps} spawns, blocks of ${block}`,
  );
  if (bad.length > 0) console.log(`   runs not completed: ${bad.join('; ')}`);
  console.log(
    `   script step: ${ms(wall(script))} wall per step (run start and end included), step-end gap p50 ${ms(p50(script.gaps))}, ${ms(cpu(script))} CPU`,
  );
  console.log(
    `   spawn:       ${ms(wall(spawned))} wall per spawn, p50 ${ms(p50(spawned.gaps))}, ${ms(cpu(spawned))} CPU`,
  );
  const added = wall(script) - wall(spawned);
  const addedGap = p50(script.gaps) - p50(spawned.gaps);
  console.log(
    `   added per step: ${ms(added)} wall (p50 ${ms(addedGap)}), ${ms(cpu(script) - cpu(spawned))} CPU`,
  );
  console.log(
    `   verdict: ${added <= targetAddedMs ? 'met' : 'missed'} (target ≤ +${targetAddedMs} ms wall per step)`,
  );
  console.log(`\n2. reading ${parse.file} (YAML, zod, build)`);
  console.log(
    `   first ${ms(parse.firstMs)}; same content again p50 ${ms(p50(parse.sameMs))}; new content each time p50 ${ms(p50(parse.changedMs))}`,
  );
  const names = [...idle.started.values()];
  const counts = new Map<string, number>();
  for (const name of names) counts.set(name, (counts.get(name) ?? 0) + 1);
  const listed = [...counts].map(([name, count]) => `${count} ${name}`).join(', ');
  console.log(
    `\n3. processes started below this one while a script step idled ${idle.seconds} s: ${names.length}${names.length === 0 ? '' : ` (${listed})`}`,
  );
}
