import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/core/errors.js';
import { createProgram } from '../src/cli/program.js';
import { runCli } from './helpers/run-cli.js';

// The reference in docs/ cannot drift from the CLI: every option of every command's --help is on the
// command's page, and docs/exit-codes.md lists exactly EXIT_CODES.

const root = join(import.meta.dirname, '..');

/** The docs page of each top-level command; its subcommands share it. The global options live in config. */
const pages: Record<string, string> = {
  '': 'docs/config.md',
  route: 'docs/route.md',
  eval: 'docs/route.md',
  fit: 'docs/route.md',
  call: 'docs/call.md',
  sim: 'docs/call.md',
  serve: 'docs/serve.md',
  ui: 'docs/dashboard.md',
  mcp: 'docs/mcp.md',
  metrics: 'docs/serve.md',
  stats: 'docs/serve.md',
  db: 'docs/ledger.md',
  keys: 'docs/keys.md',
  agent: 'docs/agent.md',
  workflow: 'docs/workflows.md',
  worker: 'docs/workers.md',
  hooks: 'docs/hooks.md',
};

/** Every command of the tree with its path, e.g. `agent run`; the root's path is ''. */
function commands(command: Command, path: string[] = []): { path: string; command: Command }[] {
  return [
    { path: path.join(' '), command },
    ...command.commands.flatMap((sub) => commands(sub, [...path, sub.name()])),
  ];
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

describe('docs/', async () => {
  const tree = commands(await createProgram());

  it.each(tree.map(({ path, command }) => [path === '' ? 'switchboard' : path, path, command] as const))(
    '%s: every --help option is on its docs page',
    (_label, path, command) => {
      const group = path.split(' ')[0] ?? '';
      const page = pages[group];
      if (page === undefined) {
        throw new Error(`command "${path}" has no docs page: add "${group}" to pages in test/docs.test.ts`);
      }
      const text = readFileSync(join(root, page), 'utf8');
      const missing = command.options
        .map((option) => option.long)
        .filter((flag): flag is string => flag !== undefined && flag !== '--help')
        // `--mode` must not pass for `--modes`: the flag ends where a word character or dash would go on.
        .filter((flag) => !new RegExp(`${escapeRegExp(flag)}(?![\\w-])`).test(text));
      expect(missing, `document these options of "switchboard ${path}" in ${page}`).toEqual([]);
    },
  );

  it('docs/exit-codes.md lists exactly the codes in EXIT_CODES (src/core/errors.ts)', () => {
    const text = readFileSync(join(root, 'docs/exit-codes.md'), 'utf8');
    const documented = new Map<string, number>();
    for (const match of text.matchAll(/^\|\s*(\d+)\s*\|\s*`([A-Z_]+)`\s*\|\s*(\S.*?)\s*\|$/gm)) {
      documented.set(match[2] as string, Number(match[1]));
    }
    const expected = new Map(Object.entries(EXIT_CODES));
    const problems = [
      ...[...expected]
        .filter(([name, code]) => documented.get(name) !== code)
        .map(([name, code]) => `add the row | ${code} | \`${name}\` | what it means | to docs/exit-codes.md`),
      ...[...documented]
        .filter(([name]) => !expected.has(name))
        .map(
          ([name, code]) => `remove the row for ${code} ${name} from docs/exit-codes.md (not in EXIT_CODES)`,
        ),
    ];
    expect(problems).toEqual([]);
  });
});

describe('docs/exit-codes.md says who exits with a code, and what it leaves behind', () => {
  /** The table row of `code`. */
  function row(code: number): string {
    const text = readFileSync(join(root, 'docs/exit-codes.md'), 'utf8');
    return text.split('\n').find((line) => line.startsWith(`| ${code} `)) ?? '';
  }

  it('47: `workflow status` of an unknown run exits 47, and the row names `workflow`', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'switchboard-docs-47-'));
    const env = { ...process.env, SWITCHBOARD_STATE_DIR: join(cwd, 'state') };
    const result = await runCli(['workflow', 'status', 'wf-nope'], { cwd, env });
    expect(result.status, result.stderr).toBe(EXIT_CODES.RUN_NOT_FOUND);
    expect(row(47)).toMatch(/`workflow`/);
  });

  it('50: a problem found while the run runs exits 50 with the run recorded, and the row says so', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'switchboard-docs-50-'));
    const env = { ...process.env, SWITCHBOARD_STATE_DIR: join(cwd, 'state') };
    writeFileSync(
      join(cwd, 'gated.yaml'),
      `workflow:
  name: gated
  entry_point: find
agents:
  - name: find
    type: set
    values:
      items: "[1]"
    routes:
      - to: each
for_each:
  - name: each
    type: for_each
    source: find.output.items
    as: n
    agent:
      name: ask
      type: human_gate
      prompt: ok?
      options:
        - { label: Yes, value: yes, route: $end }
    routes:
      - to: $end
`,
    );
    const result = await runCli(['workflow', 'run', 'gated.yaml', '--run-id', 'wf-gated'], { cwd, env });
    expect(result.status, result.stderr).toBe(EXIT_CODES.WORKFLOW_INVALID);
    const listed = await runCli(['workflow', 'ls', '--json'], { cwd, env });
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({ id: 'wf-gated', status: 'failed' }),
    ]);
    expect(row(50)).toMatch(/notes below/);
    expect(readFileSync(join(root, 'docs/exit-codes.md'), 'utf8')).toMatch(
      /the recorded run ends `failed` with\nthis code/,
    );
  });
});
