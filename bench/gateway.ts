// What `switchboard serve`'s gateway (/v1, the native lane) adds to a request, side by side in one run
// with the same request sent straight to the upstream. The upstream is ONE mock written here on plain
// `node:http` (not the simulator): it answers every POST /v1/messages with a fixed Anthropic message,
// or, with `"stream": true`, a fixed SSE stream of N content deltas a fixed gap apart, so its own cost
// is tiny and the same for both paths. Serve is this tree's BUILT CLI in a temporary folder with its
// own state dir (ledger on, SQLite), ANTHROPIC_BASE_URL / OPENAI_BASE_URL at the mock and fake keys;
// the client authenticates with the token serve writes (serve-<port>.token, `x-api-key`). A third side
// is bench/trivial-proxy.ts in a process of its own (body read whole, forwarded over a keep-alive agent
// to the same mock, the answer piped back): what any separate-process proxy adds on this machine, the
// floor under the gateway's figures, measured in the same rounds.
//   1. non-streaming: sequential requests over one keep-alive connection per side, rounds rotating
//      direct / via the gateway / via the trivial proxy (a different order each round), a warm-up round
//      of each discarded: p50 / p99 of each side, what the gateway and the proxy add, and what the
//      gateway adds beyond the proxy (gates from issue 37, on the gateway: p50 ≤ 0.5 ms, p99 ≤ 2 ms);
//   2. streaming: the same rounds with `stream: true`: time to the first content chunk at the client
//      (the gateway holds message_start until content_block_start, then sends both), the gaps between
//      content deltas beside the mock's own, and time to the last byte (the gateway writes the ledger
//      row before message_stop); the proxy's beside them. Gate: added TTFB ≤ 1 ms; gaps equal within noise;
//   2b. hang-ups: a client that closes its connection after the first content delta of a stream that
//      never ends, alternating direct / via the gateway: the time until the mock sees its request's
//      connection close (the gateway must abort upstream; gate: ≤ 100 ms);
//   3. the serve process's RSS (/proc/<pid>/status VmRSS) every 10,000 requests over a long run with 32
//      requests in flight from this process (keep-alive connections; after 10,000 of warm-up), and
//      whether it is flat after warm-up (last sample ≤ 1.1 × the sample at 20 % of the run); the same
//      load straight to the mock first, for a throughput ratio;
//   4. `--profile`: serve runs under `--cpu-prof`; after it stops, the 15 functions with the most self
//      time over the whole run.
// A missed gate prints FAIL; the exit code is 0 all the same (this is a measurement). It runs the BUILT dist/:
//   npm run build && node --experimental-strip-types --no-warnings bench/gateway.ts [rounds] [requests per round]
//       [--requests N (RSS run; default 200000, 0 skips it)] [--stream-requests N] [--events N] [--gap ms] [--hang-ups N] [--profile [--profile-out FILE]]
// Everything binds 127.0.0.1 and lives in a temporary folder removed at the end.
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { Agent, createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { assertFreshBuild } from './fresh-build.ts';
import { waitForUrl } from './wrk.ts';

const root = join(import.meta.dirname, '..');
const cli = join(root, 'dist/cli/main.js');
assertFreshBuild(cli, 'this bench runs the built CLI');

const args = process.argv.slice(2);
function flag(name: string): boolean {
  const index = args.indexOf(name);
  if (index !== -1) args.splice(index, 1);
  return index !== -1;
}
function option(name: string, fallback: number): number {
  const index = args.indexOf(name);
  if (index === -1) return fallback;
  const value = Number(args.splice(index, 2)[1]);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} wants a number`);
  return value;
}
const profile = flag('--profile');
/** `--profile-out FILE`: the .cpuprofile is kept there (for DevTools, or a closer look than the top 15). */
const profileOut = (() => {
  const index = args.indexOf('--profile-out');
  return index === -1 ? undefined : args.splice(index, 2)[1];
})();
const longRun = option('--requests', 200_000);
const streamPerRound = option('--stream-requests', 0);
const events = option('--events', 20);
const gapMs = option('--gap', 2);
const hangUpCount = option('--hang-ups', 50);
const rounds = Number(args[0] ?? 7);
const perRound = Number(args[1] ?? 200);
const streamRequests = streamPerRound > 0 ? streamPerRound : Math.max(5, Math.round(perRound / 10));
const sampleEvery = 10_000;
const connections = 32;
const model = 'claude-haiku-4-5';

const base = mkdtempSync(join(tmpdir(), 'switchboard-bench-gateway-'));
const stateDir = join(base, 'state');
const profileDir = join(base, 'cpu-profile');
mkdirSync(stateDir);
const environment: NodeJS.ProcessEnv = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => !name.startsWith('SWITCHBOARD_')),
);

// ---------------------------------------------------------------------------------------------- the mock

const MESSAGE = JSON.stringify({
  id: 'msg_bench_0001',
  type: 'message',
  role: 'assistant',
  model,
  content: [{ type: 'text', text: 'pong' }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 20, output_tokens: 2 },
});
const sse = (name: string, data: unknown): string => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
const STREAM_HEAD =
  sse('message_start', {
    type: 'message_start',
    message: {
      id: 'msg_bench_0002',
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 20, output_tokens: 1 },
    },
  }) +
  sse('content_block_start', {
    type: 'content_block_start',
    index: 0,
    content_block: { type: 'text', text: '' },
  });
const DELTA = sse('content_block_delta', {
  type: 'content_block_delta',
  index: 0,
  delta: { type: 'text_delta', text: 'word ' },
});
const DELTA_NAME = 'event: content_block_delta\n';
const STREAM_TAIL =
  sse('content_block_stop', { type: 'content_block_stop', index: 0 }) +
  sse('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: 'end_turn', stop_sequence: null },
    usage: { output_tokens: events },
  }) +
  sse('message_stop', { type: 'message_stop' });

/** A streaming request with this max_tokens gets a stream without end from the mock (the hang-up stage). */
const ENDLESS_MAX_TOKENS = 7;
/** When the mock saw each endless stream's connection close (performance.now(), this process's clock). */
const endlessClosedAt: number[] = [];

/** The mock upstream: a fixed message, or the fixed stream (head, N deltas `gapMs` apart, tail). */
function startMock(): Promise<{ url: string; close: () => void }> {
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.method !== 'POST' || request.url !== '/v1/messages') {
        response.writeHead(404).end();
        return;
      }
      const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        stream?: boolean;
        max_tokens?: number;
      };
      const stream = parsed.stream;
      if (stream === true && parsed.max_tokens === ENDLESS_MAX_TOKENS) {
        // The hang-up stage: deltas without end, until the connection closes; when it did is noted.
        response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
        response.write(STREAM_HEAD);
        const timer = setInterval(() => response.write(DELTA), gapMs);
        response.once('close', () => {
          clearInterval(timer);
          endlessClosedAt.push(performance.now());
        });
        return;
      }
      if (stream !== true) {
        response.writeHead(200, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(MESSAGE),
          'request-id': 'req_bench',
        });
        response.end(MESSAGE);
        return;
      }
      response.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'request-id': 'req_bench',
      });
      response.write(STREAM_HEAD);
      let sent = 0;
      const next = () => {
        if (response.destroyed) return;
        response.write(DELTA);
        if (++sent < events) setTimeout(next, gapMs);
        else setTimeout(() => response.end(STREAM_TAIL), gapMs);
      };
      setTimeout(next, gapMs);
    });
  });
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}`,
        close: () => {
          server.closeAllConnections();
          server.close();
        },
      });
    }),
  );
}

