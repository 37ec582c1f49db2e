import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { runWorkflow } from '../src/workflows/index.js';
import { findChromium } from './helpers/chromium.js';
import { IN_CI } from './helpers/ci.js';
import { runCli } from './helpers/run-cli.js';
import { killServers, serve, type Served } from './helpers/serve-process.js';

// The run page's guidance box in headless Chromium: the built `switchboard ui` records what the page
// sends, a second CLI process answers the gate, and the step after it reads the guidance in its model
// request to the simulator; the page shows it pending, then where it landed. Skipped without Chromium
// outside CI, as test/dashboard.browser.test.ts is.

const chromium = findChromium();
const suite = chromium === undefined && !IN_CI ? describe.skip : describe;

const FLOW = `workflow:
  name: ui-guided
  entry_point: approve
  runtime:
    provider: claude
    default_model: claude-haiku-4.5
agents:
  - name: approve
    type: human_gate
    prompt: Go ahead?
    options:
      - { label: Go, value: go, route: worker }
  - name: worker
    prompt: Build the widget.
    tools: []
    routes:
      - to: $end
`;

suite('the run page guidance box (headless Chromium)', () => {
  const children = new Set<ChildProcess>();
  let directory: string;
  let artifacts: string;
  let sim: Simulator;
  let ui: Served;
  let browser: Browser | undefined;
  let page: Page;
  let runId: string;

  beforeAll(async () => {
    if (chromium === undefined) throw new Error('CI needs the browser test, and no Chromium was found');
    sim = await startSimulator({ maxLifetimeMs: 120_000, scenario: { fallback: { text: 'built it' } } });
    directory = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-dashboard-guide-')));
    artifacts = process.env.SWITCHBOARD_TEST_ARTIFACTS ?? join(directory, 'artifacts');
    mkdirSync(artifacts, { recursive: true });
    writeFileSync(join(directory, 'flow.yaml'), FLOW);
    const stateDir = join(directory, '.switchboard');
    runId = (await runWorkflow({ file: join(directory, 'flow.yaml'), inputs: {}, stateDir })).id;
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
    page.setDefaultTimeout(30_000);
    await page.setViewport({ width: 1280, height: 800 });
    await page.goto(/dashboard at (\S+)/.exec(ui.stdout())?.[1] as string);
  });

  afterAll(async () => {
    await browser?.close();
    killServers(children);
    await sim?.close();
    if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
  });

  it('sends guidance to a parked run; the step after the gate reads it, and the page says where it landed', async () => {
    await page.goto(`${ui.url}/ui/runs/${runId}`);
    await page.waitForSelector('.guidance-box textarea');
    await page.type('.guidance-box textarea', 'paint it <b>blue</b>');
    await page.click('.guidance-box button[type="submit"]');
    await page.waitForFunction(
      `document.querySelector('.guidance-list')?.innerText.includes('dashboard: paint it <b>blue</b> · pending')`,
    );
    expect(await page.evaluate(`document.querySelector('.guidance-box textarea').value`)).toBe('');
    expect(await page.evaluate(`document.querySelectorAll('.guidance-list b').length`)).toBe(0);
    await page.screenshot({ path: join(artifacts, 'dashboard-guidance-pending.png'), fullPage: true });

    // Another process answers the gate; the step after it calls the model.
    const answered = await runCli(['workflow', 'gate', runId, '--choose', 'go'], {
      cwd: directory,
      env: { ...process.env, ANTHROPIC_API_KEY: 'sk-ant-guidance-page', ANTHROPIC_BASE_URL: sim.url },
    });
    expect(answered.status, answered.stderr).toBe(0);
    const request = sim.requests.find((entry) => entry.outcome === 'reply');
    expect(JSON.stringify(request?.body)).toMatch(
      /Guidance from dashboard at \d{4}-[^"]+Z: paint it <b>blue<\/b>/,
    );
    await page.waitForFunction(
      `document.querySelector('.guidance-list')?.innerText.includes('read by worker, turn 1')`,
    );
    await page.screenshot({ path: join(artifacts, 'dashboard-guidance-delivered.png'), fullPage: true });
    // The run completed: the box keeps the list and no longer offers to send.
    await page.waitForFunction(`document.querySelector('.status-bar .badge')?.textContent === 'completed'`);
    expect(await page.evaluate(`document.querySelector('.guidance-box textarea') === null`)).toBe(true);
  });
});
