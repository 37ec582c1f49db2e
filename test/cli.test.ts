import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openLedger } from '../src/store/ledger.js';

const root = join(import.meta.dirname, '..');
const cli = join(root, 'dist/cli/main.js');
const skills = join(root, 'test/fixtures/skills');
const brokenSkills = join(root, 'test/fixtures/broken-skills');
const devSet = join(root, 'test/fixtures/dev.jsonl');

/** The figures `switchboard fit --json` reports for one set. */
interface FitFigures {
  confidenceThreshold: number;
  marginThreshold: number;
  score: number;
  inScopeAccuracy: number;
  outOfScopeRecall: number;
  count: number;
}

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI in a fresh working directory, so each test has its own ledger and models. */
function run(
  args: string[],
  options: { input?: string | Buffer; cwd?: string; env?: Record<string, string> } = {},
): Run {
  const cwd = options.cwd ?? mkdtempSync(join(tmpdir(), 'switchboard-cli-'));
  const result = spawnSync(process.execPath, [cli, ...args], {
    cwd,
    input: options.input ?? '',
    encoding: 'utf8',
    env: { ...process.env, ...options.env },
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

function expectOneLineError(result: Run, status: number, pattern: RegExp): void {
  expect(result.status).toBe(status);
  const lines = result.stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^switchboard: /);
  expect(lines[0]).toMatch(pattern);
  expect(result.stderr).not.toMatch(/\n\s+at /);
}

describe('switchboard route', () => {
  it('prints a readable decision and exits 0 when routed', () => {
    const result = run(['route', '--skills', skills, 'the app crashes whenever I save']);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^fix-bug\s+confidence 0\.\d\d\s+via local/);
    expect(result.stdout).toMatch(/candidates: fix-bug/);
  });

  it('prints the RouteDecision as JSON and exits 10 when it abstains', () => {
    const result = run(['route', '--skills', skills, '--json', 'order a large pepperoni pizza for dinner']);
    expect(result.status).toBe(10);
    const decision = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(decision).toMatchObject({ skill: 'none', method: 'local' });
    for (const field of ['id', 'confidence', 'reasoning', 'candidates', 'costUsd', 'durationMs', 'timings']) {
      expect(decision).toHaveProperty(field);
    }
  });

  it('reads the request from standard input, including invalid UTF-8 and 100 kB of text', () => {
    const piped = run(['route', '--skills', skills, '--json'], { input: 'add a dark mode setting\n' });
    expect(JSON.parse(piped.stdout)).toMatchObject({ skill: 'add-feature' });
    const invalid = run(['route', '--skills', skills, '--json', '-'], {
      input: Buffer.from([
        0x66, 0x69, 0x78, 0x20, 0xff, 0xfe, 0xc3, 0x28, 0x20, 0x63, 0x72, 0x61, 0x73, 0x68,
      ]),
    });
    expect([0, 10]).toContain(invalid.status);
    expect(JSON.parse(invalid.stdout)).toHaveProperty('skill');
    const huge = run(['route', '--skills', skills, '--json'], {
      input: 'the app crashes on save. '.repeat(4000),
    });
    expect(huge.status).toBe(0);
    expect(JSON.parse(huge.stdout).warnings[0]).toMatch(/cut to its first/);
  });

  it('rejects an empty request with a one-line error and exit 2', () => {
    expectOneLineError(run(['route', '--skills', skills, '   ']), 2, /request is empty/);
    expectOneLineError(run(['route', '--skills', skills], { input: '' }), 2, /request is empty/);
  });

  it('names a missing or empty skills folder (exit 4)', () => {
    expectOneLineError(run(['route', '--skills', '/no/such/skills', 'hi']), 4, /does not exist.*--skills/);
    const empty = mkdtempSync(join(tmpdir(), 'switchboard-empty-'));
    expectOneLineError(run(['route', '--skills', empty, 'hi']), 4, /no skills found/);
    expectOneLineError(run(['route', 'hi']), 2, /no skills given/);
  });

  it('warns about broken skill files and still routes, unless --strict', () => {
    const result = run(['route', '--skills', brokenSkills, 'the app crashes on startup']);
    expect(result.status).toBe(0);
    expect(result.stderr).toMatch(/bad-yaml\.md: front matter is not valid YAML/);
    expect(result.stderr).toMatch(/zz-duplicate\.md: duplicate skill name "fix-bug"/);
    expectOneLineError(run(['route', '--strict', '--skills', brokenSkills, 'crash']), 4, /bad-yaml\.md/);
  });

  it('rejects an unknown mode, a bad threshold and a malformed config', () => {
    expectOneLineError(run(['route', '--skills', skills, '--mode', 'psychic', 'x']), 2, /not a routing mode/);
    expect(run(['route', '--skills', skills, '--confidence-threshold', '7', 'x']).status).toBe(2);
    const cwd = mkdtempSync(join(tmpdir(), 'switchboard-config-'));
    writeFileSync(join(cwd, 'switchboard.yaml'), 'route:\n  mode: [local\n');
    expectOneLineError(run(['route', '--skills', skills, 'x'], { cwd }), 3, /not valid YAML/);
  });

  it('takes thresholds from the config file, the environment and flags, in that order', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'switchboard-precedence-'));
    writeFileSync(
      join(cwd, 'switchboard.yaml'),
      `route:\n  skills: ${skills}\n  confidence_threshold: 0.99\n`,
    );
    const text = 'the app crashes whenever I save';
    expect(run(['route', text], { cwd }).status).toBe(10);
    const env = { SWITCHBOARD_ROUTE_CONFIDENCE_THRESHOLD: '0.01' };
    expect(run(['route', text], { cwd, env }).status).toBe(0);
    expect(run(['route', '--confidence-threshold', '0.99', text], { cwd, env }).status).toBe(10);
    // A .env file counts as environment, below the real environment.
    writeFileSync(join(cwd, '.env'), 'SWITCHBOARD_ROUTE_CONFIDENCE_THRESHOLD=0.01\n');
    expect(run(['route', text], { cwd }).status).toBe(0);
    expect(
      run(['route', text], { cwd, env: { SWITCHBOARD_ROUTE_CONFIDENCE_THRESHOLD: '0.99' } }).status,
    ).toBe(10);
  });

  it('records decisions from several processes routing at once, none lost', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'switchboard-concurrent-'));
    run(['route', '--skills', skills, 'warm the model cache'], { cwd });
    const processes = 6;
    const perProcess = 5;
    const script = `for line in $(seq 1 ${perProcess}); do "${process.execPath}" "${cli}" route --skills "${skills}" "crash number $line $$" >/dev/null; done`;
    const codes = await Promise.all(
      Array.from(
        { length: processes },
        () =>
          new Promise<number | null>((resolve) => {
            const child = spawn('bash', ['-c', script], { cwd, stdio: ['ignore', 'ignore', 'inherit'] });
            child.on('exit', resolve);
          }),
      ),
    );
    expect(codes.every((code) => code === 0)).toBe(true);
    const ledger = openLedger({ stateDir: join(cwd, '.switchboard') });
    expect(await ledger.countRouteDecisions()).toBe(1 + processes * perProcess);
    await ledger.close();
  });
});

