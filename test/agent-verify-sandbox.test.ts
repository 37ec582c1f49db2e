import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { agentCliSuite, type Fixture, type RunJson } from './helpers/agent-cli.js';
import { writeFilesScenario } from './helpers/agent-scenarios.js';
import { IN_CI } from './helpers/ci.js';
import { git } from './helpers/git-repo.js';
import { filesHolding, runSocketService } from './helpers/planted.js';

// Issue 24: the task's setup and verify commands, which the runner itself runs, run code from the
// repository and from the agent (here a hunt script the repository holds, and a test file the agent
// writes). They run in a sandbox as the agent's Bash does: no secret of the user's or the runner's
// reaches them, and they write nothing outside the worktree. The built CLI, real Claude Code against
// the simulator, real git.

const { fixture } = agentCliSuite();
const onPath = (program: string): boolean =>
  (process.env['PATH'] ?? '').split(delimiter).some((folder) => existsSync(join(folder, program)));
const sandboxed = onPath('bwrap') || IN_CI ? it : it.skip;

interface Planted {
  tag: string;
  /** Every planted secret value. */
  all: string[];
  /** The files the secrets were planted in (they hold them by design). */
  files: string[];
}

/** A fixture whose environment, HOME, checkout `.env` and state folder hold planted fake secrets. */
function plant(f: Fixture): Planted {
  const tag = randomBytes(6).toString('hex');
  const secret = (name: string): string => `PLANTED-${tag}-${name}`;
  Object.assign(f.env, {
    ANTHROPIC_API_KEY: `sk-ant-${secret('anthropic')}`,
    OPENAI_API_KEY: `sk-proj-${secret('openai')}`,
    GEMINI_API_KEY: secret('gemini'),
    GOOGLE_API_KEY: secret('google'),
    SWITCHBOARD_SERVER_TOKEN: secret('server-token'),
    DATABASE_URL: `postgres://app:${secret('database')}@127.0.0.1:9/app`,
    HOME: join(f.root, 'home'),
  });
  const files = {
    [join(f.root, 'home', '.claude', '.credentials.json')]: `{"accessToken":"${secret('claude-login')}"}`,
    [join(f.root, 'home', '.claude.json')]: `{"primaryApiKey":"${secret('claude-json')}"}`,
    [join(f.repo, '.env')]: `DEPLOY_TOKEN=${secret('dotenv')}\n`,
    [join(f.root, 'state', 'notes.txt')]: secret('state-folder'),
  };
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, content);
  }
  const all = ['anthropic', 'openai', 'gemini', 'google', 'server-token', 'database'].map(secret);
  all.push(...['claude-login', 'claude-json', 'dotenv', 'state-folder'].map(secret));
  const ledgerUrl = process.env['SWITCHBOARD_DATABASE_URL'];
  if (ledgerUrl !== undefined) all.push(ledgerUrl);
  return { tag, all, files: Object.keys(files) };
}

/**
 * What a hostile script run by setup or verify tries: every process's environment and command line (the
 * runner's among them), its own environment, Claude Code's login in HOME, the checkout's `.env`, the
 * ledger and state folder, the key forwarder's files; then writes outside the worktree. All it got goes
 * to `loot-<phase>.txt` in the worktree (ignored by git, so the run goes on to merge).
 */
function huntScript(f: Fixture, outside: readonly string[]): string {
  const state = join(f.root, 'state');
  return [
    'exec > "loot-$1.txt" 2>&1',
    'tr "\\0" "\\n" < /proc/$PPID/environ',
    'for p in /proc/[0-9]*; do tr "\\0" "\\n" < $p/environ; tr "\\0" " " < $p/cmdline; echo; done',
    'env',
    'cat "$HOME"/.claude/.credentials.json "$HOME"/.claude.json',
    `cat ${f.repo}/.env ${state}/notes.txt ${state}/ledger.db`,
    `ls -laR ${state} ${f.root}`,
    'cat /tmp/switchboard-key-*/api-key',
    // A service's socket under /run (Docker's, PostgreSQL's) answers whoever connects.
    'ls -la /run',
    `for s in /run/*.sock /var/run/*.sock; do node -e "require('node:net').connect(process.argv[1]).on('data', (d) => process.stdout.write(d)).on('error', (e) => console.log(e.code))" "$s"; done`,
    ...outside.map((path) => `echo escaped > ${path}`),
    'echo hunted',
  ].join('\n');
}

