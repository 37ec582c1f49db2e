import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  claudeAgainstSimulator,
  claudeProcessIds,
  waitForNoNewClaudeProcesses,
  type ClaudeHarness,
} from '../../../test/helpers/claude.js';
import { waitFor } from '../../../test/helpers/wait-for.js';
import { taggedProcesses } from './process-group.js';

// Every test here runs the real Claude Code binary (shipped by @anthropic-ai/claude-agent-sdk) against
// `switchboard sim` on loopback.

let harness: ClaudeHarness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** The executable a process runs, or '' once it is gone. */
function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '';
  } catch {
    return '';
  }
}

const replies = (sim: ClaudeHarness['sim']) =>
  sim.requests.filter((entry) => entry.outcome === 'reply' || entry.outcome.startsWith('fault'));

describe('claude-code provider, cold calls', () => {
  it('answers a plain call with no tools, the caller’s system prompt, usage, cost and session id', async () => {
    harness = await claudeAgainstSimulator({
      rules: [{ match: { text: '^ping$' }, reply: { text: 'pong', usage: { input: 120, output: 4 } } }],
    });
    const result = await harness.provider.call({
      model: 'claude-haiku-4-5',
      prompt: 'ping',
      system: 'You answer with one word.',
    });
    expect(result).toMatchObject({
      success: true,
      text: 'pong',
      provider: 'claude:claude-haiku-4-5',
      modelRequested: 'claude-haiku-4-5',
      turns: 1,
    });
    expect(result.usage.outputTokens).toBe(4);
    expect(result.costUsd).toBeGreaterThan(0);
    expect(result.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    const requests = replies(harness.sim);
    // One API request: no title generation, no connectivity probe, no tools offered.
    expect(requests).toHaveLength(1);
    expect(harness.sim.requests.some((entry) => entry.method === 'HEAD')).toBe(false);
    expect(requests[0]?.tools).toEqual([]);
    expect(JSON.stringify(requests[0]?.body)).toContain('You answer with one word.');
  });

  it('waits in close() for a cold call’s process, which may still be writing its config folder', async () => {
    const configDir = mkdtempSync(join(tmpdir(), 'switchboard-claude-close-'));
    harness = await claudeAgainstSimulator({ rules: [{ reply: { text: 'pong' } }] }, { configDir });
    await harness.provider.call({ model: 'claude-haiku-4-5', prompt: 'ping' });
    await harness.provider.close();
    // Found by the variable the provider gives it: this call's Claude Code only, not another test's.
    const claudeLeft = taggedProcesses({ name: 'CLAUDE_CONFIG_DIR', value: configDir }).filter((pid) =>
      commandOf(pid).endsWith('/claude'),
    );
    expect(claudeLeft).toEqual([]);
  });

  it('answers under idle and wall limits longer than a Node timer can hold (claude.idle_timeout_seconds as "never")', async () => {
    harness = await claudeAgainstSimulator(
      { rules: [{ match: { text: '^ping$' }, reply: { text: 'pong' } }] },
      { idleTimeoutMs: 99_999_999_000, timeoutMs: 99_999_999_000 },
    );
    const result = await harness.provider.call({ model: 'claude-haiku-4-5', prompt: 'ping' });
    expect(result.text).toBe('pong');
  });

  it('returns structured output validated against the schema, and SCHEMA with the raw text otherwise', async () => {
    harness = await claudeAgainstSimulator({
      rules: [
        {
          match: { text: 'weather' },
          reply: { tool: { name: 'StructuredOutput', input: { city: 'Lisbon', celsius: 21 } } },
        },
        // Also answers Claude Code's own nudge to use the StructuredOutput tool.
        { match: {}, reply: { text: 'It is sunny, about 21 degrees.' } },
      ],
    });
    const schema = {
      type: 'object',
      properties: { city: { type: 'string' }, celsius: { type: 'number' } },
      required: ['city', 'celsius'],
    };
    const result = await harness.provider.call({
      model: 'claude-haiku-4-5',
      prompt: 'weather in Lisbon',
      schema,
    });
    expect(result.structured).toEqual({ city: 'Lisbon', celsius: 21 });
    await expect(
      harness.provider.call({ model: 'claude-haiku-4-5', prompt: 'answer in prose', schema }),
    ).rejects.toMatchObject({
      code: 'SCHEMA',
      details: { raw: expect.stringContaining('sunny') },
    });
    await expect(
      harness.provider.call({ model: 'claude-haiku-4-5', prompt: 'x', schema: { type: 'nonsense' } }),
    ).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
  });

  it('maps API failures to codes: AUTH (not retryable), RATE_LIMITED with its reset, OVERLOADED, PROVIDER_ERROR', async () => {
    const resetsAt = Math.floor(Date.now() / 1000) + 3600;
    harness = await claudeAgainstSimulator({
      rules: [
        { match: { text: 'auth' }, fault: { status: 401, message: 'invalid x-api-key' } },
        {
          match: { text: 'limit' },
          // A limit that resets in an hour asks for an hour's wait: Claude Code gives up at once and says why.
          fault: { status: 429, retryAfter: 3600, message: `Claude AI usage limit reached|${resetsAt}` },
        },
        { match: { text: 'busy' }, fault: { kind: 'overload' } },
        { match: { text: 'broken' }, fault: { status: 500 } },
      ],
    });
    const call = (prompt: string) => harness!.provider.call({ model: 'claude-haiku-4-5', prompt });
    await expect(call('auth please')).rejects.toMatchObject({ code: 'AUTH', retryable: false });
    const limited = (await call('limit please').catch((error: unknown) => error)) as {
      code: string;
      retryAfterMs?: number;
    };
    expect(limited.code).toBe('RATE_LIMITED');
    expect(limited.retryAfterMs).toBeGreaterThan(3_500_000);
    expect(limited.retryAfterMs).toBeLessThanOrEqual(3_600_000);
    await expect(call('busy please')).rejects.toMatchObject({ code: 'OVERLOADED', retryable: true });
    await expect(call('broken please')).rejects.toMatchObject({ code: 'PROVIDER_ERROR' });
    // Claude Code's own retries are ended before they are sent: one request per call.
    expect(replies(harness.sim)).toHaveLength(4);
  });

  it('tells the server’s retry-after on a 429: a short one as the wait, a long one as more than a minute', async () => {
    harness = await claudeAgainstSimulator({
      rules: [
        { match: { text: 'short' }, fault: { status: 429, retryAfter: 2 } },
        { match: { text: 'long' }, fault: { status: 429, retryAfter: 120 } },
      ],
    });
    const call = async (prompt: string) =>
      (await harness!.provider
        .call({ model: 'claude-haiku-4-5', prompt })
        .catch((error: unknown) => error)) as {
        code: string;
        retryAfterMs?: number;
      };
    const short = await call('short wait please');
    expect(short.code).toBe('RATE_LIMITED');
    // Claude Code adds up to a quarter of jitter to the server's two seconds.
    expect(short.retryAfterMs).toBeGreaterThanOrEqual(2_000);
    expect(short.retryAfterMs).toBeLessThanOrEqual(2_500);
    const long = await call('long wait please');
    expect(long.code).toBe('RATE_LIMITED');
    expect(long.retryAfterMs).toBeGreaterThan(60_000);
    // Each call sent one request: the call ended before Claude Code's own retry went out.
    expect(replies(harness.sim)).toHaveLength(2);
  });

  it('names a dead API server', async () => {
    const closed = await claudeAgainstSimulator({});
    const deadUrl = closed.sim.url;
    await closed.close();
    harness = await claudeAgainstSimulator({}, { baseUrl: deadUrl });
    await expect(harness.provider.call({ model: 'haiku', prompt: 'hi' })).rejects.toMatchObject({
      code: 'PROVIDER_UNAVAILABLE',
      hint: expect.stringMatching(/running/),
    });
  });

  it('says how to install Claude Code when the binary is missing', async () => {
    harness = await claudeAgainstSimulator({}, { executable: '/nonexistent/claude' });
    await expect(harness.provider.call({ model: 'haiku', prompt: 'hi' })).rejects.toMatchObject({
      code: 'PROVIDER_UNAVAILABLE',
      hint: expect.stringMatching(/npm install/),
    });
  });

  it('stops a stalled call with IDLE_TIMEOUT and leaves no claude process behind', async () => {
    const before = claudeProcessIds();
    harness = await claudeAgainstSimulator(
      { rules: [{ match: {}, fault: { kind: 'stall' } }] },
      { idleTimeoutMs: 1_500 },
    );
    const started = Date.now();
    await expect(harness.provider.call({ model: 'haiku', prompt: 'hang' })).rejects.toMatchObject({
      code: 'IDLE_TIMEOUT',
    });
    // The simulator never answers: the call ended because nothing came for the idle time, not sooner.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
    expect(await waitForNoNewClaudeProcesses(before)).toEqual([]);
  });

  it('enforces the wall-clock timeout and an abort, killing the process tree', async () => {
    const before = claudeProcessIds();
    harness = await claudeAgainstSimulator(
      { rules: [{ match: {}, reply: { text: 'slowly', delayMs: 30_000 } }] },
      { idleTimeoutMs: 60_000 },
    );
    await expect(
      harness.provider.call({ model: 'haiku', prompt: 'slow', timeoutMs: 1_500 }),
    ).rejects.toMatchObject({ code: 'TIMEOUT' });
    // Aborted once Claude Code's request is waiting on the simulator's answer: a call in flight.
    const controller = new AbortController();
    const asked = replies(harness.sim).length;
    const aborted = expect(
      harness.provider.call({ model: 'haiku', prompt: 'slow', abortSignal: controller.signal }),
    ).rejects.toMatchObject({ code: 'ABORTED' });
    const sim = harness.sim;
    await waitFor(() => replies(sim).length > asked, { what: "Claude Code's request", withinMs: 30_000 });
    controller.abort();
    await aborted;
    expect(await waitForNoNewClaudeProcesses(before)).toEqual([]);
  });

  it('returns structured output from a call with tools: the tool policy lets StructuredOutput through', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'switchboard-workspace-'));
    writeFileSync(join(workspace, 'NOTES.md'), 'The launch is on Tuesday.\n');
    harness = await claudeAgainstSimulator({
      rules: [
        {
          match: { turn: 1 },
          reply: { tool: { name: 'Read', input: { file_path: join(workspace, 'NOTES.md') } } },
        },
        {
          match: { turn: 2, text: 'Tuesday' },
          reply: { tool: { name: 'StructuredOutput', input: { day: 'Tuesday' } } },
        },
      ],
      fallback: { text: 'done' },
    });
    const schema = { type: 'object', properties: { day: { type: 'string' } }, required: ['day'] };
    const read = await harness.provider.call({
      model: 'haiku',
      prompt: 'which day is the launch? read NOTES.md',
      allowedTools: ['Read'],
      cwd: workspace,
      schema,
    });
    expect(read.structured).toEqual({ day: 'Tuesday' });
    // The simulator's conforming answers do the same for any schema.
    harness.sim.setScenario({ rules: [], fallback: { conform: true } });
    const conformed = await harness.provider.call({
      model: 'haiku',
      prompt: 'which day?',
      allowedTools: ['Read'],
      cwd: workspace,
      schema,
    });
    expect(conformed.structured).toEqual({ day: 'sample day' });
  });

  it('runs allowed tools in the working directory it is given', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'switchboard-workspace-'));
    const target = join(workspace, 'hello.txt');
    harness = await claudeAgainstSimulator({
      rules: [
        {
          match: { turn: 1, tools: 'Write' },
          reply: { tool: { name: 'Write', input: { file_path: target, content: 'written by the agent\n' } } },
        },
        { match: { turn: 2 }, reply: { text: 'done' } },
      ],
    });
    const result = await harness.provider.call({
      model: 'haiku',
      prompt: 'write the file',
      allowedTools: ['Write'],
      cwd: workspace,
    });
    expect(result.text).toBe('done');
    expect(readFileSync(target, 'utf8')).toBe('written by the agent\n');
    // A plain call offers no tools, so the same script cannot write anything: Claude Code refuses the
    // tool call, the model answers after the refusal, and the call still succeeds.
    const plain = mkdtempSync(join(tmpdir(), 'switchboard-workspace-'));
    harness.sim.setScenario({
      rules: [
        {
          match: { turn: 1 },
          reply: { tool: { name: 'Write', input: { file_path: join(plain, 'x.txt'), content: 'x' } } },
        },
        { match: { turn: 2 }, reply: { text: 'could not write' } },
      ],
    });
    const before = harness.sim.requests.length;
    const refused = await harness.provider.call({ model: 'haiku', prompt: 'write the file', cwd: plain });
    expect(refused).toMatchObject({ success: true, text: 'could not write' });
    const plainRequests = replies(harness.sim).filter((entry) => entry.seq > before);
    expect(plainRequests.map((entry) => [entry.turn, entry.tools])).toEqual([
      [1, []],
      [2, []],
    ]);
    expect(existsSync(join(plain, 'x.txt'))).toBe(false);
  });

  it('refuses file tools outside the working directory, and says when Bash ran without the sandbox', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'switchboard-workspace-'));
    const outside = join(mkdtempSync(join(tmpdir(), 'switchboard-outside-')), 'escaped.txt');
    harness = await claudeAgainstSimulator({
      rules: [
        {
          match: { turn: 1 },
          reply: { tool: { name: 'Write', input: { file_path: outside, content: 'escaped\n' } } },
        },
        { match: { turn: 2 }, reply: { tool: { name: 'Bash', input: { command: 'echo ran > ran.txt' } } } },
        { match: { turn: 3 }, reply: { text: 'done' } },
      ],
    });
    const previous = process.env['SWITCHBOARD_AGENT_SANDBOX'];
    process.env['SWITCHBOARD_AGENT_SANDBOX'] = 'off';
    try {
      const result = await harness.provider.call({
        model: 'haiku',
        prompt: 'write outside, then run a command',
        allowedTools: ['Write', 'Bash'],
        cwd: workspace,
      });
      expect(result.text).toBe('done');
      expect(existsSync(outside)).toBe(false);
      expect(harness.sim.requests.find((entry) => entry.turn === 2)?.text).toContain('outside the worktree');
      expect(readFileSync(join(workspace, 'ran.txt'), 'utf8')).toBe('ran\n');
      expect(result.warnings).toContain(
        "Bash ran without Claude Code's sandbox: SWITCHBOARD_AGENT_SANDBOX=off",
      );
    } finally {
      if (previous === undefined) delete process.env['SWITCHBOARD_AGENT_SANDBOX'];
      else process.env['SWITCHBOARD_AGENT_SANDBOX'] = previous;
    }
  });

  it('maps the turn limit to MAX_TURNS and the cost cap to BUDGET_EXCEEDED', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'switchboard-workspace-'));
    harness = await claudeAgainstSimulator({
      rules: [
        {
          match: { tools: 'Write' },
          reply: {
            tool: { name: 'Write', input: { file_path: join(workspace, 'loop.txt'), content: 'again' } },
            usage: { input: 2_000_000, output: 100_000 },
          },
        },
      ],
    });
    const agent = {
      model: 'claude-haiku-4-5',
      prompt: 'keep writing',
      allowedTools: ['Write'],
      cwd: workspace,
    };
    await expect(harness.provider.call({ ...agent, maxTurns: 1 })).rejects.toMatchObject({
      code: 'MAX_TURNS',
    });
    await expect(harness.provider.call({ ...agent, maxBudgetUsd: 0.01 })).rejects.toMatchObject({
      code: 'BUDGET_EXCEEDED',
    });
  });

  it('streams the answer as it arrives', async () => {
    const text = 'a long answer that the simulator sends in several pieces so that streaming shows';
    harness = await claudeAgainstSimulator({ rules: [{ match: {}, reply: { text, chunkDelayMs: 5 } }] });
    const deltas: string[] = [];
    const result = await harness.provider.call({
      model: 'haiku',
      prompt: 'stream please',
      onText: (delta) => deltas.push(delta),
    });
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe(text);
    expect(result.text).toBe(text);
  });

  it('resumes a persisted session', async () => {
    harness = await claudeAgainstSimulator({
      rules: [{ match: {}, reply: { text: 'noted: ', echo: true } }],
    });
    const first = await harness.provider.call({
      model: 'haiku',
      prompt: 'remember the word teal',
      persistSession: true,
    });
    expect(first.sessionId).toBeDefined();
    const second = await harness.provider.call({
      model: 'haiku',
      prompt: 'which word?',
      resume: first.sessionId as string,
    });
    expect(second.text).toBe('noted: which word?');
    const last = replies(harness.sim).at(-1);
    expect(JSON.stringify(last?.body)).toContain('remember the word teal');
  });
});

