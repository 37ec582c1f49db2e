import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';

// Setup file: each test file gets its own TMPDIR under the run's root (test/temp-root.ts). Test files
// run in parallel, and a file asserting that no Claude Code process it started outlived it tells its
// own processes from a sibling file's by this folder in their environment (test/helpers/claude.ts).
const root = process.env.TMPDIR;
if (root !== undefined && root.includes('switchboard-test-run-') && !root.includes('switchboard-test-file-'))
  process.env.TMPDIR = mkdtempSync(join(root, 'switchboard-test-file-'));
