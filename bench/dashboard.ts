// The dashboard's figures, side by side in one run, against the built `switchboard ui` (after
// `npm run build`) and headless Chromium (puppeteer-core, `SWITCHBOARD_CHROMIUM` or `chromium` on PATH):
//   1. the web app's size: each built JavaScript file gzipped, what every page loads and the chart chunk;
//   2. first render of a run's page: a 500-step run beside a 10-step run (each a chain of `set` steps,
//      so 1,000+ events), navigation start to the graph's first node and the status bar on screen
//      (the Performance API's clock, read by a MutationObserver in the page), rounds interleaved;
//   3. the runs list's API on a ledger of 10,000 workflow runs beside one of 100: the first page, a
//      status filter, the 20th page by cursor, beside GET /healthz of the same server (p50 of 40 each);
//   4. event to page: a run parked at its gate is open in the page; a second process (`switchboard
//      workflow gate`, the CLI) answers it and runs it to its end; from the `run-end` event's time in
//      the ledger to the page showing `completed`, on SQLite and on PostgreSQL (the tests' server).
// Everything lives in a temporary folder, removed at the end.
//   node --experimental-strip-types --no-warnings bench/dashboard.ts [rounds]
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Page } from 'puppeteer-core';
import './source-hooks.ts';

const rounds = Math.max(3, Number(process.argv[2] ?? 5));
const root = join(import.meta.dirname, '..');
const cli = join(root, 'dist/cli/main.js');
const work = mkdtempSync(join(tmpdir(), 'switchboard-bench-dashboard-'));
const children = new Set<ChildProcess>();
const { runWorkflow, readWorkflowEvents } = await import('../src/workflows/index.js');
const { openLedger } = await import('../src/store/ledger.js');
const { percentile } = await import('../src/core/percentile.js');
const { findChromium } = await import('../test/helpers/chromium.ts');
const puppeteer = (await import('puppeteer-core')).default;

const median = (values: number[]) => percentile(values, 50);
const load = () => `load ${loadavg()[0]?.toFixed(2)}`;

function bundle(): void {
  const assets = join(root, 'dist/ui/assets');
  const html = readFileSync(join(root, 'dist/ui/index.html'), 'utf8');
  let total = 0;
  let entry = 0;
  console.log('1. the web app (dist/ui), gzipped');
  for (const name of readdirSync(assets).filter((file) => file.endsWith('.js') || file.endsWith('.css'))) {
    const size = gzipSync(readFileSync(join(assets, name))).length;
    const loadedByEveryPage = html.includes(name);
    if (name.endsWith('.js')) total += size;
    if (name.endsWith('.js') && loadedByEveryPage) entry += size;
    console.log(
      `   ${name.padEnd(36)} ${(size / 1024).toFixed(1).padStart(7)} KB${loadedByEveryPage ? '  (every page)' : ''}`,
    );
  }
  console.log(
    `   JavaScript: ${(total / 1024).toFixed(1)} KB in all, ${(entry / 1024).toFixed(1)} KB on every page (budget 300 KB)`,
  );
}

function chainWorkflow(steps: number): string {
  const lines = [
    `workflow:\n  name: chain-${steps}\n  entry_point: s0\n  limits:\n    max_iterations: ${Math.min(steps + 10, 500)}\nagents:`,
  ];
  for (let index = 0; index < steps; index++) {
    const next = index === steps - 1 ? '$end' : `s${index + 1}`;
    lines.push(
      `  - name: s${index}\n    type: set\n    value: 'step ${index}'\n    routes: [{ to: ${next} }]`,
    );
  }
  return `${lines.join('\n')}\n`;
}

const GATE = `workflow:
  name: bench-gate
  entry_point: note
agents:
  - name: note
    type: set
    value: 'hello'
    routes: [{ to: decide }]
  - name: decide
    type: human_gate
    prompt: 'Ship?'
    options:
      - { label: Ship it, value: ship, route: $end }
`;

interface Ui {
  url: string;
  tokenUrl: string;
  child: ChildProcess;
}

function startUi(cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<Ui> {
  const child = spawn(process.execPath, [cli, 'ui', '--port', '0'], {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let out = '';
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const tokenUrl = /dashboard at (\S+)/.exec(out)?.[1];
      const url = /listening on (\S+)/.exec(out)?.[1];
      if (tokenUrl !== undefined && url !== undefined) resolve({ url, tokenUrl, child });
    });
    child.on('exit', (code) => reject(new Error(`switchboard ui exited ${code}`)));
  });
}