describe('claude-code provider, warm pool', () => {
  it.each([1, 2])(
    'serves calls from a pool of %i ready processes, each independent of the one before',
    async (size) => {
      harness = await claudeAgainstSimulator(
        { rules: [{ match: {}, reply: { text: 'echo: ', echo: true } }] },
        { pool: { size, model: 'claude-haiku-4-5' } },
      );
      await harness.provider.pool?.warm();
      const ready = harness.provider.pool?.pids;
      expect(ready).toHaveLength(size);
      for (const word of ['alpha', 'bravo', 'charlie', 'delta']) {
        const result = await harness.provider.call({ model: 'claude-haiku-4-5', prompt: `say ${word}` });
        expect(result.text).toBe(`echo: say ${word}`);
        expect(result.warm).toBe(true);
      }
      const requests = replies(harness.sim);
      expect(requests).toHaveLength(4);
      for (const [index, request] of requests.entries()) {
        const body = request.body as { messages: { role: string; content: unknown }[] };
        const users = body.messages.filter((message) => message.role === 'user');
        expect(users).toHaveLength(1);
        const earlier = ['alpha', 'bravo', 'charlie', 'delta'].slice(0, index);
        for (const word of earlier) expect(JSON.stringify(body)).not.toContain(`say ${word}`);
      }
      // The same processes served them all: independence comes from clearing, not from new processes.
      expect(harness.provider.pool?.pids).toEqual(ready);
    },
  );

  it('returns every one of 20 concurrent calls to its own caller', async () => {
    harness = await claudeAgainstSimulator(
      { rules: [{ match: {}, reply: { text: 'answer to ', echo: true } }] },
      { pool: { size: 3, model: 'claude-haiku-4-5' } },
    );
    const prompts = Array.from({ length: 20 }, (_, index) => `question ${index}`);
    const results = await Promise.all(
      prompts.map((prompt) => harness!.provider.call({ model: 'claude-haiku-4-5', prompt })),
    );
    expect(results.map((result) => result.text)).toEqual(prompts.map((prompt) => `answer to ${prompt}`));
    expect(harness.provider.pool?.pids.length).toBeLessThanOrEqual(3);
  });

  it('tells a 429’s retry-after from a warm process too, and answers the next call', async () => {
    harness = await claudeAgainstSimulator(
      {
        rules: [
          { match: { text: 'first' }, fault: { status: 429, retryAfter: 2 } },
          { match: {}, reply: { text: 'ok' } },
        ],
      },
      { pool: { size: 1, model: 'claude-haiku-4-5' } },
    );
    await harness.provider.pool?.warm();
    await expect(
      harness.provider.call({ model: 'claude-haiku-4-5', prompt: 'first call' }),
    ).rejects.toMatchObject({ code: 'RATE_LIMITED', retryAfterMs: expect.any(Number) });
    const next = await harness.provider.call({ model: 'claude-haiku-4-5', prompt: 'second call' });
    expect(next.text).toBe('ok');
    expect(replies(harness.sim)).toHaveLength(2);
  });

  it('keeps a process whose call failed with a finished turn (a 400) and answers the next call with it', async () => {
    harness = await claudeAgainstSimulator(
      {
        rules: [
          { match: { text: 'auth' }, fault: { status: 400, message: 'prompt is too long' } },
          { match: {}, reply: { text: 'ok' } },
        ],
      },
      { pool: { size: 1, model: 'claude-haiku-4-5' } },
    );
    await harness.provider.pool?.warm();
    const ready = harness.provider.pool?.pids;
    await expect(
      harness.provider.call({ model: 'claude-haiku-4-5', prompt: 'auth please' }),
    ).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    const next = await harness.provider.call({ model: 'claude-haiku-4-5', prompt: 'next' });
    expect(next.text).toBe('ok');
    expect(harness.provider.pool?.pids).toEqual(ready);
    // The next call's request carries nothing of the failed one.
    expect(JSON.stringify(replies(harness.sim).at(-1)?.body)).not.toContain('auth please');
  });

  it('serves N calls at once from a pool of N, each in a warm process of its own', async () => {
    harness = await claudeAgainstSimulator(
      { rules: [{ match: {}, reply: { text: 'answer to ', echo: true, delayMs: 3_000 } }] },
      { pool: { size: 3, model: 'claude-haiku-4-5' } },
    );
    await harness.provider.pool?.warm();
    const ready = harness.provider.pool?.pids;
    let answered = 0;
    const prompts = ['one', 'two', 'three'];
    const calls = prompts.map((prompt) =>
      harness!.provider.call({ model: 'claude-haiku-4-5', prompt }).then((result) => {
        answered++;
        return result;
      }),
    );
    // All three requests reach the API while none is answered: no call waited for another.
    await waitFor(() => replies(harness!.sim).length === 3, { what: 'three requests at the simulator' });
    expect(answered).toBe(0);
    const results = await Promise.all(calls);
    expect(results.map((result) => result.text)).toEqual(prompts.map((prompt) => `answer to ${prompt}`));
    for (const result of results) expect(result.warm).toBe(true);
    expect(harness.provider.pool?.pids).toEqual(ready);
  });

  it('replaces a killed or exited process in the background and never hands a dead one to a call', async () => {
    harness = await claudeAgainstSimulator(
      { rules: [{ match: {}, reply: { text: 'echo: ', echo: true } }] },
      { pool: { size: 2, model: 'claude-haiku-4-5' } },
    );
    const pool = harness.provider.pool!;
    await pool.warm();
    const [killed, other] = pool.pids as [number, number];
    // Killed: the whole group, and a call at once, before the pool has seen the exit.
    process.kill(-killed, 'SIGKILL');
    const first = await harness.provider.call({ model: 'claude-haiku-4-5', prompt: 'after a kill' });
    expect(first.text).toBe('echo: after a kill');
    expect(first.warm).toBe(true);
    await waitFor(() => pool.pids.length === 2 && !pool.pids.includes(killed), {
      what: 'a replacement for the killed process',
    });
    // Exited: Claude Code ends by itself (SIGTERM to the binary alone, which leads its group); the pool
    // notices with no call.
    expect(readFileSync(`/proc/${other}/cmdline`, 'utf8').split('\0')[0]).toMatch(/\/claude$/);
    process.kill(other, 'SIGTERM');
    await waitFor(() => pool.pids.length === 2 && !pool.pids.includes(other), {
      what: 'a replacement for the exited process',
    });
    const replaced = pool.pids;
    const results = await Promise.all(
      ['x', 'y'].map((prompt) => harness!.provider.call({ model: 'claude-haiku-4-5', prompt })),
    );
    expect(results.map((result) => result.text)).toEqual(['echo: x', 'echo: y']);
    for (const result of results) expect(result.warm).toBe(true);
    expect(pool.pids).toEqual(replaced);
  });

  it('starts cold for a call the pool cannot serve, and closes its processes', async () => {
    const before = claudeProcessIds();
    harness = await claudeAgainstSimulator(
      { rules: [{ match: {}, reply: { text: 'ok' } }] },
      { pool: { size: 1, model: 'claude-haiku-4-5' } },
    );
    const other = await harness.provider.call({ model: 'claude-sonnet-4-5', prompt: 'hi' });
    expect(other.warm).toBeUndefined();
    await harness.provider.pool?.warm();
    await harness.close();
    harness = undefined;
    expect(await waitForNoNewClaudeProcesses(before)).toEqual([]);
  });
});