// ----------------------------------------------------------------------------------------------- serve

interface Serve {
  url: string;
  token: string;
  child: ChildProcess;
}

async function startServe(mockUrl: string): Promise<Serve> {
  const node = profile ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [];
  const child = spawn(process.execPath, [...node, cli, 'serve', '--port', '0', '--pool', '0'], {
    cwd: base,
    env: {
      ...environment,
      SWITCHBOARD_STATE_DIR: stateDir,
      ANTHROPIC_BASE_URL: mockUrl,
      ANTHROPIC_API_KEY: 'sk-ant-bench-gateway-upstream-0000',
      OPENAI_BASE_URL: `${mockUrl}/v1`,
      OPENAI_API_KEY: 'sk-bench-gateway-upstream-0000',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await waitForUrl(child);
  const port = new URL(url).port;
  const token = (JSON.parse(readFileSync(join(stateDir, `serve-${port}.token`), 'utf8')) as { token: string })
    .token;
  return { url, token, child };
}

function rssKb(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1]);
}

/** bench/trivial-proxy.ts in a process of its own, forwarding to the mock. */
async function startProxy(mockUrl: string): Promise<{ url: string; child: ChildProcess }> {
  const script = join(root, 'bench/trivial-proxy.ts');
  const child = spawn(process.execPath, ['--experimental-strip-types', '--no-warnings', script, mockUrl], {
    env: environment,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return { url: await waitForUrl(child), child };
}

// ---------------------------------------------------------------------------------------------- client

/** One keep-alive connection per side: requests go one after another. */
const agents = {
  direct: new Agent({ keepAlive: true, maxSockets: 1 }),
  gateway: new Agent({ keepAlive: true, maxSockets: 1 }),
  proxy: new Agent({ keepAlive: true, maxSockets: 1 }),
};
type Side = keyof typeof agents;
const SIDES: readonly Side[] = ['direct', 'gateway', 'proxy'];
const SIDE_NAMES: Record<Side, string> = {
  direct: 'direct to the mock',
  gateway: 'via the gateway',
  proxy: 'via trivial proxy',
};
/** Every order of the three sides, one per round in turn, so none always goes first or after another. */
const ORDERS: readonly Side[][] = [
  ['direct', 'gateway', 'proxy'],
  ['gateway', 'proxy', 'direct'],
  ['proxy', 'direct', 'gateway'],
  ['direct', 'proxy', 'gateway'],
  ['gateway', 'direct', 'proxy'],
  ['proxy', 'gateway', 'direct'],
];

interface Timing {
  /** Request start to the whole answer (the last byte). */
  totalMs: number;
  /** Request start to the chunk holding content_block_start (streams only). */
  firstContentMs?: number;
  /** Arrival times of the chunks holding a content delta, from the request's start (streams only). */
  deltaAt?: number[];
}

function send(
  side: Side,
  target: string,
  headers: IncomingHttpHeaders,
  body: string,
  agent: Agent = agents[side],
): Promise<Timing> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const outgoing = httpRequest(
      `${target}/v1/messages`,
      {
        method: 'POST',
        agent,
        headers: { ...headers, 'content-length': Buffer.byteLength(body) },
      },
      (response) => {
        if (response.statusCode !== 200) {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (text += chunk));
          response.on('end', () => reject(new Error(`${side}: ${response.statusCode} ${text}`)));
          return;
        }
        let firstContentMs: number | undefined;
        const deltaAt: number[] = [];
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          const at = performance.now() - started;
          if (firstContentMs === undefined && chunk.includes('content_block_start')) firstContentMs = at;
          // A chunk may hold several deltas (both paths can coalesce): each counts at this arrival.
          for (let from = chunk.indexOf(DELTA_NAME); from !== -1;) {
            deltaAt.push(at);
            from = chunk.indexOf(DELTA_NAME, from + 1);
          }
          text += chunk;
        });
        response.on('end', () => {
          const totalMs = performance.now() - started;
          if (!text.includes('"type":"message')) return reject(new Error(`${side}: not a message: ${text}`));
          resolve(firstContentMs === undefined ? { totalMs } : { totalMs, firstContentMs, deltaAt });
        });
      },
    );
    outgoing.on('error', (error: NodeJS.ErrnoException) => {
      // A kept-alive socket the server closed just as it was reused: send again on a new one (counted).
      if (outgoing.reusedSocket && error.code === 'ECONNRESET') {
        resent++;
        send(side, target, headers, body, agent).then(resolve, reject);
      } else reject(error);
    });
    outgoing.end(body);
  });
}

