// What a step's events cost the workflow engine, side by side in one run, from the TypeScript sources:
//   1. per event: a step that writes N tool calls as a Claude Code session does (`tool-call` and
//      `tool-result` through the step's `emit`, each one fenced insert into the run's log) beside the
//      same step writing nothing, in alternating runs; the time per event at p50/p95 and events/s;
//   2. a 1,000-tool-call run: its wall time beside the same run without events, and what reading its
//      result back (`workflowStatus`, which sums each step's turns from the log) costs beside a run of
//      the same steps with no events;
//   3. per LLM step on an API provider (Anthropic against `switchboard sim`, zero delay): `tools: []`
//      (one call) beside tools left out (the file tools offered, the model answers at once: one turn)
//      and a step whose model reads one file first (two turns), in alternating runs of 20 steps each.
// Each run has its own state folder (a SQLite ledger) under a temporary folder, removed at the end.
//   node --experimental-strip-types --no-warnings bench/workflow-events.ts [tool calls per step] [rounds]
// Target (issue 25): ≤ 1 ms per event at p50; a 1,000-tool-call run not slowed beyond that.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StepContext } from '../src/workflows/step-executor.ts';
import './source-hooks.ts';

const { runWorkflow, workflowStatus } = await import('../src/workflows/index.js');
const { startSimulator } = await import('../src/sim/server.js');
const { ProviderRegistry } = await import('../src/providers/registry.js');
const { openLedger } = await import('../src/store/ledger.js');
const { percentile } = await import('../src/core/percentile.js');
const { sessionObserver } = await import('../src/agents/session-events.js');

const toolCalls = Math.max(10, Number(process.argv[2] ?? 1000));
const rounds = Math.max(2, Number(process.argv[3] ?? 6));
const root = mkdtempSync(join(tmpdir(), 'switchboard-bench-events-'));

// One `type: set` step: its executor is replaced below by one that plays a session of `toolCalls` tool
// calls (each a Claude Code assistant message and its tool result), with or without the step's events.
const file = join(root, 'events.yaml');
writeFileSync(
  file,
  `workflow:
  name: bench-events
  entry_point: work
agents:
  - name: work
    type: set
    values: { done: 'yes' }
    routes: [{ to: $end }]
`,
);

/** The session's messages as Claude Code's SDK hands them over: a turn asking for a tool, then its result. */
function sessionMessages(count: number): unknown[] {
  const messages: unknown[] = [];
  for (let index = 0; index < count; index++) {
    const id = `toolu_${index}`;
    messages.push({
      type: 'assistant',
      parent_tool_use_id: null,
      message: {
        id: `msg_${index}`,
        model: 'claude-sonnet-4-5',
        content: [{ type: 'tool_use', id, name: 'Read', input: { file_path: `src/file-${index}.ts` } }],
        usage: { input_tokens: 1200 + index, output_tokens: 40, cache_read_input_tokens: 1000 },
      },
    });
    messages.push({
      type: 'user',
      parent_tool_use_id: null,
      message: {
        content: [
          { type: 'tool_result', tool_use_id: id, content: `export const value${index} = ${index};\n` },
        ],
      },
    });
  }
  return messages;
}

const messages = sessionMessages(toolCalls);

interface Sample {
  wallMs: number;
  perEvent: number[];
  statusMs: number;
  events: number;
}

async function runOnce(withEvents: boolean, round: number): Promise<Sample> {
  const stateDir = join(root, `${withEvents ? 'events' : 'none'}-${round}`);
  const perEvent: number[] = [];
  let events = 0;
  const executor = async (context: StepContext) => {
    let chain: Promise<void> = Promise.resolve();
    const observe = sessionObserver((event) => {
      if (!withEvents) return;
      events++;
      chain = chain.then(async () => {
        const started = performance.now();
        await context.emit({ step: context.step.name, key: context.key, ...event });
        perEvent.push(performance.now() - started);
      });
    });
    for (const message of messages) observe(message as Parameters<typeof observe>[0]);
    await chain;
    return { status: 'completed' as const, costUsd: 0, output: { done: 'yes' } };
  };
  const started = performance.now();
  const result = await runWorkflow({ file, stateDir, _internal: { executors: { set: executor } } });
  const wallMs = performance.now() - started;
  if (result.status !== 'completed')
    throw new Error(`run ${result.id} ended ${result.status}: ${result.error}`);
  const statusStarted = performance.now();
  const status = await workflowStatus(result.id, { stateDir });
  const statusMs = performance.now() - statusStarted;
  if (withEvents && status.steps[0]?.tokens?.input === undefined) throw new Error('no tokens in status');
  return { wallMs, perEvent, statusMs, events };
}

