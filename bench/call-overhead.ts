// What `call()` adds, ledger on, over the raw Anthropic SDK call to the same `switchboard sim` (zero
// delay, fixed reply), side by side in one run. Run from the repository root under Node >= 22 (no build):
//   node --experimental-strip-types --no-warnings bench/call-overhead.ts [calls]
// Targets (issue): p50 ≤ 1.10× raw, added p99 ≤ 2 ms, throughput ≥ 0.9× raw with 200 calls in flight.
// Binds 127.0.0.1 only; the ledger lives in a temporary folder removed at the end.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import './source-hooks.ts';

const { startSimulator } = await import('../src/sim/server.js');
const { call } = await import('../src/invoke/call.js');
const { ProviderRegistry } = await import('../src/providers/registry.js');
const { openLedger, hashText } = await import('../src/store/ledger.js');
const { percentile } = await import('../src/core/percentile.js');

const calls = Number(process.argv[2] ?? 2000);
const warmUp = 200;
const block = 50; // sequential calls per side before switching sides
const inFlight = 200;
const rounds = 20; // throughput rounds per side
const model = 'claude-sonnet-4-6';
const maxTokens = 64;

const sim = await startSimulator({
  scenario: { rules: [{ match: {}, reply: { text: 'pong', usage: { input: 20, output: 2 } } }] },
  maxLifetimeMs: 300_000,
});
const stateDir = mkdtempSync(join(tmpdir(), 'switchboard-bench-overhead-'));
const ledger = openLedger({ stateDir });
// One registry for every call, as a long-lived orchestrator keeps it; the same max_tokens as the raw side,
// so both send the same request body.
const registry = new ProviderRegistry({ anthropic: { apiKey: 'sk-bench', baseUrl: sim.url, maxTokens } });
const sdk = new Anthropic({ baseURL: sim.url, apiKey: 'sk-bench', maxRetries: 0 });

type Side = 'raw' | 'ours';
const made: Record<Side, number> = { raw: 0, ours: 0 };
const failures: Record<Side, number> = { raw: 0, ours: 0 };
const firstError: Partial<Record<Side, string>> = {};
function fail(side: Side, reason: unknown): void {
  failures[side]++;
  firstError[side] ??= reason instanceof Error ? reason.message : String(reason);
}

async function raw(prompt: string): Promise<void> {
  made.raw++;
  try {
    const message = await sdk.messages.create({
      model,
      max_tokens: maxTokens,
      messages: [{ role: 'user', content: prompt }],
    });
    const first = message.content[0];
    if (first?.type !== 'text' || first.text !== 'pong')
      fail('raw', `unexpected answer ${JSON.stringify(message)}`);
  } catch (error) {
    fail('raw', error);
  }
}

async function ours(prompt: string): Promise<void> {
  made.ours++;
  try {
    const result = await call(`anthropic:${model}`, { prompt }, { providers: registry, ledger });
    if (result.text !== 'pong') fail('ours', `unexpected answer ${result.text}`);
  } catch (error) {
    fail('ours', error);
  }
}

const sides: Record<Side, (prompt: string) => Promise<void>> = { raw, ours };

async function timed(side: Side, prompt: string): Promise<number> {
  const started = performance.now();
  await sides[side](prompt);
  return performance.now() - started;
}

// Warm-up: JIT, sockets in the keep-alive pool, SQLite pages, for both sides alike.
for (let index = 0; index < warmUp; index++) {
  await timed('raw', `warm-up ${index}`);
  await timed('ours', `warm-up ${index}`);
}
await Promise.all(Array.from({ length: inFlight }, (_, index) => raw(`warm-up burst ${index}`)));
await Promise.all(Array.from({ length: inFlight }, (_, index) => ours(`warm-up burst ${index}`)));
sim.clearLog();

// Sequential latency, interleaved in blocks (raw, ours, ours, raw, …) so both see the same machine state.
const latency: Record<Side, number[]> = { raw: [], ours: [] };
for (let done = 0, turn = 0; done < calls; done += block, turn++) {
  const order: Side[] = turn % 2 === 0 ? ['raw', 'ours'] : ['ours', 'raw'];
  for (const side of order) {
    for (let index = done; index < Math.min(done + block, calls); index++) {
      latency[side].push(await timed(side, `sequential ${side} ${index}`));
    }
  }
  sim.clearLog(); // the simulator keeps every request in memory; keep its heap flat
}

