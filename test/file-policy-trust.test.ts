import { randomBytes } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
} from 'node:fs';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runAgent } from '../src/agents/claude-agent.js';
import { claudeCodeDenyRules, DENIED_ENTRIES, fileRefusal } from '../src/confinement/file-access.js';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import type { Scenario } from '../src/sim/scenario.js';
import { claudeProcessIds, waitForNoNewClaudeProcesses } from './helpers/claude.js';
import { filesHolding, startTap, type Tap } from './helpers/planted.js';
import { runCli } from './helpers/run-cli.js';

// Issue 35 items 2, 4, 10, 16: one file policy for every reader. The real Claude Code binary runs
// against the simulator, which scripts the tool calls Claude Code then really executes; a tap between
// Claude Code's side and the simulator keeps every request byte for byte. Each kind of credential file
// the deny list names is planted with a canary of its own, and no canary may reach a request, a file
// of the test, the ledger or the output.

const claudeBefore = claudeProcessIds();
const temporary: string[] = [];
let sim: Simulator | undefined;
let tap: Tap | undefined;

afterEach(async () => {
  await tap?.close();
  await sim?.close();
  tap = undefined;
  sim = undefined;
});

afterAll(async () => {
  expect(await waitForNoNewClaudeProcesses(claudeBefore)).toEqual([]);
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});

/** Each kind of entry the deny list names, as it lies in a working folder (nested where it can be). */
const PLANTED_FILES = [
  'sub/.env',
  '.envrc',
  '.env_prod',
  '.ENV.local',
  '.git/config',
  'pkg/.npmrc',
  '.netrc',
  '.pypirc',
  'deploy/.docker/config.json',
  'keys/id_rsa',
  'keys/id_ed25519',
  'certs/server.pem',
  '.aws/credentials',
  '.switchboard/runs/transcript.jsonl',
] as const;

function temporaryRoot(prefix: string): string {
  const root = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  temporary.push(root);
  return root;
}

/** A working folder with every planted file (its own canary each), a README and the configured keys' file. */
function plantedFolder(work: string): { canaries: Map<string, string>; keys: Record<string, string> } {
  const tag = randomBytes(6).toString('hex');
  const canaries = new Map<string, string>();
  for (const [index, file] of PLANTED_FILES.entries()) {
    const canary = `planted-${index}-${tag}-canary`;
    canaries.set(file, canary);
    mkdirSync(dirname(join(work, file)), { recursive: true });
    writeFileSync(join(work, file), `secret = ${canary}\n`);
  }
  writeFileSync(join(work, 'README.md'), `A project. The word to search for is planted.\n`);
  const keys = {
    ANTHROPIC_API_KEY: `sk-ant-api03-PLANTED${tag}anthropic0000`,
    OPENAI_API_KEY: `sk-proj-PLANTED${tag}openai00000000`,
    GEMINI_API_KEY: `AIzaPLANTED${tag}gemini0000000000000`,
  };
  // Item 10: a file a step may read that happens to hold the configured keys.
  writeFileSync(
    join(work, 'notes.txt'),
    Object.entries(keys)
      .map(([name, value]) => `${name}=${value}`)
      .join('\n'),
  );
  return { canaries, keys };
}

/** Read, Grep and Glob at each planted file (by path, and through its folder), then searches of the whole folder. */
function huntingScenario(work: string): Scenario {
  const calls = [
    ...PLANTED_FILES.flatMap((file) => [
      { name: 'Read', input: { file_path: join(work, file) } },
      { name: 'Read', input: { file_path: file } },
      { name: 'Grep', input: { pattern: 'canary', path: join(work, file), output_mode: 'content' } },
      { name: 'Grep', input: { pattern: 'canary', path: dirname(join(work, file)), output_mode: 'content' } },
      { name: 'Glob', input: { pattern: '**/*', path: dirname(join(work, file)) } },
    ]),
    { name: 'Grep', input: { pattern: 'canary|planted', output_mode: 'content', '-i': true } },
    { name: 'Glob', input: { pattern: '**/*' } },
    { name: 'Glob', input: { pattern: '**/.*' } },
    { name: 'Read', input: { file_path: 'notes.txt' } },
  ];
  // Several calls per turn: Claude Code runs them and answers with all their results at once.
  const batches: (typeof calls)[] = [];
  for (let index = 0; index < calls.length; index += 10) batches.push(calls.slice(index, index + 10));
  return {
    rules: [
      ...batches.map((batch, index) => ({
        name: `hunt-${index + 1}`,
        match: { turn: index + 1 },
        reply: { tools: batch },
      })),
      { name: 'hunt-done', match: { turn: batches.length + 1 }, reply: { text: 'hunted' } },
    ],
    fallback: { text: 'hunted' },
  };
}