/** Part 3: `steps` visits of one Anthropic step per run, three ways, interleaved; ms per step (p50 of runs). */
async function toolSteps(steps: number, runs: number): Promise<Record<string, number[]>> {
  const sim = await startSimulator({
    scenario: {
      rules: [
        // The reading step asks for its file on its first turn, then answers; the others answer at once.
        {
          match: { text: '^read', tools: 'read_file', turn: 1 },
          reply: {
            tool: { name: 'read_file', input: { path: 'notes.txt' } },
            usage: { input: 200, output: 10 },
          },
        },
      ],
      fallback: { text: 'pong', usage: { input: 200, output: 2 } },
    },
    maxLifetimeMs: 600_000,
  });
  const dir = join(root, 'tool-steps');
  const registry = new ProviderRegistry({
    anthropic: { apiKey: 'sk-bench', baseUrl: sim.url, maxTokens: 64 },
  });
  const ledger = openLedger({ stateDir: join(dir, '.switchboard') });
  const files: Record<string, string> = {};
  writeFileSync(join(root, 'notes.txt'), 'a note\n');
  for (const [name, tools, prompt] of [
    ['no tools (tools: [])', '    tools: []\n', 'ping'],
    ['tools offered, answered at once', '', 'ping'],
    ['one read_file, then the answer', '', 'read notes.txt'],
  ] as const) {
    const file = join(root, `${name.replace(/\W+/g, '-')}.yaml`);
    writeFileSync(
      file,
      `workflow:
  name: tool-steps
  entry_point: ask
  runtime: { provider: claude, default_model: claude-sonnet-4-6, working_dir: ${JSON.stringify(root)} }
  limits: { max_iterations: 500 }
agents:
  - name: ask
    prompt: "${prompt} {{ context.iteration }}"
${tools}    max_visits: ${steps}
    on_cap: $end
    routes: [{ to: ask }]
`,
    );
    files[name] = file;
  }
  const perStep: Record<string, number[]> = Object.fromEntries(Object.keys(files).map((name) => [name, []]));
  const names = Object.keys(files);
  for (let round = -1; round < runs; round++) {
    for (const name of round % 2 === 0 ? names : [...names].reverse()) {
      const started = performance.now();
      const result = await runWorkflow({
        file: files[name] as string,
        stateDir: dir,
        ledger,
        providers: registry,
      });
      if (result.status !== 'completed') throw new Error(`${name}: ${result.status} ${result.error ?? ''}`);
      if (round >= 0) perStep[name]?.push((performance.now() - started) / steps);
    }
    sim.clearLog();
  }
  await registry.close();
  await ledger.close();
  await sim.close();
  return perStep;
}

try {
  const withEvents: Sample[] = [];
  const without: Sample[] = [];
  await runOnce(true, -1); // warm-up: module loads, the first ledger
  for (let round = 0; round < rounds; round++) {
    // Alternate which side goes first, so neither always runs on a warmer process.
    if (round % 2 === 0) {
      withEvents.push(await runOnce(true, round));
      without.push(await runOnce(false, round));
    } else {
      without.push(await runOnce(false, round));
      withEvents.push(await runOnce(true, round));
    }
  }
  const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
  const median = (values: number[]) => percentile(sorted(values), 50);
  const perEvent = sorted(withEvents.flatMap((sample) => sample.perEvent));
  const events = withEvents[0]?.events ?? 0;
  const wallWith = median(withEvents.map((sample) => sample.wallMs));
  const wallWithout = median(without.map((sample) => sample.wallMs));
  const statusWith = median(withEvents.map((sample) => sample.statusMs));
  const statusWithout = median(without.map((sample) => sample.statusMs));
  const ms = (value: number, digits = 3) => `${value.toFixed(digits)} ms`;
  console.log(
    `Workflow events: a step playing a ${toolCalls}-tool-call Claude Code session (${events} events) beside the same step writing none; ${rounds} rounds each, alternating; Node ${process.version}`,
  );
  console.log(
    `1. per event (emit: one fenced insert into the run's log): p50 ${ms(percentile(perEvent, 50))}, p95 ${ms(percentile(perEvent, 95))}, p99 ${ms(percentile(perEvent, 99))}; ${(events / ((wallWith - wallWithout) / 1000)).toFixed(0)} events/s written`,
  );
  console.log(
    `2. run wall (median): ${ms(wallWith, 1)} with events vs ${ms(wallWithout, 1)} without: +${ms(wallWith - wallWithout, 1)}, ${ms((wallWith - wallWithout) / toolCalls)} per tool call (2 events and a turn's share)`,
  );
  console.log(
    `   reading the run back (workflowStatus, tokens summed from the log): ${ms(statusWith, 1)} vs ${ms(statusWithout, 1)} without events`,
  );
  console.log(`   target ≤ 1 ms per event at p50: ${percentile(perEvent, 50) <= 1 ? 'met' : 'NOT MET'}`);
  const tools = await toolSteps(20, rounds);
  const base = median(tools['no tools (tools: [])'] ?? []);
  console.log('3. per LLM step on Anthropic (switchboard sim, zero delay), median of runs of 20 steps:');
  for (const [name, values] of Object.entries(tools)) {
    const value = median(values);
    console.log(
      `   ${name.padEnd(34)} ${ms(value, 2)}  (${value >= base ? '+' : ''}${ms(value - base, 2)}, ×${(value / base).toFixed(2)})`,
    );
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
