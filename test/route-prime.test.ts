import { createHash } from 'node:crypto';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Scenario } from '../src/sim/scenario.js';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { completions } from './helpers/openai-sim.js';
import { runCli, type CliRun } from './helpers/run-cli.js';

// `switchboard route prime` as a user runs it: the built CLI, the official OpenAI SDK over loopback to
// `switchboard sim` answering with scripted structured output, a real SQLite ledger, real files.

const KEY = 'sk-proj-prime-secret-0001';
const SKILLS = {
  'deploy-app': 'Ship a new version of the service to production.',
  'fix-bug': 'Repair a defect in the code.',
  'write-docs': 'Write or update the documentation.',
};
const FIRST_ANSWER = {
  examples: {
    'deploy-app': ['push the release live', 'roll out version 2 to prod', 'ship it to the servers tonight'],
    'fix-bug': [
      'the gizmo went kaput again',
      'my gizmo is kaput',
      'kaput gizmo after the update',
      'why is the gizmo kaput',
    ],
    'write-docs': ['the readme needs a new section', 'explain the install steps in the guide'],
  },
  near_misses: ['order a pizza for the team', 'what is the weather tomorrow'],
};
const EDITED_ANSWER = {
  examples: { 'fix-bug': ['the doohickey is busted', 'doohickey broke'] },
  near_misses: ['book a flight'],
};
/** Asks for these skills' requests (and no other's): what a rule matches a prime request by. */
const asking = (...skills: string[]) => `handle: ${skills.join(', ')}\\.`;
/** gpt-4.1-mini at $0.4 / $1.6 per million tokens. */
const USAGE = { input: 1_000, output: 4_000 };
const COST = 0.0068;

const sims: Simulator[] = [];
afterEach(async () => {
  await Promise.all(sims.splice(0).map((sim) => sim.close()));
});

/** A project folder with description-only skills, its own ledger and a simulator answering `scenario`. */
async function project(scenario: Scenario): Promise<{ cwd: string; sim: Simulator; skills: string }> {
  const sim = await startSimulator({ scenario, maxLifetimeMs: 120_000 });
  sims.push(sim);
  const cwd = mkdtempSync(join(tmpdir(), 'switchboard-prime-'));
  const skills = join(cwd, 'skills');
  mkdirSync(skills);
  for (const [name, description] of Object.entries(SKILLS)) {
    writeFileSync(
      join(skills, `${name}.md`),
      `---\nname: ${name}\ndescription: ${description}\n---\n\nDo it well.\n`,
    );
  }
  writeFileSync(
    join(cwd, 'switchboard.yaml'),
    'route:\n  provider: openai:gpt-4.1-mini\ncall:\n  retries_per_provider: 0\n',
  );
  return { cwd, sim, skills };
}

function run(cwd: string, sim: Simulator, args: string[], input?: string): Promise<CliRun> {
  const env = {
    ...process.env,
    OPENAI_API_KEY: KEY,
    OPENAI_BASE_URL: sim.openAiBaseUrl,
    ANTHROPIC_API_KEY: KEY,
    ANTHROPIC_BASE_URL: sim.url,
  };
  return runCli(args, { cwd, env, ...(input === undefined ? {} : { input }) });
}

const prime = (cwd: string, sim: Simulator, ...extra: string[]) =>
  run(cwd, sim, ['route', 'prime', '--skills', 'skills', '--yes', ...extra]);

