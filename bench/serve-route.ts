import { randomBytes } from 'node:crypto';
// `serve`'s POST /route under load, side by side in one run with a trivial Node HTTP server that
// answers the same JSON: requests per second and latency percentiles from wrk (Debian's `wrk`, one
// thread, 32 connections, a new text in every request so that no decision is a cache hit). Rows:
//   - serve as a user starts it (local tiers, decision cache and ledger on, a SQLite file);
//   - serve --no-cache --no-ledger (the routing and HTTP alone);
//   - the trivial server (node:http, the body read, a fixed JSON answer).
// Rounds rotate the order so all rows see the same machine. It runs the BUILT dist/:
//   npm run build && node --experimental-strip-types --no-warnings bench/serve-route.ts [seconds] [rounds] [--profile]
// `--compare <checkout>`: one more row, serve as a user starts it from another checkout's built dist/
// (e.g. the commit before a change), in the same rounds, so before and after share one run.
// `--profile`: the first serve row (cache and ledger on) runs under `--cpu-prof`; after it stops, the
// functions with the most inclusive and self time are printed.
// Everything binds 127.0.0.1 and lives in a temporary folder removed at the end.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { assertFreshBuild } from './fresh-build.ts';
import { median, newTextScript, requireWrk, runWrk, waitForUrl, type WrkResult } from './wrk.ts';

const root = join(import.meta.dirname, '..');
const cli = join(root, 'dist/cli/main.js');
const skills = join(root, 'examples/skills');
assertFreshBuild(cli, 'this bench runs the built CLI');
requireWrk();

const args = process.argv.slice(2);
const profile = args.includes('--profile');
const compareIndex = args.indexOf('--compare');
const compareRoot = compareIndex >= 0 ? args[compareIndex + 1] : undefined;
if (compareIndex >= 0 && compareRoot === undefined) throw new Error('--compare needs a checkout folder');
const compareCli = compareRoot === undefined ? undefined : join(compareRoot, 'dist/cli/main.js');
const [secondsArgument, roundsArgument] = args.filter(
  (arg, index) => arg !== '--profile' && index !== compareIndex && index !== compareIndex + 1,
);
const seconds = Number(secondsArgument ?? 5);
const rounds = Number(roundsArgument ?? 3);
const connections = 32;
const base = mkdtempSync(join(tmpdir(), 'switchboard-bench-serve-route-'));
const profileDir = join(base, 'cpu-profile');
const environment: NodeJS.ProcessEnv = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => !name.startsWith('SWITCHBOARD_')),
);

interface Server {
  name: string;
  url: string;
  child: ChildProcess;
  stateDir?: string;
}

/** serve's token, fixed for the run: every route but /healthz wants it (loopback included). */
const serverToken = randomBytes(24).toString('hex');
const authorization = `Bearer ${serverToken}`;