/** Every request body the tap kept, as one text. */
function requestBodies(tapped: Tap): string {
  return tapped.requests.map((entry) => entry.split('\n').slice(1).join('\n')).join('\n');
}

describe('the one deny list (issue 35 item 4)', () => {
  it('names every kind of credential file in any case at any depth, and its error never quotes content', () => {
    for (const file of PLANTED_FILES) {
      expect(fileRefusal(`/w/${file}`, { root: '/w' }), file).toMatch(/hold secrets|state folder/);
      expect(fileRefusal(`/w/a/B/${file.toUpperCase()}`, { root: '/w' }), file).toBeDefined();
    }
    for (const harmless of [
      'src/env.ts',
      '.environment.md',
      'id_map.go',
      'keys/id_rsa.pub',
      'docker/config.json',
    ])
      expect(fileRefusal(`/w/${harmless}`, { root: '/w' }), harmless).toBeUndefined();
    // A worktree that itself lies under a state folder is not refused whole.
    expect(fileRefusal('/s/.switchboard/worktrees/x/src/a.ts', { root: '/s/.switchboard/worktrees/x' })).toBe(
      undefined,
    );
    expect(fileRefusal('/w/.env', { root: '/w', named: '.env' })).toBe(
      '.env: .env files hold secrets; no tool reads or writes them',
    );
  });

  it('gives Claude Code a Read and an Edit rule for each entry and what lies below it, at any depth', () => {
    const rules = claudeCodeDenyRules('/w', ['/state', '/w/../w']);
    for (const entry of DENIED_ENTRIES) {
      for (const pattern of entry.patterns) {
        const anyCase = pattern.replace(/[a-z]/gi, (c) => `[${c.toLowerCase()}${c.toUpperCase()}]`);
        for (const tool of ['Read', 'Edit']) {
          expect(rules).toContain(`${tool}(**/${anyCase})`);
          expect(rules).toContain(`${tool}(**/${anyCase}/**)`);
        }
      }
    }
    expect(rules).toContain('Read(//state/**)');
    // A hidden folder holding the working folder is not a rule: it would refuse the folder itself.
    expect(rules.some((rule) => rule.includes('//w'))).toBe(false);
  });
});

describe('Claude Code refuses every deny-list entry to Read, Grep and Glob (issue 35 items 4, 10, 16)', () => {
  it('in a Claude Code workflow step with the default tools (provider claude-agent-sdk)', async () => {
    const root = temporaryRoot('switchboard-file-policy-step-');
    const work = join(root, 'work');
    mkdirSync(work);
    const { canaries, keys } = plantedFolder(work);
    sim = await startSimulator({ scenario: huntingScenario(work), maxLifetimeMs: 120_000 });
    const tapped = await startTap(sim.url);
    tap = tapped;
    writeFileSync(
      join(root, 'hunt.yaml'),
      `workflow:
  name: hunt
  entry_point: look
  runtime:
    provider: claude-agent-sdk
    working_dir: work
agents:
  - name: look
    model: claude-haiku-4.5
    prompt: Look around.
    routes:
      - to: $end
output:
  answer: "{{ look.output.result }}"
`,
    );
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      HOME: join(root, 'home'),
      ...keys,
      ANTHROPIC_BASE_URL: tapped.url,
      SWITCHBOARD_STATE_DIR: join(root, 'state'),
    };
    delete env['ANTHROPIC_AUTH_TOKEN'];
    mkdirSync(join(root, 'home'));
    const result = await runCli(['workflow', 'run', join(root, 'hunt.yaml'), '--json'], { cwd: work, env });

    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain('hunted');
    const bodies = requestBodies(tapped);
    // The hunt ran: the whole-folder search found the README, and the keys' file was read, redacted.
    expect(bodies).toContain('README.md');
    expect(bodies).toContain('OPENAI_API_KEY=[redacted]');
    const secrets = [...canaries.values(), ...Object.values(keys)];
    for (const secret of secrets) expect(bodies, 'a request body').not.toContain(secret);
    for (const secret of secrets) expect(result.stdout + result.stderr).not.toContain(secret);
    const planted = [...PLANTED_FILES.map((file) => join(work, file)), join(work, 'notes.txt')];
    expect(filesHolding(root, secrets, planted)).toEqual([]);
  });

  it('in an agent run with Read, Grep and Glob', async () => {
    const root = temporaryRoot('switchboard-file-policy-agent-');
    const work = join(root, 'work');
    mkdirSync(work);
    const { canaries } = plantedFolder(work);
    sim = await startSimulator({ scenario: huntingScenario(work), maxLifetimeMs: 120_000 });
    const tapped = await startTap(sim.url);
    tap = tapped;
    const transcriptPath = join(root, 'run', 'transcript.jsonl');
    const outcome = await runAgent({
      cwd: work,
      prompt: 'Look around.',
      allowedTools: ['Read', 'Grep', 'Glob'],
      transcriptPath,
      connection: { baseUrl: tapped.url, apiKey: 'sk-ant-test-key', configDir: join(root, 'config') },
    });

    expect(outcome.status, outcome.error).toBe('success');
    const bodies = requestBodies(tapped);
    expect(bodies).toContain('README.md');
    for (const secret of canaries.values()) {
      expect(bodies, 'a request body').not.toContain(secret);
      expect(JSON.stringify(outcome)).not.toContain(secret);
    }
    const planted = PLANTED_FILES.map((file) => join(work, file));
    expect(filesHolding(root, [...canaries.values()], planted)).toEqual([]);
    expect(existsSync(transcriptPath)).toBe(true);
    expect(readFileSync(transcriptPath, 'utf8')).toContain('hunted');
  });
});

