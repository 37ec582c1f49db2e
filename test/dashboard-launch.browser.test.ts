// Starting a workflow run from the dashboard, through the built `switchboard ui`: the launch page in
// headless Chromium (the list of workflow files, the inputs form, the run's page once it starts), and
// its two routes over HTTP: what a page or a script may not make it start (a file outside its folder,
// a link out of it, a `.env`, a file it does not list, a workflow that runs commands, a cross-site
// text/plain POST), and a missing required input answered 400 naming it.
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunList, WorkflowList } from '../src/serve/ui/api-types.js';
import { findChromium } from './helpers/chromium.js';
import { IN_CI } from './helpers/ci.js';
import { CONTRAST_FAILURES } from './helpers/contrast.js';
import { killServers, serve, type Served } from './helpers/serve-process.js';

const chromium = findChromium();
const keptArtifacts = process.env.SWITCHBOARD_TEST_ARTIFACTS;
const BROWSER_TIMEOUT_MS = 30_000;

const GREET_WORKFLOW = `
workflow:
  name: greet
  description: Says hello a number of times
  entry_point: hello
  input:
    who:
      type: string
      description: whom to greet
    times:
      type: number
    loud:
      type: boolean
      required: false
agents:
  - name: hello
    type: set
    value: 'Hello {{ workflow.input.who }} x{{ workflow.input.times }}'
    routes: [{ to: $end }]
output:
  greeting: '{{ hello.output }}'
`;

const SCRIPT_WORKFLOW = `
workflow:
  name: shell
  entry_point: run
agents:
  - name: run
    type: script
    command: echo
    args: [hi]
    routes: [{ to: $end }]
`;

const OUTSIDE_WORKFLOW = GREET_WORKFLOW.replace('name: greet', 'name: outside');

const suite = chromium === undefined && !IN_CI ? describe.skip : describe;

async function inPage<T>(page: Page, expression: string): Promise<T> {
  return (await page.evaluate(expression)) as T;
}