/** In every page: when the graph's first node and the status bar are on screen, and when it says completed. */
const WATCH = `(() => {
  const seen = () => {
    if (window.__rendered === undefined && document.querySelector('.react-flow__node') && document.querySelector('.status-bar'))
      window.__rendered = performance.now();
    if (window.__completedAt === undefined && document.querySelector('.status-bar .badge')?.textContent === 'completed')
      window.__completedAt = Date.now();
  };
  new MutationObserver(seen).observe(document, { childList: true, subtree: true, characterData: true });
})()`;

async function firstRender(page: Page, url: string): Promise<number> {
  await page.goto(url);
  await page.waitForFunction('window.__rendered !== undefined', { timeout: 30_000 });
  return (await page.evaluate('window.__rendered')) as number;
}

async function renderTimes(page: Page, ui: Ui, runs: Record<string, string>): Promise<void> {
  console.log(
    `\n2. first render of a run's page (navigation start to graph and status bar), ${rounds} rounds interleaved, ${load()}`,
  );
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(runs).map((name) => [name, []]));
  for (const name of Object.keys(runs)) await firstRender(page, `${ui.url}/ui/runs/${runs[name]}`); // warm the cache
  for (let round = 0; round < rounds; round++) {
    for (const [name, id] of Object.entries(runs))
      times[name]?.push(await firstRender(page, `${ui.url}/ui/runs/${id}`));
  }
  const [small, large] = Object.keys(runs).map((name) => median(times[name] ?? []));
  for (const [name, values] of Object.entries(times)) {
    console.log(
      `   ${name.padEnd(18)} median ${median(values).toFixed(0).padStart(5)} ms   max ${Math.max(...values)
        .toFixed(0)
        .padStart(5)} ms`,
    );
  }
  console.log(
    `   500 steps ÷ 10 steps: ×${((large ?? 0) / (small ?? 1)).toFixed(2)}   (target: 500 steps ≤ 1,000 ms)`,
  );
}

async function timed(url: string, cookie: string, times = 40): Promise<number> {
  const values: number[] = [];
  for (let index = 0; index < times; index++) {
    const start = performance.now();
    const answer = await fetch(url, { headers: { cookie } });
    await answer.text();
    values.push(performance.now() - start);
  }
  return median(values);
}

