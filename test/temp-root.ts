import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Every temporary folder the tests make (theirs, the CLI's, Claude Code's) goes under one root that
 * is removed when the run ends, so a run, even one whose tests fail midway, leaves /tmp as it was.
 * Workers start after global setup and inherit TMPDIR.
 */
export default function setup(): () => void {
  const root = mkdtempSync(join(tmpdir(), 'switchboard-test-run-'));
  process.env.TMPDIR = root;
  return () => rmSync(root, { recursive: true, force: true });
}
