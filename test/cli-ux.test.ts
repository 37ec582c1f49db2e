import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentRunStore } from '../src/agents/run-store.js';
import { parseTask } from '../src/agents/task.js';
import { openLedger } from '../src/store/ledger.js';

// Day-one rough edges a new user meets end to end: usage errors, closed pipes, learned data, progress.

const root = join(import.meta.dirname, '..');
const cli = join(root, 'dist/cli/main.js');
const skills = join(root, 'test/fixtures/skills');
const devSet = join(root, 'test/fixtures/dev.jsonl');

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

function run(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Run {
  const cwd = options.cwd ?? mkdtempSync(join(tmpdir(), 'switchboard-ux-'));
  const result = spawnSync(process.execPath, [cli, ...args], {
    cwd,
    input: '',
    encoding: 'utf8',
    env: { ...process.env, ...options.env },
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Quotes a word for a shell command line. */
function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

describe('usage errors', () => {
  const cases: [string, string[], RegExp][] = [
    [
      'an unknown option',
      ['route', '--jsn', 'hello'],
      /unknown option '--jsn' \(did you mean --json\? run `switchboard route --help`/,
    ],
    [
      'a missing required option',
      ['eval'],
      /required option '--dataset <file>' not specified \(run `switchboard eval --help`/,
    ],
    [
      'a missing argument',
      ['agent', 'logs'],
      /missing required argument 'id' \(run `switchboard agent logs --help`/,
    ],
    ['an unknown command', ['evl'], /unknown command 'evl' \(did you mean eval\? run `switchboard --help`/],
    [
      'a bad option value',
      ['fit', '--confidence-threshold', '7'],
      /'7' is invalid\. expected a number between 0 and 1 \(run/,
    ],
  ];
  for (const [what, args, pattern] of cases) {
    it(`reports ${what} as one switchboard: line with exit 2`, () => {
      const result = run(args);
      expect(result.status).toBe(2);
      const lines = result.stderr.trimEnd().split('\n');
      expect(lines, result.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(/^switchboard: /);
      expect(lines[0]).toMatch(pattern);
      expect(result.stdout).toBe('');
    });
  }

  it('still prints help and the version with exit 0', () => {
    expect(run(['route', '--help'])).toMatchObject({ status: 0, stderr: '' });
    expect(run(['--version'])).toMatchObject({
      status: 0,
      stdout: expect.stringMatching(/^\d+\.\d+\.\d+\n$/),
    });
  });
});

describe('a closed pipe', () => {
  it('`agent logs ID | head -1` prints one line and exits 0 with nothing on stderr', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'switchboard-ux-'));
    const store = await AgentRunStore.open(join(cwd, '.switchboard'));
    const task = parseTask({ id: 'long', title: 'A run with a long log', description: 'x' });
    const at = new Date().toISOString();
    await store.insert({
      id: 'long-abcdef',
      taskId: task.id,
      title: task.title,
      repo: cwd,
      baseBranch: 'main',
      baseCommit: '0'.repeat(40),
      branch: 'switchboard/long',
      worktree: join(cwd, 'worktree'),
      phase: 'agent',
      status: 'failed',
      attempt: 1,
      costUsd: 0,
      turns: 0,
      task,
      options: { merge: 'branch', retryDelayMs: 0 },
      createdAt: at,
      updatedAt: at,
    } as Parameters<AgentRunStore['insert']>[0]);
    // Far more than a pipe buffer holds, so the CLI is still writing when `head` goes away.
    for (let index = 0; index < 5000; index++) {
      await store.addEvent('long-abcdef', 'agent', 'progress', `event ${index} ${'x'.repeat(100)}`);
    }
    await store.close();

    const errors = join(cwd, 'stderr.txt');
    const command = `set -o pipefail; ${[process.execPath, cli, 'agent', 'logs', 'long'].map(shellQuote).join(' ')} 2>${shellQuote(errors)} | head -1; echo "status $?"; cat ${shellQuote(errors)}`;
    const result = spawnSync('bash', ['-c', command], { cwd, encoding: 'utf8' });
    const [first, status, ...rest] = result.stdout.split('\n');
    expect(first).toMatch(/ agent +progress +event 0 /);
    expect(status).toBe('status 0');
    expect(rest.join('\n').trim()).toBe('');
  });
});

describe('route feedback', () => {
  function routed(cwd: string): string {
    const result = run(['route', '--skills', skills, '--json', 'the app crashes whenever I save'], { cwd });
    return (JSON.parse(result.stdout) as { id: string }).id;
  }

  it('rejects a skill that does not exist, listing the skills, and records nothing', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'switchboard-ux-'));
    const id = routed(cwd);
    const result = run(['route', 'feedback', id, 'fix-bugz', '--skills', skills], { cwd });
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(
      /^switchboard: unknown skill "fix-bugz" \(use one of: .*fix-bug.*write-docs.*none\)\n$/,
    );
    const ledger = openLedger({ stateDir: join(cwd, '.switchboard') });
    expect(await ledger.listFeedback()).toEqual([]);
    await ledger.close();
    expect(run(['route', 'feedback', id, 'write-docs', '--skills', skills], { cwd }).status).toBe(0);
  });

  it('never routes its own arguments as a request', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'switchboard-ux-'));
    const id = routed(cwd);
    for (const words of [[id], [id, 'fix-bug', 'extra'], []]) {
      const result = run(['route', 'feedback', ...words, '--skills', skills], { cwd });
      expect(result.status).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(/^switchboard: route feedback needs a decision id and a skill \(/);
    }
    const ledger = openLedger({ stateDir: join(cwd, '.switchboard') });
    expect(await ledger.countRouteDecisions()).toBe(1);
    await ledger.close();
  });
});

describe('learned examples in eval and fit', () => {
  /** A working folder whose state holds what `route learn` would have written. */
  function withLearned(): string {
    const cwd = mkdtempSync(join(tmpdir(), 'switchboard-ux-'));
    mkdirSync(join(cwd, '.switchboard'));
    const rows = [
      { text: 'the gizmo went kaput', expected: 'fix-bug' },
      { text: 'my widget is kaput again', expected: 'fix-bug' },
      { text: 'a readme section for the gizmo', expected: 'write-docs' },
    ];
    writeFileSync(join(cwd, '.switchboard/learned.jsonl'), rows.map((row) => JSON.stringify(row)).join('\n'));
    return cwd;
  }
  const note =
    /model trained also on 3 learned example\(s\) from .*learned\.jsonl \(--no-learned leaves them out\)/;

  it('eval says in its header that it trained on learned.jsonl, and --no-learned leaves it out', () => {
    const cwd = withLearned();
    const withThem = run(['eval', '--skills', skills, '--dataset', devSet], { cwd });
    expect(withThem.status, withThem.stderr).toBe(0);
    expect(withThem.stdout.split('\n').slice(0, 4).join('\n')).toMatch(note);
    const json = run(['eval', '--skills', skills, '--dataset', devSet, '--json'], { cwd });
    expect(JSON.parse(json.stdout)).toMatchObject({ settings: { learned: { examples: 3 } } });

    const without = run(['eval', '--skills', skills, '--dataset', devSet, '--no-learned'], { cwd });
    expect(without.status, without.stderr).toBe(0);
    expect(without.stdout).not.toMatch(/learned/);
    const withoutJson = run(['eval', '--skills', skills, '--dataset', devSet, '--no-learned', '--json'], {
      cwd,
    });
    expect(JSON.parse(withoutJson.stdout)).toMatchObject({ settings: { learned: false } });
  });

  it('fit says so too, and takes --no-learned', () => {
    const cwd = withLearned();
    const withThem = run(['fit', '--skills', skills, '--dataset', devSet], { cwd });
    expect(withThem.status, withThem.stderr).toBe(0);
    expect(withThem.stdout.split('\n')[0]).toMatch(note);
    const without = run(['fit', '--skills', skills, '--dataset', devSet, '--no-learned', '--json'], { cwd });
    expect(without.status, without.stderr).toBe(0);
    expect(JSON.parse(without.stdout)).toMatchObject({ learned: false });
  });
});

describe('the decision cache across CLI calls', () => {
  it('a repeated request is answered from the cache in the ledger; --no-cache and other settings route afresh', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'switchboard-ux-'));
    const route = (...extra: string[]) =>
      JSON.parse(
        run(['route', '--skills', skills, '--json', ...extra, 'the app crashes whenever I save'], { cwd })
          .stdout,
      ) as { skill: string; method: string; reasoning: string };
    expect(route()).toMatchObject({ skill: 'fix-bug', method: 'local' });
    const again = route();
    expect(again).toMatchObject({ skill: 'fix-bug', method: 'cache' });
    expect(again.reasoning).toMatch(/^cached \(local\)/);
    expect(route('--no-cache')).toMatchObject({ method: 'local' });
    // Other thresholds could decide differently: they do not share the cached decision.
    expect(route('--confidence-threshold', '0.2')).toMatchObject({ method: 'local' });
  });
});