/** Requests sent again after a reused keep-alive socket was reset. */
let resent = 0;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
const ms = (value: number): string => value.toFixed(3);
const signed = (value: number): string => `${value >= 0 ? '+' : '−'}${Math.abs(value).toFixed(3)}`;
const gate = (ok: boolean): string => (ok ? 'PASS' : 'FAIL');

// ------------------------------------------------------------------------------------------------- run

const loads: string[] = [readFileSync('/proc/loadavg', 'utf8').trim()];
const roundLoads: number[] = [];
let serve: Serve | undefined;
let proxy: { url: string; child: ChildProcess } | undefined;
let mock: { url: string; close: () => void } | undefined;
const stopServe = async (): Promise<void> => {
  const child = serve?.child;
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5_000))]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
};
const interrupted = () => {
  serve?.child.kill('SIGKILL');
  proxy?.child.kill('SIGKILL');
  rmSync(base, { recursive: true, force: true });
  process.exit(130);
};
process.once('SIGINT', interrupted);
process.once('SIGTERM', interrupted);

try {
  mock = await startMock();
  serve = await startServe(mock.url);
  proxy = await startProxy(mock.url);
  const pid = serve.child.pid!;
  const targets: Record<Side, { url: string; headers: IncomingHttpHeaders }> = {
    direct: {
      url: mock.url,
      headers: {
        'content-type': 'application/json',
        'anthropic-version': '2023-06-01',
        'x-api-key': 'sk-ant-bench-gateway-upstream-0000',
      },
    },
    gateway: {
      url: serve.url,
      headers: {
        'content-type': 'application/json',
        'anthropic-version': '2023-06-01',
        'x-api-key': serve.token,
      },
    },
    proxy: {
      url: proxy.url,
      headers: {
        'content-type': 'application/json',
        'anthropic-version': '2023-06-01',
        'x-api-key': 'sk-ant-bench-gateway-upstream-0000',
      },
    },
  };
  const request = (stream: boolean) =>
    JSON.stringify({
      model,
      max_tokens: 64,
      messages: [{ role: 'user', content: 'ping' }],
      ...(stream ? { stream: true } : {}),
    });
  const plainBody = request(false);
  const streamBody = request(true);

  /** Rounds of `count` sequential requests per side, the sides' order rotating; round 0 is the warm-up. */
  async function interleaved(body: string, count: number): Promise<Record<Side, Timing[]>> {
    const results: Record<Side, Timing[]> = { direct: [], gateway: [], proxy: [] };
    for (let round = 0; round <= rounds; round++) {
      for (const side of ORDERS[round % ORDERS.length]!) {
        if (round > 0) roundLoads.push(loadavg()[0]!);
        for (let index = 0; index < count; index++) {
          const timing = await send(side, targets[side].url, targets[side].headers, body);
          if (round > 0) results[side].push(timing);
        }
      }
    }
    return results;
  }

  console.log(
    `switchboard serve gateway (native lane, POST /v1/messages) beside the mock upstream directly and a trivial node:http proxy in its own process (the floor of any separate-process proxy here); serve pid ${pid}${profile ? ', under --cpu-prof' : ''}`,
  );
  console.log(`load at start (/proc/loadavg): ${loads[0]}`);

  // 1. Non-streaming.
  const plain = await interleaved(plainBody, perRound);
  console.log(
    `\n1. non-streaming, ${rounds} rounds × ${perRound} sequential requests per side (a warm-up round discarded), one keep-alive connection each`,
  );
  console.log('side                 p50 ms    p90 ms    p99 ms    max ms');
  const stats = {} as Record<Side, { p50: number; p99: number }>;
  for (const side of SIDES) {
    const totals = plain[side].map((t) => t.totalMs);
    stats[side] = { p50: percentile(totals, 50), p99: percentile(totals, 99) };
    console.log(
      [
        SIDE_NAMES[side].padEnd(18),
        ...[50, 90, 99, 100].map((p) => ms(percentile(totals, p)).padStart(9)),
      ].join(' '),
    );
  }
  // What a side adds, per round too: a round's p50 is taken beside the direct side's in the same round.
  const perRoundAdded = (side: Side) =>
    Array.from({ length: rounds }, (_, round) => {
      const slice = (of: Side) =>
        plain[of].slice(round * perRound, (round + 1) * perRound).map((t) => t.totalMs);
      return percentile(slice(side), 50) - percentile(slice('direct'), 50);
    });
  const range = (values: number[]) => `${signed(Math.min(...values))} … ${signed(Math.max(...values))}`;
  const addedP50 = stats.gateway.p50 - stats.direct.p50;
  const addedP99 = stats.gateway.p99 - stats.direct.p99;
  const proxyP50 = stats.proxy.p50 - stats.direct.p50;
  const proxyP99 = stats.proxy.p99 - stats.direct.p99;
  console.log(
    `gateway added p50 ${signed(addedP50)} ms (×${(stats.gateway.p50 / stats.direct.p50).toFixed(2)}; per round ${range(perRoundAdded('gateway'))}) — gate ≤ 0.5 ms: ${gate(addedP50 <= 0.5)}`,
  );
  console.log(`gateway added p99 ${signed(addedP99)} ms — gate ≤ 2 ms: ${gate(addedP99 <= 2)}`);
  console.log(
    `trivial proxy added p50 ${signed(proxyP50)} ms (per round ${range(perRoundAdded('proxy'))}), p99 ${signed(proxyP99)} ms: this machine's floor for any proxy in its own process`,
  );
  console.log(
    `gateway beyond the trivial proxy: p50 ${signed(addedP50 - proxyP50)} ms, p99 ${signed(addedP99 - proxyP99)} ms`,
  );

  // 2. Streaming.
  const streamed = await interleaved(streamBody, streamRequests);
  console.log(
    `\n2. streaming, ${rounds} rounds × ${streamRequests} sequential requests per side; the mock sends message_start + content_block_start, then ${events} deltas ${gapMs} ms apart, then the tail`,
  );
  console.log('side                 TTFB p50   TTFB p99   gap p50   gap p99   gap max   last byte p50');
  const streamStats: Record<
    Side,
    { ttfb50: number; ttfb99: number; gap50: number; gap99: number; end50: number }
  > = {} as never;
  for (const side of SIDES) {
    const ttfb = streamed[side].map((t) => t.firstContentMs!);
    const gaps = streamed[side].flatMap((t) => {
      const at = [t.firstContentMs!, ...t.deltaAt!];
      return at.slice(1).map((value, index) => value - at[index]!);
    });
    const ends = streamed[side].map((t) => t.totalMs);
    streamStats[side] = {
      ttfb50: percentile(ttfb, 50),
      ttfb99: percentile(ttfb, 99),
      gap50: percentile(gaps, 50),
      gap99: percentile(gaps, 99),
      end50: percentile(ends, 50),
    };
    console.log(
      [
        SIDE_NAMES[side].padEnd(18),
        ms(percentile(ttfb, 50)).padStart(10),
        ms(percentile(ttfb, 99)).padStart(10),
        ms(percentile(gaps, 50)).padStart(9),
        ms(percentile(gaps, 99)).padStart(9),
        ms(percentile(gaps, 100)).padStart(9),
        ms(percentile(ends, 50)).padStart(15),
      ].join(' '),
    );
  }
  const addedTtfb = streamStats.gateway.ttfb50 - streamStats.direct.ttfb50;
  const gapDiff50 = streamStats.gateway.gap50 - streamStats.direct.gap50;
  const gapDiff99 = streamStats.gateway.gap99 - streamStats.direct.gap99;
  const proxyTtfb = streamStats.proxy.ttfb50 - streamStats.direct.ttfb50;
  console.log(
    `gateway added TTFB p50 ${signed(addedTtfb)} ms (p99 ${signed(streamStats.gateway.ttfb99 - streamStats.direct.ttfb99)}) — gate ≤ 1 ms: ${gate(addedTtfb <= 1)}`,
  );
  console.log(
    `trivial proxy added TTFB p50 ${signed(proxyTtfb)} ms (p99 ${signed(streamStats.proxy.ttfb99 - streamStats.direct.ttfb99)}); the gateway beyond it p50 ${signed(addedTtfb - proxyTtfb)} ms`,
  );
  // "Equal within noise": the median gaps within 0.25 ms of each other (a timer's jitter on this machine).
  console.log(
    `inter-chunk gaps: p50 ${signed(gapDiff50)} ms, p99 ${signed(gapDiff99)} ms beside the mock's own — equal within 0.25 ms at p50: ${gate(Math.abs(gapDiff50) <= 0.25)}`,
  );
  console.log(
    `gateway added time to the last byte p50 ${signed(streamStats.gateway.end50 - streamStats.direct.end50)} ms (the ledger row is written before message_stop goes out); the proxy ${signed(streamStats.proxy.end50 - streamStats.direct.end50)} ms`,
  );
  loads.push(readFileSync('/proc/loadavg', 'utf8').trim());

  // 2b. A client that hangs up mid-stream: how long until the upstream request is closed too.
  const hangUpBody = JSON.stringify({
    model,
    max_tokens: ENDLESS_MAX_TOKENS,
    messages: [{ role: 'user', content: 'ping' }],
    stream: true,
  });
  const hangUp = async (side: Side): Promise<number> => {
    const closedBefore = endlessClosedAt.length;
    const target = new URL('/v1/messages', targets[side].url);
    const hungUpAt = await new Promise<number>((resolve, reject) => {
      const outgoing = httpRequest(target, { method: 'POST', headers: targets[side].headers });
      outgoing.on('error', (error) => {
        if (!outgoing.destroyed) reject(error);
      });
      outgoing.on('response', (response) => {
        response.on('data', (chunk: Buffer) => {
          if (!chunk.toString('utf8').includes(DELTA_NAME)) return;
          const at = performance.now();
          outgoing.destroy();
          resolve(at);
        });
      });
      outgoing.end(hangUpBody);
    });
    while (endlessClosedAt.length === closedBefore) await new Promise((resolve) => setTimeout(resolve, 1));
    return endlessClosedAt[closedBefore]! - hungUpAt;
  };
  const hangUps: Record<'direct' | 'gateway', number[]> = { direct: [], gateway: [] };
  for (let index = 0; index < hangUpCount; index++) {
    for (const side of index % 2 === 0
      ? (['direct', 'gateway'] as const)
      : (['gateway', 'direct'] as const)) {
      hangUps[side].push(await hangUp(side));
    }
  }
  console.log(
    `\n2b. the client hangs up after the first content delta, ${hangUpCount} times per side, alternating: ms until the upstream connection closes (gate, issue 37: ≤ 100 ms)`,
  );
  console.log('side                 p50 ms    p99 ms    max ms');
  for (const side of ['direct', 'gateway'] as const) {
    console.log(
      [
        SIDE_NAMES[side].padEnd(18),
        ...[50, 99, 100].map((p) => ms(percentile(hangUps[side], p)).padStart(9)),
      ].join(' '),
    );
  }
  console.log(
    `upstream closed within 100 ms of every hang-up via the gateway: ${gate(Math.max(...hangUps.gateway) <= 100)}`,
  );

  // 3. RSS over a long run: 32 requests in flight from this process, each over a keep-alive
  // connection of its own, RSS read after every `sampleEvery` answers.
  if (longRun > 0) {
    const pool = {
      direct: new Agent({ keepAlive: true, maxSockets: connections }),
      gateway: new Agent({ keepAlive: true, maxSockets: connections }),
      proxy: new Agent({ keepAlive: true, maxSockets: connections }),
    };
    /** `count` requests with `connections` in flight; calls `each` after every answer. Requests per second. */
    const load = async (side: Side, count: number, each: (done: number) => void): Promise<number> => {
      let issued = 0;
      let done = 0;
      const started = performance.now();
      const worker = async () => {
        while (issued < count) {
          issued++;
          await send(side, targets[side].url, targets[side].headers, plainBody, pool[side]);
          each(++done);
        }
      };
      await Promise.all(Array.from({ length: connections }, worker));
      return count / ((performance.now() - started) / 1000);
    };
    const before = rssKb(pid);
    // The same load straight to the mock, and via the gateway, for a throughput ratio (after a warm-up).
    await load('gateway', sampleEvery, () => {});
    const directRps = await load('direct', sampleEvery, () => {});
    const samples: { requests: number; rssKb: number; rps: number }[] = [];
    let sliceStart = performance.now();
    const started = performance.now();
    await load('gateway', longRun, (done) => {
      if (done % sampleEvery !== 0 && done !== longRun) return;
      const now = performance.now();
      const size = done % sampleEvery === 0 ? sampleEvery : done % sampleEvery;
      samples.push({ requests: done, rssKb: rssKb(pid), rps: size / ((now - sliceStart) / 1000) });
      sliceStart = now;
      if (samples.length === Math.floor(longRun / sampleEvery / 2))
        loads.push(readFileSync('/proc/loadavg', 'utf8').trim());
    });
    const seconds = (performance.now() - started) / 1000;
    for (const agent of Object.values(pool)) agent.destroy();
    console.log(
      `\n3. RSS of serve over ${longRun.toLocaleString('en')} requests via the gateway (${connections} in flight from this process, keep-alive), ${seconds.toFixed(0)} s, after ${sampleEvery.toLocaleString('en')} of warm-up; RSS before the warm-up ${(before / 1024).toFixed(1)} MB`,
    );
    console.log('requests     RSS MB    req/s');
    for (const sample of samples) {
      console.log(
        [
          sample.requests.toLocaleString('en').padStart(9),
          (sample.rssKb / 1024).toFixed(1).padStart(9),
          sample.rps.toFixed(0).padStart(8),
        ].join(' '),
      );
    }
    const atFifth = samples[Math.max(0, Math.ceil(samples.length * 0.2) - 1)]!;
    const last = samples.at(-1)!;
    const rps = longRun / seconds;
    console.log(
      `throughput at ${connections} in flight: via the gateway ${rps.toFixed(0)} req/s beside the mock directly ${directRps.toFixed(0)} (×${(rps / directRps).toFixed(3)})`,
    );
    if (resent > 0) console.log(`(${resent} requests sent again after a reused keep-alive socket was reset)`);
    console.log(
      `RSS flat after warm-up (last ${(last.rssKb / 1024).toFixed(1)} MB ≤ 1.1 × ${(atFifth.rssKb / 1024).toFixed(1)} MB at ${atFifth.requests.toLocaleString('en')} requests, ×${(last.rssKb / atFifth.rssKb).toFixed(3)}): ${gate(last.rssKb <= 1.1 * atFifth.rssKb)}`,
    );
  }

  // 4. The profile, written when serve exits.
  if (profile) {
    await stopServe();
    const file = readdirSync(profileDir).find((name) => name.endsWith('.cpuprofile'));
    if (file === undefined) throw new Error(`serve wrote no .cpuprofile in ${profileDir}`);
    if (profileOut !== undefined) copyFileSync(join(profileDir, file), profileOut);
    printProfile(JSON.parse(readFileSync(join(profileDir, file), 'utf8')) as CpuProfile);
  }
  loads.push(readFileSync('/proc/loadavg', 'utf8').trim());
  console.log(
    `\nload (/proc/loadavg) at start / after the streams / mid long run / end: ${loads.join(' | ')}; 1-min load during the rounds ${Math.min(...roundLoads).toFixed(2)}–${Math.max(...roundLoads).toFixed(2)}`,
  );
} finally {
  await stopServe();
  proxy?.child.kill('SIGTERM');
  mock?.close();
  for (const agent of Object.values(agents)) agent.destroy();
  rmSync(base, { recursive: true, force: true });
}

interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  }[];
  samples: number[];
  timeDeltas: number[];
}

/** The 15 functions with the most self time (samples × their intervals), by name and place. */
function printProfile(cpu: CpuProfile): void {
  const nodes = new Map(cpu.nodes.map((node) => [node.id, node.callFrame]));
  const self = new Map<string, number>();
  let total = 0;
  let idle = 0;
  cpu.samples.forEach((id, index) => {
    const delta = (cpu.timeDeltas[index] ?? 0) / 1000;
    const frame = nodes.get(id)!;
    if (frame.functionName === '(idle)') {
      idle += delta;
      return;
    }
    total += delta;
    const place =
      frame.url === '' ? '' : ` ${frame.url.replace(`file://${root}/`, '')}:${frame.lineNumber + 1}`;
    const key = `${frame.functionName || '(anonymous)'}${place}`;
    self.set(key, (self.get(key) ?? 0) + delta);
  });
  console.log(
    `\n4. serve's CPU profile: ${(total / 1000).toFixed(1)} s busy, ${(idle / 1000).toFixed(1)} s idle; top 15 by self time`,
  );
  console.log('  self ms      %   function');
  for (const [key, value] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 15)) {
    console.log(`${value.toFixed(0).padStart(9)} ${((100 * value) / total).toFixed(1).padStart(6)}   ${key}`);
  }
}
