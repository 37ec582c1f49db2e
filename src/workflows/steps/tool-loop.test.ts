import { randomUUID } from 'node:crypto';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderRegistry } from '../../providers/registry.js';
import type { Scenario } from '../../sim/scenario.js';
import { startSimulator, type Simulator } from '../../sim/server.js';
import type { AgentStep } from '../model.js';
import { costOf } from '../../core/prices.js';
import type { StepContext } from '../step-executor.js';
import { testStepContext } from '../../../test/helpers/step-context.js';
import { executeAgentStep } from './agent.js';

// LLM steps on the API providers with tools: the official SDKs against `switchboard sim` on loopback,
// the real call(), real files and a real MCP server over stdio.

const TOOLBOX = join(import.meta.dirname, '../../../test/fixtures/mcp/toolbox-server.mjs');

let sim: Simulator;
let providers: ProviderRegistry;
const temporary: string[] = [];

beforeAll(async () => {
  sim = await startSimulator({ maxLifetimeMs: 300_000 });
  providers = new ProviderRegistry({
    anthropic: { apiKey: 'sk-ant-tool-loop', baseUrl: sim.url },
    openai: { apiKey: 'sk-openai-tool-loop', baseUrl: sim.openAiBaseUrl },
    gemini: { apiKeys: ['gemini-tool-loop'], baseUrl: sim.url },
  });
});
afterAll(async () => {
  await providers.close();
  await sim.close();
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

function folder(files: Record<string, string> = {}): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), 'switchboard-tool-loop-')));
  temporary.push(directory);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(directory, name, '..'), { recursive: true });
    writeFileSync(join(directory, name), text);
  }
  return directory;
}

function agentStep(fields: Partial<AgentStep>): AgentStep {
  return {
    type: 'agent',
    name: 'reader',
    routes: [],
    input: [],
    prompt: 'What does notes.txt say?',
    ...fields,
  };
}

/** Runs the step in `dir` (its working directory) against the scenario; the requests it sent. */
async function run(
  step: AgentStep,
  dir: string,
  scenario: Scenario,
  extra: { mcpServers?: StepContext['mcpServers']; stateDir?: string } = {},
) {
  sim.setScenario(scenario);
  const before = sim.requests.length;
  const context = testStepContext({
    step,
    dir,
    stateDir: extra.stateDir ?? join(dir, '.switchboard'),
    registry: providers,
    ...(extra.mcpServers === undefined ? {} : { mcpServers: extra.mcpServers }),
  });
  const outcome = await executeAgentStep(context);
  return { outcome, requests: sim.requests.slice(before), events: context.events };
}

const PROVIDERS = [
  ['anthropic', 'claude', 'claude-haiku-4.5'],
  ['gemini', 'gemini', 'gemini-2.5-flash'],
  ['openai', 'openai', 'gpt-4.1-mini'],
] as const;

describe('an LLM step on an API provider runs its tools', () => {
  for (const [provider, conductorName, model] of PROVIDERS) {
    it(`${provider}: the model's read_file call runs, the file's content goes back, its answer is the output`, async () => {
      const dir = folder({ 'notes.txt': 'the secret word is heliotrope\n' });
      const { outcome, requests, events } = await run(
        agentStep({
          provider: conductorName,
          model,
          output: { word: { type: 'string', required: true, nullable: false } },
        }),
        dir,
        {
          rules: [
            {
              match: { provider, turn: 1, tools: 'read_file' },
              reply: {
                tool: { name: 'read_file', input: { path: 'notes.txt' } },
                usage: { input: 400, output: 20 },
              },
            },
            {
              // Answers only when the file's words came back to it.
              match: { provider, text: 'the secret word is heliotrope' },
              reply: {
                tool: { name: 'emit_output', input: { word: 'heliotrope' } },
                usage: { input: 500, output: 10 },
              },
            },
          ],
          fallback: { text: 'no file was read' },
        },
      );
      expect(outcome).toMatchObject({ status: 'completed', output: { word: 'heliotrope' } });
      expect(requests).toHaveLength(2);
      expect(requests[0]?.tools).toEqual([
        'read_file',
        'list_files',
        'search_files',
        'write_file',
        'edit_file',
        'run_command',
        'emit_output',
      ]);
      expect(requests[1]?.text).toContain('the secret word is heliotrope');
      // The rendered prompt, then the tool's call and result (each turn's `model-turn` is written by the
      // engine's call, which this context stands in for: test/workflow-tool-loop.test.ts has them).
      expect(events.map((event) => event.type)).toEqual(['step-prompt', 'tool-call', 'tool-result']);
      expect(events[1]?.data).toMatchObject({ tool: 'read_file', input: '{"path":"notes.txt"}' });
      expect(events[2]?.data).toMatchObject({
        tool: 'read_file',
        error: false,
        result: 'the secret word is heliotrope',
        durationMs: expect.any(Number),
      });
      // The step costs what its two turns cost at list price (400 tokens in and 20 out, then 500 and 10).
      const resolved = String(events[0]?.data?.['provider']).split(':')[1] ?? '';
      const price = (input: number, output: number): number =>
        costOf(resolved, {
          inputTokens: input,
          outputTokens: output,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
        }) ?? Number.NaN;
      expect(outcome.costUsd).toBeGreaterThan(0);
      expect(outcome.costUsd).toBeCloseTo(price(400, 20) + price(500, 10), 12);
    });
  }

  it('tools: [] offers no tools (one plain call), where leaving tools out offers the default set', async () => {
    const scenario: Scenario = {
      rules: [{ match: { provider: 'openai' }, reply: { text: 'I read nothing.' } }],
    };
    const dir = folder({ 'notes.txt': 'heliotrope' });
    const none = await run(
      agentStep({ provider: 'openai', model: 'gpt-4.1-mini', tools: [] }),
      dir,
      scenario,
    );
    expect(none.outcome).toMatchObject({ status: 'completed', output: { result: 'I read nothing.' } });
    expect(none.requests).toHaveLength(1);
    expect(none.requests[0]?.tools).toEqual([]);
    expect(none.requests[0]?.body).not.toHaveProperty('tools');
    expect(none.events.map((event) => event.type)).toEqual(['step-prompt']);

    const byDefault = await run(agentStep({ provider: 'openai', model: 'gpt-4.1-mini' }), dir, scenario);
    expect(byDefault.outcome).toMatchObject({ status: 'completed', output: { result: 'I read nothing.' } });
    expect(byDefault.requests.map((request) => request.tools)).toEqual([
      ['read_file', 'list_files', 'search_files', 'write_file', 'edit_file', 'run_command'],
    ]);
  });

  it("a list offers those tools: Claude Code's Read and Grep as read_file and search_files", async () => {
    const { outcome, requests } = await run(
      agentStep({ provider: 'claude', model: 'claude-haiku-4.5', tools: ['Read', 'search_files'] }),
      folder({ 'notes.txt': 'heliotrope' }),
      { rules: [{ match: { provider: 'anthropic' }, reply: { text: 'Nothing to look up.' } }] },
    );
    expect(outcome).toMatchObject({ status: 'completed', output: { result: 'Nothing to look up.' } });
    expect(requests.map((request) => request.tools)).toEqual([['read_file', 'search_files']]);
  });
});

