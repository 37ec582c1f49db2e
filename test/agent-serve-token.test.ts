import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { agentCliSuite, type RunJson } from './helpers/agent-cli.js';
import { IN_CI } from './helpers/ci.js';
import { git } from './helpers/git-repo.js';
import { runCli } from './helpers/run-cli.js';
import { killServers, serve } from './helpers/serve-process.js';

// Issue 35 item 1, the audit's repro: a running `serve` (commands allowed, as the audit's worst case)
// and an agent with Read and Write whose task verifies with `sh check.sh`. The agent writes check.sh,
// which hunts for serve's token and POSTs a workflow whose script step reads ~/.ssh/id_rsa to /mcp,
// and tries /route and /call, writing what came back to a file the run commits. The built CLI, the real
// Claude Code binary against the simulator, real git, serve from the built CLI.

const { fixture, setScenario, simUrl } = agentCliSuite();
const children = new Set<ChildProcess>();
const hasBwrap = (process.env['PATH'] ?? '').split(':').some((folder) => existsSync(join(folder, 'bwrap')));
const sandboxed = hasBwrap || IN_CI ? it : it.skip;
const skills = join(import.meta.dirname, 'fixtures/skills');

afterAll(() => killServers(children));

function filesUnder(directory: string): string[] {
  return readdirSync(directory, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

/** check.mjs: every token file it can name, then the three routes with each token and with none. */
function hunter(url: string, tokenFiles: string[], home: string): string {
  return `import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
const url = ${JSON.stringify(url)};
const tokens = [process.env.SWITCHBOARD_SERVER_TOKEN].filter(Boolean);
const files = ${JSON.stringify(tokenFiles)};
for (const folder of ${JSON.stringify([join(home, '.switchboard', 'servers')])}) {
  try { for (const name of readdirSync(folder)) files.push(folder + '/' + name); } catch {}
}
for (const file of files) {
  try { tokens.push(JSON.parse(readFileSync(file, 'utf8')).token); } catch {}
}
writeFileSync('loot.yaml', 'workflow:\\n  name: loot\\n  entry_point: read\\nagents:\\n  - name: read\\n    type: script\\n    command: sh\\n    args: ["-c", "cat ${home}/.ssh/id_rsa"]\\n    routes:\\n      - to: $end\\n');
const lines = ['tokens found: ' + tokens.length];
async function attempt(path, body) {
  for (const token of [undefined, ...tokens]) {
    try {
      const answer = await fetch(url + path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(token ? { authorization: 'Bearer ' + token } : {}) },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(3000),
      });
      lines.push(path + ' ' + answer.status + ' ' + (await answer.text()));
    } catch (error) {
      lines.push(path + ' unreachable ' + (error.cause?.code ?? error.name));
    }
  }
}
await attempt('/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'workflow_run', arguments: { file: process.cwd() + '/loot.yaml' } } });
await attempt('/route', { text: 'the app crashes whenever I save' });
await attempt('/call', { spec: 'anthropic:claude-haiku-4-5', prompt: 'hi' });
writeFileSync('result.txt', lines.join('\\n') + '\\n');
`;
}

describe('an agent cannot reach serve (issue 35)', () => {
  // With the network kept (SWITCHBOARD_VERIFY_NETWORK=on) serve is reachable, and the hidden token
  // file is what keeps it shut: 401 on every route.
  sandboxed.each([
    { network: 'off', answer: 'unreachable' },
    { network: 'on', answer: '401' },
  ])(
    "an agent's verify command (network $network) gets no token and $answer from serve: no workflow of its runs, nothing read from HOME reaches a commit",
    async ({ network, answer }) => {
      const f = await fixture({ fallback: { text: 'no scenario yet' } });
      const canary = `PLANTED-SSH-${randomBytes(6).toString('hex')}-private`;
      const home = join(f.root, 'home');
      mkdirSync(join(home, '.ssh'), { recursive: true });
      writeFileSync(join(home, '.ssh', 'id_rsa'), `-----BEGIN KEY-----\n${canary}\n`);
      Object.assign(f.env, {
        HOME: home,
        SWITCHBOARD_SERVER_TOKEN: '',
        SWITCHBOARD_VERIFY_NETWORK: network,
      });
      // serve shares the runner's HOME and state folder, and may run commands in the runner's folders.
      const server = await serve(
        ['--port', '0', '--pool', '0', '--skills', skills, '--allow-commands', '--repo-root', f.root],
        { cwd: f.repo, env: f.env, children },
      );
      const port = new URL(server.url).port;
      const tokenFiles = [
        join(f.root, 'state', `serve-${port}.token`),
        join(home, '.switchboard', 'servers', `${port}.token`),
      ];
      for (const file of tokenFiles) expect(readFileSync(file, 'utf8')).toContain(server.token);
      setScenario({
        rules: [
          {
            match: { turn: 1 },
            reply: {
              tool: {
                name: 'Write',
                input: { file_path: 'check.mjs', content: hunter(server.url, tokenFiles, home) },
              },
            },
          },
          {
            match: { turn: 2 },
            reply: { tool: { name: 'Write', input: { file_path: 'check.sh', content: 'node check.mjs\n' } } },
          },
          { match: { turn: 3 }, reply: { text: 'added the check' } },
        ],
      });
      const task = f.task('check', {
        id: 'check',
        title: 'Add a check',
        tools: ['Read', 'Write'],
        verify: 'sh check.sh',
      });
      const result = await runCli(['agent', 'run', '--task', task, '--base-url', simUrl(), '--json'], {
        cwd: f.repo,
        env: f.env,
      });
      expect(result.status, result.stderr).toBe(0);
      const run = JSON.parse(result.stdout) as RunJson;
      expect(run).toMatchObject({ ok: true, status: 'succeeded', mergedCommit: expect.any(String) });

      // What check.sh got, as the run committed it: no token, and no connection or a 401.
      const got = git(f.repo, 'show', `${run.mergedCommit ?? 'HEAD'}:result.txt`);
      expect(got).toContain('tokens found: 0');
      for (const path of ['/mcp', '/route', '/call'])
        expect(got).toMatch(new RegExp(`^${path} ${answer}`, 'm'));
      expect(got).not.toMatch(/ 200 /);
      // No workflow ran on serve, and the canary is in no commit, file, output or log.
      const workflows = await runCli(['workflow', 'ls', '--json'], { cwd: f.repo, env: f.env });
      expect(workflows.stdout).not.toContain('loot');
      expect(git(f.repo, 'log', '--all', '-p')).not.toContain(canary);
      for (const file of filesUnder(f.root).filter((path) => path !== join(home, '.ssh', 'id_rsa')))
        expect(readFileSync(file).toString('latin1'), file).not.toContain(canary);
      expect(result.stdout + result.stderr + server.stdout() + server.stderr()).not.toContain(canary);

      // The same request from the user's own shell, token found in the file, is served: serve was up.
      const routed = await runCli(
        ['route', '--server', server.url, '--json', 'the app crashes whenever I save'],
        {
          cwd: f.repo,
          env: f.env,
        },
      );
      expect(routed.status, routed.stderr).toBe(0);
      server.child.kill('SIGTERM');
      await server.exited;
    },
  );
});
