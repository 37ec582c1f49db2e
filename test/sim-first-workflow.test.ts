import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../src/sim/server.js';
import { runCli } from './helpers/run-cli.js';

// docs/workflows.md's first workflow, as the page prints it, run by the built CLI against
// `switchboard sim` with a `conform: true` fallback: its agent step asks through the API tool loop
// (emit_output beside "call some tool"), which the simulator must answer for the run to complete.

const root = join(import.meta.dirname, '..');
const directories: string[] = [];
let sim: Simulator | undefined;

afterAll(async () => {
  await sim?.close();
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

/** The first YAML block after a heading of docs/workflows.md. */
function yamlAfter(heading: string): string {
  const page = readFileSync(join(root, 'docs/workflows.md'), 'utf8');
  const section = page.slice(page.indexOf(`## ${heading}`));
  const block = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
  if (block === undefined) throw new Error(`no yaml block after "## ${heading}" in docs/workflows.md`);
  return block;
}

describe('docs/workflows.md: a first workflow on the simulator', () => {
  it('runs to completion with an output that fits its schema', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'switchboard-first-workflow-'));
    directories.push(cwd);
    writeFileSync(join(cwd, 'greet.yaml'), yamlAfter('A first workflow'));
    sim = await startSimulator({ scenario: { rules: [], fallback: { conform: true } } });
    const environment: NodeJS.ProcessEnv = {};
    for (const [name, value] of Object.entries(process.env)) {
      if (!/API_KEY|AUTH_TOKEN|OAUTH|_TOKEN$|BASE_URL$/.test(name)) environment[name] = value;
    }
    const run = await runCli(['workflow', 'run', 'greet.yaml', '-i', 'name=Ada', '--json'], {
      cwd,
      env: {
        ...environment,
        SWITCHBOARD_STATE_DIR: join(cwd, 'state'),
        ANTHROPIC_BASE_URL: sim.url,
        ANTHROPIC_API_KEY: 'sk-ant-first-workflow',
      },
    });
    expect(run.status, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { status: string; output: unknown };
    expect(result).toMatchObject({ status: 'completed', output: { greeting: expect.any(String) } });
    expect(sim.requests.length).toBeGreaterThan(0);
  });
});
