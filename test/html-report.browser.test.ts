// The HTML report opened in a real browser: headless Chromium driven by puppeteer-core (which downloads
// no browser of its own). Skipped, saying how to get one, when no Chromium is installed; under CI it
// fails instead (`.ci/run` installs Chromium).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareModes, type ModeComparison } from '../src/route/compare.js';
import { loadDataset } from '../src/route/datasets.js';
import { renderHtmlReport } from '../src/observe/html-report.js';
import { findChromium } from './helpers/chromium.js';
import { IN_CI } from './helpers/ci.js';

const root = join(import.meta.dirname, '..');
/**
 * Where the page and its screenshot go: `SWITCHBOARD_TEST_ARTIFACTS` to keep them for a look, else the
 * test's own temporary folder (nothing is written into the repository).
 */
const keptArtifacts = process.env.SWITCHBOARD_TEST_ARTIFACTS;
const chromium = findChromium();
/** Any one browser step longer than this is a hung browser, not a slow one. */
const BROWSER_TIMEOUT_MS = 30_000;
const HOSTILE = '<img src=x onerror="alert(1)"><script>alert(2)</script> my app keeps crashing & "freezing"';

/** The page's answer to a script; a string because this project's types leave the DOM out. */
async function inPage<T>(page: Page, expression: string): Promise<T> {
  return (await page.evaluate(expression)) as T;
}

const suite = chromium === undefined && !IN_CI ? describe.skip : describe;
const suiteName =
  chromium === undefined && !IN_CI
    ? 'HTML report in headless Chromium (skipped: no Chromium found; install it with `apt-get install chromium` or set SWITCHBOARD_CHROMIUM)'
    : `HTML report in headless Chromium (${chromium})`;

suite(suiteName, () => {
  let stateDir: string;
  let artifacts: string;
  let comparison: ModeComparison;
  let browser: Browser | undefined;
  let page: Page;
  let url: string;
  const consoleErrors: string[] = [];
  const pageErrors: string[] = [];
  const failedRequests: string[] = [];
  const otherRequests: string[] = [];
  const dialogs: string[] = [];

  beforeAll(async () => {
    if (chromium === undefined) {
      throw new Error(
        'CI needs the browser test, and no Chromium was found: install it (apt-get install chromium; .ci/run does) or set SWITCHBOARD_CHROMIUM',
      );
    }
    stateDir = mkdtempSync(join(tmpdir(), 'switchboard-html-browser-'));
    const dataset = join(stateDir, 'dev.jsonl');
    const rows = readFileSync(join(root, 'test/fixtures/dev.jsonl'), 'utf8').trimEnd();
    writeFileSync(dataset, `${rows}\n${JSON.stringify({ text: HOSTILE, expected: 'fix-bug' })}\n`);
    comparison = await compareModes(
      { skills: join(root, 'test/fixtures/skills'), stateDir },
      ['rules-only', 'local'],
      loadDataset(dataset),
    );
    artifacts =
      keptArtifacts === undefined || keptArtifacts === '' ? join(stateDir, 'artifacts') : keptArtifacts;
    mkdirSync(artifacts, { recursive: true });
    const file = join(artifacts, 'html-report.html');
    writeFileSync(file, renderHtmlReport(comparison, { title: 'Dev set in Chromium', dataset: 'dev.jsonl' }));
    url = pathToFileURL(file).href;

    browser = await puppeteer.launch({
      executablePath: chromium,
      args: [
        '--headless=new',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-dev-shm-usage',
        '--disable-background-networking',
        '--no-first-run',
      ],
      timeout: BROWSER_TIMEOUT_MS,
      protocolTimeout: BROWSER_TIMEOUT_MS,
    });
    page = await browser.newPage();
    page.setDefaultTimeout(BROWSER_TIMEOUT_MS);
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => pageErrors.push(String(error)));
    page.on('requestfailed', (request) =>
      failedRequests.push(`${request.url()}: ${request.failure()?.errorText ?? 'failed'}`),
    );
    page.on('request', (request) => {
      if (request.url() !== url) otherRequests.push(request.url());
    });
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await page.setViewport({ width: 1280, height: 900 });
    await page.goto(url, { waitUntil: 'load', timeout: BROWSER_TIMEOUT_MS });
  });

  afterAll(async () => {
    // A browser that will not close must not hold the suite: give it a moment, then kill it.
    if (browser !== undefined) {
      const closing = browser.close().then(
        () => true,
        () => false,
      );
      const timeout = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 10_000).unref());
      if (!(await Promise.race([closing, timeout]))) browser.process()?.kill('SIGKILL');
    }
    if (stateDir !== undefined) rmSync(stateDir, { recursive: true, force: true });
  });

  it('loads with no console error, page error, failed or outside request, or dialog', () => {
    expect(consoleErrors).toEqual([]);
    expect(pageErrors).toEqual([]);
    expect(failedRequests).toEqual([]);
    expect(otherRequests).toEqual([]);
    expect(dialogs).toEqual([]);
  });

  it('draws every chart in a visible box with marks in it', async () => {
    const charts = await inPage<
      { id: string; chart: string; width: number; height: number; marks: number }[]
    >(
      page,
      `[...document.querySelectorAll('svg[data-chart]')].map((svg) => {
        const box = svg.getBoundingClientRect();
        const marks = [...svg.querySelectorAll('rect.segment, rect.bar, rect.cell, circle.point')].filter((mark) => {
          const markBox = mark.getBBox();
          return markBox.width > 0 && markBox.height > 0;
        }).length;
        return { id: svg.id, chart: svg.dataset.chart, width: box.width, height: box.height, marks };
      })`,
    );
    expect(charts.map((chart) => chart.chart).sort()).toEqual([
      'calibration',
      'calibration',
      'confusion',
      'confusion',
      'latency-histogram',
      'latency-histogram',
      'tier-mix',
    ]);
    for (const chart of charts) {
      expect(chart.width, chart.id).toBeGreaterThan(100);
      expect(chart.height, chart.id).toBeGreaterThan(20);
      expect(chart.marks, chart.id).toBeGreaterThan(0);
    }
    const local = comparison.modes.find((run) => run.mode === 'local');
    const heatmap = charts.find((chart) => chart.id === 'chart-confusion-local');
    expect(heatmap?.marks).toBe((local?.metrics.confusion.labels.length ?? 0) ** 2);
  });

  it('shows a hostile request as text and runs none of it', async () => {
    const found = await inPage<{ scripts: number; images: number; cells: string[] }>(
      page,
      `({
        scripts: document.scripts.length,
        images: document.images.length,
        cells: [...document.querySelectorAll('table[data-table="disagreements"] td.text')].map((cell) => cell.textContent),
      })`,
    );
    expect(found.scripts).toBe(0);
    expect(found.images).toBe(0);
    expect(found.cells).toContain(HOSTILE);
  });

  it('takes a full-page screenshot', async () => {
    const png = Buffer.from(await page.screenshot({ fullPage: true, type: 'png' }));
    writeFileSync(join(artifacts, 'html-report.png'), png);
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    // IHDR: width and height as big-endian integers at bytes 16 and 20.
    expect(png.readUInt32BE(16)).toBe(1280);
    expect(png.readUInt32BE(20)).toBeGreaterThan(1500);
    expect(png.length).toBeGreaterThan(50_000);
  });
});
