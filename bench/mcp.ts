import { randomBytes } from 'node:crypto';
// The MCP `route` round trip, side by side in one run: the MCP SDK client to `switchboard mcp` over
// stdio, the same client to `serve`'s /mcp over Streamable HTTP, and `POST /route` on the same serve
// as the reference (what a non-MCP caller pays). Each round does the three in a rotated order, each
// with a text of its own (no cache hit), so all see the same machine state. It runs the BUILT dist/:
//   npm run build && node --experimental-strip-types --no-warnings bench/mcp.ts [rounds]
// Both servers route with the local tiers (examples/skills) and record to a ledger of their own, in one
// temporary folder removed at the end; serve binds 127.0.0.1 only.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { assertFreshBuild } from './fresh-build.ts';

const root = join(import.meta.dirname, '..');
const cli = join(root, 'dist/cli/main.js');
const skills = join(root, 'examples/skills');
assertFreshBuild(cli, 'this bench runs the built CLI');

const rounds = Number(process.argv[2] ?? 300);
const warmUp = 30;
const base = mkdtempSync(join(tmpdir(), 'switchboard-bench-mcp-'));
const environment: NodeJS.ProcessEnv = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => !name.startsWith('SWITCHBOARD_')),
);

function stateFor(name: string): NodeJS.ProcessEnv {
  const stateDir = join(base, name);
  mkdirSync(stateDir);
  return { ...environment, SWITCHBOARD_STATE_DIR: stateDir, SWITCHBOARD_SERVER_TOKEN: serverToken };
}

/** serve's token, fixed for the run: every route but /healthz wants it (loopback included). */
const serverToken = randomBytes(24).toString('hex');
const authorization = `Bearer ${serverToken}`;

/** Starts `switchboard serve` and resolves with its URL once it prints it. */
function startServe(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [cli, 'serve', '--port', '0', '--pool', '0', '--skills', skills], {
    cwd: base,
    env: stateFor('serve'),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
      if (url !== undefined) resolve({ url, child });
    });
    child.once('exit', (code) => reject(new Error(`serve exited ${code}`)));
  });
}

const serve = await startServe();
const stdio = new Client({ name: 'bench-stdio', version: '1' });
await stdio.connect(
  new StdioClientTransport({
    command: process.execPath,
    args: [cli, 'mcp', '--skills', skills],
    cwd: base,
    env: stateFor('mcp') as Record<string, string>,
  }),
);
const http = new Client({ name: 'bench-http', version: '1' });
await http.connect(
  new StreamableHTTPClientTransport(new URL('/mcp', serve.url), {
    requestInit: { headers: { authorization } },
  }),
);

type Row = { name: string; route: (text: string) => Promise<string> };

async function viaMcp(client: Client, text: string): Promise<string> {
  const result = await client.callTool({ name: 'route', arguments: { text } });
  if (result.isError === true) throw new Error(JSON.stringify(result.content));
  return (result.structuredContent as { skill: string }).skill;
}

const rows: Row[] = [
  { name: 'MCP route over stdio (switchboard mcp)', route: (text) => viaMcp(stdio, text) },
  { name: "MCP route over HTTP (serve's /mcp)", route: (text) => viaMcp(http, text) },
  {
    name: 'POST /route on the same serve (reference)',
    async route(text) {
      const response = await fetch(`${serve.url}/route`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization },
        body: JSON.stringify({ text }),
      });
      return ((await response.json()) as { skill: string }).skill;
    },
  },
];

const samples = rows.map(() => [] as number[]);
const skillsSeen = rows.map(() => new Map<string, number>());
const loadAtStart = loadavg()[0] ?? 0;
for (let round = 0; round < warmUp + rounds; round++) {
  for (let offset = 0; offset < rows.length; offset++) {
    const index = (round + offset) % rows.length;
    const row = rows[index] as Row;
    // A text of its own: a cache hit would measure the cache, not the round trip.
    const text = `the app crashes whenever I save file number ${round}-${index}`;
    const started = performance.now();
    const skill = await row.route(text);
    const elapsed = performance.now() - started;
    if (round < warmUp) continue;
    (samples[index] as number[]).push(elapsed);
    const seen = skillsSeen[index] as Map<string, number>;
    seen.set(skill, (seen.get(skill) ?? 0) + 1);
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number;
}

const reference = [...(samples[2] as number[])].sort((a, b) => a - b);
console.log(
  `MCP route round trip, ${rounds} rounds after ${warmUp} warm-up (rows interleaved); load ${loadAtStart.toFixed(1)} → ${(loadavg()[0] ?? 0).toFixed(1)}`,
);
for (const [index, row] of rows.entries()) {
  const sorted = [...(samples[index] as number[])].sort((a, b) => a - b);
  const p50 = percentile(sorted, 50);
  const p95 = percentile(sorted, 95);
  const ratio = `×${(p50 / percentile(reference, 50)).toFixed(2)} p50, ×${(p95 / percentile(reference, 95)).toFixed(2)} p95 of POST /route`;
  const decided = [...(skillsSeen[index] as Map<string, number>)]
    .map(([skill, n]) => `${skill} ${n}`)
    .join(', ');
  console.log(
    `${row.name.padEnd(44)} p50 ${p50.toFixed(2).padStart(6)} ms  p95 ${p95.toFixed(2).padStart(6)} ms  ${ratio}  (${decided})`,
  );
}

await stdio.close();
await http.close();
serve.child.kill('SIGTERM');
await new Promise((resolve) => serve.child.once('exit', resolve));
rmSync(base, { recursive: true, force: true });
