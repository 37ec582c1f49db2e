import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';

// The README's `switchboard route` examples against the bundled examples/skills: what a comment says
// a request does (`# prints SKILL`, `# exit N`) is what it does.

const root = join(import.meta.dirname, '..');
const cli = join(root, 'dist/cli/main.js');

interface Claim {
  request: string;
  skill?: string;
  exit?: number;
}

function claims(): Claim[] {
  const found: Claim[] = [];
  for (const line of readFileSync(join(root, 'README.md'), 'utf8').split('\n')) {
    const example = /switchboard route [^"#]*"([^"]+)"\)?\s+# (?:prints (\S+)|exit (\d+))/.exec(line);
    if (example === null) continue;
    const [, request, skill, exit] = example;
    found.push({
      request: request!,
      ...(skill === undefined ? {} : { skill }),
      ...(exit === undefined ? {} : { exit: Number(exit) }),
    });
  }
  return found;
}

function route(request: string): Promise<{ status: number; stdout: string }> {
  const stateDir = mkdtempSync(join(tmpdir(), 'switchboard-readme-route-'));
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [cli, 'route', '--skills', join(root, 'examples/skills'), '--print', 'skill', request],
      { env: { ...process.env, SWITCHBOARD_STATE_DIR: stateDir, SWITCHBOARD_SERVER: '' }, encoding: 'utf8' },
      (error, stdout) => resolve({ status: error === null ? 0 : Number(error.code), stdout }),
    );
  });
}

it('every commented `switchboard route` example in the README routes as its comment says', async () => {
  const examples = claims();
  expect(examples.length).toBeGreaterThan(0);
  for (const claim of examples) {
    const result = await route(claim.request);
    if (claim.skill !== undefined) {
      expect(result.stdout.trim(), claim.request).toBe(claim.skill);
      expect(result.status, claim.request).toBe(claim.skill === 'none' ? 10 : 0);
    }
    if (claim.exit !== undefined) expect(result.status, claim.request).toBe(claim.exit);
  }
});
