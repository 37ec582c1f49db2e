// What `call()` adds, ledger on, over the raw Anthropic SDK call to the same `switchboard sim` (zero
// delay, fixed reply), side by side in one run, with the Vercel AI SDK (`generateText` through
// `@ai-sdk/anthropic`, dev dependencies for this bench only) as a third column: what a popular wrapper
// costs on the same path. Run from the repository root under Node >= 22 (no build):
//   node --experimental-strip-types --no-warnings bench/call-overhead.ts [calls]
// Targets (issue): p50 ≤ 1.10× raw and ≤ the AI SDK's p50, added p99 ≤ 2 ms, throughput ≥ 0.9× raw
// with 200 calls in flight.
// Binds 127.0.0.1 only; the ledger lives in a temporary folder removed at the end.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { createAnthropic } from '@ai-sdk/anthropic';
import { generateText } from 'ai';
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
// The AI SDK's base URL includes the API version (its default is https://api.anthropic.com/v1).
const aiSdkAnthropic = createAnthropic({ baseURL: `${sim.url}/v1`, apiKey: 'sk-bench' });
const aiSdkModel = aiSdkAnthropic(model);

type Side = 'raw' | 'ours' | 'aiSdk';
const allSides: Side[] = ['raw', 'ours', 'aiSdk'];
const made: Record<Side, number> = { raw: 0, ours: 0, aiSdk: 0 };
const failures: Record<Side, number> = { raw: 0, ours: 0, aiSdk: 0 };
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

async function aiSdk(prompt: string): Promise<void> {
  made.aiSdk++;
  try {
    const result = await generateText({
      model: aiSdkModel,
      prompt,
      maxOutputTokens: maxTokens,
      maxRetries: 0,
    });
    if (result.text !== 'pong') fail('aiSdk', `unexpected answer ${result.text}`);
  } catch (error) {
    fail('aiSdk', error);
  }
}

const sides: Record<Side, (prompt: string) => Promise<void>> = { raw, ours, aiSdk };
const labels: Record<Side, string> = {
  raw: 'raw SDK:            ',
  ours: 'switchboard call(): ',
  aiSdk: 'AI SDK generateText:',
};

/**
 * Each side's request must really reach the simulator as the same Messages request (path, model, prompt,
 * max_tokens), or the columns would not compare like with like.
 */
async function checkSameRequest(): Promise<string> {
  const seen: string[] = [];
  for (const side of allSides) {
    sim.clearLog();
    const prompt = `same request ${side}`;
    await sides[side](prompt);
    const [entry, ...more] = sim.requests;
    const body = entry?.body as { max_tokens?: unknown } | undefined;
    const shape = `${entry?.method} ${entry?.path} ${entry?.model} max_tokens ${String(body?.max_tokens)}`;
    if (entry === undefined || more.length > 0 || entry.text !== prompt || entry.outcome !== 'reply') {
      throw new Error(
        `${side}: expected one answered request carrying its prompt, saw ${sim.requests.length}`,
      );
    }
    seen.push(shape);
  }
  if (new Set(seen).size !== 1) throw new Error(`the sides sent different requests: ${seen.join(' | ')}`);
  sim.clearLog();
  return seen[0] ?? '';
}
const requestShape = await checkSameRequest().catch(async (error: unknown) => {
  console.error(`FAILED: ${error instanceof Error ? error.message : String(error)}`);
  await registry.close();
  await ledger.close();
  await sim.close();
  rmSync(stateDir, { recursive: true, force: true });
  process.exit(1);
});

async function timed(side: Side, prompt: string): Promise<number> {
  const started = performance.now();
  await sides[side](prompt);
  return performance.now() - started;
}

// Warm-up: JIT, sockets in the keep-alive pool, SQLite pages, for both sides alike.
for (let index = 0; index < warmUp; index++) {
  for (const side of allSides) await timed(side, `warm-up ${index}`);
}
for (const side of allSides) {
  await Promise.all(Array.from({ length: inFlight }, (_, index) => sides[side](`warm-up burst ${index}`)));
}
sim.clearLog();

/** The sides in turn `turn`'s order: rotated each turn so none always runs first or last. */
function rotation(turn: number): Side[] {
  const shift = turn % allSides.length;
  return [...allSides.slice(shift), ...allSides.slice(0, shift)];
}

// Sequential latency, interleaved in blocks (raw, ours, AI SDK, then rotated) so all see the same machine
// state.
const latency: Record<Side, number[]> = { raw: [], ours: [], aiSdk: [] };
for (let done = 0, turn = 0; done < calls; done += block, turn++) {
  for (const side of rotation(turn)) {
    for (let index = done; index < Math.min(done + block, calls); index++) {
      latency[side].push(await timed(side, `sequential ${side} ${index}`));
    }
  }
  sim.clearLog(); // the simulator keeps every request in memory; keep its heap flat
}