describe('the per-turn tool-call cap', () => {
  it('runs the first 32 calls of a turn and answers the 33rd and 34th with an error the model can act on', async () => {
    const files = Object.fromEntries(
      Array.from({ length: 34 }, (_, index) => [`f${index + 1}.txt`, `content-${index + 1}-end`]),
    );
    const { outcome, requests, events } = await run(
      agentStep({ provider: 'openai', model: 'gpt-4.1-mini', tools: ['read_file'] }),
      folder(files),
      {
        rules: [
          {
            match: { provider: 'openai', turn: 1 },
            reply: {
              tools: Array.from({ length: 34 }, (_, index) => ({
                name: 'read_file',
                input: { path: `f${index + 1}.txt` },
              })),
            },
          },
          { match: { provider: 'openai' }, reply: { text: 'read what I could' } },
        ],
      },
    );
    expect(outcome).toMatchObject({ status: 'completed', output: { result: 'read what I could' } });
    expect(requests).toHaveLength(2);
    const ran = events.filter((event) => event.type === 'tool-call').map((event) => event.data?.['input']);
    expect(ran).toHaveLength(32);
    expect(ran.at(-1)).toBe('{"path":"f32.txt"}');
    // The second turn carries every result: the model sees which calls ran and why the others did not.
    const second = JSON.stringify(requests[1]?.body);
    expect(second).toContain('content-32-end');
    expect(second).not.toContain('content-33-end');
    expect(second.split('not run: at most 32 tool calls are run per turn')).toHaveLength(3);
  });
});