describe('a Read raced with a symlink flip cannot leave the worktree (issue 35 item 2)', () => {
  /** Tool calls per tool (Read, Grep, Glob, Write, Edit), in batches of 10 per turn. */
  const CALLS_PER_TOOL = 40;

  it(`${CALLS_PER_TOOL * 5} file tool calls while Bash flips a link between a file and HOME/.ssh/id_rsa`, async () => {
    const root = temporaryRoot('switchboard-file-race-');
    const work = join(root, 'work');
    const home = join(root, 'home');
    mkdirSync(work);
    mkdirSync(join(home, '.ssh'), { recursive: true });
    const canary = `planted-ssh-${randomBytes(6).toString('hex')}-key`;
    const key = join(home, '.ssh', 'id_rsa');
    writeFileSync(key, `-----BEGIN OPENSSH PRIVATE KEY-----\n${canary}\n`);
    writeFileSync(join(work, 'harmless.txt'), 'harmless words\n');
    const flip = `while true; do ln -sfn harmless.txt link; ln -sfn ${key} link; done`;
    const batch = [
      { name: 'Read', input: { file_path: 'link' } },
      { name: 'Grep', input: { pattern: '.', path: 'link', output_mode: 'content' } },
      { name: 'Glob', input: { pattern: 'link*' } },
      { name: 'Write', input: { file_path: join(work, 'link'), content: 'overwritten\n' } },
      {
        name: 'Edit',
        input: { file_path: join(work, 'link'), old_string: 'harmless', new_string: 'edited' },
      },
    ];
    const turns = (CALLS_PER_TOOL * batch.length) / 10;
    const scenario: Scenario = {
      rules: [
        {
          name: 'flip',
          match: { turn: 1 },
          reply: { tool: { name: 'Bash', input: { command: flip, run_in_background: true } } },
        },
        ...Array.from({ length: turns }, (_, index) => ({
          name: `race-${index + 1}`,
          match: { turn: index + 2 },
          reply: { tools: [...batch, ...batch] },
        })),
        { name: 'race-done', match: { turn: turns + 2 }, reply: { text: 'raced' } },
      ],
      fallback: { text: 'raced' },
    };
    sim = await startSimulator({ scenario, maxLifetimeMs: 240_000 });
    const tapped = await startTap(sim.url);
    tap = tapped;
    const savedHome = process.env['HOME'];
    process.env['HOME'] = home;
    let outcome;
    try {
      outcome = await runAgent({
        cwd: work,
        prompt: 'Race.',
        allowedTools: ['Bash', 'Read', 'Grep', 'Glob', 'Write', 'Edit'],
        transcriptPath: join(root, 'run', 'transcript.jsonl'),
        connection: { baseUrl: tapped.url, apiKey: 'sk-ant-test-key', configDir: join(root, 'config') },
      });
    } finally {
      process.env['HOME'] = savedHome;
    }

    expect(outcome.status, outcome.error).toBe('success');
    expect(sim.requests.map((entry) => entry.rule)).toContain('race-done');
    const bodies = requestBodies(tapped);
    // The races ran: reads through the link reached the harmless file.
    expect(bodies).toContain('harmless words');
    expect(bodies).not.toContain(canary);
    expect(JSON.stringify(outcome)).not.toContain(canary);
    // Links the flip left in the worktree lead to the key itself: only files of their own count.
    const holding = filesHolding(root, [canary], [key]).filter(
      (found) => !lstatSync(found.slice(0, found.lastIndexOf(': '))).isSymbolicLink(),
    );
    expect(holding).toEqual([]);
    // No write went through the link to the key, nor anywhere else outside the worktree.
    expect(readFileSync(key, 'utf8')).toContain(canary);
    expect(readdirSync(join(home, '.ssh'))).toEqual(['id_rsa']);
    expect(readdirSync(root).sort()).toEqual(['config', 'home', 'run', 'work']);
  });
});
