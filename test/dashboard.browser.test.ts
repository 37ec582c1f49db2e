// The dashboard in a real browser: the built `switchboard ui` serving a ledger that this process and a
// second CLI process write, driven by headless Chromium through puppeteer-core. Skipped, saying how to
// get one, when no Chromium is installed; under CI it fails instead (`.ci/run` installs Chromium).
// Screenshots of every page go to SWITCHBOARD_TEST_ARTIFACTS when set, else to the test's temporary
// folder.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLedger } from '../src/store/ledger.js';
import { runWorkflow } from '../src/workflows/index.js';
import { findChromium } from './helpers/chromium.js';
import { GATE_WORKFLOW, recordAgentRun } from './helpers/dashboard-fixtures.js';
import { IN_CI } from './helpers/ci.js';
import { CONTRAST_FAILURES } from './helpers/contrast.js';
import { createRepository, git } from './helpers/git-repo.js';
import { killServers, serve, type Served } from './helpers/serve-process.js';

const cli = join(import.meta.dirname, '../dist/cli/main.js');
const chromium = findChromium();
const keptArtifacts = process.env.SWITCHBOARD_TEST_ARTIFACTS;
/** Any one browser step longer than this is a hung browser, not a slow one. */
const BROWSER_TIMEOUT_MS = 30_000;
const HOSTILE = '<img src=x onerror="alert(1)"><script>alert(2)</script>';
const planted = `sk-ant-PLANTED-${randomBytes(8).toString('hex')}`;

/** A run a second process advances while the page watches: its wait is the step seen running. */
const WAIT_WORKFLOW = `
workflow:
  name: ui-wait
  entry_point: begin
agents:
  - name: begin
    type: set
    value: 'started'
    routes: [{ to: pause }]
  - name: pause
    type: wait
    duration: 2s
    reason: the page should see this step running
    routes: [{ to: finish }]
  - name: finish
    type: set
    value: 'done'
    routes: [{ to: $end }]
`;

const suite = chromium === undefined && !IN_CI ? describe.skip : describe;
const suiteName =
  chromium === undefined && !IN_CI
    ? 'the dashboard in headless Chromium (skipped: no Chromium found; install it with `apt-get install chromium` or set SWITCHBOARD_CHROMIUM)'
    : `the dashboard in headless Chromium (${chromium})`;

/** The page's answer to a script; a string because this project's types leave the DOM out. */
async function inPage<T>(page: Page, expression: string): Promise<T> {
  return (await page.evaluate(expression)) as T;
}