describe('single-mode eval reports', () => {
  /** The report up to its latency section, which differs run to run. */
  const figures = (stdout: string) => stdout.slice(0, stdout.indexOf('\nLatency'));

  it('report files do not change the text output; --errors and --json list the wrong rows', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'switchboard-ux-'));
    // The dev set plus two rows labelled wrongly, so some rows are sure to be misrouted.
    const dataset = [
      ...readFileSync(devSet, 'utf8').trim().split('\n'),
      JSON.stringify({ text: 'the app crashes whenever I save', expected: 'write-docs' }),
      JSON.stringify({ text: 'add a dark mode toggle to settings', expected: 'fix-bug' }),
    ];
    const set = join(cwd, 'set.jsonl');
    writeFileSync(set, `${dataset.join('\n')}\n`);
    const plain = run(['eval', '--skills', skills, '--dataset', set], { cwd });
    expect(plain.status, plain.stderr).toBe(0);
    const withFiles = run(
      [
        'eval',
        '--skills',
        skills,
        '--dataset',
        set,
        '--html',
        'r.html',
        '--disagreements',
        'd.md',
        '--errors',
        'e.md',
      ],
      { cwd },
    );
    expect(withFiles.status, withFiles.stderr).toBe(0);
    expect(figures(withFiles.stdout)).toBe(figures(plain.stdout));
    expect(withFiles.stderr).toMatch(/Misrouted rows written to e\.md/);

    const json = JSON.parse(
      run(['eval', '--skills', skills, '--dataset', set, '--json'], { cwd }).stdout,
    ) as {
      metrics: { count: number; accuracyWithAlternates: number };
      wrongRows: { row: number; text: string; expected: string; predicted: string }[];
    };
    const wrong = json.wrongRows;
    expect(wrong.length).toBe(Math.round(json.metrics.count * (1 - json.metrics.accuracyWithAlternates)));
    expect(wrong.length).toBeGreaterThanOrEqual(2);
    for (const item of wrong) {
      expect(JSON.parse(dataset[item.row - 1] ?? '{}')).toMatchObject({
        text: item.text,
        expected: item.expected,
      });
      expect(item.predicted).not.toBe(item.expected);
    }
    const errors = readFileSync(join(cwd, 'e.md'), 'utf8');
    expect(errors).toContain(`${wrong.length} of ${json.metrics.count} rows`);
    expect(errors.split('\n').filter((line) => /^\| \d+ \|/.test(line))).toHaveLength(wrong.length);

    const html = readFileSync(join(cwd, 'r.html'), 'utf8');
    expect(html).toMatch(/<title>set\.jsonl: local mode, \d+ examples<\/title>/);
    expect(html).toContain('the app crashes whenever I save</td>');
    expect(html).toContain('data-table="per-skill"');
    expect(html).toContain('<section id="misrouted">');
  });
});

