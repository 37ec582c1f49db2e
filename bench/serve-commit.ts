import { randomBytes } from 'node:crypto';
// What the ledger's group commit costs `serve`: POST /route and POST /call under load with this tree
// (an answer waits for its row's commit; concurrent requests share a transaction) beside the base
// commit's write-behind queue (answers at once, rows written every 20 ms), in one run. The base is built
// in a temporary `git worktree` (its node_modules a symlink to this tree's), then removed. Requests per
// second and p50/p99 from Debian's `wrk` (one thread, 32 connections, a new text in every request so
// that no decision is a cache hit); /call goes to `switchboard sim` (zero delay, its own process). Rounds
// alternate the two servers so both see the same machine. It runs the BUILT dist/ of both:
//   npm run build && node --experimental-strip-types --no-warnings bench/serve-commit.ts [seconds] [rounds] [--base REV]
// Everything binds 127.0.0.1 and lives in a temporary folder removed at the end.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { assertFreshBuild } from './fresh-build.ts';
import { median, newTextScript, requireWrk, runWrk as wrk, waitForUrl, type WrkResult } from './wrk.ts';

const root = join(import.meta.dirname, '..');
const skills = join(root, 'examples/skills');
assertFreshBuild(join(root, 'dist/cli/main.js'), 'this bench runs the built CLI');
requireWrk();

const args = process.argv.slice(2);
const baseFlag = args.indexOf('--base');
const baseRevision = baseFlag === -1 ? 'f9d95e6' : (args.splice(baseFlag, 2)[1] ?? 'f9d95e6');
const seconds = Number(args[0] ?? 5);
const rounds = Number(args[1] ?? 3);
const connections = 32;
const base = mkdtempSync(join(tmpdir(), 'switchboard-bench-serve-commit-'));
const baseTree = join(base, 'base');
const environment: NodeJS.ProcessEnv = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => !name.startsWith('SWITCHBOARD_')),
);
const serverToken = randomBytes(24).toString('hex');
const authorization = `Bearer ${serverToken}`;

interface Server {
  name: string;
  url: string;
  child: ChildProcess;
}

/** The base commit, built in a worktree of its own (`npm run build` with this tree's node_modules). */
function buildBase(): void {
  console.log(`building ${baseRevision} in ${baseTree} …`);
  execFileSync('git', ['-C', root, 'worktree', 'add', '--detach', baseTree, baseRevision], {
    stdio: 'ignore',
  });
  symlinkSync(join(root, 'node_modules'), join(baseTree, 'node_modules'));
  execFileSync('npm', ['run', '-s', 'build'], { cwd: baseTree, stdio: 'inherit' });
}

async function startSim(): Promise<Server> {
  const scenario = join(base, 'scenario.json');
  writeFileSync(
    scenario,
    JSON.stringify({ rules: [{ match: {}, reply: { text: 'pong', usage: { input: 20, output: 2 } } }] }),
  );
  const child = spawn(
    process.execPath,
    [join(root, 'dist/cli/main.js'), 'sim', '--port', '0', '--scenario', scenario],
    { env: environment, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return { name: 'sim', child, url: await waitForUrl(child) };
}

async function startServe(name: string, tree: string, simUrl: string): Promise<Server> {
  const stateDir = join(base, name.replace(/\W+/g, '-'));
  mkdirSync(stateDir);
  const child = spawn(
    process.execPath,
    [join(tree, 'dist/cli/main.js'), 'serve', '--port', '0', '--pool', '0', '--skills', skills],
    {
      cwd: base,
      env: {
        ...environment,
        ANTHROPIC_API_KEY: 'sk-ant-bench-serve-commit',
        ANTHROPIC_BASE_URL: simUrl,
        SWITCHBOARD_STATE_DIR: stateDir,
        SWITCHBOARD_SERVER_TOKEN: serverToken,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return { name, child, url: await waitForUrl(child) };
}

/** A wrk script posting a new body each request to `path`: `body` is Lua building the JSON from `text`. */
function wrkScript(name: string, path: string, body: string): string {
  return newTextScript(join(base, `${name}.lua`), path, authorization, body);
}

const endpoints = [
  { name: '/route', script: wrkScript('route', '/route', `'{"text":"' .. text .. '"}'`) },
  {
    name: '/call',
    script: wrkScript('call', '/call', `'{"spec":"anthropic:claude-haiku-4-5","prompt":"' .. text .. '"}'`),
  },
];

type Result = WrkResult;

function runWrk(url: string, script: string, duration = seconds): Result {
  return wrk(url, script, connections, duration);
}

const children: ChildProcess[] = [];
try {
  buildBase();
  const sim = await startSim();
  children.push(sim.child);
  const servers = [
    await startServe('group commit (this tree)', root, sim.url),
    await startServe(`write-behind (${baseRevision})`, baseTree, sim.url),
  ];
  children.push(...servers.map((server) => server.child));
  // Warm up each (JIT, SQLite pages, the provider's import) for a second per endpoint.
  for (const server of servers) for (const { script } of endpoints) runWrk(server.url, script, 1);
  const results = new Map<string, Result[]>();
  const loads: number[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const { name: endpoint, script } of endpoints) {
      const order = round % 2 === 0 ? servers : [...servers].reverse();
      for (const server of order) {
        loads.push(loadavg()[0]!);
        const key = `${endpoint} ${server.name}`;
        results.set(key, [...(results.get(key) ?? []), runWrk(server.url, script)]);
      }
    }
  }

  console.log(
    `wrk 1 thread, ${connections} connections, ${seconds} s × ${rounds} rounds, a new text each request; load ${Math.min(...loads).toFixed(2)}–${Math.max(...loads).toFixed(2)}`,
  );
  console.log('endpoint  server                         req/s (median)   p50 ms   p99 ms   errors');
  const verdicts: string[] = [];
  for (const { name: endpoint } of endpoints) {
    const [ours, theirs] = servers.map((server) => results.get(`${endpoint} ${server.name}`)!);
    for (const [server, rows] of [
      [servers[0]!, ours!],
      [servers[1]!, theirs!],
    ] as const) {
      console.log(
        [
          endpoint.padEnd(9),
          server.name.padEnd(30),
          median(rows.map((r) => r.rps))
            .toFixed(0)
            .padStart(15),
          median(rows.map((r) => r.p50))
            .toFixed(2)
            .padStart(8),
          median(rows.map((r) => r.p99))
            .toFixed(2)
            .padStart(8),
          String(rows.reduce((sum, r) => sum + r.errors, 0)).padStart(8),
        ].join(' '),
      );
    }
    const ratio = median(ours!.map((r) => r.rps)) / median(theirs!.map((r) => r.rps));
    verdicts.push(`${endpoint} ×${ratio.toFixed(3)} (${ratio >= 0.8 ? 'meets' : 'misses'} ≥ ×0.8)`);
  }
  console.log(`verdict: group commit beside write-behind, req/s: ${verdicts.join('; ')}`);
} finally {
  for (const child of children) child.kill('SIGTERM');
  await new Promise((resolve) => setTimeout(resolve, 300));
  try {
    execFileSync('git', ['-C', root, 'worktree', 'remove', '--force', baseTree], { stdio: 'ignore' });
  } catch {
    // Never added (the build failed before): nothing to remove.
  }
  rmSync(base, { recursive: true, force: true });
}