// Throughput: `inFlight` calls at once, `rounds` rounds per side, alternating which side goes first.
const busyMs: Record<Side, number> = { raw: 0, ours: 0 };
for (let round = 0; round < rounds; round++) {
  const order: Side[] = round % 2 === 0 ? ['raw', 'ours'] : ['ours', 'raw'];
  for (const side of order) {
    const started = performance.now();
    await Promise.all(
      Array.from({ length: inFlight }, (_, index) => sides[side](`burst ${side} ${round} ${index}`)),
    );
    busyMs[side] += performance.now() - started;
    sim.clearLog();
  }
}

// The ledger's share, measured alone: what call() asks of it per successful call (one cooldown read, one
// attempt row with its prompt hash), on the same file.
const ledgerCalls = 2000;
const ledgerStarted = performance.now();
for (let index = 0; index < ledgerCalls; index++) {
  const prompt = `ledger alone ${index}`;
  ledger.getCooldown(`anthropic:${model}`);
  ledger.recordCallAttempt({
    id: randomUUID(),
    callId: randomUUID(),
    attempt: 1,
    createdAt: Date.now(),
    provider: 'anthropic',
    spec: `anthropic:${model}`,
    modelRequested: model,
    modelUsed: model,
    success: true,
    durationMs: 1,
    costUsd: 0.00009,
    promptHash: hashText(prompt),
    promptText: prompt,
    tags: {},
    usage: { inputTokens: 20, outputTokens: 2, cacheReadTokens: 0, cacheWriteTokens: 0 },
  });
}
const ledgerUs = ((performance.now() - ledgerStarted) / ledgerCalls) * 1000;
const rows = ledger.callStats().attempts;

await registry.close();
ledger.close();
await sim.close();
rmSync(stateDir, { recursive: true, force: true });

if (failures.raw + failures.ours > 0) {
  console.error(
    `FAILED: raw SDK ${failures.raw}/${made.raw} calls failed${firstError.raw === undefined ? '' : ` (first: ${firstError.raw})`}; ` +
      `switchboard ${failures.ours}/${made.ours} failed${firstError.ours === undefined ? '' : ` (first: ${firstError.ours})`}`,
  );
  process.exit(1);
}

const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
const stats = (values: number[]) => {
  const ordered = sorted(values);
  return { p50: percentile(ordered, 50), p95: percentile(ordered, 95), p99: percentile(ordered, 99) };
};
const rawStats = stats(latency.raw);
const ourStats = stats(latency.ours);
const ms = (value: number) => `${value.toFixed(3)} ms`;
const signed = (value: number) => `${value < 0 ? '-' : '+'}${ms(Math.abs(value))}`;
const row = (label: string, s: { p50: number; p95: number; p99: number }) =>
  `${label} p50 ${ms(s.p50)}, p95 ${ms(s.p95)}, p99 ${ms(s.p99)}`;
const p50Ratio = ourStats.p50 / rawStats.p50;
const addedP99 = ourStats.p99 - rawStats.p99;
const rate = (side: Side) => (rounds * inFlight) / (busyMs[side] / 1000);
const throughputRatio = rate('ours') / rate('raw');
const verdict = (met: boolean) => (met ? 'met' : 'NOT MET');

console.log(
  `call() with the ledger on vs the raw @anthropic-ai/sdk call, against switchboard sim (zero delay), Node ${process.version}`,
);
console.log(
  `all ${made.raw} raw and ${made.ours} switchboard calls succeeded (${rows} ledger rows incl. ${ledgerCalls} ledger-alone rows)`,
);
console.log(`sequential, ${calls} calls per side in blocks of ${block}, alternating:`);
console.log(row('  raw SDK:             ', rawStats));
console.log(row('  switchboard call(): ', ourStats));
console.log(
  `  added: p50 ${signed(ourStats.p50 - rawStats.p50)}, p95 ${signed(ourStats.p95 - rawStats.p95)}, p99 ${signed(addedP99)}`,
);
console.log(`throughput, ${inFlight} calls in flight, ${rounds} rounds per side, alternating:`);
console.log(`  raw SDK:             ${rate('raw').toFixed(0)} calls/s`);
console.log(`  switchboard call():  ${rate('ours').toFixed(0)} calls/s`);
console.log(
  `ledger alone (cooldown read + attempt row, ${ledgerCalls} times): ${ledgerUs.toFixed(1)} µs per call`,
);
console.log(`p50 ratio ×${p50Ratio.toFixed(3)} (target ≤ 1.10): ${verdict(p50Ratio <= 1.1)}`);
console.log(`added p99 ${signed(addedP99)} (target ≤ 2 ms): ${verdict(addedP99 <= 2)}`);
console.log(
  `throughput ratio ×${throughputRatio.toFixed(3)} at ${inFlight} in flight (target ≥ 0.9): ${verdict(throughputRatio >= 0.9)}`,
);
