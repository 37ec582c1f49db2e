// What `call()` adds, ledger on, over the raw Anthropic SDK call to the same server (zero delay, fixed
// reply), side by side in one run, with the Vercel AI SDK (`generateText` through `@ai-sdk/anthropic`,
// dev dependencies for this bench only) as a third column: what a popular wrapper costs on the same
// path. Every figure is taken twice: against `switchboard sim`, and against a minimal fake written here
// on plain `node:http` that shares no code with Switchboard. Run from the repository root under
// Node >= 22 (no build):
//   node --experimental-strip-types --no-warnings bench/call-overhead.ts [calls] [--compare <checkout>]
// A side of `call()` with `ledger: false` runs beside them, so what the ledger write costs and what the
// rest of `call()` costs read apart in one run.
// `--compare` adds one more side: `call()` from another checkout's sources (e.g. the commit before a
// change, with node_modules linked), interleaved with the others, so before and after share one run.
// Targets (issue): p50 ≤ 1.10× raw and ≤ the AI SDK's p50, added p99 ≤ 2 ms, throughput ≥ 0.9× raw
// with 200 calls in flight, on both servers.
// Binds 127.0.0.1 only; the ledger lives in a temporary folder removed at the end.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { createAnthropic } from '@ai-sdk/anthropic';
import { generateText } from 'ai';
import type * as CallSources from '../src/lazy-api.ts';
import type * as RegistrySources from '../src/providers/registry.ts';
import type * as LedgerSources from '../src/store/ledger.ts';
import './source-hooks.ts';

const { startSimulator } = await import('../src/sim/server.js');
// The public `call()`, as `import { call } from 'switchboard'` gives it: the entry point that loads
// src/invoke/call.ts on first use.
const { call } = await import('../src/lazy-api.js');
const { ProviderRegistry } = await import('../src/providers/registry.js');
const { openLedger, hashText } = await import('../src/store/ledger.js');
const { percentile } = await import('../src/core/percentile.js');

const compareIndex = process.argv.indexOf('--compare');
const compareRoot = compareIndex > 0 ? resolve(process.argv[compareIndex + 1] ?? '.') : undefined;
const calls = Number(process.argv.slice(2).find((argument) => /^\d+$/.test(argument)) ?? 2000);
const warmUp = 200;
const block = 50; // sequential calls per side before switching sides
const inFlight = 200;
const rounds = 20; // throughput rounds per side
const model = 'claude-sonnet-4-6';
const maxTokens = 64;
const loadAtStart = loadavg()[0] ?? 0;

/** What a server saw of one request: enough to tell that every side sent the same Messages request. */
interface RequestSeen {
  shape: string;
  text: string | null;
  answered: boolean;
}

/** A Messages API server the sides call: `switchboard sim`, or the bench's own fake beside it. */
interface Server {
  name: string;
  url: string;
  requests(): RequestSeen[];
  clearLog(): void;
  close(): Promise<void>;
}

async function simServer(): Promise<Server> {
  const sim = await startSimulator({
    scenario: { rules: [{ match: {}, reply: { text: 'pong', usage: { input: 20, output: 2 } } }] },
    maxLifetimeMs: 300_000,
  });
  return {
    name: 'switchboard sim',
    url: sim.url,
    requests: () =>
      sim.requests.map((entry) => {
        const body = entry.body as { max_tokens?: unknown } | undefined;
        return {
          shape: `${entry.method} ${entry.path} ${entry.model} max_tokens ${String(body?.max_tokens)}`,
          text: entry.text,
          answered: entry.outcome === 'reply',
        };
      }),
    clearLog: () => sim.clearLog(),
    close: () => sim.close(),
  };
}

/**
 * A second Messages API server that shares no code with Switchboard: plain `node:http` answering every
 * `POST /v1/messages` with the same fixed message, so the ratios do not rest on our own simulator (whose
 * work per request also dilutes what the clients add).
 */