suite(suiteName, () => {
  const children = new Set<ChildProcess>();
  let directory: string;
  let stateDir: string;
  let artifacts: string;
  let ui: Served;
  let tokenUrl: string;
  /** The UI token, as the cookie holds it: it must never be in a URL the browser visited. */
  let uiToken = '';
  let browser: Browser | undefined;
  let page: Page;
  const runIds: string[] = [];
  let agentRunId: string;
  const consoleErrors: string[] = [];
  const pageErrors: string[] = [];
  const otherRequests: string[] = [];
  const alerts: string[] = [];

  beforeAll(async () => {
    if (chromium === undefined) {
      throw new Error(
        'CI needs the browser test, and no Chromium was found: install it (apt-get install chromium; .ci/run does) or set SWITCHBOARD_CHROMIUM',
      );
    }
    directory = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-dashboard-')));
    stateDir = join(directory, '.switchboard');
    artifacts = keptArtifacts ?? join(directory, 'artifacts');
    mkdirSync(artifacts, { recursive: true });
    const file = join(directory, 'gate.yaml');
    writeFileSync(file, GATE_WORKFLOW);
    writeFileSync(join(directory, 'wait.yaml'), WAIT_WORKFLOW);
    // Two runs parked at their gate, each showing a page's worth of hostile text; one with a key only
    // the server knows.
    for (const text of [HOSTILE, `key ${planted}`]) {
      runIds.push((await runWorkflow({ file, inputs: { text }, stateDir })).id);
    }
    await recordSpendAndRouting(stateDir);
    agentRunId = await recordFixedSave(directory, stateDir);
    ui = await serve(['--port', '0'], {
      cwd: directory,
      env: { ...process.env, ANTHROPIC_API_KEY: planted, SWITCHBOARD_SERVER_TOKEN: '' },
      children,
      command: 'ui',
    });
    tokenUrl = /dashboard at (\S+)/.exec(ui.stdout())?.[1] as string;
    browser = await puppeteer.launch({
      executablePath: chromium,
      headless: true,
      // A profile of our own: the last test reads the History file Chromium keeps in it.
      userDataDir: join(directory, 'profile'),
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--no-default-browser-check'],
    });
    page = await browser.newPage();
    page.setDefaultTimeout(BROWSER_TIMEOUT_MS);
    await page.setViewport({ width: 1280, height: 800 });
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => pageErrors.push(String(error)));
    page.on('request', (request) => {
      // data: URLs are the browser's own (the date fields' icons).
      const url = request.url();
      if (!url.startsWith(ui.url) && !url.startsWith('data:')) otherRequests.push(url);
    });
    page.on('dialog', (dialog) => {
      // Cancel asks to confirm; anything else is a script that should never have run.
      if (dialog.type() === 'confirm') return void dialog.accept();
      alerts.push(dialog.message());
      return void dialog.dismiss();
    });
  });

  afterAll(async () => {
    await browser?.close();
    killServers(children);
    if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
  });

  async function shot(name: string): Promise<void> {
    await page.screenshot({ path: join(artifacts, `dashboard-${name}.png`), fullPage: true });
  }

  async function statusShown(): Promise<string> {
    return inPage<string>(page, `document.querySelector('.status-bar .badge')?.textContent ?? ''`);
  }

  it('opens from the printed URL, keeps the token out of every URL, and lists the runs', async () => {
    expect(tokenUrl).toMatch(/\/ui\/\?code=[\w-]+$/);
    const opened = await page.goto(tokenUrl);
    expect(page.url()).toBe(`${ui.url}/ui/`);
    const visited = [
      ...(opened?.request().redirectChain() ?? []).map((request) => request.url()),
      page.url(),
    ];
    expect(visited).toEqual([tokenUrl, `${ui.url}/ui/`]);
    uiToken = (await page.cookies()).find((cookie) => cookie.name.startsWith('switchboard_ui_'))?.value ?? '';
    expect(uiToken).toMatch(/^[\w-]{32}$/);
    await page.waitForSelector('.runs-table');
    const rows = await inPage<string>(page, `document.querySelector('.runs-table tbody').innerText`);
    expect(rows).toContain('ui-gate');
    expect(rows).toContain('gate: decide');
    expect(rows).toContain('agent');
    await shot('runs');
    // The printed link works once: another browser profile that opens it gets the page saying what to do.
    const other = await browser?.createBrowserContext();
    const stranger = await other?.newPage();
    const refused = await stranger?.goto(tokenUrl);
    expect(refused?.status()).toBe(410);
    expect(await stranger?.evaluate('document.body.innerText')).toContain('This sign-in link has been used');
    await other?.close();
  });

  it('answers a gate by clicking its option; the run completes; hostile text stays text', async () => {
    await page.goto(`${ui.url}/ui/runs/${runIds[0]}`);
    await page.waitForSelector('.gate-panel');
    expect(await inPage<string>(page, `document.querySelector('.gate-prompt').textContent`)).toBe(
      `Ship ${HOSTILE}?`,
    );
    await shot('run-at-gate');
    await inPage(page, `window.sameDocument = true`);
    const [ship] = await page.$$('xpath/.//button[normalize-space()="Ship it"]');
    await ship?.click();
    await page.waitForFunction(`document.querySelector('.status-bar .badge')?.textContent === 'completed'`);
    expect(await inPage<boolean>(page, 'window.sameDocument === true')).toBe(true);
    // The set step's output, opened from the graph, shows the payload's characters.
    await page.click('[aria-label="note: completed"]');
    await page.waitForSelector('.node-detail');
    expect(await inPage<string>(page, `document.querySelector('.node-detail').textContent`)).toContain(
      HOSTILE,
    );
    expect(
      await inPage<number>(page, `document.querySelectorAll('img[src="x"], script:not([src])').length`),
    ).toBe(0);
    await shot('run-completed');
    // A second answer, from anywhere, is refused: the first answer won.
    const second = await inPage<{ status: number; code: string }>(
      page,
      `fetch('/ui/api/runs/${runIds[0]}/gate', { method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ choice: 'drop', text: 'late' }) }).then(async (r) => ({ status: r.status, code: (await r.json()).error.code }))`,
    );
    expect(second).toEqual({ status: 409, code: 'GATE_TAKEN' });
  });

  it('cancels a parked run, and never shows a key the server knows', async () => {
    await page.goto(`${ui.url}/ui/runs/${runIds[1]}`);
    await page.waitForSelector('.gate-panel');
    expect(await page.content()).not.toContain(planted);
    const [cancel] = await page.$$('xpath/.//button[normalize-space()="Cancel run"]');
    await cancel?.click();
    await page.waitForFunction(`document.querySelector('.status-bar .badge')?.textContent === 'cancelled'`);
    await page.click('#tab-events');
    await page.waitForSelector('.tab-panel');
    const text = await page.content();
    expect(text).not.toContain(planted);
    expect(text).toContain('[redacted]');
  });

  it('shows a run that a second process starts, live, and its running step turning completed', async () => {
    await page.goto(`${ui.url}/ui/?kind=workflow`);
    await page.waitForSelector('.runs-table');
    await inPage(page, `window.sameDocument = true`);
    const second = spawn(process.execPath, [cli, 'workflow', 'run', 'wait.yaml'], {
      cwd: directory,
      env: { ...process.env, SWITCHBOARD_SERVER_TOKEN: '' },
      stdio: 'ignore',
    });
    children.add(second);
    const link = await page.waitForSelector('xpath/.//a[normalize-space()="ui-wait"]');
    expect(await inPage<boolean>(page, 'window.sameDocument === true')).toBe(true);
    await link?.click();
    await page.waitForSelector('[aria-label="pause: running"]');
    await shot('run-live');
    await page.waitForSelector('[aria-label="pause: completed"]');
    await page.waitForFunction(`document.querySelector('.status-bar .badge')?.textContent === 'completed'`);
    expect(await statusShown()).toBe('completed');
  });

  it('replays a finished run from its events', async () => {
    await page.goto(`${ui.url}/ui/runs/${runIds[0]}`);
    const slider = await page.waitForSelector('[aria-label="Replay position (events applied)"]');
    await slider?.focus();
    await page.keyboard.press('Home');
    await page.waitForSelector('[aria-label="note: pending"]');
    await page.keyboard.press('End');
    await page.waitForSelector('[aria-label="note: completed"]');
  });

  it('shows an agent run with its activity and diff, a call, the costs and the routing pages', async () => {
    await page.goto(`${ui.url}/ui/agents/${agentRunId}`);
    await page.waitForSelector('.diff');
    // Only the https pull-request URL is a link; javascript: and data: ones are text, whatever the CSP.
    await page.waitForSelector('xpath/.//*[normalize-space()="PR #3"]');
    const links = await inPage<Array<{ text: string; href: string | null }>>(
      page,
      `[...document.querySelectorAll('a')].filter((a) => /^(PR )?#\\d$/.test(a.textContent.trim()) || !/^(https?:|\\/|#)/.test(a.getAttribute('href') ?? '/'))
        .map((a) => ({ text: a.textContent.trim(), href: a.getAttribute('href') }))`,
    );
    // The header's pull request (the last one recorded) and the activity's.
    const pr4 = 'https://github.com/acme/app/pull/4';
    expect(links).toEqual([
      { text: '#4', href: pr4 },
      { text: 'PR #4', href: pr4 },
    ]);
    const body = await inPage<string>(page, 'document.body.innerText');
    for (const number of [1, 2, 3]) expect(body).toContain(`PR #${number}`);
    const [notLink] = await page.$$('xpath/.//*[normalize-space()="PR #1"]');
    await notLink?.click();
    expect(page.url()).toBe(`${ui.url}/ui/agents/${agentRunId}`);
    const agent = await inPage<string>(page, 'document.body.innerText');
    expect(agent).toContain('Fix the save button');
    expect(agent).toContain('+save works <b>now</b>');
    await shot('agent');
    await page.goto(`${ui.url}/ui/costs`);
    await page.waitForSelector('canvas');
    const costs = await inPage<string>(page, 'document.body.innerText');
    expect(costs).toContain('anthropic');
    expect(costs).toContain('team=<b>web</b>');
    await shot('costs');
    await page.goto(`${ui.url}/ui/routing`);
    await page.waitForSelector('canvas');
    const routing = await inPage<string>(page, 'document.body.innerText');
    expect(routing).toContain('fix-bug');
    await shot('routing');
    await page.goto(`${ui.url}/ui/?kind=call`);
    const call = await page.waitForSelector('.runs-table a');
    await call?.click();
    await page.waitForSelector('xpath/.//*[contains(text(), "claude-haiku")]');
    await shot('call');
  });

  it('works from the keyboard: the nav, then a graph node opened with Enter', async () => {
    await page.goto(`${ui.url}/ui/runs/${runIds[0]}`);
    await page.waitForSelector('.react-flow__node');
    const focused: string[] = [];
    for (let index = 0; index < 40 && !focused.includes('node'); index++) {
      await page.keyboard.press('Tab');
      focused.push(
        await inPage<string>(
          page,
          `(() => { const e = document.activeElement; if (e.closest('.react-flow__node')) return 'node';
             return e.tagName + ':' + (e.textContent ?? '').trim().slice(0, 20); })()`,
        ),
      );
    }
    expect(focused).toContain('A:Costs');
    expect(focused.at(-1)).toBe('node');
    // The focused element shows where it is.
    expect(await inPage<string>(page, `getComputedStyle(document.activeElement).outlineStyle`)).not.toBe(
      'none',
    );
    await page.keyboard.press('Enter');
    await page.waitForSelector('.node-detail');
  });

  it('meets WCAG AA contrast in light and dark, and fits a phone', async () => {
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: scheme }]);
      for (const path of ['/ui/', `/ui/runs/${runIds[0]}`, '/ui/costs']) {
        await page.goto(`${ui.url}${path}`);
        await page.waitForSelector('.status-bar, .runs-table, canvas');
        expect(await inPage<string[]>(page, CONTRAST_FAILURES), `${scheme} ${path}`).toEqual([]);
      }
      await shot(`run-${scheme}`);
    }
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'light' }]);
    await page.setViewport({ width: 375, height: 740 });
    for (const path of ['/ui/', `/ui/runs/${runIds[0]}`]) {
      await page.goto(`${ui.url}${path}`);
      await page.waitForSelector('.status-bar, .runs-table');
      expect(await inPage<number>(page, 'document.documentElement.scrollWidth'), path).toBeLessThanOrEqual(
        375,
      );
      await shot(`phone-${path === '/ui/' ? 'runs' : 'run'}`);
    }
    await page.setViewport({ width: 1280, height: 800 });
  });

  it('ran no script of the data, broke no CSP rule and asked nothing of another origin', () => {
    expect(alerts).toEqual([]);
    expect(pageErrors).toEqual([]);
    expect(consoleErrors.filter((text) => !/401|409/.test(text))).toEqual([]);
    expect(otherRequests).toEqual([]);
  });

  it("left the token nowhere in the browser's History, only the dead sign-in link", async () => {
    await browser?.close();
    browser = undefined;
    const history = new Database(join(directory, 'profile', 'Default', 'History'), { readonly: true });
    const urls = history.prepare('SELECT url FROM urls').all() as Array<{ url: string }>;
    history.close();
    expect(urls.map((row) => row.url)).toContain(tokenUrl);
    expect(urls.length).toBeGreaterThan(5);
    expect(urls.filter((row) => row.url.includes(uiToken))).toEqual([]);
  });
});

