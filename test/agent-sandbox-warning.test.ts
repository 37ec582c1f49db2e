import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeFilesScenario } from './helpers/agent-scenarios.js';
import { agentCliSuite } from './helpers/agent-cli.js';
import { runCli } from './helpers/run-cli.js';

// Issue 24: with the default SWITCHBOARD_AGENT_SANDBOX=auto and no bwrap/socat, `agent run` says so on
// stderr, once, naming the fixes, instead of running the agent's Bash unconfined with only a note in
// the transcript. The built CLI and the real Claude Code binary, with a PATH that lacks bwrap and socat.

const { fixture, simUrl } = agentCliSuite();

const WARNING =
  "switchboard: warning: the agent's Bash commands and the task's setup and verify commands will run unsandboxed, able to read whatever your user can (bwrap and socat not found on PATH): install bubblewrap and socat (Debian/Ubuntu: apt-get install bubblewrap socat), or set SWITCHBOARD_AGENT_SANDBOX=required to refuse to run without the sandbox, or =off to run unsandboxed without this warning";

/** A folder holding links to the programs a run needs (git, a shell, ps, node) and not bwrap or socat. */
function binWithoutSandbox(root: string): string {
  const bin = join(root, 'bin-without-sandbox');
  mkdirSync(bin);
  for (const program of ['git', 'sh', 'bash', 'env', 'cat', 'ls', 'test', 'ps', 'kill', 'rm', 'mkdir'])
    for (const folder of ['/usr/bin', '/bin']) {
      try {
        symlinkSync(join(folder, program), join(bin, program));
        break;
      } catch {
        // Not in this folder (or already linked from the first).
      }
    }
  symlinkSync(process.execPath, join(bin, 'node'));
  return bin;
}

describe('agent run without a sandbox', () => {
  it('warns once on stderr under the default auto, and not when SWITCHBOARD_AGENT_SANDBOX=off', async () => {
    const f = await fixture(writeFilesScenario({ files: [{ path: 'hello.txt', content: 'hi\n' }] }));
    const PATH = binWithoutSandbox(f.root);
    const task = f.task('task', { id: 'hello', title: 'Say hello', verify: 'test -f hello.txt' });
    const env: NodeJS.ProcessEnv = { ...f.env, PATH };
    delete env['SWITCHBOARD_AGENT_SANDBOX'];
    const run = (id: string, extra: NodeJS.ProcessEnv = {}) =>
      runCli(['agent', 'run', '--task', task, '--id', id, '--json', '--base-url', simUrl()], {
        cwd: f.repo,
        env: { ...env, ...extra },
      });

    const warned = await run('hello');
    expect(warned.status, warned.stderr).toBe(0);
    expect(JSON.parse(warned.stdout)).toMatchObject({ ok: true, phase: 'done' });
    expect(warned.stderr.split('\n').filter((line) => line.includes('warning'))).toEqual([WARNING]);

    const silenced = await run('hello-again', { SWITCHBOARD_AGENT_SANDBOX: 'off' });
    expect(silenced.stderr).not.toContain('warning');
    expect(silenced.stderr).not.toContain('unsandboxed');
  }, 180_000);
});
