import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { request, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { answerGate, runWorkflow } from '../src/workflows/index.js';
import type { AgentDetail, RunDetail, RunList } from '../src/serve/ui/api-types.js';
import { GATE_WORKFLOW, recordAgentRun } from './helpers/dashboard-fixtures.js';
import { createRepository, git } from './helpers/git-repo.js';
import { killServers, serve, type Served } from './helpers/serve-process.js';

// The dashboard's server side through the real CLI (`switchboard ui`, `serve --ui`): who gets in, what
// a web page cannot make it do, what its API answers from a ledger other processes write, and that a
// key the server knows never leaves it. The pages themselves are driven in Chromium by
// test/dashboard.browser.test.ts.

const planted = `sk-ant-PLANTED-${randomBytes(8).toString('hex')}`;
/** A password with the characters JSON escapes: redacted after escaping, it would slip through. */
const quoted = `Quo"te\\Back-PLANTED-${randomBytes(6).toString('hex')}`;
const children = new Set<ChildProcess>();
let directory: string;
let stateDir: string;
let ui: Served;
let base: string;
let cookie: string;
const runIds: string[] = [];
/** The PostgreSQL pass's database of this file (each test gets another one): where the runs and the server are. */
let databaseUrl: string | undefined;

interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  text: string;
}

function send(
  path: string,
  {
    method = 'GET',
    headers = {},
    body,
  }: { method?: string; headers?: OutgoingHttpHeaders; body?: string } = {},
): Promise<Answer> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const outgoing = request(url, { method, headers }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, headers: response.headers, text }),
      );
    });
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

const withCookie = (headers: OutgoingHttpHeaders = {}): OutgoingHttpHeaders => ({ ...headers, cookie });

async function getJson<T>(path: string): Promise<T> {
  const answer = await send(path, { headers: withCookie() });
  expect(answer.status, answer.text).toBe(200);
  return JSON.parse(answer.text) as T;
}

beforeAll(async () => {
  databaseUrl = process.env.SWITCHBOARD_DATABASE_URL;
  directory = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-ui-')));
  stateDir = join(directory, '.switchboard');
  const file = join(directory, 'gate.yaml');
  writeFileSync(file, GATE_WORKFLOW);
  // Written by this process, which does not know the planted key: only the server can hide it.
  for (const text of ['first', `key ${planted} password ${quoted}`, 'third']) {
    const run = await runWorkflow({ file, inputs: { text }, stateDir });
    runIds.push(run.id);
  }
  ui = await serve(['--port', '0'], {
    cwd: directory,
    env: { ...process.env, ANTHROPIC_API_KEY: planted, DB_PASSWORD: quoted, SWITCHBOARD_SERVER_TOKEN: '' },
    children,
    command: 'ui',
  });
  base = ui.url;
});

afterAll(() => {
  killServers(children);
  rmSync(directory, { recursive: true, force: true });
});

