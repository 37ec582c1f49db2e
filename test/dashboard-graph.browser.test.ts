// The run graph drawn right, in a real browser: the built `switchboard ui` on a ledger these tests
// write, driven by headless Chromium through puppeteer-core. A gate's options and `on_cap` are arrows
// before the run reaches them; a loop-back is drawn apart from the forward route it returns along.
// Screenshots go to SWITCHBOARD_TEST_ARTIFACTS when set, else to the test's temporary folder.
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLedger } from '../src/store/ledger.js';
import { formatDuration } from '../src/ui/format.js';
import { runWorkflow } from '../src/workflows/index.js';
import { findChromium } from './helpers/chromium.js';
import { IN_CI } from './helpers/ci.js';
import { CONTRAST_FAILURES } from './helpers/contrast.js';
import { killServers, serve, type Served } from './helpers/serve-process.js';

const chromium = findChromium();
const BROWSER_TIMEOUT_MS = 30_000;

/** A loop capped into a gate whose options lead to two different steps. */
const ROUTES_WORKFLOW = `
workflow:
  name: ui-routes
  entry_point: draft
agents:
  - name: draft
    type: set
    value: 'v1'
    max_visits: 2
    on_cap: decide
    routes: [{ to: review }]
  - name: review
    type: set
    value: 'revise'
    routes:
      - { to: draft, when: "output == 'revise'" }
      - { to: decide }
  - name: decide
    type: human_gate
    prompt: 'Publish the draft?'
    options:
      - { label: Ship it, value: ship, route: publish }
      - { label: Rework, value: rework, route: fix }
  - name: publish
    type: set
    value: 'published'
    routes: [{ to: $end }]
  - name: fix
    type: set
    value: 'fixed'
    routes: [{ to: $end }]
`;

/** A finished run whose middle step was running for a while: what a replay scrubs through. */
const PAUSE_WORKFLOW = `
workflow:
  name: ui-pause
  entry_point: begin
agents:
  - name: begin
    type: set
    value: 'started'
    routes: [{ to: pause }]
  - name: pause
    type: wait
    duration: 1s
    reason: a step the replay shows running
    routes: [{ to: finish }]
  - name: finish
    type: set
    value: 'done'
    routes: [{ to: $end }]
`;

/** A gate whose prompt is Markdown with things in it that must never run or load. */
const MARKDOWN_WORKFLOW = `
workflow:
  name: ui-markdown
  entry_point: ask
agents:
  - name: ask
    type: human_gate
    prompt: |
      ## Review **the plan**

      - one <script>alert('script')</script>
      - two <img src=http://other.example/x onerror=alert('img')>
      - [run me](javascript:alert('link')) and [docs](https://example.com/docs)

      ![pixel](http://other.example/pixel.png)
    options:
      - { label: Approve, value: ok, route: $end }
`;

/** LLM steps written in Conductor's terms, not yet run: the run parks at its gate first. */
const SPEC_WORKFLOW = `
workflow:
  name: ui-specs
  entry_point: go
agents:
  - name: go
    type: human_gate
    prompt: 'Start?'
    options:
      - { label: Start, value: start, route: review }
  - name: review
    provider: copilot
    model: claude-haiku-4.5
    prompt: 'Review this.'
    routes: [{ to: $end }]
`;

/** A for_each over three items keyed by id, one of which fails. */
const ITEMS_WORKFLOW = `
workflow:
  name: ui-items
  entry_point: begin
  input:
    items:
      type: array
agents:
  - name: begin
    type: set
    value: 'go'
    routes: [{ to: each }]
for_each:
  - name: each
    type: for_each
    source: workflow.input.items
    as: item
    key_by: item.id
    max_concurrent: 1
    failure_mode: continue_on_error
    agent:
      name: check
      type: set
      value: "{{ item.id if item.id != 'beta' else item.broken.deeper }}"
    routes: [{ to: $end }]
`;

const suite = chromium === undefined && !IN_CI ? describe.skip : describe;