suite('starting a workflow run from the dashboard', () => {
  const children = new Set<ChildProcess>();
  let directory: string;
  let root: string;
  let outside: string;
  let ui: Served;
  let cookie = '';
  let browser: Browser | undefined;
  let page: Page;
  let artifacts: string;

  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(`${ui.url}/ui/api/runs`, {
      method: 'POST',
      headers: { cookie, origin: ui.url, 'content-type': 'application/json', ...headers },
      body,
    });
  const runCount = async () => {
    const answer = await fetch(`${ui.url}/ui/api/runs`, { headers: { cookie } });
    return ((await answer.json()) as RunList).runs.length;
  };

  beforeAll(async () => {
    if (chromium === undefined) throw new Error('CI needs the browser test, and no Chromium was found');
    directory = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-launch-')));
    root = join(directory, 'project');
    outside = join(directory, 'outside');
    for (const folder of [root, outside, join(root, 'flows'), join(root, 'node_modules', 'pkg')])
      mkdirSync(folder, { recursive: true });
    writeFileSync(join(root, 'flows', 'greet.yaml'), GREET_WORKFLOW);
    writeFileSync(join(root, 'shell.yml'), SCRIPT_WORKFLOW);
    writeFileSync(join(root, 'notes.yaml'), 'just: some yaml\n');
    writeFileSync(join(root, 'node_modules', 'pkg', 'flow.yaml'), OUTSIDE_WORKFLOW);
    writeFileSync(join(root, '.env'), 'SECRET=1\n');
    writeFileSync(join(outside, 'flow.yaml'), OUTSIDE_WORKFLOW);
    symlinkSync(join(outside, 'flow.yaml'), join(root, 'link.yaml'));
    artifacts = keptArtifacts ?? join(directory, 'artifacts');
    mkdirSync(artifacts, { recursive: true });
    ui = await serve(['--port', '0'], {
      cwd: root,
      env: { ...process.env, SWITCHBOARD_SERVER_TOKEN: '' },
      children,
      command: 'ui',
    });
    const signIn = /dashboard at (\S+)/.exec(ui.stdout())?.[1] as string;
    const exchange = await fetch(signIn, { redirect: 'manual' });
    cookie = (exchange.headers.getSetCookie()[0] ?? '').split(';')[0] as string;
    browser = await puppeteer.launch({
      executablePath: chromium,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--no-default-browser-check'],
    });
    page = await browser.newPage();
    page.setDefaultTimeout(BROWSER_TIMEOUT_MS);
    await page.setViewport({ width: 1280, height: 800 });
    await page.setCookie({
      name: cookie.slice(0, cookie.indexOf('=')),
      value: cookie.slice(cookie.indexOf('=') + 1),
      url: `${ui.url}/ui/`,
      path: '/ui',
    });
  });

  afterAll(async () => {
    await browser?.close();
    killServers(children);
    if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
  });

  it('lists the workflow files under the folder the server started in, and no other file', async () => {
    const answer = await fetch(`${ui.url}/ui/api/workflows`, { headers: { cookie } });
    expect(answer.status).toBe(200);
    const list = (await answer.json()) as WorkflowList;
    expect(list.roots).toEqual([root]);
    expect(list.workflows.map((workflow) => workflow.path)).toEqual(['flows/greet.yaml', 'shell.yml']);
    expect(list.workflows[0]).toMatchObject({
      name: 'greet',
      description: 'Says hello a number of times',
      inputs: [
        { name: 'who', type: 'string', required: true, description: 'whom to greet' },
        { name: 'times', type: 'number', required: true },
        { name: 'loud', type: 'boolean', required: false },
      ],
    });
  });

  it('refuses a file outside its folder, a link out of it, a .env, an unknown file and a script', async () => {
    const before = await runCount();
    const refused: Array<[string, number, RegExp]> = [
      [join(outside, 'flow.yaml'), 403, /not a workflow file this dashboard offers/],
      ['../outside/flow.yaml', 403, /not a workflow file this dashboard offers/],
      ['link.yaml', 403, /not a workflow file this dashboard offers/],
      ['node_modules/pkg/flow.yaml', 403, /not a workflow file this dashboard offers/],
      ['.env', 403, /\.env/],
      ['missing.yaml', 403, /not a workflow file this dashboard offers/],
      ['notes.yaml', 403, /not a workflow file this dashboard offers/],
      ['shell.yml', 403, /runs a command, which this server does not allow over HTTP/],
    ];
    for (const [file, status, message] of refused) {
      const answer = await post(JSON.stringify({ file, inputs: { who: 'x', times: 1 } }));
      const text = await answer.text();
      expect(answer.status, `${file}: ${text}`).toBe(status);
      expect((JSON.parse(text) as { error: { message: string } }).error.message, file).toMatch(message);
      expect(JSON.parse(text).error.message, file).not.toContain('\n');
    }
    // What a page of another site can send without a preflight: text/plain, from its own origin.
    const crossSite = await post(
      JSON.stringify({ file: 'flows/greet.yaml', inputs: { who: 'x', times: 1 } }),
      {
        'content-type': 'text/plain',
        origin: 'http://evil.example',
      },
    );
    expect(crossSite.status).toBe(403);
    const plain = await post(JSON.stringify({ file: 'flows/greet.yaml', inputs: { who: 'x', times: 1 } }), {
      'content-type': 'text/plain',
    });
    expect(plain.status).toBe(415);
    const unsigned = await fetch(`${ui.url}/ui/api/runs`, {
      method: 'POST',
      headers: { origin: ui.url, 'content-type': 'application/json' },
      body: JSON.stringify({ file: 'flows/greet.yaml', inputs: { who: 'x', times: 1 } }),
    });
    expect(unsigned.status).toBe(401);
    expect(await runCount()).toBe(before);
  });

  it('answers a missing or mistyped required input with a 400 naming it, and starts nothing', async () => {
    const before = await runCount();
    const missing = await post(JSON.stringify({ file: 'flows/greet.yaml', inputs: { who: 'Ada' } }));
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: { message: string } }).error.message).toBe(
      'input "times" is required',
    );
    const wrong = await post(
      JSON.stringify({ file: 'flows/greet.yaml', inputs: { who: 'Ada', times: 'many' } }),
    );
    expect(wrong.status).toBe(400);
    expect(((await wrong.json()) as { error: { message: string } }).error.message).toMatch(
      /input "times" must be a number/,
    );
    expect(await runCount()).toBe(before);
  });

  it('starts a run from the form, by keyboard, and shows its page until it completes', async () => {
    await page.goto(`${ui.url}/ui/`);
    await page.waitForSelector('a[href="/ui/launch"]');
    await page.click('a[href="/ui/launch"]');
    await page.waitForSelector('.launch-choice');
    const choices = await inPage<string[]>(
      page,
      `[...document.querySelectorAll('.launch-choice .launch-name')].map((node) => node.textContent)`,
    );
    expect(choices).toEqual(['greet', 'shell']);
    // The chosen file's form takes the focus; its fields are found by their labels.
    await page.focus('.launch-choice');
    await page.keyboard.press('Enter');
    await page.waitForSelector('form.launch-form');
    expect(await inPage<string>(page, 'document.activeElement.textContent')).toBe('greet');
    expect(
      await inPage<string[]>(
        page,
        `[...document.querySelectorAll('form.launch-form label')].map((label) => label.control?.id)`,
      ),
    ).toEqual(['input-who', 'input-times', 'input-loud']);
    await page.keyboard.press('Tab');
    await page.keyboard.type('Ada');
    await page.keyboard.press('Tab');
    await page.keyboard.type('3');
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: scheme }]);
      expect(await inPage<string[]>(page, CONTRAST_FAILURES), scheme).toEqual([]);
      await page.screenshot({ path: join(artifacts, `launch-${scheme}.png`) });
    }
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'light' }]);
    await page.keyboard.press('Enter');
    await page.waitForFunction(`/^\\/ui\\/runs\\/[^/]+$/.test(location.pathname)`);
    await page.waitForFunction(`document.querySelector('.status-bar')?.textContent.includes('completed')`);
    await page.click('#tab-output');
    await page.waitForFunction(
      `document.querySelector('#panel-output')?.textContent.includes('Hello Ada x3')`,
    );
    await page.screenshot({ path: join(artifacts, 'launched-run.png') });
  });

  it('fits a phone', async () => {
    await page.setViewport({ width: 375, height: 740 });
    await page.goto(`${ui.url}/ui/launch`);
    await page.waitForSelector('.launch-choice');
    await page.click('.launch-choice');
    await page.waitForSelector('form.launch-form');
    expect(await inPage<number>(page, 'document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    await page.screenshot({ path: join(artifacts, 'launch-phone.png'), fullPage: true });
    await page.goto(`${ui.url}/ui/`);
    await page.waitForSelector('a[href="/ui/launch"]');
    await page.screenshot({ path: join(artifacts, 'runs-phone.png') });
  });
});