describe('switchboard ui', () => {
  it('prints a sign-in URL first whose code works once, and lets in only who opened it', async () => {
    const first = ui.stdout().split('\n')[0] ?? '';
    const url = /^switchboard: dashboard at (http:\/\/127\.0\.0\.1:\d+\/ui\/\?code=([\w-]+))$/.exec(first);
    expect(url, first).not.toBeNull();
    const code = url?.[2] as string;
    // On this machine, but without the cookie: a page in the user's browser is on loopback too.
    for (const path of ['/ui/', '/ui/runs/x', '/ui/api/runs', '/ui/api/stream', '/ui/assets/index.js']) {
      const answer = await send(path);
      expect(answer.status, path).toBe(401);
      expect(JSON.parse(answer.text).error.hint).toMatch(/printed/);
    }
    expect((await send('/ui/?code=wrong-code')).status).toBe(410);
    expect((await send('/ui/api/runs', { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    const exchange = await send(`/ui/runs/${runIds[0]}?code=${code}&tab=events`);
    expect(exchange.status).toBe(303);
    expect(exchange.headers.location).toBe(`/ui/runs/${runIds[0]}?tab=events`);
    const setCookie = exchange.headers['set-cookie']?.[0] ?? '';
    expect(setCookie).toMatch(/; Path=\/ui; HttpOnly; SameSite=Strict$/);
    cookie = setCookie.split(';')[0] as string;
    const token = cookie.slice(cookie.indexOf('=') + 1);
    expect(token).not.toBe(code);
    expect((await send('/ui/api/runs', { headers: withCookie() })).status).toBe(200);
    // The code is dead once used: a copy in a browser's history opens nothing, and says what to do.
    const again = await send(`/ui/?code=${code}`);
    expect(again.status).toBe(410);
    expect(again.headers['set-cookie']).toBeUndefined();
    expect(again.text).toContain('it prints a new one when the last was used');
    await vi.waitUntil(
      () =>
        ui
          .stdout()
          .split('\n')
          .filter((line) => line.includes('?code=')).length > 1,
    );
    const fresh = /\?code=([\w-]+)\n$/.exec(ui.stdout())?.[1] as string;
    expect(fresh).not.toBe(code);
    expect((await send(`/ui/?code=${fresh}`)).status).toBe(303);
    expect((await send(`/ui/?code=${fresh}`)).status).toBe(410);
    // A wrong code while an unused link is out does not replace it: a page cannot kill the user's link.
    const links = () => ui.stdout().match(/\?code=[\w-]+/g) ?? [];
    await vi.waitUntil(() => links().length === 3);
    const unused = links()[2]?.slice('?code='.length) as string;
    expect((await send('/ui/?code=wrong-code')).status).toBe(410);
    expect((await send('/ui/?code=wrong-again')).status).toBe(410);
    expect((await send(`/ui/?code=${unused}`)).status).toBe(303);
    expect(links().length).toBe(3);
    // A browser holding the cookie that opens a used link (from its history) just goes to the page.
    expect((await send(`/ui/costs?code=${code}`, { headers: withCookie() })).headers.location).toBe(
      '/ui/costs',
    );
    // The long-lived token is never taken from a URL; a script may present it as a bearer token.
    expect((await send(`/ui/?token=${token}`)).status).toBe(401);
    expect((await send('/ui/api/runs', { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    expect(ui.stdout()).not.toContain(token);
  });

  it('refuses what a web page could send: a foreign Origin, a text/plain body', async () => {
    const gate = `/ui/api/runs/${runIds[2]}/gate`;
    const foreign = await send(gate, {
      method: 'POST',
      headers: withCookie({ origin: 'http://evil.example', 'content-type': 'application/json' }),
      body: '{"choice":"ship"}',
    });
    expect(foreign.status).toBe(403);
    const plain = await send(gate, {
      method: 'POST',
      headers: withCookie({ 'content-type': 'text/plain' }),
      body: '{"choice":"ship"}',
    });
    expect(plain.status).toBe(415);
    const run = await getJson<RunDetail>(`/ui/api/runs/${runIds[2]}`);
    expect(run.run.status).toBe('waiting');
    // Every answer forbids framing and foreign scripts.
    const answer = await send('/ui/api/runs', { headers: withCookie() });
    expect(answer.headers['content-security-policy']).toMatch(/default-src 'none'; script-src 'self'/);
    expect(answer.headers['x-frame-options']).toBe('DENY');
  });

  it('records guidance from the page under the same rules as a gate answer; a foreign page cannot', async () => {
    const guide = `/ui/api/runs/${runIds[2]}/guide`;
    const foreign = await send(guide, {
      method: 'POST',
      headers: withCookie({ origin: 'http://evil.example', 'content-type': 'application/json' }),
      body: '{"text":"do something else"}',
    });
    expect(foreign.status).toBe(403);
    const anonymous = await send(guide, {
      method: 'POST',
      headers: { origin: base, 'content-type': 'application/json' },
      body: '{"text":"do something else"}',
    });
    expect(anonymous.status).toBe(401);
    const guided = await send(guide, {
      method: 'POST',
      headers: withCookie({ origin: base, 'content-type': 'application/json' }),
      body: JSON.stringify({ text: `look at the notes first ${planted}` }),
    });
    expect(guided.status, guided.text).toBe(200);
    expect(JSON.parse(guided.text).guidance).toMatchObject({
      runId: runIds[2],
      text: 'look at the notes first [redacted]',
      sentBy: 'dashboard',
    });
    const events = await send(`/ui/api/runs/${runIds[2]}/events?after=0`, { headers: withCookie() });
    const sent = (JSON.parse(events.text) as { events: { type: string; data?: unknown }[] }).events.filter(
      (event) => event.type === 'guidance-sent',
    );
    expect(sent).toEqual([
      expect.objectContaining({ data: expect.objectContaining({ sentBy: 'dashboard' }) }),
    ]);
    const empty = await send(guide, {
      method: 'POST',
      headers: withCookie({ origin: base, 'content-type': 'application/json' }),
      body: '{"text":"  "}',
    });
    expect(empty.status).toBe(400);
    expect(JSON.parse(empty.text).error.message).toBe('the guidance is empty');
  });

  it('lists runs newest first, a page at a time, with filters', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await getJson<RunList>(
        `/ui/api/runs?kind=workflow&limit=2${cursor === undefined ? '' : `&cursor=${cursor}`}`,
      );
      expect(page.runs.length).toBeLessThanOrEqual(2);
      seen.push(...page.runs.map((run) => run.id));
      cursor = page.next;
    } while (cursor !== undefined);
    expect(seen).toEqual([...runIds].reverse());
    const waiting = await getJson<RunList>('/ui/api/runs?status=waiting');
    expect(waiting.runs.every((run) => run.waitingGate === 'decide')).toBe(true);
    expect((await getJson<RunList>('/ui/api/runs?name=no-such-workflow')).runs).toEqual([]);
    const bad = await send('/ui/api/runs?kind=everything', { headers: withCookie() });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text).error.message).toMatch(/"kind" must be workflow, agent or call/);
  });

  it('answers a gate once: the first answer wins, and the run goes on to its end', async () => {
    const gate = (choice: string) =>
      send(`/ui/api/runs/${runIds[0]}/gate`, {
        method: 'POST',
        headers: withCookie({ origin: base, 'content-type': 'application/json' }),
        body: JSON.stringify({ choice }),
      });
    const answered = await gate('ship');
    expect(answered.status, answered.text).toBe(202);
    expect(JSON.parse(answered.text).continuing).toBe(true);
    const second = await gate('drop');
    expect(second.status).toBe(409);
    expect(JSON.parse(second.text).error.code).toBe('GATE_TAKEN');
    let detail = await getJson<RunDetail>(`/ui/api/runs/${runIds[0]}`);
    for (let tries = 0; detail.run.status !== 'completed' && tries < 200; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      detail = await getJson<RunDetail>(`/ui/api/runs/${runIds[0]}`);
    }
    expect(detail.run.status).toBe('completed');
    expect(detail.run.output).toEqual({ note: 'first' });
    expect(detail.graph?.steps.map((step) => step.name)).toEqual(['note', 'decide']);
  });

  it('streams what another process writes, and never shows a key the server knows', async () => {
    const runId = runIds[1] as string;
    const detail = await send(`/ui/api/runs/${runId}`, { headers: withCookie() });
    expect(detail.text).not.toContain(planted);
    expect(detail.text).toContain('[redacted]');
    // From the first event: the run's start (its inputs) and, written while this reader is connected,
    // the step's end with the answer's reason: both hold the key.
    let streamed = '';
    const stream = request(new URL(`/ui/api/stream?run=${runId}`, base), { headers: withCookie() });
    const connected = new Promise<void>((resolve) => {
      stream.on('response', (response) => {
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          streamed += chunk;
          if (streamed.includes('"type":"gate-presented"')) resolve();
        });
      });
    });
    stream.end();
    await connected;
    // Another process (this one) answers and finishes the run; the stream shows it.
    if (databaseUrl !== undefined) vi.stubEnv('SWITCHBOARD_DATABASE_URL', databaseUrl);
    await answerGate({ runId, choice: 'drop', text: `because ${planted} ${quoted}`, stateDir });
    await vi.waitUntil(() => streamed.includes('"type":"run-end"'), { timeout: 20_000, interval: 50 });
    stream.destroy();
    expect(streamed).toMatch(
      /event: workflow-event\ndata: \{"runId":"[^"]+","seq":1,"at":"[^"]+","type":"run-start"/,
    );
    expect(streamed).toMatch(/"type":"run-start"[^\n]*"text":"key \[redacted\] password \[redacted\]"/);
    const live = streamed.slice(streamed.indexOf('"type":"gate-answer"'));
    expect(live).toMatch(/"type":"step-end"[^\n]*"because \[redacted\] \[redacted\]"/);
    const events = await send(`/ui/api/runs/${runId}/events?after=0`, { headers: withCookie() });
    const runs = await send('/ui/api/runs', { headers: withCookie() });
    for (const text of [detail.text, streamed, events.text, runs.text]) {
      expect(text).not.toContain(planted);
      expect(text).not.toContain(JSON.stringify(quoted).slice(1, -1));
      expect(text).not.toContain(quoted);
    }
    expect(events.text).toContain('[redacted]');
  });

  it('keeps at most 64 streams open, however many are asked for at once', async () => {
    const opened = await Promise.all(
      Array.from(
        { length: 70 },
        () =>
          new Promise<{ status: number; close: () => void }>((resolve, reject) => {
            const outgoing = request(new URL(`/ui/api/stream?run=${runIds[2]}`, base), {
              headers: withCookie(),
            });
            outgoing.on('response', (response) =>
              resolve({ status: response.statusCode ?? 0, close: () => outgoing.destroy() }),
            );
            outgoing.on('error', reject);
            outgoing.end();
          }),
      ),
    );
    for (const stream of opened) stream.close();
    expect(opened.filter((stream) => stream.status === 200).length).toBe(64);
    expect(opened.filter((stream) => stream.status === 503).length).toBe(6);
  });

  it('acts only on a whole run id, and says which times it cannot read', async () => {
    const prefix = await send(`/ui/api/runs/${(runIds[2] as string).slice(0, 8)}/cancel`, {
      method: 'POST',
      headers: withCookie({ 'content-type': 'application/json' }),
      body: '{}',
    });
    expect(prefix.status).toBe(404);
    expect((await getJson<RunDetail>(`/ui/api/runs/${runIds[2]}`)).run.status).toBe('waiting');
    const far = await send('/ui/api/costs?until=99999999999999999999', { headers: withCookie() });
    expect(far.status).toBe(400);
    expect(JSON.parse(far.text).error.message).toBe('"until" is not a time');
  });

  it("shows an agent run's diff without letting its repository's git config run a command", async () => {
    // A partial clone missing the object the diff needs: git would fetch it through the ssh command
    // its config names. The folder comes from the ledger, which other machines and processes write.
    const repo = createRepository(join(directory, 'partial'));
    writeFileSync(join(repo, 'f'), 'a\n');
    git(repo, 'add', 'f');
    git(repo, 'commit', '-qm', 'a');
    const base = git(repo, 'rev-parse', 'HEAD');
    writeFileSync(join(repo, 'f'), 'b\n');
    git(repo, 'commit', '-qam', 'b');
    const commit = git(repo, 'rev-parse', 'HEAD');
    const blob = git(repo, 'rev-parse', 'HEAD:f');
    rmSync(join(repo, '.git/objects', blob.slice(0, 2), blob.slice(2)));
    const marker = join(directory, 'ran-from-git-config');
    git(repo, 'config', 'core.repositoryformatversion', '1');
    git(repo, 'config', 'extensions.partialClone', 'origin');
    git(repo, 'config', 'remote.origin.promisor', 'true');
    git(repo, 'config', 'remote.origin.url', 'ssh://nohost.invalid/x');
    git(repo, 'config', 'core.sshCommand', `touch ${marker}; false`);
    if (databaseUrl !== undefined) vi.stubEnv('SWITCHBOARD_DATABASE_URL', databaseUrl);
    const id = await recordAgentRun(stateDir, {
      repo,
      base,
      commit,
      title: 'Change f',
      description: 'Change f.',
    });
    const answer = await getJson<AgentDetail>(`/ui/api/agents/${id}`);
    expect(answer.commit).toBe(commit);
    expect(answer.diff).toBeUndefined();
    expect(existsSync(marker)).toBe(false);
  });

  it("has no /call or /route: those are serve's", async () => {
    // Without the server's token it is 401, as every route but /healthz.
    const answer = await send('/call', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...ui.auth },
      body: '{}',
    });
    expect(answer.status).toBe(404);
    expect(JSON.parse(answer.text).error.hint).toMatch(/switchboard serve/);
  });
});

describe('switchboard serve --ui', () => {
  it('serves the dashboard only when asked to', async () => {
    const env = { ...process.env, SWITCHBOARD_SERVER_TOKEN: '' };
    const plain = await serve(['--port', '0', '--pool', '0'], { cwd: directory, env, children });
    // The server's token: without it, the answer is 401 (nothing but /healthz is open).
    const answer = await fetch(`${plain.url}/ui/`, { headers: plain.auth });
    expect(answer.status).toBe(404);
    expect(((await answer.json()) as { error: { hint: string } }).error.hint).toMatch(/--ui/);
    plain.child.kill('SIGKILL');
    const withUi = await serve(['--port', '0', '--pool', '0', '--ui'], { cwd: directory, env, children });
    const url = /dashboard at (\S+)/.exec(withUi.stdout())?.[1] as string;
    const page = await fetch(url, { redirect: 'manual' });
    expect(page.status).toBe(303);
    expect(page.headers.get('set-cookie')).toMatch(/HttpOnly/);
    expect((await fetch(url, { redirect: 'manual' })).status).toBe(410);
    withUi.child.kill('SIGKILL');
  });
});