interface Box {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

suite('the run graph in headless Chromium', () => {
  const children = new Set<ChildProcess>();
  let directory: string;
  let stateDir: string;
  let artifacts: string;
  let ui: Served;
  let browser: Browser | undefined;
  let page: Page;
  let routesRun: string;
  let pauseRun: string;
  let markdownRun: string;
  let specRun: string;
  let itemsRun: string;
  const alerts: string[] = [];
  const otherRequests: string[] = [];

  beforeAll(async () => {
    if (chromium === undefined) throw new Error('CI needs the browser test, and no Chromium was found');
    directory = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-dashboard-graph-')));
    stateDir = join(directory, '.switchboard');
    artifacts = process.env.SWITCHBOARD_TEST_ARTIFACTS ?? join(directory, 'artifacts');
    mkdirSync(artifacts, { recursive: true });
    writeFileSync(join(directory, 'routes.yaml'), ROUTES_WORKFLOW);
    routesRun = (await runWorkflow({ file: join(directory, 'routes.yaml'), stateDir })).id;
    writeFileSync(join(directory, 'pause.yaml'), PAUSE_WORKFLOW);
    pauseRun = (await runWorkflow({ file: join(directory, 'pause.yaml'), stateDir })).id;
    writeFileSync(join(directory, 'markdown.yaml'), MARKDOWN_WORKFLOW);
    markdownRun = (await runWorkflow({ file: join(directory, 'markdown.yaml'), stateDir })).id;
    writeFileSync(join(directory, 'specs.yaml'), SPEC_WORKFLOW);
    specRun = (await runWorkflow({ file: join(directory, 'specs.yaml'), stateDir })).id;
    writeFileSync(join(directory, 'items.yaml'), ITEMS_WORKFLOW);
    itemsRun = (
      await runWorkflow({
        file: join(directory, 'items.yaml'),
        inputs: { items: [{ id: 'alpha' }, { id: 'beta' }, { id: 'gamma' }] },
        stateDir,
      })
    ).id;
    // A one-off call on a model with no price, newer than every run.
    const ledger = openLedger({ stateDir });
    await ledger.recordCallAttempt({
      id: 'attempt-unpriced',
      callId: 'call-unpriced',
      attempt: 1,
      createdAt: Date.now() + 60_000,
      provider: 'openai',
      spec: 'openai:local-model',
      modelRequested: 'local-model',
      success: true,
      durationMs: 40,
      usage: { inputTokens: 10, outputTokens: 2, cacheReadTokens: 0, cacheWriteTokens: 0 },
      costUsd: null,
      promptText: 'hello',
    });
    await ledger.close();
    ui = await serve(['--port', '0'], {
      cwd: directory,
      env: { ...process.env, SWITCHBOARD_SERVER_TOKEN: '' },
      children,
      command: 'ui',
    });
    browser = await puppeteer.launch({
      executablePath: chromium,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--no-default-browser-check'],
    });
    page = await browser.newPage();
    page.setDefaultTimeout(BROWSER_TIMEOUT_MS);
    await page.setViewport({ width: 1280, height: 900 });
    page.on('dialog', (dialog) => {
      alerts.push(dialog.message());
      void dialog.dismiss();
    });
    page.on('request', (request) => {
      if (!request.url().startsWith(ui.url) && !request.url().startsWith('data:'))
        otherRequests.push(request.url());
    });
    await page.goto(/dashboard at (\S+)/.exec(ui.stdout())?.[1] as string);
    await page.waitForSelector('.runs-table');
  });

  afterAll(async () => {
    await browser?.close();
    killServers(children);
    if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
  });

  async function shot(name: string): Promise<void> {
    await page.screenshot({ path: join(artifacts, `dashboard-graph-${name}.png`), fullPage: true });
  }

  /** The page's bounding box of what `selector` finds, undefined when nothing. */
  async function box(selector: string): Promise<Box | undefined> {
    return (await page.evaluate(
      `(() => { const e = document.querySelector(${JSON.stringify(selector)}); if (e === null) return undefined;
         const r = e.getBoundingClientRect(); return { left: r.left, top: r.top, right: r.right, bottom: r.bottom }; })()`,
    )) as Box | undefined;
  }

  const edge = (from: string, to: string) => `[aria-label="Edge from ${from} to ${to}"]`;
  const overlaps = (a: Box, b: Box) =>
    a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;

  it("draws a gate's options and on_cap as arrows before the run takes them", async () => {
    await page.goto(`${ui.url}/ui/runs/${routesRun}`);
    await page.waitForSelector('.gate-panel');
    await page.waitForSelector('[aria-label="decide: waiting"]');
    await shot('routes-at-gate');
    const routes: Array<[string, string]> = [
      ['decide', 'publish'],
      ['decide', 'fix'],
      ['draft', 'decide'],
      ['publish', '$end'],
    ];
    for (const [from, to] of routes) expect(await box(edge(from, to)), `${from} → ${to}`).toBeDefined();
    const labels = await page.evaluate(
      `[...document.querySelectorAll('.react-flow__edge-text')].map((e) => e.textContent)`,
    );
    expect(labels).toEqual(expect.arrayContaining(['Ship it', 'Rework', 'on cap']));
    // The run went there when draft reached its max_visits: that arrow is a route taken.
    expect(
      await page.evaluate(`document.querySelector('${edge('draft', 'decide')}').classList.contains('taken')`),
    ).toBe(true);
    // A gate goes where its options say: not also to the end.
    expect(await box(edge('decide', '$end'))).toBeUndefined();
  });

  it('draws a loop-back apart from the forward route, its label clear of both and of the steps', async () => {
    await page.goto(`${ui.url}/ui/runs/${routesRun}`);
    await page.waitForSelector(edge('review', 'draft'));
    const forward = (await box(`${edge('draft', 'review')} path.react-flow__edge-path`)) as Box;
    const back = (await box(`${edge('review', 'draft')} path.react-flow__edge-path`)) as Box;
    const label = (await box(`${edge('review', 'draft')} .react-flow__edge-text`)) as Box;
    expect(
      await page.evaluate(
        `document.querySelector('${edge('review', 'draft')} .react-flow__edge-text').textContent`,
      ),
    ).toBe("output == 'revise'");
    const wide = (b: Box) => ({ ...b, left: b.left - 6, right: b.right + 6 });
    expect(back.right, 'the loop reaches out beside the forward route').toBeGreaterThan(forward.right + 24);
    expect(overlaps(label, wide(forward)), 'label on the forward route').toBe(false);
    const nodes = (await page.evaluate(
      `[...document.querySelectorAll('.react-flow__node')].map((e) => { const r = e.getBoundingClientRect();
         return { left: r.left, top: r.top, right: r.right, bottom: r.bottom }; })`,
    )) as Box[];
    for (const node of nodes) expect(overlaps(label, node), 'label under a step').toBe(false);
    await shot('loop-back');
  });

  /** The text of what `selector` finds. */
  async function textOf(selector: string): Promise<string> {
    return (await page.evaluate(
      `document.querySelector(${JSON.stringify(selector)})?.textContent ?? ''`,
    )) as string;
  }

  it("replays to the end with every edge kept; mid-replay the status bar and a running step's time follow the cursor", async () => {
    await page.goto(`${ui.url}/ui/runs/${pauseRun}`);
    const slider = await page.waitForSelector('[aria-label="Replay position (events applied)"]');
    const edgesShown = () => page.evaluate(`document.querySelectorAll('.react-flow__edge').length`);
    await page.waitForSelector('[aria-label="Edge from finish to $end"]');
    const all = await edgesShown();
    expect(all).toBe(4);
    // The events up to the wait's start: the run is running there, its wait just begun.
    const events = (await page.evaluate(
      `fetch('/ui/api/runs/${pauseRun}/events').then((r) => r.json()).then((page) => page.events.map((e) => e.type + ' ' + (e.step ?? '')))`,
    )) as string[];
    const started = events.indexOf('step-start pause') + 1;
    expect(started).toBeGreaterThan(0);
    await slider?.focus();
    await page.keyboard.press('Home');
    for (let index = 0; index < started; index++) await page.keyboard.press('ArrowRight');
    await page.waitForFunction(`document.querySelector('.replay-at')?.textContent.startsWith('${started}/')`);
    await page.waitForSelector('[aria-label="pause: running"]');
    await shot('replay-mid');
    expect(await textOf('.status-bar .badge')).toBe('running');
    expect(await textOf('[data-id="pause"] [title="elapsed"]')).toBe('0ms');
    // Played to the end: the graph as it finished, its edges still drawn.
    const [play] = await page.$$('xpath/.//button[contains(., "Play")]');
    await page.select('[aria-label="Replay speed"]', '64');
    await play?.click();
    await page.waitForFunction(
      `document.querySelector('.replay-at')?.textContent.startsWith('${events.length}/${events.length}')`,
    );
    await page.waitForSelector('xpath/.//button[contains(., "Play")]');
    await page.waitForSelector('[aria-label="finish: completed"]');
    await shot('replay-end');
    expect(await edgesShown()).toBe(all);
    expect(await textOf('.status-bar .badge')).toBe('completed');
  });

  it('renders a gate prompt as Markdown, and nothing in it runs, loads or links anywhere but http(s)', async () => {
    await page.goto(`${ui.url}/ui/runs/${markdownRun}`);
    // Shown as text at once, as Markdown once its renderer (a chunk of its own) has loaded.
    await page.waitForSelector('.gate-prompt.rendered');
    await shot('markdown-gate');
    const prompt = (await page.evaluate(`(() => {
      const root = document.querySelector('.gate-prompt');
      return {
        heading: root.querySelector('h2')?.textContent,
        bold: root.querySelector('strong')?.textContent,
        items: root.querySelectorAll('li').length,
        scripts: root.querySelectorAll('script').length,
        images: root.querySelectorAll('img').length,
        links: [...root.querySelectorAll('a')].map((a) => [a.textContent, a.getAttribute('href'), a.rel, a.target]),
        text: root.textContent,
      };
    })()`)) as Record<string, unknown>;
    expect(prompt['heading']).toBe('Review the plan');
    expect(prompt['bold']).toBe('the plan');
    expect(prompt['items']).toBe(3);
    expect(prompt['scripts']).toBe(0);
    expect(prompt['images']).toBe(0);
    expect(prompt['links']).toEqual([
      // The escaped <img>'s address, as a link to follow, not a picture loaded.
      ['http://other.example/x', 'http://other.example/x', 'noopener noreferrer', '_blank'],
      ['docs', 'https://example.com/docs', 'noopener noreferrer', '_blank'],
      ['[image: pixel]', 'http://other.example/pixel.png', 'noopener noreferrer', '_blank'],
    ]);
    // The raw HTML is there as text, to read.
    expect(prompt['text']).toContain("<script>alert('script')</script>");
    expect(prompt['text']).toContain('[run me](javascript:');
    expect(alerts).toEqual([]);
    expect(otherRequests).toEqual([]);
  });

  it("shows a gate's time from reaching it to its answer, not the answer's few milliseconds", async () => {
    await page.goto(`${ui.url}/ui/runs/${markdownRun}`);
    const approve = await page.waitForSelector('xpath/.//button[normalize-space()="Approve"]');
    await approve?.click();
    await page.waitForFunction(`document.querySelector('.status-bar .badge')?.textContent === 'completed'`);
    const events = (await page.evaluate(
      `fetch('/ui/api/runs/${markdownRun}/events').then((r) => r.json()).then((page) => page.events)`,
    )) as Array<{ type: string; step?: string; at: string }>;
    const starts = events.filter((event) => event.type === 'step-start' && event.step === 'ask');
    const ends = events.filter((event) => event.type === 'step-end' && event.step === 'ask');
    // Reached in the process that started the run, taken in the one that answered it.
    expect(starts.length).toBe(2);
    expect(ends.length).toBeGreaterThan(0);
    const waited = Date.parse(ends.at(-1)?.at as string) - Date.parse(starts[0]?.at as string);
    await page.waitForSelector('[aria-label="ask: completed"]');
    expect(await textOf('[data-id="ask"] [title="elapsed"]')).toBe(formatDuration(waited));
  });

  it('lists runs waiting for a person first, and an unpriced call with no cost rather than $0', async () => {
    await page.goto(`${ui.url}/ui/`);
    await page.waitForSelector('.runs-table');
    await shot('runs');
    const rows = (await page.evaluate(
      `[...document.querySelectorAll('.runs-table tbody tr')].map((tr) => [...tr.querySelectorAll('td')].map((td) => td.innerText.trim()))`,
    )) as string[][];
    const waiting = rows.map((cells) => cells.some((cell) => cell.startsWith('waiting')));
    // ui-routes and ui-specs wait at a gate: they come first, the newer call after them.
    expect(waiting.filter(Boolean).length).toBe(2);
    expect(waiting.slice(0, 2)).toEqual([true, true]);
    const call = rows.find((cells) => cells.some((cell) => cell.includes('openai:local-model')));
    expect(call).toBeDefined();
    expect(call).toContain('—');
    expect(call).not.toContain('$0');
  });

  it("downloads a run's events as JSON lines from its Events tab", async () => {
    await page.goto(`${ui.url}/ui/runs/${pauseRun}`);
    await page.waitForSelector('#tab-events');
    await page.click('#tab-events');
    const link = await page.waitForSelector('xpath/.//a[normalize-space()="Download events (JSON lines)"]');
    const href = (await link?.evaluate((a) => a.getAttribute('href'))) as string;
    const got = (await page.evaluate(
      `Promise.all([fetch(${JSON.stringify(href)}).then(async (r) => ({ type: r.headers.get('content-type'), disposition: r.headers.get('content-disposition'), text: await r.text() })),
        fetch('/ui/api/runs/${pauseRun}/events').then((r) => r.json())])`,
    )) as [{ type: string; disposition: string; text: string }, { events: unknown[] }];
    const [file, api] = got;
    expect(file.type).toContain('application/x-ndjson');
    expect(file.disposition).toContain('attachment');
    const lines = file.text
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as unknown);
    expect(lines).toEqual(api.events);
    await shot('events-download');
  });

  it('shows a step that has not run with what it will run on, not the provider as written', async () => {
    await page.goto(`${ui.url}/ui/runs/${specRun}`);
    await page.waitForSelector('[aria-label="review: pending"]');
    expect(await textOf('[data-id="review"] .node-model')).toBe('claude:claude-haiku-4-5');
    await page.click('[aria-label="review: pending"]');
    await page.waitForSelector('.node-detail');
    expect(await textOf('.node-detail .muted')).toContain('claude:claude-haiku-4-5');
    await shot('resolved-spec');
  });

  it('shows the workflow file as the run started it', async () => {
    await page.goto(`${ui.url}/ui/runs/${routesRun}`);
    await page.waitForSelector('#tab-workflow');
    await page.click('#tab-workflow');
    await page.waitForSelector('.workflow-source');
    expect(await textOf('.workflow-source')).toBe(ROUTES_WORKFLOW);
    await shot('workflow-source');
  });

  it("lists a for_each group's items with their status, time, tokens, cost and error", async () => {
    await page.goto(`${ui.url}/ui/runs/${itemsRun}`);
    const group = await page.waitForSelector('[data-id="each"] [aria-label^="each: "]');
    await group?.click();
    await page.waitForSelector('.node-detail table');
    await shot('items');
    const rows = (await page.evaluate(
      `[...document.querySelectorAll('.node-detail table tbody tr')].map((tr) => [...tr.querySelectorAll('td')].map((td) => td.innerText.trim()))`,
    )) as string[][];
    expect(rows.map((cells) => cells.slice(0, 2))).toEqual([
      ['alpha', 'completed'],
      ['beta', 'failed'],
      ['gamma', 'completed'],
    ]);
    expect(rows[1]?.[5]).toContain('broken');
    for (const cells of rows) expect(cells[2]).toMatch(/\d(ms|s)$/);
  });

  it('keeps WCAG AA contrast on what these pages add, in light and dark', async () => {
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: scheme }]);
      await page.goto(`${ui.url}/ui/runs/${specRun}`);
      await page.waitForSelector('.gate-prompt.rendered');
      await page.waitForSelector('.react-flow__edge-text');
      expect(await page.evaluate(CONTRAST_FAILURES), `${scheme} gate and edge labels`).toEqual([]);
      await page.goto(`${ui.url}/ui/runs/${itemsRun}`);
      (await page.waitForSelector('[data-id="each"] [aria-label^="each: "]'))?.click();
      await page.waitForSelector('.node-detail table');
      expect(await page.evaluate(CONTRAST_FAILURES), `${scheme} items`).toEqual([]);
      await page.click('#tab-workflow');
      await page.waitForSelector('.workflow-source');
      expect(await page.evaluate(CONTRAST_FAILURES), `${scheme} workflow`).toEqual([]);
      await shot(`workflow-${scheme}`);
    }
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'light' }]);
  });

  it('after the server restarts, a reload shows a page saying how to sign in again; the API still answers JSON', async () => {
    const restarted = await serve(['--port', '0'], {
      cwd: directory,
      env: { ...process.env, SWITCHBOARD_SERVER_TOKEN: '' },
      children,
      command: 'ui',
    });
    // This browser's cookie is the first server's: the new one has another token (and port).
    const cookie = (await page.cookies()).find((candidate) => candidate.name.startsWith('switchboard_ui_'));
    expect(cookie).toBeDefined();
    await page.setCookie({
      ...cookie!,
      name: `switchboard_ui_${new URL(restarted.url).port}`,
      value: cookie!.value,
    });
    const answer = await page.goto(`${restarted.url}/ui/runs/${routesRun}`);
    expect(answer?.status()).toBe(401);
    expect(answer?.headers()['content-type']).toContain('text/html');
    const text = (await page.evaluate('document.body.innerText')) as string;
    expect(text).toContain('Sign in to the dashboard again');
    expect(text).toContain('switchboard ui');
    await shot('sign-in-again');
    const api = await fetch(`${restarted.url}/ui/api/runs`, { headers: { accept: 'application/json' } });
    expect(api.status).toBe(401);
    expect(((await api.json()) as { error: { code: string } }).error.code).toBe('AUTH');
  });
});