async function cookieOf(ui: Ui): Promise<string> {
  const answer = await fetch(ui.tokenUrl, { redirect: 'manual' });
  return (answer.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
}

function seedRuns(stateDir: string, count: number): void {
  openLedger({ stateDir }).close();
  const python = `
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1])
now = int(time.time() * 1000)
statuses = ['completed', 'failed', 'completed', 'cancelled']
db.executemany("INSERT INTO workflow_runs (id, workflow, file, file_hash, inputs, status, cost_usd, created_at, updated_at, ended_at) VALUES (?, ?, '/x.yaml', 'h', '{}', ?, 0.01, ?, ?, ?)",
  [('wf-seed-%06d' % i, 'flow-%d' % (i % 7), statuses[i % 4], now - i * 1000, now - i * 1000 + 500, now - i * 1000 + 500) for i in range(int(sys.argv[2]))])
db.commit()
`;
  const result = spawnSync('python3', ['-c', python, join(stateDir, 'ledger.db'), String(count)]);
  if (result.status !== 0) throw new Error(`seeding failed: ${result.stderr.toString()}`);
}

async function listTimes(): Promise<void> {
  console.log(`\n3. GET /ui/api/runs (p50 of 40 requests each), ${load()}`);
  const rows: string[] = [];
  for (const count of [100, 10_000]) {
    const cwd = join(work, `list-${count}`);
    const stateDir = join(cwd, '.switchboard');
    mkdir(cwd);
    seedRuns(stateDir, count);
    const ui = await startUi(cwd);
    const cookie = await cookieOf(ui);
    let cursor = '';
    for (let page = 1; page < 20; page++) {
      const list = (await (
        await fetch(`${ui.url}/ui/api/runs?kind=workflow${cursor}`, { headers: { cookie } })
      ).json()) as { next?: string };
      if (list.next === undefined) break;
      cursor = `&cursor=${encodeURIComponent(list.next)}`;
    }
    const health = await timed(`${ui.url}/healthz`, cookie);
    const first = await timed(`${ui.url}/ui/api/runs`, cookie);
    const filtered = await timed(`${ui.url}/ui/api/runs?status=failed&name=flow-3`, cookie);
    const deep = await timed(`${ui.url}/ui/api/runs?kind=workflow${cursor}`, cookie);
    rows.push(
      `   ${String(count).padStart(6)} runs: first page ${first.toFixed(2)} ms, status+name filter ${filtered.toFixed(2)} ms, ` +
        `20th page ${deep.toFixed(2)} ms; /healthz ${health.toFixed(2)} ms (first page ×${(first / health).toFixed(1)})`,
    );
    ui.child.kill('SIGKILL');
  }
  for (const row of rows) console.log(row);
}

function mkdir(path: string): void {
  spawnSync('mkdir', ['-p', path]);
}

async function latency(page: Page, label: string, env: NodeJS.ProcessEnv): Promise<void> {
  const cwd = join(work, `latency-${label}`);
  mkdir(cwd);
  const file = join(cwd, 'gate.yaml');
  writeFileSync(file, GATE);
  const ui = await startUi(cwd, env);
  await page.goto(ui.tokenUrl);
  const values: number[] = [];
  const previous = process.env.SWITCHBOARD_DATABASE_URL;
  if (env.SWITCHBOARD_DATABASE_URL !== undefined)
    process.env.SWITCHBOARD_DATABASE_URL = env.SWITCHBOARD_DATABASE_URL;
  try {
    for (let round = 0; round < rounds * 2; round++) {
      const run = await runWorkflow({ file, stateDir: join(cwd, '.switchboard') });
      await page.goto(`${ui.url}/ui/runs/${run.id}`);
      await page.waitForSelector('.gate-panel');
      const answer = spawnSync(process.execPath, [cli, 'workflow', 'gate', run.id, '--choose', 'ship'], {
        cwd,
        env,
      });
      if (answer.status !== 0) throw new Error(`workflow gate failed: ${answer.stderr.toString()}`);
      await page.waitForFunction('window.__completedAt !== undefined', { timeout: 30_000 });
      const shownAt = (await page.evaluate('window.__completedAt')) as number;
      const events = await readWorkflowEvents(run.id, { stateDir: join(cwd, '.switchboard') });
      const end = events.find((event) => event.type === 'run-end');
      if (end !== undefined) values.push(shownAt - Date.parse(end.at));
    }
  } finally {
    if (previous === undefined) delete process.env.SWITCHBOARD_DATABASE_URL;
    else process.env.SWITCHBOARD_DATABASE_URL = previous;
    ui.child.kill('SIGKILL');
  }
  console.log(
    `   ${label.padEnd(10)} run-end in the ledger → page shows completed: p50 ${median(values).toFixed(0)} ms, ` +
      `max ${Math.max(...values).toFixed(0)} ms over ${values.length} runs (targets: SQLite ≤ 1,000 ms, PostgreSQL ≤ 2,000 ms)`,
  );
}

try {
  bundle();
  const chromium = findChromium();
  if (chromium === undefined) {
    console.log('skipped 2 and 4: no Chromium (apt-get install chromium, or set SWITCHBOARD_CHROMIUM)');
  }
  const renders = join(work, 'renders');
  mkdir(renders);
  const runs: Record<string, string> = {};
  for (const steps of [10, 500]) {
    const file = join(renders, `chain-${steps}.yaml`);
    writeFileSync(file, chainWorkflow(steps));
    runs[`${steps} steps`] = (await runWorkflow({ file, stateDir: join(renders, '.switchboard') })).id;
  }
  const browser =
    chromium === undefined
      ? undefined
      : await puppeteer.launch({ executablePath: chromium, args: ['--no-sandbox', '--disable-gpu'] });
  const page = await browser?.newPage();
  await page?.setViewport({ width: 1280, height: 800 });
  await page?.evaluateOnNewDocument(WATCH);
  if (page !== undefined) {
    const ui = await startUi(renders);
    await page.goto(ui.tokenUrl);
    await renderTimes(page, ui, runs);
    ui.child.kill('SIGKILL');
  }
  await listTimes();
  if (page !== undefined) {
    console.log(`\n4. event to page, ${load()}`);
    await latency(page, 'SQLite', { ...process.env, SWITCHBOARD_DATABASE_URL: '' });
    const startPostgres = (await import('../test/postgres-server.ts')).default;
    const stopPostgres = await startPostgres();
    const { createTestDatabase, POSTGRES_SKIP } = await import('../test/helpers/postgres.ts');
    if (POSTGRES_SKIP !== undefined) console.log(`   PostgreSQL skipped: ${POSTGRES_SKIP}`);
    else {
      const database = await createTestDatabase();
      await latency(page, 'PostgreSQL', { ...process.env, SWITCHBOARD_DATABASE_URL: database.url });
      await database.drop();
    }
    await stopPostgres?.();
  }
  await browser?.close();
} finally {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
}