async function fakeServer(): Promise<Server> {
  let seen: RequestSeen[] = [];
  let count = 0;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.method !== 'POST' || request.url !== '/v1/messages') {
        response.writeHead(404).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        model?: string;
        max_tokens?: number;
        messages?: { content: string | { type: string; text?: string }[] }[];
      };
      const content = body.messages?.at(-1)?.content;
      const text =
        typeof content === 'string'
          ? content
          : (content?.find((block) => block.type === 'text')?.text ?? null);
      seen.push({
        shape: `${request.method} ${request.url} ${body.model} max_tokens ${String(body.max_tokens)}`,
        text,
        answered: true,
      });
      const answer = JSON.stringify({
        id: `msg_fake_${++count}`,
        type: 'message',
        role: 'assistant',
        model: body.model,
        content: [{ type: 'text', text: 'pong' }],
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: 20, output_tokens: 2 },
      });
      response
        .writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) })
        .end(answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    name: 'independent fake',
    url: `http://127.0.0.1:${port}`,
    requests: () => seen,
    clearLog: () => (seen = []),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const stateDir = mkdtempSync(join(tmpdir(), 'switchboard-bench-overhead-'));
const ledger = openLedger({ stateDir });

type Side = 'raw' | 'ours' | 'oursNoLedger' | 'aiSdk' | 'compared';
const allSides: Side[] =
  compareRoot === undefined
    ? ['raw', 'ours', 'oursNoLedger', 'aiSdk']
    : ['raw', 'ours', 'oursNoLedger', 'aiSdk', 'compared'];
const made: Record<Side, number> = { raw: 0, ours: 0, oursNoLedger: 0, aiSdk: 0, compared: 0 };
const failures: Record<Side, number> = { raw: 0, ours: 0, oursNoLedger: 0, aiSdk: 0, compared: 0 };
const firstError: Partial<Record<Side, string>> = {};
function fail(side: Side, reason: unknown): void {
  failures[side]++;
  firstError[side] ??= reason instanceof Error ? reason.message : String(reason);
}
const labels: Record<Side, string> = {
  raw: 'raw SDK:            ',
  ours: 'switchboard call(): ',
  oursNoLedger: 'call() ledger off:  ',
  aiSdk: 'AI SDK generateText:',
  compared: 'call() of --compare:',
};

const comparedStateDir = mkdtempSync(join(tmpdir(), 'switchboard-bench-overhead-compared-'));
/** The other checkout's `call()`, with its own registry and ledger modules (see `--compare`). */
async function comparedSources(root: string) {
  const sources = (path: string): Promise<unknown> => import(join(root, path));
  const { call } = (await sources('src/lazy-api.ts')) as typeof CallSources;
  const { ProviderRegistry } = (await sources('src/providers/registry.ts')) as typeof RegistrySources;
  const { openLedger } = (await sources('src/store/ledger.ts')) as typeof LedgerSources;
  return { call, ProviderRegistry, ledger: openLedger({ stateDir: comparedStateDir }) };
}
const comparedModules = compareRoot === undefined ? undefined : await comparedSources(compareRoot);

/** Each side's call to one server, its answer checked. */
function sidesFor(url: string): {
  sides: Record<Side, (prompt: string) => Promise<void>>;
  close: () => Promise<void>;
} {
  // One registry for every call, as a long-lived orchestrator keeps it; the same max_tokens as the raw
  // side, so both send the same request body.
  const registry = new ProviderRegistry({ anthropic: { apiKey: 'sk-bench', baseUrl: url, maxTokens } });
  const sdk = new Anthropic({ baseURL: url, apiKey: 'sk-bench', maxRetries: 0 });
  // The AI SDK's base URL includes the API version (its default is https://api.anthropic.com/v1).
  const aiSdkModel = createAnthropic({ baseURL: `${url}/v1`, apiKey: 'sk-bench' })(model);

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

  async function oursNoLedger(prompt: string): Promise<void> {
    made.oursNoLedger++;
    try {
      const result = await call(`anthropic:${model}`, { prompt }, { providers: registry, ledger: false });
      if (result.text !== 'pong') fail('oursNoLedger', `unexpected answer ${result.text}`);
    } catch (error) {
      fail('oursNoLedger', error);
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
  const comparedRegistry =
    comparedModules === undefined
      ? undefined
      : new comparedModules.ProviderRegistry({ anthropic: { apiKey: 'sk-bench', baseUrl: url, maxTokens } });
  async function compared(prompt: string): Promise<void> {
    made.compared++;
    try {
      if (comparedModules === undefined || comparedRegistry === undefined) throw new Error('no --compare');
      const result = await comparedModules.call(
        `anthropic:${model}`,
        { prompt },
        { providers: comparedRegistry, ledger: comparedModules.ledger },
      );
      if (result.text !== 'pong') fail('compared', `unexpected answer ${result.text}`);
    } catch (error) {
      fail('compared', error);
    }
  }
  return {
    sides: { raw, ours, oursNoLedger, aiSdk, compared },
    close: async () => {
      await registry.close();
      await comparedRegistry?.close();
    },
  };
}

/**
 * Each side's request must really reach the server as the same Messages request (path, model, prompt,
 * max_tokens), or the columns would not compare like with like.
 */
async function checkSameRequest(
  server: Server,
  sides: Record<Side, (prompt: string) => Promise<void>>,
): Promise<string> {
  const seen: string[] = [];
  for (const side of allSides) {
    server.clearLog();
    const prompt = `same request ${side}`;
    await sides[side](prompt);
    const [entry, ...more] = server.requests();
    if (entry === undefined || more.length > 0 || entry.text !== prompt || !entry.answered) {
      throw new Error(
        `${server.name}, ${side}: expected one answered request carrying its prompt, saw ${server.requests().length}`,
      );
    }
    seen.push(entry.shape);
  }
  if (new Set(seen).size !== 1) {
    throw new Error(`${server.name}: the sides sent different requests: ${seen.join(' | ')}`);
  }
  server.clearLog();
  return seen[0] ?? '';
}

/** The sides in turn `turn`'s order: rotated each turn so none always runs first or last. */
function rotation(turn: number): Side[] {
  const shift = turn % allSides.length;
  return [...allSides.slice(shift), ...allSides.slice(0, shift)];
}

interface Measured {
  server: Server;
  requestShape: string;
  latency: Record<Side, number[]>;
  busyMs: Record<Side, number>;
}

async function measure(server: Server): Promise<Measured> {
  const { sides, close } = sidesFor(server.url);
  try {
    const requestShape = await checkSameRequest(server, sides);
    const timed = async (side: Side, prompt: string): Promise<number> => {
      const started = performance.now();
      await sides[side](prompt);
      return performance.now() - started;
    };
    // Warm-up: JIT, sockets in the keep-alive pool, SQLite pages, for every side alike.
    for (let index = 0; index < warmUp; index++) {
      for (const side of allSides) await timed(side, `warm-up ${index}`);
    }
    for (const side of allSides) {
      await Promise.all(
        Array.from({ length: inFlight }, (_, index) => sides[side](`warm-up burst ${index}`)),
      );
    }
    server.clearLog();

    // Sequential latency, interleaved in blocks (raw, ours, AI SDK, then rotated) so all see the same
    // machine state.
    const latency: Record<Side, number[]> = { raw: [], ours: [], oursNoLedger: [], aiSdk: [], compared: [] };
    for (let done = 0, turn = 0; done < calls; done += block, turn++) {
      for (const side of rotation(turn)) {
        for (let index = done; index < Math.min(done + block, calls); index++) {
          latency[side].push(await timed(side, `sequential ${side} ${index}`));
        }
      }
      server.clearLog(); // the server keeps every request in memory; keep its heap flat
    }

    // Throughput: `inFlight` calls at once, `rounds` rounds per side, rotating which side goes first.
    const busyMs: Record<Side, number> = { raw: 0, ours: 0, oursNoLedger: 0, aiSdk: 0, compared: 0 };
    for (let round = 0; round < rounds; round++) {
      for (const side of rotation(round)) {
        const started = performance.now();
        await Promise.all(
          Array.from({ length: inFlight }, (_, index) => sides[side](`burst ${side} ${round} ${index}`)),
        );
        busyMs[side] += performance.now() - started;
        server.clearLog();
      }
    }
    return { server, requestShape, latency, busyMs };
  } finally {
    await close();
  }
}

const servers = [await simServer(), await fakeServer()];
const measured: Measured[] = [];
try {
  for (const server of servers) measured.push(await measure(server));
} catch (error) {
  console.error(`FAILED: ${error instanceof Error ? error.message : String(error)}`);
  await ledger.close();
  for (const server of servers) await server.close();
  rmSync(stateDir, { recursive: true, force: true });
  process.exit(1);
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

await ledger.close();
await comparedModules?.ledger.close();
for (const server of servers) await server.close();
rmSync(stateDir, { recursive: true, force: true });
rmSync(comparedStateDir, { recursive: true, force: true });

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
const ms = (value: number) => `${value.toFixed(3)} ms`;
const signed = (value: number) => `${value < 0 ? '-' : '+'}${ms(Math.abs(value))}`;
const verdict = (met: boolean) => (met ? 'met' : 'NOT MET');

console.log(
  `call() with the ledger on and the AI SDK's generateText vs the raw @anthropic-ai/sdk call, against switchboard sim and an independent fake (zero delay, in process), Node ${process.version}; 1-min load ${loadAtStart.toFixed(2)} at start, ${(loadavg()[0] ?? 0).toFixed(2)} at end`,
);
console.log(
  `all ${made.raw} raw, ${made.ours} switchboard (and ${made.oursNoLedger} with the ledger off) and ${made.aiSdk} AI SDK calls succeeded with the server's answer ` +
    (compareRoot === undefined ? '' : `(and ${made.compared} of call() from ${compareRoot}) `) +
    `(${rows} ledger rows incl. ${ledgerCalls} ledger-alone rows)`,
);
const verdicts: string[] = [];
for (const { server, requestShape, latency, busyMs } of measured) {
  const sideStats = Object.fromEntries(allSides.map((side) => [side, stats(latency[side])])) as Record<
    Side,
    ReturnType<typeof stats>
  >;
  const rawStats = sideStats.raw;
  const ratio = (side: Side) => sideStats[side].p50 / rawStats.p50;
  const added = (side: Side, key: 'p50' | 'p95' | 'p99') => sideStats[side][key] - rawStats[key];
  const rate = (side: Side) => (rounds * inFlight) / (busyMs[side] / 1000);
  console.log(`${server.name} (each side sends ${requestShape}):`);
  console.log(`  sequential, ${calls} calls per side in blocks of ${block}, rotating the order:`);
  for (const side of allSides) {
    const s = sideStats[side];
    const versus = side === 'raw' ? '' : `  (p50 ×${ratio(side).toFixed(3)} raw)`;
    console.log(`    ${labels[side]} p50 ${ms(s.p50)}, p95 ${ms(s.p95)}, p99 ${ms(s.p99)}${versus}`);
  }
  console.log(
    `    call() added: p50 ${signed(added('ours', 'p50'))}, p95 ${signed(added('ours', 'p95'))}, p99 ${signed(added('ours', 'p99'))}`,
  );
  console.log(
    `    call() ledger off added: p50 ${signed(added('oursNoLedger', 'p50'))}, p95 ${signed(added('oursNoLedger', 'p95'))}, p99 ${signed(added('oursNoLedger', 'p99'))}`,
  );
  console.log(
    `    AI SDK added: p50 ${signed(added('aiSdk', 'p50'))}, p95 ${signed(added('aiSdk', 'p95'))}, p99 ${signed(added('aiSdk', 'p99'))}`,
  );
  console.log(`  throughput, ${inFlight} calls in flight, ${rounds} rounds per side, rotating the order:`);
  for (const side of allSides) {
    const versus = side === 'raw' ? '' : `  ×${(rate(side) / rate('raw')).toFixed(3)}`;
    console.log(`    ${labels[side]} ${rate(side).toFixed(0)} calls/s${versus}`);
  }
  const oursVsAiSdk = sideStats.ours.p50 / sideStats.aiSdk.p50;
  const throughputRatio = rate('ours') / rate('raw');
  verdicts.push(
    `${server.name}: call() p50 ×${oursVsAiSdk.toFixed(3)} the AI SDK's (target ≤ 1, i.e. at or below it): ${verdict(oursVsAiSdk <= 1)}`,
    `${server.name}: call() p50 ratio ×${ratio('ours').toFixed(3)} to raw (target ≤ 1.10): ${verdict(ratio('ours') <= 1.1)}`,
    `${server.name}: call() with the ledger off, p50 ratio ×${ratio('oursNoLedger').toFixed(3)} to raw (the gate, without the ledger write): ${verdict(ratio('oursNoLedger') <= 1.1)}`,
    `${server.name}: call() added p99 ${signed(added('ours', 'p99'))} (target ≤ 2 ms): ${verdict(added('ours', 'p99') <= 2)}`,
    `${server.name}: call() throughput ratio ×${throughputRatio.toFixed(3)} at ${inFlight} in flight (target ≥ 0.9): ${verdict(throughputRatio >= 0.9)}`,
  );
}
console.log(
  `ledger alone (cooldown read + attempt row, ${ledgerCalls} times): ${ledgerUs.toFixed(1)} µs per call`,
);
for (const line of verdicts) console.log(line);