describe('the file tools stay in the working directory', () => {
  it('refuse ../outside, a symlink out and .env files, and keep the state folder out: none of it reaches the model', async () => {
    const root = folder({
      'outside/secret.txt': 'outside-secret-value\n',
      'work/notes.txt': 'plain notes\n',
      'work/.env': 'API_TOKEN=dotenv-secret-value\n',
      'work/config/.env.local': 'OTHER=dotenv-local-value\n',
      'work/.switchboard/ledger-notes.txt': 'state-secret-value\n',
    });
    const work = join(root, 'work');
    symlinkSync(join(root, 'outside/secret.txt'), join(work, 'link.txt'));
    symlinkSync(join(root, 'outside'), join(work, 'linkdir'));
    const reads = [
      '../outside/secret.txt',
      join(root, 'outside/secret.txt'),
      'link.txt',
      'linkdir/secret.txt',
      '.env',
      'config/.env.local',
      '.switchboard/ledger-notes.txt',
    ];
    const { outcome, requests, events } = await run(
      agentStep({ provider: 'claude', model: 'claude-haiku-4.5' }),
      work,
      {
        rules: [
          {
            match: { provider: 'anthropic', turn: 1 },
            reply: {
              tools: [
                ...reads.map((path) => ({ name: 'read_file', input: { path } })),
                { name: 'list_files', input: { pattern: '**/*' } },
                { name: 'search_files', input: { pattern: 'secret-value|local-value' } },
              ],
            },
          },
          { match: { provider: 'anthropic', turn: 2 }, reply: { text: 'done' } },
        ],
      },
    );
    expect(outcome).toMatchObject({ status: 'completed', output: { result: 'done' } });
    const results = events.filter((event) => event.type === 'tool-result').map((event) => event.data ?? {});
    expect(results.slice(0, reads.length).map((result) => [result['error'], result['result']])).toEqual([
      [true, expect.stringMatching(/^\.\.\/outside\/secret\.txt: outside the working directory/)],
      [true, expect.stringMatching(/outside the working directory/)],
      [true, expect.stringMatching(/^link\.txt: outside the working directory/)],
      [true, expect.stringMatching(/^linkdir\/secret\.txt: outside the working directory/)],
      [true, '.env: .env files hold secrets; no tool reads or writes them'],
      [true, 'config/.env.local: .env files hold secrets; no tool reads or writes them'],
      [
        true,
        ".switchboard/ledger-notes.txt: Switchboard's state folders (ledgers, transcripts) hold secrets; no tool reads or writes them",
      ],
    ]);
    // Listing and searching pass over them too.
    expect(results[reads.length]).toMatchObject({ error: false, result: 'notes.txt' });
    expect(results[reads.length + 1]).toMatchObject({
      error: false,
      result: 'no line matches secret-value|local-value',
    });
    const sent = JSON.stringify(requests[1]?.body);
    for (const secret of [
      'outside-secret-value',
      'dotenv-secret-value',
      'dotenv-local-value',
      'state-secret-value',
    ]) {
      expect(sent).not.toContain(secret);
    }
  });
});

describe('MCP servers on an API step', () => {
  /** The toolbox server as the engine hands it to a step, tagged so that its process can be found. */
  function toolbox(log: string, tag: string): StepContext['mcpServers'] {
    return {
      toolbox: {
        type: 'stdio',
        command: process.execPath,
        args: [TOOLBOX, tag],
        env: { TOOLBOX_LOG: log },
        tools: ['lookup'],
      },
    };
  }

  /** Processes whose command line holds `tag`: the toolbox servers a step started and left behind. */
  function running(tag: string): string[] {
    return readdirSync('/proc').filter((pid) => {
      if (!/^\d+$/.test(pid)) return false;
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(tag);
      } catch {
        return false;
      }
    });
  }

  it("calls the server's allowed tool through the MCP client, uses its result, and ends the server with the step", async () => {
    const dir = folder();
    const log = join(dir, 'toolbox.log');
    const tag = `toolbox-${randomUUID()}`;
    const { outcome, requests, events } = await run(
      agentStep({
        provider: 'claude',
        model: 'claude-haiku-4.5',
        prompt: 'What does the toolbox say about plugins?',
      }),
      dir,
      {
        rules: [
          {
            match: { provider: 'anthropic', turn: 1, tools: 'toolbox__lookup' },
            reply: { tool: { name: 'toolbox__lookup', input: { word: 'plugin' } } },
          },
          {
            match: { provider: 'anthropic', text: 'heliotrope' },
            reply: { text: 'The toolbox says heliotrope.' },
          },
        ],
        fallback: { text: 'the tool did not answer' },
      },
      { mcpServers: toolbox(log, tag) },
    );
    expect(outcome).toMatchObject({
      status: 'completed',
      output: { result: 'The toolbox says heliotrope.' },
    });
    // Only the tool the server's tools: allow is offered (erase and shout stay hidden).
    expect(requests[0]?.tools).toEqual([
      'read_file',
      'list_files',
      'search_files',
      'write_file',
      'edit_file',
      'run_command',
      'toolbox__lookup',
    ]);
    expect(requests[1]?.text).toContain('toolbox entry for plugin: heliotrope');
    expect(readFileSync(log, 'utf8')).toBe('lookup\n');
    expect(events.find((event) => event.type === 'tool-result')?.data).toMatchObject({
      tool: 'toolbox__lookup',
      error: false,
      result: expect.stringContaining('heliotrope'),
    });
    expect(running(tag)).toEqual([]);
  });

  it('a list names the MCP tool as server__tool; a loop that fails still ends the server', async () => {
    const dir = folder();
    const tag = `toolbox-${randomUUID()}`;
    const { outcome, requests } = await run(
      agentStep({
        provider: 'openai',
        model: 'gpt-4.1-mini',
        tools: ['toolbox__lookup'],
        maxAgentIterations: 2,
      }),
      dir,
      {
        rules: [
          {
            match: { provider: 'openai' },
            reply: { tool: { name: 'toolbox__lookup', input: { word: 'again' } } },
          },
        ],
      },
      { mcpServers: toolbox(join(dir, 'toolbox.log'), tag) },
    );
    expect(outcome).toMatchObject({ status: 'failed', error: { code: 'MAX_TURNS' } });
    expect(requests.map((request) => request.tools)).toEqual([['toolbox__lookup'], ['toolbox__lookup']]);
    expect(running(tag)).toEqual([]);
  });
});