interface Row {
  skill: string;
  hash: string;
  text: string;
}
const rowsOf = (skills: string): Row[] =>
  readFileSync(join(skills, '.switchboard-examples.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Row);
const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
/** Every file of a folder and its bytes. */
const snapshot = (folder: string) =>
  Object.fromEntries(readdirSync(folder).map((name) => [name, readFileSync(join(folder, name), 'utf8')]));

describe('switchboard route prime', () => {
  it('stores the LLM examples with each skill file hash, and the local tier routes on them', async () => {
    const { cwd, sim, skills } = await project({
      rules: [
        { match: { text: asking(...Object.keys(SKILLS)) }, reply: { json: FIRST_ANSWER, usage: USAGE } },
      ],
    });
    // Description-only skills: the local model has nothing to go on for this request.
    const before = await run(cwd, sim, ['route', '--skills', 'skills', '--json', 'the gizmo went kaput']);
    expect(before.status).toBe(10);

    const primed = await prime(cwd, sim);
    expect(primed.stderr).toBe('');
    expect(primed.status).toBe(0);
    expect(primed.stdout).toMatch(/3 without examples \(deploy-app, fix-bug, write-docs\)/);
    expect(primed.stdout).toMatch(
      /asking openai:gpt-4\.1-mini once for 25 requests for each of 3 skill\(s\) and 25 near misses: .*about \$0\.\d+/,
    );
    expect(primed.stdout).toContain(`cost $${COST.toFixed(4)}`);
    expect(completions(sim)).toHaveLength(1);

    const rows = rowsOf(skills);
    expect(rows).toHaveLength(11);
    for (const row of rows.filter((entry) => entry.skill !== 'none')) {
      expect(row.hash).toBe(sha256(join(skills, `${row.skill}.md`)));
    }
    // Sorted by skill then text, near misses last: the file diffs well and the same rows make the same bytes.
    expect(rows.map((row) => row.skill)).toEqual([
      ...Array(3).fill('deploy-app'),
      ...Array(4).fill('fix-bug'),
      ...Array(2).fill('write-docs'),
      'none',
      'none',
    ]);
    expect(rows.filter((row) => row.skill === 'fix-bug').map((row) => row.text)).toEqual(
      [...FIRST_ANSWER.examples['fix-bug']].sort(),
    );

    const after = await run(cwd, sim, ['route', '--skills', 'skills', '--json', 'the gizmo went kaput']);
    expect(after.status).toBe(0);
    expect(JSON.parse(after.stdout)).toMatchObject({ skill: 'fix-bug', method: 'local' });

    const stats = await run(cwd, sim, ['stats', '--json']);
    const { calls } = JSON.parse(stats.stdout) as { calls: { calls: number; costUsd: number } };
    expect(calls.calls).toBe(1);
    expect(calls.costUsd).toBeCloseTo(COST, 10);
    expect(readFileSync(join(skills, '.switchboard-examples.jsonl'), 'utf8')).not.toContain(KEY);
  });

  it('primes through the Anthropic API too, where the answer comes as a forced tool call', async () => {
    const { cwd, sim, skills } = await project({
      rules: [
        {
          match: { provider: 'anthropic', text: asking(...Object.keys(SKILLS)) },
          reply: { tool: { name: 'emit_output', input: FIRST_ANSWER }, usage: USAGE },
        },
      ],
    });
    const primed = await prime(cwd, sim, '--provider', 'anthropic:claude-haiku-4-5');
    expect(primed.status).toBe(0);
    expect(sim.requests.filter((entry) => entry.path.endsWith('/messages'))).toHaveLength(1);
    expect(rowsOf(skills).filter((row) => row.skill === 'fix-bug')).toHaveLength(4);
  });

  it('asks nothing for unchanged skills, and only for an edited one, whose rows it replaces', async () => {
    const { cwd, sim, skills } = await project({
      rules: [
        { match: { text: asking(...Object.keys(SKILLS)) }, reply: { json: FIRST_ANSWER, usage: USAGE } },
        { match: { text: asking('fix-bug') }, reply: { json: EDITED_ANSWER, usage: USAGE } },
      ],
    });
    expect((await prime(cwd, sim)).status).toBe(0);
    const first = readFileSync(join(skills, '.switchboard-examples.jsonl'), 'utf8');

    const again = await prime(cwd, sim);
    expect(again.status).toBe(0);
    expect(again.stdout).toMatch(/nothing to prime/);
    expect(completions(sim)).toHaveLength(1);
    expect(readFileSync(join(skills, '.switchboard-examples.jsonl'), 'utf8')).toBe(first);

    appendFileSync(join(skills, 'fix-bug.md'), 'Also look at gadgets.\n');
    // Until primed again, the edited skill's rows are ignored, and routing says what to run.
    const stale = await run(cwd, sim, ['route', '--skills', 'skills', 'the gizmo went kaput']);
    expect(stale.stderr).toMatch(
      /ignored the primed examples of fix-bug, .*`switchboard route prime --skills skills`/,
    );
    expect(stale.status).toBe(10);

    const edited = await prime(cwd, sim);
    expect(edited.status).toBe(0);
    expect(edited.stdout).toMatch(/1 edited since primed \(fix-bug\), 2 up to date/);
    expect(completions(sim)).toHaveLength(2);
    const prompt = JSON.stringify(completions(sim)[1]?.body);
    expect(prompt).toContain('handle: fix-bug.');
    expect(prompt).not.toMatch(/handle: [^.]*(deploy-app|write-docs)/);

    const rows = rowsOf(skills);
    const unchanged = (row: Row) => row.skill === 'deploy-app' || row.skill === 'write-docs';
    const firstRows = first
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Row);
    expect(rows.filter(unchanged)).toEqual(firstRows.filter(unchanged));
    expect(rows.filter((row) => row.skill === 'fix-bug')).toEqual(
      ['doohickey broke', 'the doohickey is busted'].map((text) => ({
        skill: 'fix-bug',
        hash: sha256(join(skills, 'fix-bug.md')),
        text,
      })),
    );
    // A changed skill set makes the near misses stale too: they are asked again with it.
    expect(rows.filter((row) => row.skill === 'none').map((row) => row.text)).toEqual(['book a flight']);
  });

  it('leaves the skills folder byte for byte when the call fails or the answer breaks the schema', async () => {
    const { cwd, sim, skills } = await project({
      rules: [
        { match: { text: asking(...Object.keys(SKILLS)) }, reply: { json: FIRST_ANSWER, usage: USAGE } },
        { match: { text: asking('fix-bug') }, times: 1, fault: { kind: 'status', status: 500 } },
        // An answer that leaves out the skill it was asked for, every time it is asked again.
        {
          match: { text: asking('fix-bug') },
          reply: { json: { examples: {}, near_misses: ['x'] }, usage: USAGE },
        },
      ],
    });
    expect((await prime(cwd, sim)).status).toBe(0);
    appendFileSync(join(skills, 'fix-bug.md'), 'Also look at gadgets.\n');
    const folder = snapshot(skills);

    const failed = await prime(cwd, sim);
    expect(failed.status).toBe(29);
    expect(failed.stderr).toMatch(/^switchboard: .*\n$/);
    expect(snapshot(skills)).toEqual(folder);

    const violating = await prime(cwd, sim);
    expect(violating.status).toBe(26);
    expect(snapshot(skills)).toEqual(folder);
  });

  it('prints the prompt on --dry-run and asks for --yes off a terminal, sending nothing either way', async () => {
    const { cwd, sim, skills } = await project({ rules: [] });
    const dry = await run(cwd, sim, [
      'route',
      'prime',
      '--skills',
      'skills',
      '--dry-run',
      '--per-skill',
      '10',
    ]);
    expect(dry.status).toBe(0);
    expect(dry.stdout).toContain('--- prompt ---');
    expect(dry.stdout).toContain('- fix-bug: Repair a defect in the code.');
    expect(dry.stdout).toContain('write 10 different requests');
    expect(dry.stdout).toMatch(/dry run: nothing was sent or written/);
    const dryJson = await run(cwd, sim, ['route', 'prime', '--skills', 'skills', '--dry-run', '--json']);
    expect(JSON.parse(dryJson.stdout)).toMatchObject({
      dryRun: true,
      prompt: expect.stringContaining('write 25 different requests'),
      estimate: { spec: 'openai:gpt-4.1-mini', costUsd: expect.any(Number) },
    });

    const unconfirmed = await run(cwd, sim, ['route', 'prime', '--skills', 'skills']);
    expect(unconfirmed.status).toBe(2);
    expect(unconfirmed.stderr).toMatch(/would ask the LLM at about \$0\.\d+ \(pass --yes to go ahead/);

    expect(sim.requests).toHaveLength(0);
    expect(existsSync(join(skills, '.switchboard-examples.jsonl'))).toBe(false);
  });

  it('tells hybrid routing of an un-primed folder once about route prime, and routes the word "prime" from standard input', async () => {
    const { cwd, sim } = await project({
      rules: [
        { match: { text: asking(...Object.keys(SKILLS)) }, reply: { json: FIRST_ANSWER, usage: USAGE } },
        {
          match: { system: 'route requests' },
          reply: { json: { skill: 'none', confidence: 0.9, reasoning: 'no fit' } },
        },
      ],
    });
    const hybrid = [
      'route',
      '--skills',
      'skills',
      '--mode',
      'hybrid',
      '--provider',
      'openai:gpt-4.1-mini',
      '--json',
    ];
    const unprimed = await run(cwd, sim, [...hybrid, 'add a search box']);
    const notices = unprimed.stderr.split('\n').filter((line) => line.includes('route prime'));
    expect(notices).toEqual([
      expect.stringMatching(
        /3 of 3 skill\(s\) have no examples \(deploy-app, fix-bug, write-docs\).*`switchboard route prime --skills skills`/,
      ),
    ]);

    expect((await prime(cwd, sim)).status).toBe(0);
    const primed = await run(cwd, sim, [...hybrid, 'add a search box']);
    expect(primed.stderr).not.toContain('route prime');

    const word = await run(cwd, sim, ['route', '--skills', 'skills', '--json'], 'prime');
    expect(JSON.parse(word.stdout)).toMatchObject({ method: expect.any(String) });
  });
});