async function startServe(
  name: string,
  flags: string[],
  node: string[] = [],
  entry: string = cli,
): Promise<Server> {
  const stateDir = join(base, name.replace(/\W+/g, '-'));
  mkdirSync(stateDir);
  const child = spawn(
    process.execPath,
    [...node, entry, 'serve', '--port', '0', '--pool', '0', '--skills', skills, ...flags],
    {
      cwd: base,
      env: { ...environment, SWITCHBOARD_STATE_DIR: stateDir, SWITCHBOARD_SERVER_TOKEN: serverToken },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return { name, child, stateDir, url: await waitForUrl(child) };
}

async function startTrivial(answer: string): Promise<Server> {
  const script = `
    const http = require('node:http');
    const answer = ${JSON.stringify(answer)};
    const server = http.createServer((request, response) => {
      const chunks = [];
      request.on('data', (chunk) => chunks.push(chunk));
      request.on('end', () => {
        JSON.parse(Buffer.concat(chunks).toString('utf8'));
        response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(answer) });
        response.end(answer);
      });
    });
    server.listen(0, '127.0.0.1', () => console.log('listening on http://127.0.0.1:' + server.address().port));
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  return {
    name: 'trivial node:http server, same JSON',
    child,
    url: await waitForUrl(child),
  };
}

// A new text per request: the thread's counter goes into the body, so no two requests share a text.
const wrkScript = newTextScript(
  join(base, 'new-text.lua'),
  '/route',
  authorization,
  `'{"text":"' .. text .. '"}'`,
);
type Result = WrkResult;

const servers: Server[] = [];
try {
  servers.push(
    await startServe(
      'serve (cache and ledger on)',
      [],
      profile ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [],
    ),
  );
  servers.push(await startServe('serve --no-cache --no-ledger', ['--no-cache', '--no-ledger']));
  const sample = await fetch(`${servers[1]!.url}/route`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization },
    body: JSON.stringify({ text: 'review the pull request' }),
  });
  servers.push(await startTrivial(await sample.text()));
  if (compareCli !== undefined) {
    servers.push(await startServe(`serve from ${compareRoot} (cache, ledger)`, [], [], compareCli));
  }

  // Warm up each (JIT, SQLite pages) for a second.
  for (const server of servers) {
    execFileSync('wrk', ['-t1', `-c${connections}`, '-d1s', '-s', wrkScript, server.url], {
      stdio: 'ignore',
    });
  }
  const results = new Map<string, Result[]>(servers.map((server) => [server.name, []]));
  const loads: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const order = servers.map((_, index) => servers[(index + round) % servers.length]!);
    for (const server of order) {
      loads.push(loadavg()[0]!);
      results.get(server.name)!.push(runWrk(server.url, wrkScript, connections, seconds));
    }
  }

  const reference = median(results.get(servers[2]!.name)!.map((r) => r.rps));
  console.log(
    `POST /route, wrk 1 thread, ${connections} connections, ${seconds} s × ${rounds} rounds, a new text each request; load ${Math.min(...loads).toFixed(2)}–${Math.max(...loads).toFixed(2)}`,
  );
  console.log(
    'row                                   req/s (median)   p50 ms   p99 ms   ratio to trivial   errors',
  );
  for (const server of servers) {
    const rows = results.get(server.name)!;
    const rps = median(rows.map((r) => r.rps));
    console.log(
      [
        server.name.padEnd(36),
        rps.toFixed(0).padStart(15),
        median(rows.map((r) => r.p50))
          .toFixed(2)
          .padStart(8),
        median(rows.map((r) => r.p99))
          .toFixed(2)
          .padStart(8),
        `×${(rps / reference).toFixed(3)}`.padStart(18),
        String(rows.reduce((sum, r) => sum + r.errors, 0)).padStart(8),
      ].join(' '),
    );
  }
  const full = results.get(servers[0]!.name)!;
  const ratio = median(full.map((r) => r.rps)) / reference;
  const p99 = median(full.map((r) => r.p99));
  console.log(
    `verdict: serve (cache and ledger on) ${ratio >= 0.25 ? 'meets' : 'misses'} ≥ ×0.25 of the trivial server (×${ratio.toFixed(3)}); p99 ${p99.toFixed(1)} ms ${p99 <= 10 ? 'meets' : 'misses'} ≤ 10 ms`,
  );
  // What the ledger kept: every request's decision, after serve's orderly stop.
  const first = servers[0]!;
  first.child.kill('SIGTERM');
  await new Promise((resolve) => first.child.once('exit', resolve));
  const ledgerFile = join(first.stateDir!, 'ledger.db');
  const count = Number(
    execFileSync(process.execPath, [cli, 'stats', '--json'], {
      env: { ...environment, SWITCHBOARD_STATE_DIR: first.stateDir },
      encoding: 'utf8',
    }).match(/"routeDecisions":(\d+)/)?.[1],
  );
  const answered = full.reduce((sum, r) => sum + r.rps * seconds, 0);
  console.log(
    `ledger after the run: ${count} route decisions recorded (about ${answered.toFixed(0)} answered in the timed rounds, plus warm-up), ${(statSync(ledgerFile).size / 1024 / 1024).toFixed(1)} MB`,
  );
  if (profile) {
    const file = readdirSync(profileDir).find((name) => name.endsWith('.cpuprofile'));
    if (file === undefined) throw new Error(`serve wrote no .cpuprofile in ${profileDir}`);
    printProfile(JSON.parse(readFileSync(join(profileDir, file), 'utf8')) as CpuProfile);
  }
} finally {
  for (const server of servers) server.child.kill('SIGTERM');
  await new Promise((resolve) => setTimeout(resolve, 300));
  rmSync(base, { recursive: true, force: true });
}

interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  }[];
  samples: number[];
  timeDeltas: number[];
}

/** The 25 functions with the most inclusive time (a function counted once per sample), and their self time. */
function printProfile(cpu: CpuProfile): void {
  const parent = new Map<number, number>();
  for (const node of cpu.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const nodes = new Map(cpu.nodes.map((node) => [node.id, node.callFrame]));
  const name = (id: number): string => {
    const frame = nodes.get(id)!;
    const place =
      frame.url === '' ? '' : ` ${frame.url.replace(`file://${root}/`, '')}:${frame.lineNumber + 1}`;
    return `${frame.functionName || '(anonymous)'}${place}`;
  };
  const inclusive = new Map<string, number>();
  const self = new Map<string, number>();
  let total = 0;
  let idle = 0;
  cpu.samples.forEach((id, index) => {
    const delta = (cpu.timeDeltas[index] ?? 0) / 1000;
    if (nodes.get(id)!.functionName === '(idle)') {
      idle += delta;
      return;
    }
    total += delta;
    self.set(name(id), (self.get(name(id)) ?? 0) + delta);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) seen.add(name(at));
    for (const key of seen) inclusive.set(key, (inclusive.get(key) ?? 0) + delta);
  });
  console.log(
    `\nserve's CPU profile (cache and ledger on): ${(total / 1000).toFixed(1)} s busy, ${(idle / 1000).toFixed(1)} s idle; top 25 by inclusive time`,
  );
  console.log('  incl ms      %   self ms   function');
  for (const [key, value] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, 25)) {
    console.log(
      `${value.toFixed(0).padStart(9)} ${((100 * value) / total).toFixed(1).padStart(6)} ${(self.get(key) ?? 0).toFixed(0).padStart(9)}   ${key}`,
    );
  }
}