describe('progress on long work', () => {
  /** A working folder with a 1,500-row dataset: enough rows for the bar to redraw. */
  function bigDataset(): { cwd: string; dataset: string } {
    const cwd = mkdtempSync(join(tmpdir(), 'switchboard-ux-'));
    const rows = readFileSync(devSet, 'utf8').trim().split('\n');
    const dataset = join(cwd, 'big.jsonl');
    writeFileSync(dataset, `${Array.from({ length: 300 }, () => rows.join('\n')).join('\n')}\n`);
    return { cwd, dataset };
  }

  /** Runs the CLI under a pseudo-terminal (util-linux `script`): stdout and stderr in one stream. */
  function inTerminal(args: string[], cwd: string): { status: number | null; output: string } {
    const command = [process.execPath, cli, ...args].map(shellQuote).join(' ');
    const result = spawnSync('script', ['-qfec', command, '/dev/null'], { cwd, encoding: 'utf8', input: '' });
    return { status: result.status, output: result.stdout };
  }

  const hasScript = spawnSync('sh', ['-c', 'command -v script'], { stdio: 'ignore' }).status === 0;

  it.skipIf(!hasScript)('eval draws training and routing bars with count, rate and ETA on a terminal', () => {
    const { cwd, dataset } = bigDataset();
    const result = inTerminal(['eval', '--skills', skills, '--dataset', dataset, '--json'], cwd);
    expect(result.status, result.output).toBe(0);
    expect(result.output).toMatch(/training the model \[[^\]]*\] \d+\/\d+ \d+% \| [\d.]+\/s \| ETA /);
    expect(result.output).toMatch(/routing \(local\) \[[^\]]*\] 1500\/1500 100% \| [\d.]+\/s \| ETA /);
    // The JSON still arrives whole, after the bar has been cleared.
    expect(result.output).toMatch(/\{"settings":\{"mode":"local"/);
  });

  it.skipIf(!hasScript)('fit shows its ranking progress; --quiet draws nothing', () => {
    const { cwd, dataset } = bigDataset();
    const shown = inTerminal(['fit', '--skills', skills, '--dataset', dataset], cwd);
    expect(shown.status, shown.output).toBe(0);
    expect(shown.output).toMatch(/ranking the tuning set \[[^\]]*\] \d+\/1500/);
    const quiet = inTerminal(['--quiet', 'fit', '--skills', skills, '--dataset', dataset], cwd);
    expect(quiet.status, quiet.output).toBe(0);
    expect(quiet.output).not.toMatch(/ranking|training|ETA/);
    expect(quiet.output).not.toContain('\u001b[');
  });

  it.skipIf(!hasScript)(
    'Ctrl-C during a bar leaves the terminal as it was (cursor shown, lines wrap)',
    async () => {
      const cwd = mkdtempSync(join(tmpdir(), 'switchboard-ux-'));
      const rows = readFileSync(devSet, 'utf8').trim();
      // Enough rows that routing is still under way when the keystroke arrives.
      const dataset = join(cwd, 'huge.jsonl');
      writeFileSync(dataset, `${Array.from({ length: 3000 }, () => rows).join('\n')}\n`);
      const command = [process.execPath, cli, 'eval', '--skills', skills, '--dataset', dataset]
        .map(shellQuote)
        .join(' ');
      const terminal = spawn('script', ['-qfec', command, '/dev/null'], {
        cwd,
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      let output = '';
      terminal.stdout.setEncoding('utf8');
      terminal.stdout.on('data', (chunk: string) => {
        const first = !output.includes('routing (local)');
        output += chunk;
        // The user presses Ctrl-C once the routing bar is on screen.
        if (first && output.includes('routing (local)')) terminal.stdin.write('\u0003');
      });
      const status = await new Promise<number | null>((done) => terminal.on('exit', done));
      expect(output).toContain('routing (local)');
      expect(status).toBe(130);
      const count = (sequence: string): number => output.split(sequence).length - 1;
      expect(count('\u001b[?25l'), 'cursor hidden and never shown again').toBe(count('\u001b[?25h'));
      expect(count('\u001b[?7l'), 'line wrap turned off and never back on').toBe(count('\u001b[?7h'));
    },
  );

  it('prints no progress when stderr is not a terminal', () => {
    const { cwd, dataset } = bigDataset();
    const result = run(['eval', '--skills', skills, '--dataset', dataset], { cwd });
    expect(result.status).toBe(0);
    expect(result.stderr).toBe('');
  });
});
