import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';

// Setup file, run before each test file. Test files share a worker process one after another
// (`isolate: false` in vitest.config.ts), so each starts from what the first one found:
// - the same environment variables and working folder, whatever the file before changed;
// - a TMPDIR of its own under the run's root (test/temp-root.ts). Test files run in parallel, and a
//   file asserting that no Claude Code process it started outlived it tells its own processes from a
//   sibling file's by this folder in their environment (test/helpers/claude.ts).
interface Start {
  env: Record<string, string | undefined>;
  cwd: string;
}
const key = Symbol.for('switchboard.test.start');
const holder = globalThis as { [key]?: Start };
const start = (holder[key] ??= { env: { ...process.env }, cwd: process.cwd() });
for (const name of Object.keys(process.env)) if (!(name in start.env)) delete process.env[name];
Object.assign(process.env, start.env);
if (process.cwd() !== start.cwd) process.chdir(start.cwd);
const root = start.env.TMPDIR;
if (root !== undefined && root.includes('switchboard-test-run-'))
  process.env.TMPDIR = mkdtempSync(join(root, 'switchboard-test-file-'));
