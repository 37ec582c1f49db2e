// Run ids that need escaping, in a real browser: each run is opened from the runs list and its gate
// answered by clicking, and exactly that run must be the one shown and answered. Beside `team/deploy`
// is a run named as `team/deploy` reads after one decoding too few (`team%2Fdeploy`): a page that
// encodes twice and decodes once opens and answers that one instead.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunDetail } from '../src/serve/ui/api-types.js';
import { runWorkflow } from '../src/workflows/index.js';
import { findChromium } from './helpers/chromium.js';
import { IN_CI } from './helpers/ci.js';
import { GATE_WORKFLOW } from './helpers/dashboard-fixtures.js';
import { killServers, serve, type Served } from './helpers/serve-process.js';

const chromium = findChromium();
const BROWSER_TIMEOUT_MS = 30_000;
/** In the order they are answered: each decoy after the run it would be mistaken for. */
const IDS = [
  'team/deploy',
  'team%2Fdeploy',
  'what?now#1&2=3',
  'what%3Fnow%231%262%3D3',
  '100% sure',
  'café crème/ü 東京',
];
const serverToken = `sbt-${randomBytes(12).toString('hex')}`;

const suite = chromium === undefined && !IN_CI ? describe.skip : describe;

suite('run ids that need escaping, in headless Chromium', () => {
  const children = new Set<ChildProcess>();
  let directory: string;
  let ui: Served;
  let browser: Browser | undefined;
  let page: Page;

  beforeAll(async () => {
    if (chromium === undefined) throw new Error('CI needs the browser test, and no Chromium was found');
    directory = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-dashboard-ids-')));
    const stateDir = join(directory, '.switchboard');
    const file = join(directory, 'gate.yaml');
    writeFileSync(file, GATE_WORKFLOW);
    for (const runId of IDS)
      await runWorkflow({ file, runId, inputs: { text: `input of ${runId}` }, stateDir });
    ui = await serve(['--port', '0'], {
      cwd: directory,
      env: { ...process.env, SWITCHBOARD_SERVER_TOKEN: serverToken },
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
    await page.goto(/dashboard at (\S+)/.exec(ui.stdout())?.[1] as string);
    await page.waitForSelector('.runs-table');
  });

  afterAll(async () => {
    await browser?.close();
    killServers(children);
    if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
  });

  /** Each run's status as the API says, by id. */
  async function statuses(): Promise<Record<string, string>> {
    const entries = await Promise.all(
      IDS.map(async (id) => {
        const answer = await fetch(`${ui.url}/ui/api/runs/${encodeURIComponent(id)}`, {
          headers: { authorization: `Bearer ${serverToken}` },
        });
        return [id, ((await answer.json()) as RunDetail).run.status] as const;
      }),
    );
    return Object.fromEntries(entries);
  }

  it('opens each run from the list and answers its gate, and no other run', async () => {
    const answered = new Set<string>();
    for (const id of IDS) {
      await page.goto(`${ui.url}/ui/?kind=workflow`);
      await page.waitForSelector('.runs-table');
      // The row whose id line is this id; its link is the workflow's name.
      const clicked = await page.evaluate(
        `(() => {
          const row = [...document.querySelectorAll('.runs-table tbody tr')]
            .find((tr) => tr.querySelector('.name-cell .mono')?.firstChild?.textContent === ${JSON.stringify(id)});
          row?.querySelector('a')?.click();
          return row !== undefined;
        })()`,
      );
      expect(clicked, id).toBe(true);
      await page.waitForSelector('.gate-panel');
      expect(await page.evaluate(`document.querySelector('.id').textContent`)).toBe(id);
      expect(await page.evaluate(`document.querySelector('.gate-prompt').textContent`)).toBe(
        `Ship input of ${id}?`,
      );
      const [ship] = await page.$$('xpath/.//button[normalize-space()="Ship it"]');
      await ship?.click();
      await page.waitForFunction(`document.querySelector('.status-bar .badge')?.textContent === 'completed'`);
      answered.add(id);
      const now = await statuses();
      for (const other of IDS) {
        expect(now[other], `${other} after answering ${id}`).toBe(
          answered.has(other) ? 'completed' : 'waiting',
        );
      }
    }
  });
});