/** Call attempts and route decisions as `call()` and the router record them, one tag hostile. */
async function recordSpendAndRouting(stateDir: string): Promise<void> {
  const ledger = openLedger({ stateDir });
  const now = Date.now();
  for (const [index, provider] of ['anthropic', 'anthropic', 'gemini'].entries()) {
    await ledger.recordCallAttempt({
      id: `attempt-${index}`,
      callId: `call-${index}`,
      attempt: 1,
      createdAt: now - index * 86_400_000,
      provider,
      spec: provider === 'anthropic' ? 'anthropic:claude-haiku-4-5' : 'gemini:2.5-flash',
      modelRequested: provider === 'anthropic' ? 'claude-haiku-4-5' : 'gemini-2.5-flash',
      success: true,
      durationMs: 420,
      usage: { inputTokens: 1200, outputTokens: 300, cacheReadTokens: 0, cacheWriteTokens: 0 },
      costUsd: 0.0042 * (index + 1),
      promptText: 'hello',
      tags: { team: '<b>web</b>' },
    });
  }
  for (const [index, skill] of ['fix-bug', 'none', 'write-docs'].entries()) {
    await ledger.recordRouteDecision(
      {
        id: `decision-${index}`,
        skill,
        confidence: [0.92, 0.2, 0.41][index] as number,
        reasoning: 'test',
        method: index === 0 ? 'rules' : 'local',
        candidates: [{ skill: skill === 'none' ? 'fix-bug' : skill, score: 0.5 }],
        costUsd: 0,
        durationMs: 1,
        timings: { local: 1 },
        warnings: [],
      },
      { requestText: `request ${index}`, mode: 'local' },
    );
  }
  await ledger.recordFeedback('decision-1', 'fix-bug');
  await ledger.close();
}