/** A PATH of one folder, `bin`, holding links to every program on this PATH but `missing`. */
function pathWithout(bin: string, missing: readonly string[]): string {
  mkdirSync(bin);
  for (const folder of (process.env['PATH'] ?? '').split(delimiter).filter(Boolean)) {
    if (!existsSync(folder)) continue;
    for (const name of readdirSync(folder)) {
      if (missing.includes(name) || existsSync(join(bin, name))) continue;
      symlinkSync(join(folder, name), join(bin, name));
    }
  }
  return bin;
}

describe('the setup and verify commands in the sandbox', () => {
  sandboxed(
    'reach no planted secret and write nothing outside the worktree, while git and node work',
    async () => {
      const f = await fixture(
        writeFilesScenario({
          files: [{ path: 'test.js', content: "require('node:fs').writeFileSync('tested.txt', 'ok\\n');\n" }],
        }),
      );
      const planted = plant(f);
      const outside = [
        join(f.root, 'escaped.txt'),
        join(f.root, 'home', 'escaped.txt'),
        join(f.repo, 'escaped.txt'),
        join(f.root, 'state', 'escaped.txt'),
        join(f.repo, '.git', 'escaped.txt'),
        join(tmpdir(), `switchboard-escaped-${planted.tag}.txt`),
      ];
      // A service listening on a socket under /run, handing a secret to whoever connects (where this
      // user may create one there: root, as in CI).
      const service = await runSocketService(`PLANTED-${planted.tag}-run-socket`);
      onTestFinished(() => service.close());
      // Only root may create a socket there: in CI the check must really run.
      if (IN_CI) expect(service.listening).toBe(true);
      if (service.listening) planted.all.push(service.secret);
      writeFileSync(join(f.repo, 'hunt.sh'), huntScript(f, outside));
      writeFileSync(join(f.repo, '.gitignore'), '.env\nloot-*.txt\n');
      git(f.repo, 'add', 'hunt.sh', '.gitignore');
      git(f.repo, 'commit', '-qm', 'a script the setup and verify run');
      const task = f.task('task', {
        id: 'hunt',
        title: 'Add a test',
        setup: 'sh hunt.sh setup',
        verify: 'sh hunt.sh verify && node test.js && git status --porcelain > status.txt',
      });

      const result = await f.run(['agent', 'run', '--task', task, '--json']);
      expect(result.status, result.stderr).toBe(0);
      const run = JSON.parse(result.stdout) as RunJson;
      expect(run).toMatchObject({ ok: true, phase: 'done' });
      // The hunt ran to its end in both, and the verify's own work was done and merged.
      for (const phase of ['setup', 'verify'])
        expect(readFileSync(join(run.worktree, `loot-${phase}.txt`), 'utf8')).toMatch(/hunted\n$/);
      expect(readFileSync(join(f.repo, 'tested.txt'), 'utf8')).toBe('ok\n');
      expect(readFileSync(join(f.repo, 'status.txt'), 'utf8')).toContain('?? test.js');

      expect(outside.filter((path) => existsSync(path))).toEqual([]);
      expect(filesHolding(f.root, planted.all, planted.files)).toEqual([]);
      const shown = await f.run(['agent', 'show', run.id, '--json']);
      const logs = await f.run(['agent', 'logs', run.id]);
      for (const output of [result.stdout, result.stderr, shown.stdout, logs.stdout])
        for (const secret of planted.all) expect(output).not.toContain(secret);
    },
  );

  it('without bwrap under auto still runs them, and says so once per run on stderr', async () => {
    const f = await fixture(writeFilesScenario({ files: [{ path: 'done.txt', content: 'done\n' }] }));
    Object.assign(f.env, {
      PATH: pathWithout(join(f.root, 'bin'), ['bwrap']),
      SWITCHBOARD_AGENT_SANDBOX: 'auto',
    });
    const task = f.task('task', { id: 'open', title: 'Open', setup: 'true', verify: 'test -f done.txt' });
    const result = await f.run(['agent', 'run', '--task', task, '--json']);
    expect(result.status, result.stderr).toBe(0);
    const warnings = result.stderr.split('\n').filter((line) => line.startsWith('switchboard: warning:'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /the task's setup and verify commands will run unsandboxed, .*\(bwrap not found on PATH\)/,
    );
    expect(warnings[0]).toMatch(/install bubblewrap/);
    expect(statSync(join(f.repo, 'done.txt')).isFile()).toBe(true);
  });
});