// Throughput: `inFlight` calls at once, `rounds` rounds per side, rotating which side goes first.
const busyMs: Record<Side, number> = { raw: 0, ours: 0, aiSdk: 0 };
for (let round = 0; round < rounds; round++) {
  for (const side of rotation(round)) {
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
  await ledger.getCooldown(`anthropic:${model}`);
  await ledger.recordCallAttempt({
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
const rows = (await ledger.callStats()).attempts;

await registry.close();
await ledger.close();
await sim.close();
rmSync(stateDir, { recursive: true, force: true });

const failed = allSides.filter((side) => failures[side] > 0);
if (failed.length > 0) {
  const why = (side: Side) =>
    `${labels[side].replace(':', '').trim()} ${failures[side]}/${made[side]} calls failed (first: ${firstError[side]})`;
  console.error(`FAILED: ${failed.map(why).join('; ')}`);
  process.exit(1);
}

const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
const stats = (values: number[]) => {
  const ordered = sorted(values);
  return { p50: percentile(ordered, 50), p95: percentile(ordered, 95), p99: percentile(ordered, 99) };
};
const sideStats = {
  raw: stats(latency.raw),
  ours: stats(latency.ours),
  aiSdk: stats(latency.aiSdk),
} satisfies Record<Side, ReturnType<typeof stats>>;
const rawStats = sideStats.raw;
const ms = (value: number) => `${value.toFixed(3)} ms`;
const signed = (value: number) => `${value < 0 ? '-' : '+'}${ms(Math.abs(value))}`;
const ratio = (side: Side) => sideStats[side].p50 / rawStats.p50;
const added = (side: Side, key: 'p50' | 'p95' | 'p99') => sideStats[side][key] - rawStats[key];
const rate = (side: Side) => (rounds * inFlight) / (busyMs[side] / 1000);
const verdict = (met: boolean) => (met ? 'met' : 'NOT MET');

console.log(
  `call() with the ledger on and the AI SDK's generateText vs the raw @anthropic-ai/sdk call, against switchboard sim (zero delay), Node ${process.version}`,
);
console.log(
  `all ${made.raw} raw, ${made.ours} switchboard and ${made.aiSdk} AI SDK calls succeeded with the simulator's answer ` +
    `(${rows} ledger rows incl. ${ledgerCalls} ledger-alone rows); each side sends ${requestShape}`,
);
console.log(`sequential, ${calls} calls per side in blocks of ${block}, rotating the order:`);
for (const side of allSides) {
  const s = sideStats[side];
  const versus = side === 'raw' ? '' : `  (p50 ×${ratio(side).toFixed(3)} raw)`;
  console.log(`  ${labels[side]} p50 ${ms(s.p50)}, p95 ${ms(s.p95)}, p99 ${ms(s.p99)}${versus}`);
}
console.log(
  `  call() added: p50 ${signed(added('ours', 'p50'))}, p95 ${signed(added('ours', 'p95'))}, p99 ${signed(added('ours', 'p99'))}`,
);
console.log(
  `  AI SDK added: p50 ${signed(added('aiSdk', 'p50'))}, p95 ${signed(added('aiSdk', 'p95'))}, p99 ${signed(added('aiSdk', 'p99'))}`,
);
console.log(`throughput, ${inFlight} calls in flight, ${rounds} rounds per side, rotating the order:`);
for (const side of allSides) {
  const versus = side === 'raw' ? '' : `  ×${(rate(side) / rate('raw')).toFixed(3)}`;
  console.log(`  ${labels[side]} ${rate(side).toFixed(0)} calls/s${versus}`);
}
console.log(
  `ledger alone (cooldown read + attempt row, ${ledgerCalls} times): ${ledgerUs.toFixed(1)} µs per call`,
);
const oursVsAiSdk = sideStats.ours.p50 / sideStats.aiSdk.p50;
console.log(
  `call() p50 ×${oursVsAiSdk.toFixed(3)} the AI SDK's (target ≤ 1, i.e. at or below it): ${verdict(oursVsAiSdk <= 1)}`,
);
console.log(
  `call() p50 ratio ×${ratio('ours').toFixed(3)} to raw (target ≤ 1.10): ${verdict(ratio('ours') <= 1.1)}`,
);
console.log(
  `call() added p99 ${signed(added('ours', 'p99'))} (target ≤ 2 ms): ${verdict(added('ours', 'p99') <= 2)}`,
);
const throughputRatio = rate('ours') / rate('raw');
console.log(
  `call() throughput ratio ×${throughputRatio.toFixed(3)} at ${inFlight} in flight (target ≥ 0.9): ${verdict(throughputRatio >= 0.9)}`,
);