/** An agent run on a real repository whose commit the page diffs. */
async function recordFixedSave(directory: string, stateDir: string): Promise<string> {
  const repo = createRepository(join(directory, 'repo'));
  const base = git(repo, 'rev-parse', 'HEAD');
  writeFileSync(join(repo, 'README.md'), 'hello\nsave works <b>now</b>\n');
  git(repo, 'commit', '-qam', 'Fix the save button');
  return recordAgentRun(stateDir, {
    repo,
    base,
    commit: git(repo, 'rev-parse', 'HEAD'),
    title: 'Fix the save button',
    description: 'The app crashes when I click save.',
    events: [
      [
        'agent',
        'tool-call',
        'Read README.md',
        { id: 'toolu_1', tool: 'Read', input: '{"file_path":"README.md"}' },
      ],
      // Pull-request links as a ledger another machine wrote could hold them: only the https one may
      // become a link.
      ['merge', 'pull-request', 'Opened a link', { number: 1, url: 'javascript:alert(document.domain)' }],
      ['merge', 'pull-request', 'Opened a link', { number: 2, url: ' JavaScript:alert(2)' }],
      [
        'merge',
        'pull-request',
        'Opened a link',
        { number: 3, url: 'data:text/html,<script>alert(3)</script>' },
      ],
      ['merge', 'pull-request', 'Opened a link', { number: 4, url: 'https://github.com/acme/app/pull/4' }],
    ],
  });
}