describe('switchboard eval and fit', () => {
  it('evaluates a labelled dataset as a table and as JSON', () => {
    const table = run(['eval', '--skills', skills, '--dataset', devSet]);
    expect(table.status).toBe(0);
    expect(table.stdout).toMatch(/accuracy/i);
    const json = run(['eval', '--skills', skills, '--dataset', devSet, '--json']);
    const { metrics } = JSON.parse(json.stdout) as { metrics: Record<string, unknown> };
    expect(metrics).toMatchObject({ count: 5, inScopeCount: 4, outOfScopeCount: 1 });
    expect(metrics['accuracy']).toBeGreaterThanOrEqual(0.6);
  });

  it('rejects a dataset with labels that are not skills (exit 5)', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'switchboard-labels-'));
    writeFileSync(join(cwd, 'bad.jsonl'), '{"text": "x", "expected": "ghost"}\n');
    expectOneLineError(run(['eval', '--skills', skills, '--dataset', 'bad.jsonl'], { cwd }), 5, /"?ghost"?/);
  });

  it('fits the confidence threshold to a target share of LLM calls', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'switchboard-share-'));
    const requests = [
      'the app crashes whenever I save',
      'add a dark mode setting',
      'update the README with install steps',
      'the gizmo went kaput',
      'order a large pepperoni pizza',
      'something odd with the thing',
    ];
    writeFileSync(join(cwd, 'requests.txt'), requests.join('\n'));
    const strict = JSON.parse(
      run(['fit', '--skills', skills, '--llm-share', '0.5', '--requests', 'requests.txt', '--json'], { cwd })
        .stdout,
    ) as {
      llmShare: number;
      confidenceThreshold: number;
    };
    expect(strict.llmShare).toBeLessThanOrEqual(0.5);
    const loose = JSON.parse(
      run(['fit', '--skills', skills, '--llm-share', '0.9', '--requests', 'requests.txt', '--json'], { cwd })
        .stdout,
    ) as {
      confidenceThreshold: number;
    };
    expect(loose.confidenceThreshold).toBeGreaterThanOrEqual(strict.confidenceThreshold);
    // No LLM at all: even a confidence threshold of 0 leaves close calls, so the margin comes down too.
    const none = run(['fit', '--skills', skills, '--llm-share', '0', '--requests', 'requests.txt'], { cwd });
    expect(none.stdout).toMatch(/sends 0\.0% of 6 requests/);
    expect(none.stdout).toMatch(/^ {2}margin_threshold: 0\.0\d$|^ {2}margin_threshold: 0$/m);
    expect(run(['fit', '--skills', skills, '--llm-share', '0.3'], { cwd }).status).toBe(2);
  });

  it('fits thresholds on a tuning set and reports the held-out set apart', () => {
    // A held-out set that disagrees with the tuning set: its confident off-topic row ("add cheese…",
    // add-feature at about 0.5) would pull a threshold up if it were tuned on.
    const cwd = mkdtempSync(join(tmpdir(), 'switchboard-cli-'));
    const heldOut = join(cwd, 'held-out.jsonl');
    writeFileSync(
      heldOut,
      [
        { text: 'write a tutorial for beginners', expected: 'write-docs' },
        { text: 'let users export their data as csv', expected: 'add-feature' },
        { text: 'add cheese to the shopping list', expected: 'none' },
        { text: 'tell me a joke about cats', expected: 'none' },
      ]
        .map((row) => JSON.stringify(row))
        .join('\n'),
    );
    type Report = { thresholds: FitFigures; test?: FitFigures };
    const fit = (args: string[]): Report => {
      const result = run(['fit', '--skills', skills, ...args, '--json'], { cwd });
      expect(result.status, result.stderr).toBe(0);
      return JSON.parse(result.stdout) as Report;
    };
    const report = fit(['--dataset', devSet, '--test', heldOut]);
    const tunedAlone = fit(['--dataset', devSet]).thresholds;
    const heldOutAlone = fit(['--dataset', heldOut]).thresholds;
    expect(
      heldOutAlone.confidenceThreshold > tunedAlone.confidenceThreshold ||
        heldOutAlone.marginThreshold > tunedAlone.marginThreshold,
    ).toBe(true);
    // The thresholds come from the tuning set only, and the held-out figures are measured at them.
    expect(report.thresholds).toEqual(tunedAlone);
    expect(report.test).toMatchObject({
      confidenceThreshold: tunedAlone.confidenceThreshold,
      marginThreshold: tunedAlone.marginThreshold,
      count: 4,
      inScopeAccuracy: 1,
      outOfScopeRecall: 0.5,
      score: 0.75,
    });
    expect(run(['fit', '--skills', skills, '--dataset', devSet]).stdout).toMatch(/confidence_threshold: /);
  });
});
